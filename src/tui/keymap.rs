//! Keys, commands and help from one list (the gitui way).
//!
//! Owns: [`Key`] (a binding), [`CommandInfo`] (a binding + what it does +
//! its help text + whether the footer shows it + whether it changes
//! anything on the platform), the global commands, and [`permitted`], the
//! one place `--read-only` removes mutating commands. Every key the console
//! answers is found by [`find`] in the same list the help overlay and the
//! footer are drawn from, so a key cannot exist without its help line.
//!
//! It does not own what a command does (that is `update` in `app.rs` and
//! the panes).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::panes::PaneId;
use super::panes::deliveries::DlvCommand;
use super::panes::health::HealthCommand;
use super::panes::inbox::InboxCommand;
use super::panes::jobs::JobsCommand;
use super::panes::probe::ProbeCommand;
use super::panes::signatures::SigsCommand;
use super::panes::subscriptions::SubsCommand;

/// A `&'static [Key]` from key expressions (const-evaluated).
macro_rules! keys {
    ($($key:expr),+ $(,)?) => {{
        const KEYS: &[$crate::tui::keymap::Key] = &[$($key),+];
        KEYS
    }};
}
pub(crate) use keys;

/// One key binding: a key code and the modifiers that must be held.
/// For characters, Shift is implied by the character itself (`R`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl Key {
    pub const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    pub const fn char(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    pub const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    /// Whether a key press is this binding. Shift is ignored for
    /// characters (terminals disagree on reporting it) and for back-tab.
    pub fn matches(&self, event: &KeyEvent) -> bool {
        if event.kind == KeyEventKind::Release {
            return false;
        }
        let ignore_shift = matches!(event.code, KeyCode::Char(_) | KeyCode::BackTab);
        let mut held = event.modifiers;
        if ignore_shift {
            held.remove(KeyModifiers::SHIFT);
        }
        let code_matches = match (self.code, event.code) {
            (KeyCode::Char(want), KeyCode::Char(got)) => {
                want == got
                    || (self.modifiers.contains(KeyModifiers::CONTROL)
                        && want.eq_ignore_ascii_case(&got))
            }
            (want, got) => want == got,
        };
        code_matches && held == self.modifiers
    }
}

/// A movement through a table's rows, shared by every pane with a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
}

impl Move {
    /// The row selected after this movement from `selected`, in a table of
    /// `len` rows showing `page` of them.
    pub fn apply(self, selected: usize, len: usize, page: usize) -> usize {
        let last = len.saturating_sub(1);
        let page = isize::try_from(page.max(1)).unwrap_or(10);
        let by = |delta: isize| selected.saturating_add_signed(delta).min(last);
        match self {
            Move::Up => by(-1),
            Move::Down => by(1),
            Move::PageUp => by(-page),
            Move::PageDown => by(page),
            Move::Top => 0,
            Move::Bottom => last,
        }
    }
}

/// The table-movement commands (↑↓ / j k, pgup pgdn, g / G), each pane's
/// command built from the movement by `command`.
pub fn movement(command: fn(Move) -> Command) -> Vec<CommandInfo> {
    vec![
        CommandInfo::new("↑↓ / j k", "move", UP, command(Move::Up)),
        CommandInfo::new("", "", DOWN, command(Move::Down)).hidden(),
        CommandInfo::new(
            "pgup pgdn",
            "page up / down",
            keys![Key::plain(KeyCode::PageUp)],
            command(Move::PageUp),
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::plain(KeyCode::PageDown)],
            command(Move::PageDown),
        )
        .hidden(),
        CommandInfo::new(
            "g / G",
            "first / last",
            keys![Key::char('g'), Key::plain(KeyCode::Home)],
            command(Move::Top),
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::char('G'), Key::plain(KeyCode::End)],
            command(Move::Bottom),
        )
        .hidden(),
    ]
}

/// `↑ / k` and `↓ / j`.
pub const UP: &[Key] = &[Key::plain(KeyCode::Up), Key::char('k')];
pub const DOWN: &[Key] = &[Key::plain(KeyCode::Down), Key::char('j')];
pub const ENTER: &[Key] = &[Key::plain(KeyCode::Enter)];
pub const ESC: &[Key] = &[Key::plain(KeyCode::Esc)];

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
    CommandLine,
    /// Run what was typed at the `:` prompt.
    RunCommandLine,
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
    Subs(SubsCommand),
    Dlv(DlvCommand),
    Jobs(JobsCommand),
    Sigs(SigsCommand),
    Probe(ProbeCommand),
    Inbox(InboxCommand),
    Health(HealthCommand),
}

