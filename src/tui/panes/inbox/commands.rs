//! The Inbox pane's command lists, one per mode. Keys, the footer and the
//! help overlay all come from these. The receiver is local and nothing
//! here changes the platform, so `--read-only` leaves the pane as it is.

use ratatui::crossterm::event::KeyCode;

use super::InboxCommand;
use super::table::TABLE;
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};
use crate::tui::widgets::table_view::{self, wrapped};

use InboxCommand as I;

/// `s`: the selected signed request in the Signatures pane.
fn check_signature() -> CommandInfo<InboxCommand> {
    CommandInfo::new(
        "s",
        "check this request's signature in the Signatures pane",
        keys![Key::char('s')],
        I::CheckSignature,
    )
    .quick_as("check signature")
}

/// The table's commands: moving and opening only with a selected row,
/// the signature check only on a signed one, `esc` only with a filter in
/// force (`/`, `S`: every table's).
pub(super) fn table_commands(
    selection: bool,
    signed: bool,
    filtered: bool,
) -> Vec<CommandInfo<InboxCommand>> {
    let mut commands = if selection {
        movement(I::Move)
    } else {
        Vec::new()
    };
    if selection {
        commands
            .push(CommandInfo::new("enter", "request details", ENTER, I::Open).quick_as("details"));
    }
    if signed {
        commands.push(check_signature());
    }
    commands.push(
        CommandInfo::new(
            "l",
            "start (or restart) the local receiver",
            keys![Key::char('l')],
            I::Listen,
        )
        .quick_as("listen"),
    );
    if selection {
        commands.push(
            CommandInfo::new("x", "clear the list", keys![Key::char('x')], I::Clear)
                .quick_as("clear"),
        );
    }
    commands.extend(wrapped(
        table_view::table_commands(TABLE.filter_help, filtered),
        I::Table,
    ));
    commands
}

pub(super) fn detail_commands(signed: bool) -> Vec<CommandInfo<InboxCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the list",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            I::Back,
        )
        .quick_as("back"),
    ];
    commands.extend(movement(I::Move).into_iter().take(2));
    if signed {
        commands.push(check_signature());
    }
    commands.push(CommandInfo::new(
        "n",
        "show / mask secret headers and personal data",
        keys![Key::char('n')],
        I::Reveal,
    ));
    commands
}

/// The start form's keys (everything else is typed into it).
pub(super) fn form_commands() -> Vec<CommandInfo<InboxCommand>> {
    vec![
        CommandInfo::new("enter", "start receiving", ENTER, I::FormSubmit).quick_as("start"),
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            I::NextField,
        )
        .quick_as("next"),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            I::PrevField,
        ),
        CommandInfo::new("esc", "cancel", ESC, I::FormCancel).quick(),
    ]
}
