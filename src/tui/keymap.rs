//! Keys, commands and help from one list (the gitui way).
//!
//! Owns: [`Key`] (a binding), [`CommandInfo`] (a binding + what it does +
//! its help text + whether the footer shows it + whether it changes
//! anything on the platform), and [`permitted`], the one place
//! `--read-only` removes mutating commands. Every key the console answers
//! is found by [`find`] in the same list the help overlay and the footer
//! are drawn from, so a key cannot exist without its help line.
//!
//! Generic over the command type: each pane declares its commands in its
//! own type, and `command.rs` holds the console's global ones, so this
//! module knows no pane. It does not own what a command does (that is
//! `update` in `app.rs` and the panes).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

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
pub(crate) struct Key {
    pub(crate) code: KeyCode,
    pub(crate) modifiers: KeyModifiers,
}

impl Key {
    pub(crate) const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    pub(crate) const fn char(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    pub(crate) const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    /// Whether a key press is this binding. Shift is ignored for
    /// characters (terminals disagree on reporting it) and for back-tab.
    pub(crate) fn matches(&self, event: &KeyEvent) -> bool {
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
pub(crate) enum Move {
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
    pub(crate) fn apply(self, selected: usize, len: usize, page: usize) -> usize {
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
pub(crate) fn movement<C: Copy>(command: fn(Move) -> C) -> Vec<CommandInfo<C>> {
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
pub(crate) const UP: &[Key] = &[Key::plain(KeyCode::Up), Key::char('k')];
pub(crate) const DOWN: &[Key] = &[Key::plain(KeyCode::Down), Key::char('j')];
pub(crate) const ENTER: &[Key] = &[Key::plain(KeyCode::Enter)];
pub(crate) const ESC: &[Key] = &[Key::plain(KeyCode::Esc)];

/// One command as help, footer and key handling all see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommandInfo<C> {
    /// The keys as help shows them, e.g. `"shift-tab"`, `"1–5"`.
    pub(crate) keys: &'static str,
    pub(crate) description: &'static str,
    /// Shown in the footer.
    pub(crate) quick: bool,
    /// The footer's shorter label, when the description is long.
    pub(crate) footer: Option<&'static str>,
    /// Changes something on the platform: hidden by `--read-only`.
    pub(crate) mutating: bool,
    /// Listed in help (false for the extra bindings of a grouped entry).
    pub(crate) in_help: bool,
    pub(crate) bindings: &'static [Key],
    pub(crate) command: C,
}

impl<C: Copy> CommandInfo<C> {
    pub(crate) const fn new(
        keys: &'static str,
        description: &'static str,
        bindings: &'static [Key],
        command: C,
    ) -> CommandInfo<C> {
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
    pub(crate) const fn quick(mut self) -> CommandInfo<C> {
        self.quick = true;
        self
    }

    /// Shown in the footer as `label`.
    pub(crate) const fn quick_as(mut self, label: &'static str) -> CommandInfo<C> {
        self.quick = true;
        self.footer = Some(label);
        self
    }

    /// Changes the platform: gone in `--read-only`.
    pub(crate) const fn mutating(mut self) -> CommandInfo<C> {
        self.mutating = true;
        self
    }

    /// A binding of a group whose first entry carries the help line.
    pub(crate) const fn hidden(mut self) -> CommandInfo<C> {
        self.in_help = false;
        self
    }
}

impl<C> CommandInfo<C> {
    /// The footer's label.
    pub(crate) fn footer_label(&self) -> &'static str {
        match self.footer {
            Some(label) => label,
            None => self.description,
        }
    }

    /// The same entry running `into(command)`: how a pane's own command
    /// becomes one of the console's.
    pub(crate) fn map<D>(self, into: impl FnOnce(C) -> D) -> CommandInfo<D> {
        CommandInfo {
            keys: self.keys,
            description: self.description,
            quick: self.quick,
            footer: self.footer,
            mutating: self.mutating,
            in_help: self.in_help,
            bindings: self.bindings,
            command: into(self.command),
        }
    }
}

/// A titled group of commands for the help overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommandSection<C> {
    pub(crate) title: &'static str,
    pub(crate) commands: Vec<CommandInfo<C>>,
}

impl<C: Copy> CommandSection<C> {
    /// The same section with every command mapped by `into`.
    pub(crate) fn map<D>(self, into: fn(C) -> D) -> CommandSection<D> {
        CommandSection {
            title: self.title,
            commands: self
                .commands
                .into_iter()
                .map(|info| info.map(into))
                .collect(),
        }
    }
}

/// The one place read-only mode acts: mutating commands are dropped, so
/// their keys do nothing and their help lines disappear together.
pub(crate) fn permitted<C>(commands: Vec<CommandInfo<C>>, read_only: bool) -> Vec<CommandInfo<C>> {
    commands
        .into_iter()
        .filter(|command| !(read_only && command.mutating))
        .collect()
}

/// The command a key press runs, from a list of commands.
pub(crate) fn find<C: Copy>(commands: &[CommandInfo<C>], event: &KeyEvent) -> Option<C> {
    commands
        .iter()
        .find(|info| info.bindings.iter().any(|key| key.matches(event)))
        .map(|info| info.command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Test {
        Change,
        Help,
    }

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
            CommandInfo::new("x", "change", keys![Key::char('x')], Test::Change).mutating(),
            CommandInfo::new("?", "help", keys![Key::char('?')], Test::Help),
        ];
        let kept = permitted(list.clone(), true);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            find(&kept, &press(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(permitted(list, false).len(), 2);
    }
}
