//! The Health pane's three tables as `/` and `S` see them ([`Schema`]s):
//! the board, a subscription's failing sessions and the incidents; their
//! columns in the order the view draws them, the fields the filter
//! knows, and the words `status:` takes.

use std::borrow::Cow;

use crate::tui::widgets::table_view::{Column, Field, FieldKind, Schema, SortKey};
use crate::tui::widgets::utc_clock;
use earshot_core::history::incidents::Incident;
use earshot_core::history::report::SubscriptionHealth;
use earshot_core::query::FieldName;
use earshot_core::store::deliveries::FailingSession;

/// A board row's state, as `status:` reads it.
pub(crate) fn board_status(row: &SubscriptionHealth) -> &'static str {
    if row.is_failing() {
        "failing"
    } else if !row.enabled {
        "paused"
    } else if row.events.pending + row.events.unknown > 0 {
        "pending"
    } else {
        "ok"
    }
}

/// The FAILING cell: since when it fails (UTC clock), `—` when it does not.
pub(crate) fn failing_clock(row: &SubscriptionHealth) -> String {
    row.failing_since_ms().map_or("—".to_owned(), utc_clock)
}

/// The WHY cell: the largest failure group.
pub(crate) fn largest_group(row: &SubscriptionHealth) -> String {
    row.failures
        .first()
        .map(|group| format!("×{} {}", group.count, group.diagnosis))
        .unwrap_or_default()
}

fn count(value: i64) -> Cow<'static, str> {
    Cow::Owned(value.to_string())
}

pub(crate) static BOARD: Schema<SubscriptionHealth> = Schema {
    columns: &[
        Column {
            header: "SUB",
            text: Some(|row| Cow::Borrowed(&row.id)),
            sort: |row| SortKey::text(&row.id),
        },
        Column {
            header: "URL",
            text: Some(|row| Cow::Borrowed(&row.url)),
            sort: |row| SortKey::text(&row.url),
        },
        Column {
            header: "OK",
            text: Some(|row| count(row.events.delivered)),
            sort: |row| SortKey::Number(row.events.delivered),
        },
        Column {
            header: "MISSED",
            text: Some(|row| count(row.events.missed)),
            sort: |row| SortKey::Number(row.events.missed),
        },
        Column {
            header: "RECOV",
            text: Some(|row| count(row.events.recovered)),
            sort: |row| SortKey::Number(row.events.recovered),
        },
        Column {
            header: "PEND",
            text: Some(|row| count(row.events.pending + row.events.unknown)),
            sort: |row| SortKey::Number(row.events.pending + row.events.unknown),
        },
        Column {
            header: "FAILING",
            text: Some(|row| Cow::Owned(failing_clock(row))),
            sort: |row| SortKey::number(row.failing_since_ms()),
        },
        Column {
            header: "TREND",
            // Drawn from the timeline, not the row: nothing to match.
            text: None,
            sort: |row| SortKey::Number(row.events.missed),
        },
        Column {
            header: "WHY (LARGEST GROUP)",
            text: Some(|row| Cow::Owned(largest_group(row))),
            sort: |row| SortKey::number(row.failures.first().map(|group| group.count)),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["failing", "pending", "paused", "ok"],
                read: |row| Cow::Borrowed(board_status(row)),
            },
        },
        Field {
            name: FieldName::new("sub"),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.id)),
        },
        Field {
            name: FieldName::new("url"),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.url)),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(SubscriptionHealth::failing_since_ms),
        },
    ],
    key: |row| Cow::Borrowed(&row.id),
    filter_help: "filter: status:failing|pending|paused|ok sub:ID url:TEXT since:1h (failing \
                  since), free text",
};

/// A failing session's state, as `status:` reads it: `failed` while an
/// event of it is still missed, `recovered` once none is.
pub(crate) fn session_status(session: &FailingSession) -> &'static str {
    if session.missed > 0 {
        "failed"
    } else {
        "recovered"
    }
}

pub(crate) fn session_types(session: &FailingSession) -> String {
    if session.event_types.is_empty() {
        "?".to_owned()
    } else {
        session.event_types.join(",")
    }
}

