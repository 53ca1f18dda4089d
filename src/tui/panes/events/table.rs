//! The Events list as `S` sees it ([`Schema`]): its columns in the order
//! the view draws them. Its `/` filter is the store's query
//! ([`earshot_core::history::event_query`], the language `earshot events` takes,
//! split by the same [`earshot_core::query`] as every table's), so the view
//! filters nothing itself: it has no fields.

use std::borrow::Cow;

use crate::tui::widgets::table_view::{Column, Schema, SortKey};
use crate::tui::widgets::utc_clock;
use earshot_core::history::event_list::{EventRow, severity};

/// The PER SUBSCRIPTION column's text: each subscription and its state.
fn outcomes(row: &EventRow) -> String {
    row.subscriptions
        .iter()
        .map(|outcome| format!("{} {}", outcome.id, outcome.state.as_str()))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// How bad its worst outcome is (missed first when ascending).
fn worst_rank(row: &EventRow) -> SortKey<'static> {
    SortKey::number(row.worst().map(|state| i64::from(severity(state))))
}

pub(crate) static TABLE: Schema<EventRow> = Schema {
    columns: &[
        Column {
            header: "TIME UTC",
            text: Some(|row| Cow::Owned(utc_clock(row.occurred_ms))),
            sort: |row| SortKey::Number(row.occurred_ms),
        },
        Column {
            header: "TYPE",
            text: Some(|row| Cow::Borrowed(&row.event)),
            sort: |row| SortKey::text(&row.event),
        },
        Column {
            header: "SESSION / CALL",
            text: Some(|row| Cow::Borrowed(&row.session_id)),
            sort: |row| SortKey::text(&row.session_id),
        },
        Column {
            header: "PER SUBSCRIPTION",
            text: Some(|row| Cow::Owned(outcomes(row))),
            sort: worst_rank,
        },
    ],
    fields: &[],
    key: |row| Cow::Borrowed(&row.event_id),
    filter_help: "filter: type:T status:S sub:ID session:ID since:D, free text",
};
