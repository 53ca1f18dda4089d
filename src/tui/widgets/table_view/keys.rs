//! The keys of every table: `/`, `S`, `esc` ([`TableCommand`]), and the
//! filter prompt's, as commands a pane wraps into its own.

use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, keys};

/// What a key on a table asks of its view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableCommand {
    /// `/`: open the prompt.
    Filter,
    /// `enter` in the prompt.
    ApplyFilter,
    /// `esc` in the prompt: the filter before it opened.
    CancelFilter,
    /// `esc` on the table.
    ClearFilter,
    /// `S`: the next sort.
    Sort,
}

/// A table's `/` (its line in help is `filter_help`), `S`, and `esc`
/// while a filter is in force.
pub(crate) fn table_commands(
    filter_help: &'static str,
    filtered: bool,
) -> Vec<CommandInfo<TableCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "/",
            filter_help,
            keys![Key::char('/')],
            TableCommand::Filter,
        )
        .quick_as("filter"),
        CommandInfo::new(
            "S",
            "sort: by a column ▲, again ▼, again the next column (the header marks it)",
            keys![Key::char('S')],
            TableCommand::Sort,
        ),
    ];
    if filtered {
        commands.push(
            CommandInfo::new("esc", "clear the filter", ESC, TableCommand::ClearFilter)
                .quick_as("clear filter"),
        );
    }
    commands
}

/// `commands` as a pane's own (`into` wraps [`TableCommand`]).
pub(crate) fn wrapped<C: Copy>(
    commands: Vec<CommandInfo<TableCommand>>,
    into: fn(TableCommand) -> C,
) -> Vec<CommandInfo<C>> {
    commands.into_iter().map(|info| info.map(into)).collect()
}

/// The prompt's keys (everything else is typed into it).
pub(crate) fn prompt_commands() -> Vec<CommandInfo<TableCommand>> {
    vec![
        CommandInfo::new(
            "enter",
            "apply the filter",
            ENTER,
            TableCommand::ApplyFilter,
        )
        .quick_as("apply"),
        CommandInfo::new(
            "esc",
            "cancel: back to the filter before /",
            ESC,
            TableCommand::CancelFilter,
        )
        .quick_as("cancel"),
    ]
}
