//! Events the observer received: each event's exact bytes (the same bytes
//! every subscription was sent), its redacted headers, and when it came.
//! Inserting one also records its session as known and due for a sweep. A
//! genuine delivery these rows cannot hold (no readable timestamp, type or
//! session) is kept in `unfiled_events` instead, with why.

use chrono::DateTime;
use rusqlite::{Connection, OptionalExtension, params};

use super::numbered_events::SESSION_EVENTS;
use super::postgres::{PgError, PgStore};
use super::{Store, event_key, outcomes};
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
    /// is not a voice-agent event `events` can file ([`Filing::read`] says
    /// why).
    pub fn from_delivery(
        body: &[u8],
        headers: Vec<(String, String)>,
        delivery_id: Option<String>,
        received_ms: i64,
    ) -> Option<ObservedEvent> {
        match Filing::read(body, headers, delivery_id, received_ms) {
            Filing::Event(event) => Some(event),
            Filing::Unfiled(_) => None,
        }
    }
}

/// Why a genuine delivery cannot be filed in `events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("the body is not a JSON object")]
    NotAnObject,
    #[error("no event_id string")]
    NoEventId,
    #[error("no event type string")]
    NoEventType,
    #[error("no timestamp")]
    NoTimestamp,
    #[error("the timestamp is not an ISO 8601 time with a zone")]
    BadTimestamp,
    #[error("neither a session nor a call object (an unknown event type?)")]
    NoSessionOrCall,
    #[error("no session_id or call_id")]
    NoSessionId,
    #[error("the session_id is not a string")]
    SessionIdNotText,
}

/// A genuine delivery `events` cannot file: its exact bytes, what could be
/// read of it (the rest `None`), and why. Kept in `unfiled_events`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnfiledEvent {
    pub event_id: Option<String>,
    pub event: Option<String>,
    pub session_id: Option<String>,
    pub occurred_ms: Option<i64>,
    pub received_ms: i64,
    pub delivery_id: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Never empty.
    pub reasons: Vec<Unreadable>,
}

impl UnfiledEvent {
    /// The reasons, for a person: `no timestamp; no session_id or call_id`.
    pub fn reason(&self) -> String {
        let reasons: Vec<String> = self.reasons.iter().map(ToString::to_string).collect();
        reasons.join("; ")
    }
}

/// Where the observer keeps one genuine delivery.
#[derive(Clone, Debug, PartialEq)]
pub enum Filing {
    /// A session or call event: `events`.
    Event(ObservedEvent),
    /// Anything else signed: `unfiled_events`.
    Unfiled(UnfiledEvent),
}

impl From<ObservedEvent> for Filing {
    fn from(event: ObservedEvent) -> Self {
        Filing::Event(event)
    }
}

