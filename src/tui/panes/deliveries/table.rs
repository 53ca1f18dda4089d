//! The attempts table as `/` and `S` see it ([`Schema`]): its columns in
//! the order the view draws them, and the fields the filter knows
//! (`status:failed`, `sub:ID`, `http:401`, `since:10m` for attempts made
//! since).

use std::borrow::Cow;

use crate::tui::widgets::table_view::{Column, Field, FieldKind, Schema, SortKey};
use earshot_core::api::types::agents::DeliveryRecord;
use earshot_core::query::FieldName;

fn http(row: &DeliveryRecord) -> Cow<'static, str> {
    Cow::Owned(
        row.http_status_code
            .map_or("—".to_owned(), |code| code.to_string()),
    )
}

fn created_ms(row: &DeliveryRecord) -> i64 {
    row.created_at.timestamp_millis()
}

pub(crate) static TABLE: Schema<DeliveryRecord> = Schema {
    columns: &[
        Column {
            header: "ATTEMPT",
            text: Some(|row| Cow::Borrowed(&row.id)),
            sort: |row| SortKey::text(&row.id),
        },
        Column {
            header: "SUB",
            text: Some(|row| Cow::Borrowed(&row.subscription_id)),
            sort: |row| SortKey::text(&row.subscription_id),
        },
        Column {
            header: "#",
            text: Some(|row| Cow::Owned(row.attempt_count.to_string())),
            sort: |row| SortKey::Number(i64::from(row.attempt_count)),
        },
        Column {
            header: "STATUS",
            text: Some(|row| Cow::Borrowed(row.status.as_str())),
            sort: |row| SortKey::text(row.status.as_str()),
        },
        Column {
            header: "HTTP",
            text: Some(http),
            sort: |row| SortKey::number(row.http_status_code.map(i64::from)),
        },
        Column {
            header: "CREATED",
            text: Some(|row| {
                Cow::Owned(crate::tui::widgets::utc_clock(
                    row.created_at.timestamp_millis(),
                ))
            }),
            sort: |row| SortKey::Number(created_ms(row)),
        },
        // A countdown to the next retry moves with the clock: not text.
        Column {
            header: "NEXT/DONE",
            text: None,
            sort: |row| {
                SortKey::number(
                    row.next_retry_at
                        .or(row.delivered_at)
                        .map(|at| at.timestamp_millis()),
                )
            },
        },
        Column {
            header: "ERROR",
            text: Some(|row| Cow::Borrowed(row.error.as_deref().unwrap_or(""))),
            sort: |row| row.error.as_deref().map_or(SortKey::Missing, SortKey::text),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["delivered", "failed", "pending"],
                read: |row| Cow::Borrowed(row.status.as_str()),
            },
        },
        Field {
            name: FieldName::new("sub"),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.subscription_id)),
        },
        Field {
            name: FieldName::new("http"),
            kind: FieldKind::Text(http),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(|row| Some(created_ms(row))),
        },
    ],
    key: |row| Cow::Borrowed(&row.id),
    filter_help: "filter: status:delivered|failed|pending sub:ID http:CODE since:10m (created), \
                  free text",
};
