//! The Subscriptions pane's command lists, one per mode. Keys, the footer
//! and the help overlay all come from these; `mutating` marks what
//! `--read-only` removes (every dialog that exists only to change
//! something is mutating throughout).

use ratatui::crossterm::event::KeyCode;

use super::SubsCommand;
use crate::tui::keymap::{Command, CommandInfo, DOWN, ENTER, ESC, Key, Move, UP, keys, movement};

use Command::Subs;
use SubsCommand as S;

fn changes() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new(
            "p",
            "pause / resume",
            keys![Key::char('p')],
            Subs(S::PauseResume),
        )
        .quick_as("pause/resume")
        .mutating(),
        CommandInfo::new("R", "rotate secret", keys![Key::char('R')], Subs(S::Rotate))
            .quick_as("rotate")
            .mutating(),
        CommandInfo::new("D", "delete", keys![Key::char('D')], Subs(S::Delete))
            .quick()
            .mutating(),
        CommandInfo::new(
            "c",
            "copy id (OSC 52)",
            keys![Key::char('c')],
            Subs(S::CopyId),
        ),
    ]
}

/// The table's commands; those acting on the selected row exist only when
/// a row is selected, and `esc` clears the filter only when there is one.
pub(super) fn table_commands(filtered: bool, selection: bool) -> Vec<CommandInfo> {
    let mut commands = if selection {
        movement(|m| Subs(S::Move(m)))
    } else {
        Vec::new()
    };
    if selection {
        commands.push(CommandInfo::new("enter", "details", ENTER, Subs(S::Open)));
    }
    commands.extend([
        CommandInfo::new("/", "filter", keys![Key::char('/')], Subs(S::Filter)).quick(),
        CommandInfo::new(
            "a",
            "show / hide paused",
            keys![Key::char('a')],
            Subs(S::ToggleDisabled),
        ),
        CommandInfo::new("n", "new subscription", keys![Key::char('n')], Subs(S::New))
            .quick_as("new")
            .mutating(),
    ]);
    if selection {
        commands.extend(changes());
    }
    if filtered {
        commands.push(CommandInfo::new(
            "esc",
            "clear filter",
            ESC,
            Subs(S::FilterClear),
        ));
    }
    commands
}

pub(super) fn detail_commands() -> Vec<CommandInfo> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the table",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            Subs(S::Back),
        )
        .quick_as("back"),
        CommandInfo::new("↑↓ / j k", "previous / next", UP, Subs(S::Move(Move::Up))),
        CommandInfo::new("", "", DOWN, Subs(S::Move(Move::Down))).hidden(),
    ];
    commands.extend(changes());
    commands
}

pub(super) fn filter_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new("enter", "keep filter", ENTER, Subs(S::FilterDone)).quick(),
        CommandInfo::new("esc", "clear filter", ESC, Subs(S::FilterClear)).quick(),
    ]
}

pub(super) fn form_commands(on_toggle: bool) -> Vec<CommandInfo> {
    let mut commands = vec![
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            Subs(S::NextField),
        )
        .quick()
        .mutating(),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            Subs(S::PrevField),
        )
        .mutating(),
    ];
    if on_toggle {
        commands.push(
            CommandInfo::new(
                "space",
                "toggle event",
                keys![Key::char(' ')],
                Subs(S::ToggleEvent),
            )
            .quick()
            .mutating(),
        );
    }
    commands.extend([
        CommandInfo::new("enter", "create", ENTER, Subs(S::Submit))
            .quick()
            .mutating(),
        CommandInfo::new("esc", "cancel", ESC, Subs(S::Cancel))
            .quick()
            .mutating(),
    ]);
    commands
}

pub(super) fn discard_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new(
            "y",
            "discard the form",
            keys![Key::char('y')],
            Subs(S::DiscardYes),
        )
        .quick()
        .mutating(),
        CommandInfo::new(
            "n / esc",
            "keep editing",
            keys![Key::char('n'), Key::plain(KeyCode::Esc)],
            Subs(S::DiscardNo),
        )
        .quick()
        .mutating(),
    ]
}

pub(super) fn delete_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new(
            "enter",
            "delete (after typing the short id)",
            ENTER,
            Subs(S::Submit),
        )
        .quick_as("delete")
        .mutating(),
        CommandInfo::new("esc", "cancel", ESC, Subs(S::Cancel))
            .quick()
            .mutating(),
    ]
}

pub(super) fn rotate_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new(
            "tab",
            "next field",
            keys![
                Key::plain(KeyCode::Tab),
                Key::plain(KeyCode::BackTab),
                Key::plain(KeyCode::Down),
                Key::plain(KeyCode::Up),
            ],
            Subs(S::NextField),
        )
        .quick()
        .mutating(),
        CommandInfo::new(
            "enter",
            "rotate (after typing the short id)",
            ENTER,
            Subs(S::Submit),
        )
        .quick_as("rotate")
        .mutating(),
        CommandInfo::new("esc", "cancel", ESC, Subs(S::Cancel))
            .quick()
            .mutating(),
    ]
}

pub(super) fn secret_commands() -> Vec<CommandInfo> {
    vec![
        CommandInfo::new(
            "c",
            "copy the secret (OSC 52)",
            keys![Key::char('c')],
            Subs(S::CopySecret),
        )
        .quick_as("copy")
        .mutating(),
        CommandInfo::new(
            "esc / enter",
            "close (the secret is gone for good)",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Enter)],
            Subs(S::Cancel),
        )
        .quick_as("close")
        .mutating(),
    ]
}
