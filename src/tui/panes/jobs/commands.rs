//! The Jobs pane's command lists, one per mode. Keys, the footer and the
//! help overlay all come from these. Submitting a file creates a job on
//! the platform, so `--read-only` hides it; watching ids only reads.

use ratatui::crossterm::event::KeyCode;

use super::table::TABLE;
use super::{JobsCommand, Prompt};
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};
use crate::tui::widgets::table_view::{self, wrapped};

use JobsCommand as J;

/// The table's commands: moving exists only with a selected row, `esc`
/// only with a filter in force (`/`, `S`: every table's).
pub(super) fn table_commands(selection: bool, filtered: bool) -> Vec<CommandInfo<JobsCommand>> {
    let mut commands = if selection {
        let mut commands = movement(J::Move);
        commands
            .push(CommandInfo::new("enter", "the job's record", ENTER, J::Open).quick_as("open"));
        commands.push(copy_id());
        commands
    } else {
        Vec::new()
    };
    commands.push(
        CommandInfo::new(
            "b",
            "what spent the request budget (last 5 min)",
            keys![Key::char('b')],
            J::Breakdown,
        )
        .quick_as("budget"),
    );
    commands.push(
        CommandInfo::new(
            "a",
            "watch job ids (comma or space separated)",
            keys![Key::char('a')],
            J::Add,
        )
        .quick_as("add ids"),
    );
    commands.push(
        CommandInfo::new(
            "s",
            "submit a file: upload it, create a job, watch it",
            keys![Key::char('s')],
            J::Submit,
        )
        .quick_as("submit file")
        .mutating(),
    );
    commands.extend(wrapped(
        table_view::table_commands(TABLE.filter_help, filtered),
        J::Table,
    ));
    commands
}

/// `y`: the selected job's whole id to the clipboard.
fn copy_id() -> CommandInfo<JobsCommand> {
    CommandInfo::new(
        "y",
        "copy the whole job id (OSC 52)",
        keys![Key::char('y')],
        J::CopyId,
    )
    .quick_as("copy id")
}

/// A job's record: back, movement to the next job, copy its id.
pub(super) fn detail_commands() -> Vec<CommandInfo<JobsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the table",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            J::Back,
        )
        .quick_as("back"),
    ];
    commands.extend(movement(J::Move).into_iter().take(2));
    commands.push(copy_id());
    commands
}

/// The prompt's keys (everything else is typed into it).
pub(super) fn job_prompt_commands(prompt: Prompt) -> Vec<CommandInfo<JobsCommand>> {
    let run = match prompt {
        Prompt::AddIds => "watch these ids",
        Prompt::SubmitFile => "upload and submit",
    };
    vec![
        CommandInfo::new("enter", run, ENTER, J::PromptSubmit).quick_as("ok"),
        CommandInfo::new("esc", "cancel", ESC, J::PromptCancel).quick(),
    ]
}
