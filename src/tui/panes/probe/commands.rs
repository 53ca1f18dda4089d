//! The Probe pane's command lists: browsing (region picks, scrolling; the
//! global keys work) and editing (keys go to the file or instruction
//! field). A probe changes nothing on the platform, so `--read-only`
//! leaves the pane as it is.

use ratatui::crossterm::event::KeyCode;

use super::ProbeCommand;
use crate::tui::keymap::{CommandInfo, Key, keys};

use ProbeCommand as P;

pub(super) fn browse_commands() -> Vec<CommandInfo<ProbeCommand>> {
    vec![
        CommandInfo::new(
            "enter / p",
            "probe: dictation and sync in every checked region",
            keys![Key::plain(KeyCode::Enter), Key::char('p')],
            P::Run,
        )
        .quick_as("probe"),
        CommandInfo::new(
            "e / i",
            "edit the file and instruction",
            keys![Key::char('e'), Key::char('i')],
            P::Edit,
        )
        .quick_as("edit"),
        CommandInfo::new(
            "← → / h l",
            "pick a region",
            keys![Key::plain(KeyCode::Left), Key::char('h')],
            P::PrevRegion,
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::plain(KeyCode::Right), Key::char('l')],
            P::NextRegion,
        )
        .hidden(),
        CommandInfo::new(
            "space",
            "check / uncheck the region (one stays checked)",
            keys![Key::char(' ')],
            P::ToggleRegion,
        )
        .quick_as("region"),
        CommandInfo::new(
            "a",
            "check every region",
            keys![Key::char('a')],
            P::AllRegions,
        ),
        CommandInfo::new(
            "↑↓ / j k",
            "scroll the results",
            keys![Key::plain(KeyCode::Up), Key::char('k')],
            P::ScrollUp,
        ),
        CommandInfo::new(
            "",
            "",
            keys![Key::plain(KeyCode::Down), Key::char('j')],
            P::ScrollDown,
        )
        .hidden(),
        CommandInfo::new("", "", keys![Key::plain(KeyCode::PageUp)], P::PageUp).hidden(),
        CommandInfo::new("", "", keys![Key::plain(KeyCode::PageDown)], P::PageDown).hidden(),
    ]
}

pub(super) fn edit_commands() -> Vec<CommandInfo<ProbeCommand>> {
    vec![
        CommandInfo::new(
            "enter",
            "probe with what is typed",
            keys![Key::plain(KeyCode::Enter)],
            P::Run,
        )
        .quick_as("probe"),
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            P::NextField,
        )
        .quick_as("next"),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            P::NextField,
        ),
        CommandInfo::new(
            "esc",
            "stop editing (the pane keys work again)",
            keys![Key::plain(KeyCode::Esc)],
            P::Done,
        )
        .quick_as("done"),
    ]
}
