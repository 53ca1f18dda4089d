//! The Signatures pane's command lists: browsing (the global keys work)
//! and editing (keys go to the form). Nothing here changes the platform,
//! so `--read-only` leaves the pane as it is (asking a receiver sends it
//! duplicates of an event it was sent, which it deduplicates).

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

/// `p`: for a delivery refused with 401.
fn ask_command() -> CommandInfo<SigsCommand> {
    CommandInfo::new(
        "p",
        "refused with 401: ask the receiver which secret it holds (sends it the event signed \
         with the secret typed, then a wrong one)",
        keys![Key::char('p')],
        S::AskReceiver,
    )
    .quick_as("ask receiver")
}

/// `refused`: a delivery refused with 401 is in the form.
pub(super) fn browse_commands(refused: bool) -> Vec<CommandInfo<SigsCommand>> {
    let mut commands = Vec::new();
    if refused {
        commands.push(ask_command());
    }
    commands.extend([
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
    ]);
    commands.extend(scrolling().into_iter().map(CommandInfo::hidden));
    commands
}

/// `refused`: a delivery refused with 401 is in the form; `asks`: with no
/// header, so `enter` asks its receiver.
pub(super) fn edit_commands(refused: bool, asks: bool) -> Vec<CommandInfo<SigsCommand>> {
    let enter = if asks {
        CommandInfo::new(
            "enter",
            "ask the receiver which secret it holds (refused with 401)",
            keys![Key::plain(KeyCode::Enter)],
            S::Check,
        )
        .quick_as("ask receiver")
    } else {
        CommandInfo::new(
            "enter",
            "check (reads a file:PATH body)",
            keys![Key::plain(KeyCode::Enter)],
            S::Check,
        )
        .quick_as("check")
    };
    let mut commands = vec![
        enter,
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
    if refused && !asks {
        commands.push(
            CommandInfo::new(
                "ctrl-p",
                "ask the receiver which secret it holds (refused with 401)",
                keys![Key::ctrl('p')],
                S::AskReceiver,
            )
            .quick_as("ask receiver"),
        );
    }
    commands.extend(scrolling());
    commands
}
