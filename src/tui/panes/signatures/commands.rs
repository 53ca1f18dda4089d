//! The Signatures pane's command lists: browsing (the global keys work)
//! and editing (keys go to the form). Nothing here changes the platform,
//! so `--read-only` leaves the pane as it is.

use ratatui::crossterm::event::KeyCode;

use super::SigsCommand;
use crate::tui::keymap::{CommandInfo, Key, keys};

use SigsCommand as S;

fn scrolling() -> Vec<CommandInfo<SigsCommand>> {
    vec![
        CommandInfo::new(
            "pgup pgdn",
            "scroll the check",
            keys![Key::plain(KeyCode::PageUp)],
            S::ScrollUp,
        ),
        CommandInfo::new("", "", keys![Key::plain(KeyCode::PageDown)], S::ScrollDown).hidden(),
    ]
}

pub(super) fn browse_commands() -> Vec<CommandInfo<SigsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "enter / i",
            "edit the form",
            keys![Key::plain(KeyCode::Enter), Key::char('i'), Key::char('e')],
            S::Edit,
        )
        .quick_as("edit"),
        CommandInfo::new("x", "clear the form", keys![Key::char('x')], S::Clear).quick_as("clear"),
        CommandInfo::new(
            "↑↓ / j k",
            "scroll the check",
            keys![Key::plain(KeyCode::Up), Key::char('k')],
            S::ScrollUp,
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::plain(KeyCode::Down), Key::char('j')],
            S::ScrollDown,
        )
        .hidden(),
    ];
    commands.extend(scrolling().into_iter().map(CommandInfo::hidden));
    commands
}

pub(super) fn edit_commands() -> Vec<CommandInfo<SigsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "enter",
            "check (reads a file:PATH body)",
            keys![Key::plain(KeyCode::Enter)],
            S::Check,
        )
        .quick_as("check"),
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            S::NextField,
        )
        .quick_as("next"),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            S::PrevField,
        ),
        CommandInfo::new(
            "esc",
            "stop editing (the pane keys work again)",
            keys![Key::plain(KeyCode::Esc)],
            S::Done,
        )
        .quick_as("done"),
    ];
    commands.extend(scrolling());
    commands
}
