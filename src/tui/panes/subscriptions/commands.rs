//! The Subscriptions pane's command lists, one per mode. Keys, the footer
//! and the help overlay all come from these; `mutating` marks what
//! `--read-only` removes (every dialog that exists only to change
//! something is mutating throughout).

use ratatui::crossterm::event::KeyCode;

use super::table::TABLE;
use super::{Stage, SubsCommand};
use crate::tui::keymap::{CommandInfo, DOWN, ENTER, ESC, Key, Move, UP, keys, movement};
use crate::tui::widgets::table_view::{self, wrapped};

use SubsCommand as S;

fn changes() -> Vec<CommandInfo<SubsCommand>> {
    vec![
        CommandInfo::new(
            "e",
            "edit URL and events (id, secret and history kept)",
            keys![Key::char('e')],
            S::Edit,
        )
        .quick_as("edit")
        .mutating(),
        CommandInfo::new("p", "pause / resume", keys![Key::char('p')], S::PauseResume)
            .quick_as("pause/resume")
            .mutating(),
        CommandInfo::new("R", "rotate secret", keys![Key::char('R')], S::Rotate)
            .quick_as("rotate")
            .mutating(),
        CommandInfo::new("D", "delete", keys![Key::char('D')], S::Delete)
            .quick()
            .mutating(),
        CommandInfo::new("c", "copy id (OSC 52)", keys![Key::char('c')], S::CopyId),
    ]
}

/// The table's commands; those acting on the selected row exist only when
/// a row is selected, and `esc` clears the filter only when there is one
/// (`/`, `S` and `esc` are every table's: `table_view`).
pub(super) fn table_commands(filtered: bool, selection: bool) -> Vec<CommandInfo<SubsCommand>> {
    let mut commands = if selection {
        movement(S::Move)
    } else {
        Vec::new()
    };
    if selection {
        commands.push(CommandInfo::new("enter", "details", ENTER, S::Open));
    }
    let mut table = wrapped(
        table_view::table_commands(TABLE.filter_help, filtered),
        S::Table,
    );
    // `/` and `S` here; `esc` at the end.
    let clear = filtered.then(|| table.pop()).flatten();
    commands.append(&mut table);
    commands.extend([
        CommandInfo::new(
            "a",
            "show / hide paused",
            keys![Key::char('a')],
            S::ToggleDisabled,
        ),
        CommandInfo::new("n", "new subscription", keys![Key::char('n')], S::New)
            .quick_as("new")
            .mutating(),
    ]);
    if selection {
        commands.extend(changes());
    }
    commands.extend(clear);
    commands
}

pub(super) fn detail_commands() -> Vec<CommandInfo<SubsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the table",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            S::Back,
        )
        .quick_as("back"),
        CommandInfo::new("↑↓ / j k", "previous / next", UP, S::Move(Move::Up)),
        CommandInfo::new("", "", DOWN, S::Move(Move::Down)).hidden(),
    ];
    commands.extend(changes());
    commands
}

pub(super) fn filter_commands() -> Vec<CommandInfo<SubsCommand>> {
    wrapped(table_view::prompt_commands(), S::Table)
}

/// The edit dialog: the create form's keys, `enter` updates.
pub(super) fn edit_commands(on_toggle: bool) -> Vec<CommandInfo<SubsCommand>> {
    form_commands(on_toggle)
        .into_iter()
        .map(|command| {
            if command.command == S::Submit {
                CommandInfo::new(
                    "enter",
                    "update (after typing the short id)",
                    ENTER,
                    S::Submit,
                )
                .quick_as("update")
                .mutating()
            } else {
                command
            }
        })
        .collect()
}