/// One command as help, footer and key handling all see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandInfo {
    /// The keys as help shows them, e.g. `"shift-tab"`, `"1–5"`.
    pub keys: &'static str,
    pub description: &'static str,
    /// Shown in the footer.
    pub quick: bool,
    /// The footer's shorter label, when the description is long.
    pub footer: Option<&'static str>,
    /// Changes something on the platform: hidden by `--read-only`.
    pub mutating: bool,
    /// Listed in help (false for the extra bindings of a grouped entry).
    pub in_help: bool,
    pub bindings: &'static [Key],
    pub command: Command,
}

impl CommandInfo {
    pub const fn new(
        keys: &'static str,
        description: &'static str,
        bindings: &'static [Key],
        command: Command,
    ) -> CommandInfo {
        CommandInfo {
            keys,
            description,
            quick: false,
            footer: None,
            mutating: false,
            in_help: true,
            bindings,
            command,
        }
    }

    /// Also shown in the footer.
    pub const fn quick(mut self) -> CommandInfo {
        self.quick = true;
        self
    }

    /// Shown in the footer as `label`.
    pub const fn quick_as(mut self, label: &'static str) -> CommandInfo {
        self.quick = true;
        self.footer = Some(label);
        self
    }

    /// The footer's label.
    pub fn footer_label(&self) -> &'static str {
        match self.footer {
            Some(label) => label,
            None => self.description,
        }
    }

    /// Changes the platform: gone in `--read-only`.
    pub const fn mutating(mut self) -> CommandInfo {
        self.mutating = true;
        self
    }

    /// A binding of a group whose first entry carries the help line.
    pub const fn hidden(mut self) -> CommandInfo {
        self.in_help = false;
        self
    }
}

/// A titled group of commands for the help overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSection {
    pub title: &'static str,
    pub commands: Vec<CommandInfo>,
}

/// The one place read-only mode acts: mutating commands are dropped, so
/// their keys do nothing and their help lines disappear together.
pub fn permitted(commands: Vec<CommandInfo>, read_only: bool) -> Vec<CommandInfo> {
    commands
        .into_iter()
        .filter(|command| !(read_only && command.mutating))
        .collect()
}

/// The command a key press runs, from a list of commands.
pub fn find(commands: &[CommandInfo], event: &KeyEvent) -> Option<Command> {
    commands
        .iter()
        .find(|info| info.bindings.iter().any(|key| key.matches(event)))
        .map(|info| info.command)
}

const TAB: &[Key] = &[Key::plain(KeyCode::Tab)];
const BACKTAB: &[Key] = &[Key::plain(KeyCode::BackTab)];

/// Commands available wherever no text field has the keyboard.
pub fn global_commands() -> Vec<CommandInfo> {
    use Command::*;
    vec![
        CommandInfo::new("?", "help: every key", keys![Key::char('?')], Help).quick_as("help"),
        CommandInfo::new("tab", "next pane", TAB, NextPane),
        CommandInfo::new("shift-tab", "previous pane", BACKTAB, PrevPane),
        CommandInfo::new(
            "1–7",
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
        CommandInfo::new(
            ":",
            "command line (:q, :subs, :2 …)",
            keys![Key::char(':')],
            CommandLine,
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
pub fn interrupt_command() -> CommandInfo {
    CommandInfo::new(
        "ctrl-c",
        "quit from anywhere",
        keys![Key::ctrl('c')],
        Command::Interrupt,
    )
}

/// The help overlay's own keys.
pub fn help_commands() -> Vec<CommandInfo> {
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
pub fn command_line_commands() -> Vec<CommandInfo> {
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
    ]
}

/// The keys of a yes/no question.
pub fn confirm_commands() -> Vec<CommandInfo> {
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

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn characters_match_with_or_without_a_reported_shift() {
        let big_r = Key::char('R');
        assert!(big_r.matches(&press(KeyCode::Char('R'), KeyModifiers::SHIFT)));
        assert!(big_r.matches(&press(KeyCode::Char('R'), KeyModifiers::NONE)));
        assert!(!big_r.matches(&press(KeyCode::Char('r'), KeyModifiers::NONE)));
        assert!(!Key::char('c').matches(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        assert!(Key::ctrl('c').matches(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        assert!(
            Key::plain(KeyCode::BackTab).matches(&press(KeyCode::BackTab, KeyModifiers::SHIFT))
        );
    }

    #[test]
    fn read_only_drops_mutating_commands_from_keys_and_help() {
        let list = vec![
            CommandInfo::new("x", "change", keys![Key::char('x')], Command::Refresh).mutating(),
            CommandInfo::new("?", "help", keys![Key::char('?')], Command::Help),
        ];
        let kept = permitted(list.clone(), true);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            find(&kept, &press(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(permitted(list, false).len(), 2);
    }

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
