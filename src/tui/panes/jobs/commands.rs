//! The Jobs pane's command lists, one per mode. Keys, the footer and the
//! help overlay all come from these. Submitting a file creates a job on
//! the platform, so `--read-only` hides it; watching ids only reads.

use ratatui::crossterm::event::KeyCode;

use super::{JobsCommand, Prompt};
use crate::tui::keymap::{Command, CommandInfo, Key, keys};

use Command::Jobs;
use JobsCommand as J;

const UP: &[Key] = &[Key::plain(KeyCode::Up), Key::char('k')];
const DOWN: &[Key] = &[Key::plain(KeyCode::Down), Key::char('j')];
const ENTER: &[Key] = &[Key::plain(KeyCode::Enter)];
const ESC: &[Key] = &[Key::plain(KeyCode::Esc)];

/// The table's commands: moving exists only with a selected row.
pub(super) fn table_commands(selection: bool) -> Vec<CommandInfo> {
    let mut commands = Vec::new();
    if selection {
        commands.extend([
            CommandInfo::new("↑↓ / j k", "move", UP, Jobs(J::Up)),
            CommandInfo::new("", "", DOWN, Jobs(J::Down)).hidden(),
            CommandInfo::new(
                "pgup pgdn",
                "page up / down",
                keys![Key::plain(KeyCode::PageUp)],
                Jobs(J::PageUp),
            ),
            CommandInfo::new(
                "",
                "",
                keys![Key::plain(KeyCode::PageDown)],
                Jobs(J::PageDown),
            )
            .hidden(),
            CommandInfo::new(
                "g / G",
                "first / last",
                keys![Key::char('g'), Key::plain(KeyCode::Home)],
                Jobs(J::Top),
            ),
            CommandInfo::new(
                "",
                "",
                keys![Key::char('G'), Key::plain(KeyCode::End)],
                Jobs(J::Bottom),
            )
            .hidden(),
        ]);
    }
    commands.push(
        CommandInfo::new(
            "a",
            "watch job ids (comma or space separated)",
            keys![Key::char('a')],
            Jobs(J::Add),
        )
        .quick_as("add ids"),
    );
    commands.push(
        CommandInfo::new(
            "s",
            "submit a file: upload it, create a job, watch it",
            keys![Key::char('s')],
            Jobs(J::Submit),
        )
        .quick_as("submit file")
        .mutating(),
    );
    commands
}

/// The prompt's keys (everything else is typed into it).
pub(super) fn prompt_commands(prompt: Prompt) -> Vec<CommandInfo> {
    let run = match prompt {
        Prompt::AddIds => "watch these ids",
        Prompt::SubmitFile => "upload and submit",
    };
    vec![
        CommandInfo::new("enter", run, ENTER, Jobs(J::PromptSubmit)).quick_as("ok"),
        CommandInfo::new("esc", "cancel", ESC, Jobs(J::PromptCancel)).quick(),
    ]
}
