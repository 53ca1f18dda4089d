//! The Inbox pane's command lists, one per mode. Keys, the footer and the
//! help overlay all come from these. The receiver is local and nothing
//! here changes the platform, so `--read-only` leaves the pane as it is.

use ratatui::crossterm::event::KeyCode;

use super::InboxCommand;
use crate::tui::keymap::{Command, CommandInfo, ENTER, ESC, Key, keys, movement};

use Command::Inbox;
use InboxCommand as I;

/// `s`: the selected signed request in the Signatures pane.
fn check_signature() -> CommandInfo {
    CommandInfo::new(
        "s",
        "check this request's signature in the Signatures pane",
        keys![Key::char('s')],
        Inbox(I::CheckSignature),
    )
    .quick_as("check signature")
}

/// The table's commands: moving and opening only with a selected row,
/// the signature check only on a signed one.
pub(super) fn table_commands(selection: bool, signed: bool) -> Vec<CommandInfo> {
    let mut commands = if selection {
        movement(|m| Inbox(I::Move(m)))
    } else {
        Vec::new()
    };
    if selection {
        commands.push(
            CommandInfo::new("enter", "request details", ENTER, Inbox(I::Open)).quick_as("details"),
        );
    }
    if signed {
        commands.push(check_signature());
    }
    commands.push(
        CommandInfo::new(
            "l",
            "start (or restart) the local receiver",
            keys![Key::char('l')],
            Inbox(I::Listen),
        )
        .quick_as("listen"),
    );
    if selection {
        commands.push(
            CommandInfo::new(
                "x",
                "clear the list",
                keys![Key::char('x')],
                Inbox(I::Clear),
            )
            .quick_as("clear"),
        );
    }
    commands
}

pub(super) fn detail_commands(signed: bool) -> Vec<CommandInfo> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the list",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            Inbox(I::Back),
        )
        .quick_as("back"),
    ];
    commands.extend(movement(|m| Inbox(I::Move(m))).into_iter().take(2));
    if signed {
        commands.push(check_signature());
    }
    commands
}

/// The start form's keys (everything else is typed into it).
pub(super) fn form_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new("enter", "start receiving", ENTER, Inbox(I::FormSubmit)).quick_as("start"),
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            Inbox(I::NextField),
        )
        .quick_as("next"),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            Inbox(I::PrevField),
        ),
        CommandInfo::new("esc", "cancel", ESC, Inbox(I::FormCancel)).quick(),
    ]
}