impl Filing {
    /// Files a delivery body: an [`ObservedEvent`] when every field
    /// `events` needs can be read, else an [`UnfiledEvent`] with the same
    /// bytes. Never fails: a genuine delivery is always kept somewhere.
    pub fn read(
        body: &[u8],
        headers: Vec<(String, String)>,
        delivery_id: Option<String>,
        received_ms: i64,
    ) -> Filing {
        let payload: Option<Value> = serde_json::from_slice(body).ok().filter(Value::is_object);
        let mut reasons = Vec::new();
        let Some(payload) = payload else {
            return Filing::Unfiled(UnfiledEvent {
                event_id: None,
                event: None,
                session_id: None,
                occurred_ms: None,
                received_ms,
                delivery_id,
                headers,
                body: body.to_vec(),
                reasons: vec![Unreadable::NotAnObject],
            });
        };
        let text = |name: &str| payload.get(name).and_then(Value::as_str).map(str::to_owned);
        let event_id = text("event_id");
        if event_id.is_none() {
            reasons.push(Unreadable::NoEventId);
        }
        let event = text("event");
        if event.is_none() {
            reasons.push(Unreadable::NoEventType);
        }
        let occurred_ms = match payload.get("timestamp") {
            None | Some(Value::Null) => {
                reasons.push(Unreadable::NoTimestamp);
                None
            }
            Some(value) => {
                let parsed = value.as_str().and_then(parse_timestamp);
                if parsed.is_none() {
                    reasons.push(Unreadable::BadTimestamp);
                }
                parsed
            }
        };
        let object = match (payload.get("session"), payload.get("call")) {
            (Some(session), _) => Some(("session", session)),
            (None, Some(call)) => Some(("call", call)),
            (None, None) => {
                reasons.push(Unreadable::NoSessionOrCall);
                None
            }
        };
        let session_id = object.and_then(|(_, object)| {
            match object.get("session_id").or_else(|| object.get("call_id")) {
                None | Some(Value::Null) => {
                    reasons.push(Unreadable::NoSessionId);
                    None
                }
                Some(Value::String(id)) => Some(id.clone()),
                Some(_) => {
                    reasons.push(Unreadable::SessionIdNotText);
                    None
                }
            }
        });
        match (event_id, event, occurred_ms, object, session_id) {
            (Some(event_id), Some(event), Some(occurred_ms), Some((kind, _)), Some(session_id))
                if reasons.is_empty() =>
            {
                Filing::Event(ObservedEvent {
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
            (event_id, event, occurred_ms, _, session_id) => Filing::Unfiled(UnfiledEvent {
                event_id,
                event,
                session_id,
                occurred_ms,
                received_ms,
                delivery_id,
                headers,
                body: body.to_vec(),
                reasons,
            }),
        }
    }

    /// The payload's `event_id`, when it has one.
    pub fn event_id(&self) -> Option<&str> {
        match self {
            Filing::Event(event) => Some(&event.event_id),
            Filing::Unfiled(unfiled) => unfiled.event_id.as_deref(),
        }
    }
}

/// Formats [`parse_timestamp`] tries after RFC 3339 (`%#z`: `Z`, `+00`,
/// `+0000` or `+00:00`).
const TIMESTAMP_FORMS: [&str; 6] = [
    "%Y-%m-%dT%H:%M:%S%.f%#z",
    "%Y-%m-%dT%H:%M%#z",
    "%Y-%m-%d %H:%M:%S%.f%#z",
    "%Y%m%dT%H%M%S%.f%#z",
    "%Y%m%dT%H%M%#z",
    "%Y%m%dT%H%#z",
];

/// An event's `timestamp` in Unix milliseconds: RFC 3339, or a common ISO
/// 8601 variant (offset `+0000` or `+00`, no seconds, the basic form
/// `20261125T010000Z`). A time without a zone is not guessed at.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    DateTime::parse_from_rfc3339(text)
        .ok()
        .or_else(|| {
            TIMESTAMP_FORMS
                .iter()
                .find_map(|form| DateTime::parse_from_str(text, form).ok())
        })
        .map(|time| time.timestamp_millis())
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

/// Stores `event` unless it is already there, by its key `(occurred_ms,
/// event_id)`: the platform delivers at least once, a repeat with the
/// same bytes (`event_key`). Whether it was new.
pub(crate) fn insert(conn: &Connection, event: &ObservedEvent) -> rusqlite::Result<bool> {
    let kept = conn
        .prepare_cached("SELECT 1 FROM events WHERE occurred_ms = ?1 AND event_id = ?2")?
        .exists(params![event.occurred_ms, event.event_id])?;
    if kept {
        return Ok(false);
    }
    // The session first: the event is filed under its number.
    let session_no: i64 = conn
        .prepare_cached(
            "INSERT INTO sessions (session_id, kind, source, first_seen_ms, last_event_ms)
             VALUES (?1, ?2, 'observer', ?3, ?3)
             ON CONFLICT (session_id) DO UPDATE SET
                 kind = coalesce(kind, excluded.kind),
                 last_event_ms = max(coalesce(last_event_ms, 0), excluded.last_event_ms),
                 unsettled = 1
             RETURNING session_no",
        )?
        .query_row(
            params![event.session_id, event.kind, event.received_ms],
            |row| row.get(0),
        )?;
    let headers = serde_json::to_string(&event.headers).unwrap_or_else(|_| "[]".into());
    conn.prepare_cached(
        "INSERT INTO events
             (event_id, event, session_id, session_no, occurred_ms, received_ms, delivery_id,
              headers, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        event.event_id,
        event.event,
        event.session_id,
        session_no,
        event.occurred_ms,
        event.received_ms,
        event.delivery_id,
        headers,
        event.body,
    ])?;
    outcomes::observed(conn, event, session_no)?;
    Ok(true)
}

/// Keeps `filing` in `events` or `unfiled_events` unless it is already
/// kept in either ([`is_kept`]). Whether it was new.
pub(crate) fn keep(conn: &Connection, filing: &Filing) -> rusqlite::Result<bool> {
    match filing {
        Filing::Event(event) => insert(conn, event),
        Filing::Unfiled(unfiled) => insert_unfiled(conn, unfiled),
    }
}

/// Whether `filing` is kept: an event by its key in `events` (or by its
/// id in `unfiled_events`), an unfiled delivery by its id in either.
pub(crate) fn is_kept(conn: &Connection, filing: &Filing) -> rusqlite::Result<bool> {
    match filing {
        Filing::Event(event) => conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM events WHERE occurred_ms = ?1 AND event_id = ?2)
                     OR EXISTS (SELECT 1 FROM unfiled_events WHERE event_id = ?2)",
            )?
            .query_row(params![event.occurred_ms, event.event_id], |row| row.get(0)),
        Filing::Unfiled(unfiled) => match &unfiled.event_id {
            Some(event_id) => is_kept_by_id(conn, event_id),
            None => Ok(false),
        },
    }
}

/// Whether an event or unfiled delivery with id `event_id` is kept.
fn is_kept_by_id(conn: &Connection, event_id: &str) -> rusqlite::Result<bool> {
    let unfiled: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM unfiled_events WHERE event_id = ?1)")?
        .query_row([event_id], |row| row.get(0))?;
    Ok(unfiled || event_key::rowid_of(conn, event_id)?.is_some())
}

