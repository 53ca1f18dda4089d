//! The console's commands: [`Command`], everything a key or the `:` prompt
//! can ask for (the global ones, and each pane's own command wrapped), and
//! the lists of the global keys, the help overlay's, the `:` prompt's and
//! a yes/no question's.
//!
//! Panes declare their commands in their own types (`HealthCommand`, …);
//! [`Command`] has a variant wrapping each (from the panes' registry, with
//! a `From` for each), so `keymap.rs` knows no pane.

use ratatui::crossterm::event::KeyCode;

use super::context::CtxCommand;
use crate::tui::kernel::Pane;
use crate::tui::keymap::{CommandInfo, Key, keys};
use crate::tui::panes::{PaneId, registry};

/// [`Command`], with a variant per pane from the registry.
macro_rules! command_enum {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// Everything the console can be asked to do by a key or the `:`
        /// prompt.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Command {
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
            $(
                #[doc = concat!("A command of the ", stringify!($id), " pane.")]
                $name(<$ty as Pane>::Command),
            )*
        }

        $(
            impl From<<$ty as Pane>::Command> for Command {
                fn from(command: <$ty as Pane>::Command) -> Command {
                    Command::$name(command)
                }
            }
        )*
    };
}
registry!(command_enum);

const TAB: &[Key] = &[Key::plain(KeyCode::Tab)];
const BACKTAB: &[Key] = &[Key::plain(KeyCode::BackTab)];

/// Commands available wherever no text field has the keyboard.
pub(crate) fn global_commands() -> Vec<CommandInfo<Command>> {
    use Command::*;
    let mut list = vec![
        CommandInfo::new("?", "help: every key", keys![Key::char('?')], Help).quick_as("help"),
        CommandInfo::new("tab", "next pane", TAB, NextPane),
        CommandInfo::new("shift-tab", "previous pane", BACKTAB, PrevPane),
    ];
    list.extend(go_to_commands());
    list.extend([
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
    ]);
    list
}

/// `1`, `2`, …: a key per pane, in tab order (the first nine); help
/// shows them as one line, `1–8`.
fn go_to_commands() -> impl Iterator<Item = CommandInfo<Command>> {
    static DIGITS: [Key; 9] = [
        Key::char('1'),
        Key::char('2'),
        Key::char('3'),
        Key::char('4'),
        Key::char('5'),
        Key::char('6'),
        Key::char('7'),
        Key::char('8'),
        Key::char('9'),
    ];
    const LABELS: [&str; 9] = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];
    const RANGES: [&str; 9] = ["1", "1–2", "1–3", "1–4", "1–5", "1–6", "1–7", "1–8", "1–9"];
    let last = PaneId::ALL.len().clamp(1, DIGITS.len()) - 1;
    PaneId::ALL
        .into_iter()
        .zip(DIGITS.iter().zip(LABELS))
        .enumerate()
        .map(move |(index, (pane, (key, label)))| {
            let keys = std::slice::from_ref(key);
            if index == 0 {
                CommandInfo::new(RANGES[last], "go to pane", keys, Command::GoTo(pane))
            } else {
                CommandInfo::new(label, "", keys, Command::GoTo(pane)).hidden()
            }
        })
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
