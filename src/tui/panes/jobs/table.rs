//! The jobs table as `/` and `S` see it ([`Schema`]): its columns in the
//! order the view draws them, and the fields the filter knows
//! (`status:error`, `job:ID`, `hook:200`, `since:1h` for jobs watched
//! since). The columns that move with the clock (AGE, QUEUED, PROC) are
//! not matched by free text; AGE sorts by when the job was added, QUEUED
//! and PROC by how long the finished step took (a step still running
//! sorts last).

use std::borrow::Cow;

use super::JobRow;
use super::view::error_text;
use crate::tui::widgets::table_view::{Column, Field, FieldKind, Schema, SortKey};
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::poll::Tick;
use earshot_core::query::FieldName;

/// The STATUS word (`unknown` before the first report).
pub(crate) fn status(row: &JobRow) -> &str {
    row.status().map_or("unknown", TranscriptStatus::as_str)
}

fn millis(tick: Tick) -> i64 {
    i64::try_from(tick.as_millis()).unwrap_or(i64::MAX)
}

/// How long a finished step took, in milliseconds.
fn took(start: Option<Tick>, end: Option<Tick>) -> SortKey<'static> {
    match (start, end) {
        (Some(start), Some(end)) => SortKey::Number(millis(end.saturating_sub(start))),
        _ => SortKey::Missing,
    }
}

fn hook(row: &JobRow) -> Cow<'static, str> {
    Cow::Owned(
        row.transcript
            .as_ref()
            .and_then(|transcript| transcript.webhook_status_code)
            .map_or("—".to_owned(), |code| code.to_string()),
    )
}

pub(crate) static TABLE: Schema<JobRow> = Schema {
    columns: &[
        Column {
            header: "JOB",
            text: Some(|row| Cow::Borrowed(&row.id)),
            sort: |row| SortKey::text(&row.id),
        },
        Column {
            header: "STATUS",
            text: Some(|row| {
                if row.stale() {
                    Cow::Owned(format!("{} stale", status(row)))
                } else {
                    Cow::Borrowed(status(row))
                }
            }),
            sort: |row| SortKey::text(status(row)),
        },
        // Older first going down: the later a job was added, the younger.
        Column {
            header: "AGE",
            text: None,
            sort: |row| SortKey::number(row.view.as_ref().map(|view| -millis(view.added_at))),
        },
        Column {
            header: "QUEUED",
            text: None,
            sort: |row| {
                let view = row.view.as_ref();
                took(
                    view.and_then(|v| v.queued_since),
                    view.and_then(|v| v.processing_since.or(v.finished_at)),
                )
            },
        },
        Column {
            header: "PROC",
            text: None,
            sort: |row| {
                let view = row.view.as_ref();
                took(
                    view.and_then(|v| v.processing_since),
                    view.and_then(|v| v.finished_at),
                )
            },
        },
        Column {
            header: "HOOK",
            text: Some(hook),
            sort: |row| {
                SortKey::number(
                    row.transcript
                        .as_ref()
                        .and_then(|transcript| transcript.webhook_status_code)
                        .map(i64::from),
                )
            },
        },
        Column {
            header: "ERROR",
            text: Some(|row| Cow::Owned(error_text(row))),
            sort: |row| match error_text(row) {
                error if error.is_empty() => SortKey::Missing,
                error => SortKey::Text(Cow::Owned(error)),
            },
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["queued", "processing", "completed", "error", "unknown"],
                read: |row| Cow::Borrowed(status(row)),
            },
        },
        Field {
            name: FieldName::new("job").or(&["id"]),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.id)),
        },
        Field {
            name: FieldName::new("hook"),
            kind: FieldKind::Text(hook),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(|row| Some(row.added_ms)),
        },
    ],
    key: |row| Cow::Borrowed(&row.id),
    filter_help: "filter: status:queued|processing|completed|error|unknown job:ID hook:CODE \
                  since:1h (watched), free text",
};