fn insert_unfiled(conn: &Connection, unfiled: &UnfiledEvent) -> rusqlite::Result<bool> {
    if let Some(event_id) = &unfiled.event_id
        && is_kept_by_id(conn, event_id)?
    {
        return Ok(false);
    }
    let headers = serde_json::to_string(&unfiled.headers).unwrap_or_else(|_| "[]".into());
    let inserted =
        conn.prepare_cached(
            "INSERT OR IGNORE INTO unfiled_events
                 (received_ms, event_id, event, session_id, occurred_ms, delivery_id, headers,
                  body, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            unfiled.received_ms,
            unfiled.event_id,
            unfiled.event,
            unfiled.session_id,
            unfiled.occurred_ms,
            unfiled.delivery_id,
            headers,
            unfiled.body,
            unfiled.reason(),
        ])? == 1;
    Ok(inserted)
}

/// How many deliveries are kept unfiled.
pub fn count_unfiled(store: &Store) -> rusqlite::Result<i64> {
    store
        .conn
        .query_row("SELECT count(*) FROM unfiled_events", [], |row| row.get(0))
}

/// The events of one session or call, oldest first.
pub fn for_session(store: &Store, session_id: &str) -> rusqlite::Result<Vec<StoredEvent>> {
    let mut statement = store.conn.prepare_cached(&format!(
        "SELECT event_id, event, session_id, occurred_ms, body FROM {SESSION_EVENTS}
         ORDER BY occurred_ms, event_id"
    ))?;
    let rows = statement.query_map([session_id], stored_event)?;
    super::readable(rows)
}

/// [`for_session`]'s statement on PostgreSQL: ties by id in byte order,
/// as SQLite's `BINARY`.
pub const POSTGRES_FOR_SESSION: &str = "
SELECT event_id, event, session_id, occurred_ms, body FROM earshot.events
WHERE session_id = $1 ORDER BY occurred_ms, event_id COLLATE \"C\"";

/// [`for_session`] on a PostgreSQL store.
pub async fn for_session_postgres(
    store: &PgStore,
    session_id: &str,
) -> Result<Vec<StoredEvent>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_FOR_SESSION).await?;
    let mut events = Vec::new();
    for row in client.query(&statement, &[&session_id]).await? {
        events.push(StoredEvent {
            event_id: row.try_get(0)?,
            event: row.try_get(1)?,
            session_id: row.try_get(2)?,
            occurred_ms: row.try_get(3)?,
            body: row.try_get(4)?,
        });
    }
    Ok(events)
}

/// One event by id (found as [`event_key::rowid_of`] finds it).
pub fn get(store: &Store, event_id: &str) -> rusqlite::Result<Option<StoredEvent>> {
    let Some(rowid) = event_key::rowid_of(&store.conn, event_id)? else {
        return Ok(None);
    };
    store
        .conn
        .prepare_cached(
            "SELECT event_id, event, session_id, occurred_ms, body FROM events WHERE rowid = ?1",
        )?
        .query_row([rowid], stored_event)
        .optional()
}

