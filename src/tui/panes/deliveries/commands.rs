//! The Deliveries pane's command lists, one per mode. Keys, the footer and
//! the help overlay all come from these. Nothing here changes the
//! platform, so `--read-only` leaves the pane as it is.

use ratatui::crossterm::event::KeyCode;

use super::DlvCommand;
use super::table::TABLE;
use crate::tui::keymap::{CommandInfo, DOWN, ENTER, ESC, Key, Move, UP, keys, movement};
use crate::tui::widgets::table_view::{self, wrapped};

use DlvCommand as D;

/// The table's commands: moving and opening exist only with a selected
/// row, `esc` only with a filter in force, the latest toggle only once an
/// id is loaded, the signature check only on a 401 failure, copying only
/// with a link and revealing only with a caller's number; with no row,
/// `enter` opens the id prompt too.
pub(super) fn table_commands(
    selection: bool,
    filtered: bool,
    loaded: bool,
    rejected: bool,
    links: bool,
    number: bool,
) -> Vec<CommandInfo<DlvCommand>> {
    let mut commands = if selection {
        movement(D::Move)
    } else {
        Vec::new()
    };
    if selection {
        commands
            .push(CommandInfo::new("enter", "attempt details", ENTER, D::Open).quick_as("details"));
    }
    commands.push(
        CommandInfo::new(
            "i",
            "enter a session or call id (↑↓ there picks a recent or known one)",
            keys![Key::char('i')],
            D::Prompt,
        )
        .quick_as("id"),
    );
    if !selection {
        commands.push(CommandInfo::new("enter", "", ENTER, D::Prompt).hidden());
    }
    if rejected {
        commands.push(check_signature_command());
    }
    if loaded {
        commands.push(
            CommandInfo::new(
                "l",
                "all attempts / latest per subscription",
                keys![Key::char('l')],
                D::ToggleLatest,
            )
            .quick_as("latest"),
        );
    }
    if links {
        commands.push(
            CommandInfo::new(
                "c",
                "copy the session's next link (recording, transcript) with OSC 52",
                keys![Key::char('c')],
                D::CopyLink,
            )
            .quick_as("copy link"),
        );
    }
    if number {
        commands.push(CommandInfo::new(
            "n",
            "show / mask the caller's number (personal data)",
            keys![Key::char('n')],
            D::RevealNumber,
        ));
    }
    commands.extend(wrapped(
        table_view::table_commands(TABLE.filter_help, filtered),
        D::Table,
    ));
    commands
}

/// `s` on a 401 failure: open it in the Signatures pane.
fn check_signature_command() -> CommandInfo<DlvCommand> {
    CommandInfo::new(
        "s",
        "check this 401's signature in the Signatures pane",
        keys![Key::char('s')],
        D::CheckSignature,
    )
    .quick_as("check signature")
}

pub(super) fn detail_commands(rejected: bool) -> Vec<CommandInfo<DlvCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the table",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            D::Back,
        )
        .quick_as("back"),
        CommandInfo::new("↑↓ / j k", "previous / next attempt", UP, D::Move(Move::Up)),
        CommandInfo::new("", "", DOWN, D::Move(Move::Down)).hidden(),
    ];
    if rejected {
        commands.push(check_signature_command());
    }
    commands
}

/// The id prompt's keys (everything else is typed into it).
pub(super) fn id_prompt_commands() -> Vec<CommandInfo<DlvCommand>> {
    vec![
        CommandInfo::new(
            "enter",
            "load the highlighted id (else the one typed)",
            ENTER,
            D::PromptSubmit,
        )
        .quick_as("load"),
        CommandInfo::new(
            "↑↓",
            "pick a recent or known id (typing narrows the list)",
            keys![Key::plain(KeyCode::Up)],
            D::RecentUp,
        )
        .quick_as("recent"),
        CommandInfo::new("", "", keys![Key::plain(KeyCode::Down)], D::RecentDown).hidden(),
        CommandInfo::new("esc", "cancel", ESC, D::PromptCancel).quick(),
    ]
}
