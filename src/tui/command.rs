//! The console's commands: [`Command`], everything a key or the `:` prompt
//! can ask for (the global ones, and each pane's own command wrapped), and
//! the lists of the global keys, the help overlay's, the `:` prompt's and
//! a yes/no question's.
//!
//! Panes declare their commands in their own types (`HealthCommand`, …);
//! `app.rs` wraps them into [`Command`] with [`CommandInfo::map`], so
//! `keymap.rs` knows no pane.

use ratatui::crossterm::event::KeyCode;

use super::context::CtxCommand;
use super::keymap::{CommandInfo, Key, keys};
use super::panes::PaneId;
use super::panes::deliveries::DlvCommand;
use super::panes::events::EventsCommand;
use super::panes::health::HealthCommand;
use super::panes::inbox::InboxCommand;
use super::panes::jobs::JobsCommand;
use super::panes::probe::ProbeCommand;
use super::panes::signatures::SigsCommand;
use super::panes::subscriptions::SubsCommand;

/// Everything the console can be asked to do by a key or the `:` prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Open the help overlay.
    Help,
    /// Close the top overlay (help, prompt).
    Close,
    NextPane,
    PrevPane,
    GoTo(PaneId),
    /// Open the `:` prompt.
    OpenCommandLine,
    /// Run what was typed at the `:` prompt.
    RunCommandLine,
    /// `tab` at the `:` prompt: complete a command or profile name.
    CompleteCommandLine,
    Refresh,
    /// `q`: quit, asking first when a form holds unsaved input.
    Quit,
    /// Ctrl-C: like `q`, from anywhere (also while typing).
    Interrupt,
    /// Answer the quit / discard question.
    ConfirmYes,
    ConfirmNo,
    ScrollUp,
    ScrollDown,
    /// The `:ctx` picker's keys.
    Ctx(CtxCommand),
    Subs(SubsCommand),
    Dlv(DlvCommand),
    Jobs(JobsCommand),
    Sigs(SigsCommand),
    Probe(ProbeCommand),
    Inbox(InboxCommand),
    Health(HealthCommand),
    Events(EventsCommand),
}

const TAB: &[Key] = &[Key::plain(KeyCode::Tab)];
const BACKTAB: &[Key] = &[Key::plain(KeyCode::BackTab)];

/// Commands available wherever no text field has the keyboard.
pub(crate) fn global_commands() -> Vec<CommandInfo<Command>> {
    use Command::*;
    vec![
        CommandInfo::new("?", "help: every key", keys![Key::char('?')], Help).quick_as("help"),
        CommandInfo::new("tab", "next pane", TAB, NextPane),
        CommandInfo::new("shift-tab", "previous pane", BACKTAB, PrevPane),
        CommandInfo::new(
            "1–8",
            "go to pane",
            keys![Key::char('1')],
            GoTo(PaneId::Health),
        ),
        CommandInfo::new("2", "", keys![Key::char('2')], GoTo(PaneId::Subscriptions)).hidden(),
        CommandInfo::new("3", "", keys![Key::char('3')], GoTo(PaneId::Deliveries)).hidden(),
        CommandInfo::new("4", "", keys![Key::char('4')], GoTo(PaneId::Jobs)).hidden(),
        CommandInfo::new("5", "", keys![Key::char('5')], GoTo(PaneId::Signatures)).hidden(),
        CommandInfo::new("6", "", keys![Key::char('6')], GoTo(PaneId::Probe)).hidden(),
        CommandInfo::new("7", "", keys![Key::char('7')], GoTo(PaneId::Inbox)).hidden(),
        CommandInfo::new("8", "", keys![Key::char('8')], GoTo(PaneId::Events)).hidden(),
        CommandInfo::new(
            ":",
            "command line (:q, :subs, :2 …)",
            keys![Key::char(':')],
            OpenCommandLine,
        ),
        CommandInfo::new("r", "refresh", keys![Key::char('r')], Refresh),
        CommandInfo::new("q", "quit", keys![Key::char('q')], Quit).quick(),
        CommandInfo::new(
            "ctrl-c",
            "quit from anywhere",
            keys![Key::ctrl('c')],
            Interrupt,
        ),
    ]
}

/// Ctrl-C, which works even while a text field has the keyboard.
pub(crate) fn interrupt_command() -> CommandInfo<Command> {
    CommandInfo::new(
        "ctrl-c",
        "quit from anywhere",
        keys![Key::ctrl('c')],
        Command::Interrupt,
    )
}

/// The help overlay's own keys.
pub(crate) fn help_commands() -> Vec<CommandInfo<Command>> {
    use Command::*;
    vec![
        CommandInfo::new(
            "esc / ?",
            "close help",
            keys![Key::plain(KeyCode::Esc), Key::char('?'), Key::char('q')],
            Close,
        )
        .quick_as("close"),
        CommandInfo::new(
            "↑↓ / j k",
            "scroll",
            keys![Key::plain(KeyCode::Up), Key::char('k')],
            ScrollUp,
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::plain(KeyCode::Down), Key::char('j')],
            ScrollDown,
        )
        .hidden(),
    ]
}

/// The `:` prompt's keys (everything else is typed into it).
pub(crate) fn command_line_commands() -> Vec<CommandInfo<Command>> {
    vec![
        CommandInfo::new(
            "enter",
            "run",
            keys![Key::plain(KeyCode::Enter)],
            Command::RunCommandLine,
        ),
        CommandInfo::new(
            "esc",
            "cancel",
            keys![Key::plain(KeyCode::Esc)],
            Command::Close,
        ),
        CommandInfo::new(
            "tab",
            "complete a command, or a profile after :ctx",
            TAB,
            Command::CompleteCommandLine,
        ),
    ]
}

/// The keys of a yes/no question.
pub(crate) fn confirm_commands() -> Vec<CommandInfo<Command>> {
    vec![
        CommandInfo::new(
            "y",
            "yes",
            keys![Key::char('y'), Key::plain(KeyCode::Enter)],
            Command::ConfirmYes,
        ),
        CommandInfo::new(
            "n / esc",
            "no",
            keys![Key::char('n'), Key::plain(KeyCode::Esc)],
            Command::ConfirmNo,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_global_key_is_distinct() {
        let commands = global_commands();
        for (i, a) in commands.iter().enumerate() {
            for b in &commands[i + 1..] {
                for key in a.bindings {
                    assert!(
                        !b.bindings.contains(key),
                        "{} and {} share a key",
                        a.keys,
                        b.keys
                    );
                }
            }
        }
    }
}