/// One event by its key, which an outcome row of the event carries; by id
/// alone ([`get`]) when no event has that key.
pub fn get_at(
    store: &Store,
    occurred_ms: i64,
    event_id: &str,
) -> rusqlite::Result<Option<StoredEvent>> {
    let keyed = store
        .conn
        .prepare_cached(
            "SELECT event_id, event, session_id, occurred_ms, body FROM events
             WHERE occurred_ms = ?1 AND event_id = ?2",
        )?
        .query_row(params![occurred_ms, event_id], stored_event)
        .optional()?;
    match keyed {
        Some(event) => Ok(Some(event)),
        None => get(store, event_id),
    }
}

/// [`get`]'s statement on PostgreSQL: one event by id alone (the primary
/// key's first column); of two copies in two days the earlier one, where
/// SQLite takes the first filed ([`event_key::rowid_of`]).
const POSTGRES_GET: &str = "
SELECT event_id, event, session_id, occurred_ms, body FROM earshot.events
WHERE event_id = $1 ORDER BY occurred_ms LIMIT 1";

/// [`get`] on a PostgreSQL store.
pub async fn get_postgres(store: &PgStore, event_id: &str) -> Result<Option<StoredEvent>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_GET).await?;
    client
        .query_opt(&statement, &[&event_id])
        .await?
        .map(|row| stored_event_postgres(&row))
        .transpose()
}

/// [`get_at`] on a PostgreSQL store: the event at its time (its day's
/// partition), else by id alone.
pub async fn get_at_postgres(
    store: &PgStore,
    occurred_ms: i64,
    event_id: &str,
) -> Result<Option<StoredEvent>, PgError> {
    let client = store.client().await?;
    let keyed = client
        .query_opt(
            "SELECT event_id, event, session_id, occurred_ms, body FROM earshot.events
             WHERE occurred_ms = $1 AND event_id = $2",
            &[&occurred_ms, &event_id],
        )
        .await?;
    let row = match keyed {
        Some(row) => Some(row),
        None => {
            let statement = client.prepare_cached(POSTGRES_GET).await?;
            client.query_opt(&statement, &[&event_id]).await?
        }
    };
    row.map(|row| stored_event_postgres(&row)).transpose()
}

/// A [`StoredEvent`] from PostgreSQL's columns `event_id, event,
/// session_id, occurred_ms, body`.
fn stored_event_postgres(row: &tokio_postgres::Row) -> Result<StoredEvent, PgError> {
    Ok(StoredEvent {
        event_id: row.try_get(0)?,
        event: row.try_get(1)?,
        session_id: row.try_get(2)?,
        occurred_ms: row.try_get(3)?,
        body: row.try_get(4)?,
    })
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
/// received its newest one (at any time). The whole hours after the first
/// come from the hour counts the triggers keep; only the first, partial
/// hour is counted along the time index (a 24-hour window of a busy store
/// read every event's index entry before: 6,800 pages for 1.4 million).
pub fn received_since(store: &Store, since_ms: i64) -> rusqlite::Result<(i64, Option<i64>)> {
    const HOUR_MS: i64 = 3_600_000;
    let in_window = if since_ms < 0 {
        // SQLite's hour of a time before 1970 rounds the other way.
        store
            .conn
            .prepare_cached("SELECT count(*) FROM events WHERE received_ms >= ?1")?
            .query_row([since_ms], |row| row.get(0))?
    } else {
        let hour = since_ms / HOUR_MS;
        store
            .conn
            .prepare_cached(
                "SELECT (SELECT total(count) FROM events_received_hourly WHERE hour > ?2)
                      + (SELECT count(*) FROM events
                         WHERE received_ms >= ?1 AND received_ms < (?2 + 1) * 3600000)",
            )?
            .query_row([since_ms, hour], |row| super::summed_count(row, 0))?
    };
    let newest = store
        .conn
        .prepare_cached("SELECT max(received_ms) FROM events")?
        .query_row([], |row| row.get(0))?;
    Ok((in_window, newest))
}

/// The observer's pace before `last_ms`: how many events it received in
/// the `span_ms` up to `last_ms` (both ends included), and the first of
/// them. One range of `events_by_received`, never a scan of the table.
pub fn pace_before(
    store: &Store,
    last_ms: i64,
    span_ms: i64,
) -> rusqlite::Result<(i64, Option<i64>)> {
    store
        .conn
        .prepare_cached(
            "SELECT count(*), min(received_ms) FROM events
             WHERE received_ms BETWEEN ?1 AND ?2",
        )?
        .query_row([last_ms - span_ms, last_ms], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
}

/// [`received_since`] on PostgreSQL, as on SQLite: the whole hours after
/// `since_ms`'s from the hour counts (`events_received_hourly`, schema
/// version 11), the rest of its hour along `events_by_received`, and the
/// newest. `$2` is `since_ms`'s hour; a time before 1970 (`$2` = -1) is
/// counted from `events` alone.
const POSTGRES_RECEIVED_SINCE: &str = "
SELECT CASE WHEN $2::bigint < 0
            THEN (SELECT count(*) FROM earshot.events WHERE received_ms >= $1)
            ELSE (SELECT coalesce(sum(count), 0)::bigint FROM earshot.events_received_hourly
                  WHERE hour > $2::bigint)
               + (SELECT count(*) FROM earshot.events
                  WHERE received_ms >= $1 AND received_ms < ($2::bigint + 1) * 3600000) END,
       (SELECT max(received_ms) FROM earshot.events)";

/// [`pace_before`]'s statement on PostgreSQL.
const POSTGRES_PACE_BEFORE: &str = "
SELECT count(*), min(received_ms) FROM earshot.events
WHERE received_ms BETWEEN $1 AND $2";

/// [`received_since`] on a PostgreSQL store.
pub async fn received_since_postgres(
    store: &PgStore,
    since_ms: i64,
) -> Result<(i64, Option<i64>), PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_RECEIVED_SINCE).await?;
    let hour = if since_ms < 0 {
        -1
    } else {
        since_ms / 3_600_000
    };
    let row = client.query_one(&statement, &[&since_ms, &hour]).await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// [`pace_before`] on a PostgreSQL store.
pub async fn pace_before_postgres(
    store: &PgStore,
    last_ms: i64,
    span_ms: i64,
) -> Result<(i64, Option<i64>), PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_PACE_BEFORE).await?;
    let from = last_ms - span_ms;
    let row = client.query_one(&statement, &[&from, &last_ms]).await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Events the observer received per hour, and its newest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceivedHours {
    /// `(hour since 1970, events)`, oldest first, hours with none absent.
    pub hours: Vec<(i64, i64)>,
    /// When it received its newest event, at any time (Unix ms).
    pub newest_ms: Option<i64>,
}

