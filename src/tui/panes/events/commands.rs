//! The Events pane's command lists, one per mode; keys, the footer and the
//! help overlay all come from these. Re-sending an event reaches a
//! receiver, so those commands are marked mutating: `--read-only` hides
//! them.

use ratatui::crossterm::event::KeyCode;

use super::EventsCommand;
use super::table::TABLE;
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys, movement};
use crate::tui::widgets::table_view::{self, wrapped};

use EventsCommand as E;

/// The list: movement and open with a selected row, `/` and `S` always,
/// `esc` with a filter in force.
pub(super) fn list_commands(selection: bool, filtered: bool) -> Vec<CommandInfo<EventsCommand>> {
    let mut commands = Vec::new();
    if selection {
        commands.extend(movement(E::Move));
        commands.push(CommandInfo::new("enter", "open the event", ENTER, E::Open).quick_as("open"));
    }
    commands.extend(wrapped(
        table_view::table_commands(TABLE.filter_help, filtered),
        E::Table,
    ));
    commands
}

/// Typing a filter.
pub(super) fn filter_commands() -> Vec<CommandInfo<EventsCommand>> {
    wrapped(table_view::prompt_commands(), E::Table)
}

/// One event in full.
pub(super) fn detail_commands(loaded: bool) -> Vec<CommandInfo<EventsCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "esc",
            "back to the list",
            keys![Key::plain(KeyCode::Esc), Key::plain(KeyCode::Backspace)],
            E::Back,
        )
        .quick_as("back"),
    ];
    if !loaded {
        return commands;
    }
    commands.extend(movement(E::Move));
    commands.extend([
        CommandInfo::new(
            "m",
            "mark the next subscription (for re-send and signature)",
            keys![Key::char('m')],
            E::NextSubscription,
        )
        .quick_as("mark sub"),
        CommandInfo::new(
            "R",
            "re-send to the marked subscription (asks for its secret)",
            keys![Key::char('R')],
            E::Resend,
        )
        .quick_as("re-send")
        .mutating(),
        CommandInfo::new(
            "u",
            "send to a URL you give (a receiver under development)",
            keys![Key::char('u')],
            E::SendToUrl,
        )
        .quick_as("to URL")
        .mutating(),
        CommandInfo::new(
            "s",
            "check its signature in Signatures",
            keys![Key::char('s')],
            E::OpenInSignatures,
        )
        .quick_as("signature"),
        CommandInfo::new(
            "n",
            "show / mask personal data in the body",
            keys![Key::char('n')],
            E::TogglePersonal,
        ),
    ]);
    commands
}

/// The re-send form (everything else is typed into it).
pub(super) fn resend_commands(sending: bool) -> Vec<CommandInfo<EventsCommand>> {
    if sending {
        return Vec::new();
    }
    vec![
        CommandInfo::new("enter", "send", ENTER, E::ResendSubmit)
            .quick_as("send")
            .mutating(),
        CommandInfo::new(
            "tab",
            "next field",
            keys![Key::plain(KeyCode::Tab), Key::plain(KeyCode::BackTab)],
            E::NextField,
        )
        .quick_as("next field"),
        CommandInfo::new("esc", "close", ESC, E::ResendCancel).quick(),
    ]
}
