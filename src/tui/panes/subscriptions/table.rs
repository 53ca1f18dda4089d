//! The Subscriptions table as `/` and `S` see it ([`Schema`]): its
//! columns in the order the view draws them, and the fields the filter
//! knows (`status:paused`, `type:call.ended`, `sub:ID`, `url:`, `agent:`,
//! `since:1h` for those created since).

use std::borrow::Cow;

use crate::tui::widgets::table_view::{Column, Field, FieldKind, Schema, SortKey};
use earshot_core::api::types::agents::Subscription;
use earshot_core::query::FieldName;

/// The STATE column's word (`…` while a change is in flight is the
/// view's).
pub(crate) fn state(row: &Subscription) -> &'static str {
    if row.enabled { "enabled" } else { "paused" }
}

/// The AGENT column: the agent's id, or `any`.
fn agent(row: &Subscription) -> &str {
    row.agent_id.as_deref().unwrap_or("any")
}

/// When it was created, in Unix milliseconds, when the platform said.
fn created_ms(row: &Subscription) -> Option<i64> {
    let at = row.extra.get("created_at")?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|at| at.timestamp_millis())
}

pub(crate) static TABLE: Schema<Subscription> = Schema {
    columns: &[
        Column {
            header: "ID",
            text: Some(|row| Cow::Borrowed(&row.id)),
            sort: |row| SortKey::text(&row.id),
        },
        Column {
            header: "URL",
            text: Some(|row| Cow::Borrowed(&row.url)),
            sort: |row| SortKey::text(&row.url),
        },
        Column {
            header: "EVENTS",
            text: Some(|row| Cow::Owned(row.events.join(","))),
            sort: |row| SortKey::Text(Cow::Owned(row.events.join(","))),
        },
        Column {
            header: "AGENT",
            text: Some(|row| Cow::Borrowed(agent(row))),
            sort: |row| SortKey::text(agent(row)),
        },
        Column {
            header: "STATE",
            text: Some(|row| Cow::Borrowed(state(row))),
            sort: |row| SortKey::text(state(row)),
        },
        Column {
            header: "SECRET",
            text: Some(|row| Cow::Owned(format!("v{}", row.secret_version))),
            sort: |row| SortKey::Number(i64::from(row.secret_version)),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["enabled", "paused"],
                read: |row| Cow::Borrowed(state(row)),
            },
        },
        Field {
            name: FieldName::new("type").or(&["event"]),
            kind: FieldKind::Text(|row| Cow::Owned(row.events.join(","))),
        },
        Field {
            name: FieldName::new("sub").or(&["id"]),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.id)),
        },
        Field {
            name: FieldName::new("url"),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.url)),
        },
        Field {
            name: FieldName::new("agent"),
            kind: FieldKind::Text(|row| Cow::Borrowed(agent(row))),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(created_ms),
        },
    ],
    key: |row| Cow::Borrowed(&row.id),
    filter_help: "filter: status:enabled|paused type:EVENT sub:ID url:TEXT agent:ID since:1d \
                  (created), free text",
};