/// Events the observer received in each hour from `first_hour` to
/// `last_hour` (hours since 1970, both included), and when it received its
/// newest event. From the hour counts the triggers keep and the time
/// index's last entry, never a scan of events.
pub fn received_per_hour(
    store: &Store,
    first_hour: i64,
    last_hour: i64,
) -> rusqlite::Result<ReceivedHours> {
    let mut statement = store.conn.prepare_cached(
        "SELECT hour, count FROM events_received_hourly
         WHERE hour BETWEEN ?1 AND ?2 AND count > 0 ORDER BY hour",
    )?;
    let rows = statement.query_map([first_hour, last_hour], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    let hours = super::readable(rows)?;
    let newest_ms = store
        .conn
        .prepare_cached("SELECT max(received_ms) FROM events")?
        .query_row([], |row| row.get(0))?;
    Ok(ReceivedHours { hours, newest_ms })
}

/// [`received_per_hour`]'s hours on PostgreSQL: an hour has a count row
/// for each server process that filed in it and each day partition its
/// events are in (`events_received_hourly`, schema version 11), summed.
const POSTGRES_RECEIVED_PER_HOUR: &str = "
SELECT hour, sum(count)::bigint FROM earshot.events_received_hourly
WHERE hour BETWEEN $1 AND $2 GROUP BY hour HAVING sum(count) > 0 ORDER BY hour";

/// [`received_per_hour`]'s newest on PostgreSQL (`events_by_received`).
const POSTGRES_NEWEST_RECEIVED: &str = "SELECT max(received_ms) FROM earshot.events";

/// [`received_per_hour`] on a PostgreSQL store: the same hours and newest
/// from the hour counts and the time index, never a scan of events.
pub async fn received_per_hour_postgres(
    store: &PgStore,
    first_hour: i64,
    last_hour: i64,
) -> Result<ReceivedHours, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_RECEIVED_PER_HOUR).await?;
    let mut hours = Vec::new();
    for row in client.query(&statement, &[&first_hour, &last_hour]).await? {
        hours.push((row.try_get(0)?, row.try_get(1)?));
    }
    let statement = client.prepare_cached(POSTGRES_NEWEST_RECEIVED).await?;
    let newest_ms = client.query_one(&statement, &[]).await?.try_get(0)?;
    Ok(ReceivedHours { hours, newest_ms })
}
