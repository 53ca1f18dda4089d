//! Events the observer received: each event's exact bytes (the same bytes
//! every subscription was sent), its redacted headers, and when it came.
//! Inserting one also records its session as known and due for a sweep.

use chrono::DateTime;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Store, outcomes};
use serde_json::Value;

/// One voice-agent event as the observer received it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedEvent {
    pub event_id: String,
    /// `session.started`, `call.ended`, …
    pub event: String,
    /// The session id, or for a call its `call_id` (the same value).
    pub session_id: String,
    /// `session` or `call`.
    pub kind: &'static str,
    /// The payload's `timestamp`.
    pub occurred_ms: i64,
    pub received_ms: i64,
    /// `X-SVC-Delivery-Id` of the attempt that brought it.
    pub delivery_id: Option<String>,
    /// Request headers in arrival order, secret values already replaced.
    pub headers: Vec<(String, String)>,
    /// The exact body bytes.
    pub body: Vec<u8>,
}

impl ObservedEvent {
    /// Reads the identifying fields of a delivery body; `None` when the body
    /// is not a voice-agent event (spec 2 C payloads).
    pub fn from_delivery(
        body: &[u8],
        headers: Vec<(String, String)>,
        delivery_id: Option<String>,
        received_ms: i64,
    ) -> Option<ObservedEvent> {
        let payload: Value = serde_json::from_slice(body).ok()?;
        let event_id = payload.get("event_id")?.as_str()?.to_owned();
        let event = payload.get("event")?.as_str()?.to_owned();
        let occurred_ms = DateTime::parse_from_rfc3339(payload.get("timestamp")?.as_str()?)
            .ok()?
            .timestamp_millis();
        let (kind, object) = match (payload.get("session"), payload.get("call")) {
            (Some(session), _) => ("session", session),
            (None, Some(call)) => ("call", call),
            (None, None) => return None,
        };
        let session_id = object
            .get("session_id")
            .or_else(|| object.get("call_id"))?
            .as_str()?
            .to_owned();
        Some(ObservedEvent {
            event_id,
            event,
            session_id,
            kind,
            occurred_ms,
            received_ms,
            delivery_id,
            headers,
            body: body.to_vec(),
        })
    }
}

/// A stored event, as recover and the console read it back.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    pub event_id: String,
    pub event: String,
    pub session_id: String,
    pub occurred_ms: i64,
    pub body: Vec<u8>,
}

/// Stores `event` unless its `event_id` is already there (the platform
/// delivers at least once). Whether it was new.
pub(crate) fn insert(conn: &Connection, event: &ObservedEvent) -> rusqlite::Result<bool> {
    let headers = serde_json::to_string(&event.headers).unwrap_or_else(|_| "[]".into());
    let inserted = conn.execute(
        "INSERT OR IGNORE INTO events
             (event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            event.event_id,
            event.event,
            event.session_id,
            event.occurred_ms,
            event.received_ms,
            event.delivery_id,
            headers,
            event.body,
        ],
    )? == 1;
    if inserted {
        conn.execute(
            "INSERT INTO sessions (session_id, kind, source, first_seen_ms, last_event_ms)
             VALUES (?1, ?2, 'observer', ?3, ?3)
             ON CONFLICT (session_id) DO UPDATE SET
                 kind = coalesce(kind, excluded.kind),
                 last_event_ms = max(coalesce(last_event_ms, 0), excluded.last_event_ms),
                 unsettled = 1",
            params![event.session_id, event.kind, event.received_ms],
        )?;
        outcomes::observed(
            conn,
            &event.event_id,
            &event.event,
            &event.session_id,
            event.occurred_ms,
        )?;
    }
    Ok(inserted)
}

/// Whether `event_id` is stored.
pub(crate) fn is_kept(conn: &Connection, event_id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM events WHERE event_id = ?1)")?
        .query_row([event_id], |row| row.get(0))
}

/// The events of one session or call, oldest first.
pub fn for_session(store: &Store, session_id: &str) -> rusqlite::Result<Vec<StoredEvent>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT event_id, event, session_id, occurred_ms, body FROM events
         WHERE session_id = ?1 ORDER BY occurred_ms, event_id",
    )?;
    let rows = statement.query_map([session_id], stored_event)?;
    super::readable(rows)
}

/// One event by id.
pub fn get(store: &Store, event_id: &str) -> rusqlite::Result<Option<StoredEvent>> {
    store
        .conn
        .query_row(
            "SELECT event_id, event, session_id, occurred_ms, body FROM events WHERE event_id = ?1",
            [event_id],
            stored_event,
        )
        .optional()
}

/// How many events are stored.
pub fn count(store: &Store) -> rusqlite::Result<i64> {
    store
        .conn
        .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
}

fn stored_event(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        event_id: row.get(0)?,
        event: row.get(1)?,
        session_id: row.get(2)?,
        occurred_ms: row.get(3)?,
        body: row.get(4)?,
    })
}

/// How many events the observer received since `since_ms`, and when it
/// received its newest one (at any time).
pub fn received_since(store: &Store, since_ms: i64) -> rusqlite::Result<(i64, Option<i64>)> {
    let in_window = store
        .conn
        .prepare_cached("SELECT count(*) FROM events WHERE received_ms >= ?1")?
        .query_row([since_ms], |row| row.get(0))?;
    let newest = store
        .conn
        .prepare_cached("SELECT max(received_ms) FROM events")?
        .query_row([], |row| row.get(0))?;
    Ok((in_window, newest))
}
