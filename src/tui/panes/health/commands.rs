//! The Health pane's command lists, one per mode; keys, the footer and the
//! help overlay all come from these. Recover re-sends events to a
//! receiver, so it is marked mutating: `--read-only` hides it.

use ratatui::crossterm::event::KeyCode;

use super::HealthCommand;
use crate::tui::keymap::{Command, CommandInfo, ENTER, ESC, Key, keys, movement};

use Command::Health;
use HealthCommand as H;

/// The board: movement and the drill-down with a selected row.
pub(super) fn board_commands(selection: bool) -> Vec<CommandInfo> {
    let mut commands = Vec::new();
    if selection {
        commands.extend(movement(|m| Health(H::Move(m))));
        commands.push(
            CommandInfo::new("enter", "its failing sessions", ENTER, Health(H::Open))
                .quick_as("failing sessions"),
        );
        commands.push(
            CommandInfo::new(
                "R",
                "recover: re-send the events it missed for good (asks for its secret)",
                keys![Key::char('R')],
                Health(H::Recover),
            )
            .quick_as("recover")
            .mutating(),
        );
    }
    commands.push(window_command());
    commands
}

/// A subscription's failing sessions: enter opens one in Deliveries.
pub(super) fn sessions_commands(selection: bool) -> Vec<CommandInfo> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the board",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            Health(H::Back),
        )
        .quick_as("back"),
    ];
    if selection {
        commands.extend(movement(|m| Health(H::Move(m))));
        commands.push(
            CommandInfo::new("enter", "open in Deliveries", ENTER, Health(H::Open))
                .quick_as("open"),
        );
    }
    commands.push(window_command());
    commands
}

/// `w`: the board's window, on the board and in the drill-down.
fn window_command() -> CommandInfo {
    CommandInfo::new(
        "w",
        "window: 1 h / 24 h / 7 d",
        keys![Key::char('w')],
        Health(H::CycleWindow),
    )
    .quick_as("window")
}

/// The recover form (everything else is typed into it).
pub(super) fn recover_commands(running: bool) -> Vec<CommandInfo> {
    if running {
        return Vec::new();
    }
    vec![
        CommandInfo::new(
            "enter",
            "re-send the missed events",
            ENTER,
            Health(H::RecoverSubmit),
        )
        .quick_as("send")
        .mutating(),
        CommandInfo::new(
            "tab",
            "secret / confirmation",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::BackTab)],
            Health(H::NextField),
        )
        .quick_as("next field"),
        CommandInfo::new("esc", "close", ESC, Health(H::RecoverCancel)).quick(),
    ]
}