pub(super) fn form_commands(on_toggle: bool) -> Vec<CommandInfo<SubsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "tab / ↓",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::Down)],
            S::NextField,
        )
        .quick()
        .mutating(),
        CommandInfo::new(
            "shift-tab / ↑",
            "previous field",
            keys![Key::plain(KeyCode::BackTab), Key::plain(KeyCode::Up)],
            S::PrevField,
        )
        .mutating(),
    ];
    if on_toggle {
        commands.push(
            CommandInfo::new(
                "space",
                "toggle event",
                keys![Key::char(' ')],
                S::ToggleEvent,
            )
            .quick()
            .mutating(),
        );
    }
    commands.extend([
        CommandInfo::new("enter", "create", ENTER, S::Submit)
            .quick()
            .mutating(),
        CommandInfo::new("esc", "cancel", ESC, S::Cancel)
            .quick()
            .mutating(),
    ]);
    commands
}

pub(super) fn discard_commands() -> Vec<CommandInfo<SubsCommand>> {
    vec![
        CommandInfo::new(
            "y",
            "discard the form",
            keys![Key::char('y')],
            S::DiscardYes,
        )
        .quick()
        .mutating(),
        CommandInfo::new(
            "n / esc",
            "keep editing",
            keys![Key::char('n'), Key::plain(KeyCode::Esc)],
            S::DiscardNo,
        )
        .quick()
        .mutating(),
    ]
}

pub(super) fn delete_commands() -> Vec<CommandInfo<SubsCommand>> {
    vec![
        CommandInfo::new(
            "enter",
            "delete (after typing the short id)",
            ENTER,
            S::Submit,
        )
        .quick_as("delete")
        .mutating(),
        CommandInfo::new("esc", "cancel", ESC, S::Cancel)
            .quick()
            .mutating(),
    ]
}

/// The staged rotation's keys at `stage` (`text`: a field has the
/// keyboard, so plain letters are typed).
pub(super) fn rotate_commands(stage: Stage, text: bool) -> Vec<CommandInfo<SubsCommand>> {
    let cancel = CommandInfo::new(
        "esc",
        if stage == Stage::Watch {
            "close (stops watching)"
        } else {
            "cancel"
        },
        ESC,
        S::Cancel,
    )
    .quick()
    .mutating();
    let submit = |description, quick| {
        CommandInfo::new("enter", description, ENTER, S::Submit)
            .quick_as(quick)
            .mutating()
    };
    match stage {
        Stage::Prepare => vec![
            submit(
                "prepare the new secret (empty: generate one); nothing is sent",
                "prepare",
            ),
            cancel,
        ],
        Stage::Check if text => vec![
            submit("check the receiver with this current secret", "check"),
            CommandInfo::new(
                "tab",
                "done typing",
                keys![Key::plain(KeyCode::Tab)],
                S::NextField,
            )
            .quick()
            .mutating(),
            cancel,
        ],
        Stage::Check => vec![
            submit("check the receiver accepts both secrets", "check"),
            CommandInfo::new(
                "tab",
                "type the current secret (optional)",
                keys![Key::plain(KeyCode::Tab)],
                S::NextField,
            )
            .quick_as("current secret")
            .mutating(),
            CommandInfo::new(
                "c",
                "copy the new secret (OSC 52)",
                keys![Key::char('c')],
                S::CopySecret,
            )
            .quick_as("copy")
            .mutating(),
            CommandInfo::new(
                "S",
                "skip the check: events may get 401 and are never retried",
                keys![Key::char('S')],
                S::SkipCheck,
            )
            .mutating(),
            cancel,
        ],
        Stage::Apply => vec![
            submit("rotate now (after typing the short id)", "rotate"),
            cancel,
        ],
        Stage::Watch => vec![cancel],
    }
}

pub(super) fn secret_commands() -> Vec<CommandInfo<SubsCommand>> {
    vec![
        CommandInfo::new(
            "c",
            "copy the secret (OSC 52)",
            keys![Key::char('c')],
            S::CopySecret,
        )
        .quick_as("copy")
        .mutating(),
        CommandInfo::new(
            "esc / enter",
            "close (the secret is gone for good)",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Enter)],
            S::Cancel,
        )
        .quick_as("close")
        .mutating(),
    ]
}