fn http(code: Option<u16>) -> Cow<'static, str> {
    Cow::Owned(code.map_or("—".to_owned(), |code| code.to_string()))
}

pub(crate) static SESSIONS: Schema<FailingSession> = Schema {
    columns: &[
        Column {
            header: "SESSION / CALL",
            text: Some(|row| Cow::Borrowed(&row.session_id)),
            sort: |row| SortKey::text(&row.session_id),
        },
        Column {
            header: "EVENTS",
            text: Some(|row| Cow::Owned(session_types(row))),
            sort: |row| SortKey::Text(Cow::Owned(session_types(row))),
        },
        Column {
            header: "MISSED",
            text: Some(|row| count(row.missed)),
            sort: |row| SortKey::Number(row.missed),
        },
        Column {
            header: "TRIES",
            text: Some(|row| count(row.failed_attempts)),
            sort: |row| SortKey::Number(row.failed_attempts),
        },
        Column {
            header: "LAST ✗",
            text: Some(|row| Cow::Owned(utc_clock(row.last_failure_ms))),
            sort: |row| SortKey::Number(row.last_failure_ms),
        },
        Column {
            header: "HTTP",
            text: Some(|row| http(row.http_status_code)),
            sort: |row| SortKey::number(row.http_status_code.map(i64::from)),
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
                values: &["failed", "recovered"],
                read: |row| Cow::Borrowed(session_status(row)),
            },
        },
        Field {
            name: FieldName::new("type"),
            kind: FieldKind::Text(|row| Cow::Owned(row.event_types.join(","))),
        },
        Field {
            name: FieldName::new("session").or(&["call"]),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.session_id)),
        },
        Field {
            name: FieldName::new("http"),
            kind: FieldKind::Text(|row| http(row.http_status_code)),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(|row| Some(row.last_failure_ms)),
        },
    ],
    key: |row| Cow::Borrowed(&row.session_id),
    filter_help: "filter: status:failed|recovered type:EVENT session:ID http:CODE since:1h \
                  (last failure), free text",
};

pub(crate) static INCIDENTS: Schema<Incident> = Schema {
    columns: &[
        Column {
            header: "ID",
            text: Some(|row| Cow::Borrowed(&row.id)),
            sort: |row| SortKey::text(&row.id),
        },
        Column {
            header: "SUB",
            text: Some(|row| Cow::Borrowed(&row.subscription_id)),
            sort: |row| SortKey::text(&row.subscription_id),
        },
        Column {
            header: "STATE",
            text: Some(|row| Cow::Borrowed(row.state.as_str())),
            sort: |row| SortKey::text(row.state.as_str()),
        },
        Column {
            header: "MISSED",
            text: Some(|row| count(row.missed)),
            sort: |row| SortKey::Number(row.missed),
        },
        Column {
            header: "RECOV",
            text: Some(|row| count(row.recovered)),
            sort: |row| SortKey::Number(row.recovered),
        },
        Column {
            header: "FIRST",
            text: Some(|row| Cow::Owned(utc_clock(row.first_seen_ms))),
            sort: |row| SortKey::Number(row.first_seen_ms),
        },
        Column {
            header: "LAST",
            text: Some(|row| Cow::Owned(utc_clock(row.last_seen_ms))),
            sort: |row| SortKey::Number(row.last_seen_ms),
        },
        Column {
            header: "DIAGNOSIS",
            text: Some(|row| Cow::Borrowed(&row.diagnosis)),
            sort: |row| SortKey::text(&row.diagnosis),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["open", "acknowledged", "resolved"],
                read: |row| Cow::Borrowed(row.state.as_str()),
            },
        },
        Field {
            name: FieldName::new("sub"),
            kind: FieldKind::Text(|row| Cow::Borrowed(&row.subscription_id)),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(|row| Some(row.last_seen_ms)),
        },
    ],
    key: |row| Cow::Borrowed(&row.id),
    filter_help: "filter: status:open|acknowledged|resolved sub:ID since:1h (last seen), free \
                  text",
};
