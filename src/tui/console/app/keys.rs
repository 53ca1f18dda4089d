//! What keys do right now, and what help shows: the commands of the
//! overlay or the pane on screen (with the global ones where no text
//! field has the keyboard), through the one read-only filter.

use ratatui::crossterm::event::KeyEvent;

use super::super::command::{
    Command, command_line_commands, confirm_commands, global_commands, help_commands,
    interrupt_command,
};
use super::super::command_line;
use super::super::context::picker_commands;
use super::{App, Overlay};
use crate::tui::keymap::{CommandInfo, CommandSection, permitted};

impl App {
    /// The commands that exist right now: keys match these, the footer
    /// shows their quick ones. Read-only filtering happens here, once.
    pub(crate) fn commands(&self) -> Vec<CommandInfo<Command>> {
        permitted(self.all_commands(), self.config.read_only)
    }

    /// The commands that exist right now, before the read-only filter.
    fn all_commands(&self) -> Vec<CommandInfo<Command>> {
        match &self.overlay {
            Some(Overlay::Help { .. }) => help_commands(),
            Some(Overlay::CommandLine(_)) => {
                let mut list = command_line_commands();
                list.push(interrupt_command());
                list
            }
            Some(Overlay::ConfirmQuit | Overlay::ConfirmSwitch { .. }) => {
                let mut list = confirm_commands();
                list.push(interrupt_command());
                list
            }
            Some(Overlay::Profiles { .. }) => {
                let mut list = picker_commands();
                list.push(interrupt_command());
                list
            }
            None => {
                let pane = self.pane_ref(self.pane);
                let mut list = pane.commands();
                if pane.allows_global() {
                    list.extend(global_commands());
                } else {
                    list.push(interrupt_command());
                }
                list
            }
        }
    }

    /// A key read-only mode took away: which, so the operator is told
    /// rather than nothing happening.
    pub(super) fn read_only_hidden(&self, key: &KeyEvent) -> Option<&'static str> {
        if !self.config.read_only {
            return None;
        }
        self.all_commands()
            .into_iter()
            .find(|info| info.mutating && info.bindings.iter().any(|k| k.matches(key)))
            .map(|info| info.description)
    }

    /// What `?` shows: the current pane's commands, then the global ones,
    /// through the same read-only filter as the keys.
    pub(crate) fn help_sections(&self) -> Vec<CommandSection<Command>> {
        let mut sections = self.pane_ref(self.pane).help_sections();
        sections.push(CommandSection {
            title: "Global",
            commands: global_commands(),
        });
        sections.push(CommandSection {
            title: "Command line (:)",
            commands: command_line::help_entries(Command::OpenCommandLine),
        });
        sections
            .into_iter()
            .map(|section| CommandSection {
                title: section.title,
                commands: permitted(section.commands, self.config.read_only)
                    .into_iter()
                    .filter(|command| command.in_help)
                    .collect(),
            })
            .filter(|section| !section.commands.is_empty())
            .collect()
    }
}
