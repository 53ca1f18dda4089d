//! The Health pane's command lists, one per mode; keys, the footer and the
//! help overlay all come from these. Recover re-sends events to a
//! receiver, so it is marked mutating: `--read-only` hides it.

use ratatui::crossterm::event::KeyCode;

use super::HealthCommand;
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};

use HealthCommand as H;

/// The board: movement and the drill-down with a selected row.
pub(super) fn board_commands(selection: bool) -> Vec<CommandInfo<HealthCommand>> {
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
    commands
}

/// The incidents list.
pub(super) fn incidents_commands(selection: bool) -> Vec<CommandInfo<HealthCommand>> {
    let mut commands = vec![back_command()];
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
            "v",
            "show / hide resolved incidents",
            keys![Key::char('v')],
            H::ToggleResolved,
        )
        .quick_as("resolved"),
    );
    commands.push(window_command());
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

/// `esc` / `backspace`: back to the board.
fn back_command() -> CommandInfo<HealthCommand> {
    CommandInfo::new(
        "esc",
        "back to the board",
        keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
        H::Back,
    )
    .quick_as("back")
}

/// A subscription's failing sessions: enter opens one in Deliveries.
pub(super) fn sessions_commands(selection: bool) -> Vec<CommandInfo<HealthCommand>> {
    let mut commands = vec![back_command()];
    if selection {
        commands.extend(movement(H::Move));
        commands
            .push(CommandInfo::new("enter", "open in Deliveries", ENTER, H::Open).quick_as("open"));
    }
    commands.push(window_command());
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
