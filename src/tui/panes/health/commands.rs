//! The Health pane's command lists, one per mode; keys, the footer and the
//! help overlay all come from these. Recover re-sends events to a
//! receiver, so it is marked mutating: `--read-only` hides it.

use ratatui::crossterm::event::KeyCode;

use super::HealthCommand;
use super::tables::{BOARD, INCIDENTS, SESSIONS};
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};
use crate::tui::widgets::table_view::{table_commands, wrapped};

use HealthCommand as H;

/// A table's `/` and `S` (described by `filter_help`), and `esc` clearing
/// its filter while one is in force (`esc` going back then keeps
/// `backspace` only).
fn table(filter_help: &'static str, filtered: bool) -> Vec<CommandInfo<HealthCommand>> {
    wrapped(table_commands(filter_help, filtered), H::Table)
}

/// The board: movement and the drill-down with a selected row (`refused`:
/// it has a failure group refused with 401).
pub(super) fn board_commands(
    selection: bool,
    refused: bool,
    filtered: bool,
) -> Vec<CommandInfo<HealthCommand>> {
    let mut commands = Vec::new();
    if selection {
        commands.extend(movement(H::Move));
        commands.push(
            CommandInfo::new("enter", "its failing sessions", ENTER, H::Open)
                .quick_as("failing sessions"),
        );
        commands.push(
            CommandInfo::new(
                "R",
                "recover: re-send the events it missed for good (asks for its secret)",
                keys![Key::char('R')],
                H::Recover,
            )
            .quick_as("recover")
            .mutating(),
        );
    }
    commands.push(
        CommandInfo::new(
            "i",
            "incidents: open, acknowledged (a), resolved (v)",
            keys![Key::char('i')],
            H::Incidents,
        )
        .quick_as("incidents"),
    );
    commands.push(window_command());
    if refused {
        commands.push(
            CommandInfo::new(
                "s",
                "its 401s: ask the receiver which secret it holds (Signatures)",
                keys![Key::char('s')],
                H::CheckRefused,
            )
            .quick_as("ask receiver"),
        );
    }
    commands.extend(table(BOARD.filter_help, filtered));
    commands
}

/// The incidents list.
pub(super) fn incidents_commands(
    selection: bool,
    filtered: bool,
) -> Vec<CommandInfo<HealthCommand>> {
    let mut commands = vec![back_command(filtered)];
    if selection {
        commands.extend(movement(H::Move));
        commands.push(
            CommandInfo::new(
                "a",
                "acknowledge: you are on it (a note for the others)",
                keys![Key::char('a')],
                H::Ack,
            )
            .quick_as("acknowledge"),
        );
    }
    commands.push(
        CommandInfo::new(
            "o",
            "order by latest activity now (the order holds while you work in the list)",
            keys![Key::char('o')],
            H::Reorder,
        )
        .quick_as("reorder"),
    );
    commands.push(
        CommandInfo::new(
            "v",
            "show / hide resolved incidents",
            keys![Key::char('v')],
            H::ToggleResolved,
        )
        .quick_as("resolved"),
    );
    commands.push(window_command());
    commands.extend(table(INCIDENTS.filter_help, filtered));
    commands
}

/// Typing the acknowledgement's note.
pub(super) fn ack_commands() -> Vec<CommandInfo<HealthCommand>> {
    vec![
        CommandInfo::new("enter", "acknowledge with this note", ENTER, H::AckSubmit)
            .quick_as("acknowledge"),
        CommandInfo::new("esc", "cancel", ESC, H::AckCancel).quick(),
    ]
}

/// `esc` / `backspace`: back to the board (`backspace` only while `esc`
/// clears a filter).
fn back_command(filtered: bool) -> CommandInfo<HealthCommand> {
    if filtered {
        return CommandInfo::new(
            "backspace",
            "back to the board (esc too, when no filter is in force)",
            keys![Key::plain(KeyCode::Backspace)],
            H::Back,
        )
        .quick_as("back");
    }
    CommandInfo::new(
        "esc",
        "back to the board",
        keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
        H::Back,
    )
    .quick_as("back")
}

/// A subscription's failing sessions: enter opens one in Deliveries.
pub(super) fn sessions_commands(
    selection: bool,
    filtered: bool,
) -> Vec<CommandInfo<HealthCommand>> {
    let mut commands = vec![back_command(filtered)];
    if selection {
        commands.extend(movement(H::Move));
        commands
            .push(CommandInfo::new("enter", "open in Deliveries", ENTER, H::Open).quick_as("open"));
    }
    commands.push(window_command());
    commands.extend(table(SESSIONS.filter_help, filtered));
    commands
}

/// `w`: the board's window, on the board and in the drill-down.
fn window_command() -> CommandInfo<HealthCommand> {
    CommandInfo::new(
        "w",
        "window: 1 h / 24 h / 7 d",
        keys![Key::char('w')],
        H::CycleWindow,
    )
    .quick_as("window")
}

/// The recover form (everything else is typed into it).
pub(super) fn recover_commands(running: bool) -> Vec<CommandInfo<HealthCommand>> {
    if running {
        return vec![
            CommandInfo::new(
                "esc",
                "stop after the event being sent",
                ESC,
                H::RecoverCancel,
            )
            .quick_as("stop"),
        ];
    }
    vec![
        CommandInfo::new(
            "enter",
            "re-send the missed events",
            ENTER,
            H::RecoverSubmit,
        )
        .quick_as("send")
        .mutating(),
        CommandInfo::new(
            "tab",
            "secret / confirmation",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::BackTab)],
            H::NextField,
        )
        .quick_as("next field"),
        CommandInfo::new("esc", "close", ESC, H::RecoverCancel).quick(),
    ]
}
