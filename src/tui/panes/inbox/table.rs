//! The requests table as `/` and `S` see it ([`Schema`]): its columns in
//! the order the view draws them, and the fields the filter knows
//! (`status:invalid_signature` the receiver's verdict, `kind:prerecorded`,
//! `type:call.ended`, `id:ID` an event or transcript id, `since:5m` for
//! requests received since).

use std::borrow::Cow;

use super::InboxRow;
use super::view::{clock, verdict_text, what};
use crate::tui::widgets::table_view::{Column, Field, FieldKind, Schema, SortKey};
use earshot_core::query::FieldName;

/// The verdict codes `status:` takes (the receiver's, as captured).
pub(crate) const VERDICTS: &[&str] = &[
    "ok",
    "duplicate",
    "invalid_signature",
    "auth_failed",
    "malformed_payload",
    "method_not_allowed",
    "unrecognized",
    "too_large",
    "store_failed",
];

fn received_ms(row: &InboxRow) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(&row.entry.received_at)
        .ok()
        .map(|at| at.timestamp_millis())
}

pub(crate) static TABLE: Schema<InboxRow> = Schema {
    columns: &[
        Column {
            header: "TIME",
            text: Some(|row| Cow::Owned(clock(row.entry.received_unix))),
            sort: |row| SortKey::number(received_ms(row)),
        },
        Column {
            header: "KIND",
            text: Some(|row| Cow::Borrowed(row.entry.kind.code())),
            sort: |row| SortKey::text(row.entry.kind.code()),
        },
        Column {
            header: "EVENT",
            text: Some(|row| Cow::Owned(what(row))),
            sort: |row| SortKey::Text(Cow::Owned(what(row))),
        },
        Column {
            header: "ID",
            text: Some(|row| Cow::Borrowed(full_id(row))),
            sort: |row| SortKey::text(full_id(row)),
        },
        Column {
            header: "ANS",
            text: Some(|row| Cow::Owned(row.status().to_string())),
            sort: |row| SortKey::Number(i64::from(row.status())),
        },
        Column {
            header: "VERDICT",
            text: Some(|row| Cow::Owned(verdict_text(row))),
            sort: |row| SortKey::Text(Cow::Owned(verdict_text(row))),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state", "verdict"]),
            kind: FieldKind::Choice {
                values: VERDICTS,
                read: |row| Cow::Borrowed(row.verdict().code()),
            },
        },
        Field {
            name: FieldName::new("kind"),
            kind: FieldKind::Choice {
                values: &["agents", "prerecorded", "other"],
                read: |row| Cow::Borrowed(row.entry.kind.code()),
            },
        },
        Field {
            name: FieldName::new("type").or(&["event"]),
            kind: FieldKind::Text(|row| Cow::Owned(what(row))),
        },
        Field {
            name: FieldName::new("id"),
            kind: FieldKind::Text(|row| Cow::Borrowed(full_id(row))),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(received_ms),
        },
    ],
    key: |row| Cow::Borrowed(&row.key),
    filter_help: "filter: status:ok|duplicate|invalid_signature|… kind:agents|prerecorded|other \
                  type:EVENT id:ID since:5m, free text",
};

/// The event or transcript id (the ID column shows its short form).
fn full_id(row: &InboxRow) -> &str {
    let entry = &row.entry;
    entry
        .event_id
        .as_deref()
        .or(entry.transcript_id.as_deref())
        .unwrap_or("—")
}
