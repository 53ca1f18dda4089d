//! The Jobs pane's command lists, one per mode. Keys, the footer and the
//! help overlay all come from these. Submitting a file creates a job on
//! the platform, so `--read-only` hides it; watching ids only reads.

use super::{JobsCommand, Prompt};
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};

use JobsCommand as J;

/// The table's commands: moving exists only with a selected row.
pub(super) fn table_commands(selection: bool) -> Vec<CommandInfo<JobsCommand>> {
    let mut commands = if selection {
        movement(J::Move)
    } else {
        Vec::new()
    };
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
    commands
}

/// The prompt's keys (everything else is typed into it).
pub(super) fn prompt_commands(prompt: Prompt) -> Vec<CommandInfo<JobsCommand>> {
    let run = match prompt {
        Prompt::AddIds => "watch these ids",
        Prompt::SubmitFile => "upload and submit",
    };
    vec![
        CommandInfo::new("enter", run, ENTER, J::PromptSubmit).quick_as("ok"),
        CommandInfo::new("esc", "cancel", ESC, J::PromptCancel).quick(),
    ]
}
