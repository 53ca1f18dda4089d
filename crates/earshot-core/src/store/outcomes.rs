//! Events, not attempts: how each event a subscription should have
//! received ended for it (DESIGN §10). One row of `event_outcomes` per
//! subscription and event: its attempt chain ([`super::chains`]) matched to
//! the observed event, in one [`EventState`].
//!
//! The rows are kept as records and events arrive, never recomputed per
//! refresh: the observer adds an `unknown` row per listening subscription
//! when it stores an event ([`observed`]); each sweep of a session rebuilds
//! that session's rows from every stored attempt, event and recovery
//! ([`rebuild_sessions`]); a recovery that got a 2xx turns `missed` into
//! `recovered` ([`recovered`]). Triggers keep minute and hour counts
//! (`event_counts`, `event_counts_hourly`), so the Health board reads a few
//! thousand rows whatever the number of events.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::chains::{Fate, match_events};
use super::events::StoredEvent;
use super::sessions::SETTLE_MS;
use super::{Store, incidents};
use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, EventKind};

/// How one event ended for one subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventState {
    /// An attempt got a 2xx.
    Delivered,
    /// An attempt in flight, or a retry scheduled.
    Pending,
    /// Failed for good (no retry left or coming) and not recovered.
    Missed,
    /// Missed, then re-sent by earshot with a 2xx answer.
    Recovered,
    /// The observer holds the event; its attempts for this subscription
    /// were not swept yet.
    Unknown,
}

impl EventState {
    pub const ALL: [EventState; 5] = [
        EventState::Delivered,
        EventState::Pending,
        EventState::Missed,
        EventState::Recovered,
        EventState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventState::Delivered => "delivered",
            EventState::Pending => "pending",
            EventState::Missed => "missed",
            EventState::Recovered => "recovered",
            EventState::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<EventState> {
        EventState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }
}

/// Events of one subscription (the board's row, a timeline's bucket) by
/// the state they are in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventTotals {
    pub delivered: i64,
    pub missed: i64,
    pub recovered: i64,
    pub pending: i64,
    pub unknown: i64,
}

impl EventTotals {
    pub fn total(&self) -> i64 {
        self.delivered + self.missed + self.recovered + self.pending + self.unknown
    }

    /// Adds `other`'s events, state by state.
    pub fn absorb(&mut self, other: &EventTotals) {
        for (state, count) in [
            (EventState::Delivered, other.delivered),
            (EventState::Missed, other.missed),
            (EventState::Recovered, other.recovered),
            (EventState::Pending, other.pending),
            (EventState::Unknown, other.unknown),
        ] {
            self.add(state, count);
        }
    }

    pub(crate) fn add(&mut self, state: EventState, count: i64) {
        let slot = match state {
            EventState::Delivered => &mut self.delivered,
            EventState::Missed => &mut self.missed,
            EventState::Recovered => &mut self.recovered,
            EventState::Pending => &mut self.pending,
            EventState::Unknown => &mut self.unknown,
        };
        *slot = slot.saturating_add(count);
    }
}

/// The coarse class a failure is grouped under: empty when the status code
/// says it all, else the start of the error (`timeout`, `connection error`,
/// the first 8 characters of another), `unknown` when there is neither.
/// The same rule as the attempt counts' SQL (`schema::error_class`).
pub(crate) fn error_class(http_status_code: Option<u16>, error: Option<&str>) -> String {
    match (http_status_code, error) {
        (Some(_), _) => String::new(),
        (None, None) => "unknown".to_owned(),
        (None, Some(error)) if error.starts_with("timeout") => "timeout".to_owned(),
        (None, Some(error)) if error.starts_with("connection error") => {
            "connection error".to_owned()
        }
        (None, Some(error)) => error.chars().take(8).collect(),
    }
}

/// One row of `event_outcomes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub subscription_id: String,
    /// The `event_id`, or `delivery:<first attempt id>` when the observer
    /// never received the event.
    pub event_key: String,
    /// `None`: not observed (its bytes are not held; it cannot be re-sent).
    pub event_id: Option<String>,
    /// The event type, when known (observed, or the only one the session's
    /// other events leave).
    pub event: Option<String>,
    pub session_id: String,
    /// The event's timestamp, or its first attempt's when not observed.
    pub occurred_ms: i64,
    pub state: EventState,
    pub attempts: i64,
    /// The last failed attempt's status code (0 when none) and error class
    /// (empty when the code says it all, or when nothing failed).
    pub http_status_code: u16,
    pub error_class: String,
    pub first_failure_ms: Option<i64>,
    pub last_failure_ms: Option<i64>,
    /// When the 2xx came (delivered or recovered).
    pub settled_ms: Option<i64>,
}

/// An observed event's `unknown` row for every enabled subscription that
/// listens to its type (nothing is known of its attempts until a sweep).
pub(crate) fn observed(
    conn: &Connection,
    event_id: &str,
    event: &str,
    session_id: &str,
    occurred_ms: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO event_outcomes
             (subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
              attempts, http_status_code, error_class)
         SELECT s.id, ?1, ?1, ?2, ?3, ?4, 'unknown', 0, 0, ''
         FROM subscriptions s
         WHERE s.enabled = 1 AND EXISTS (SELECT 1 FROM json_each(s.events) WHERE value = ?2)",
    )?
    .execute(params![event_id, event, session_id, occurred_ms])?;
    Ok(())
}

/// Turns `event_id`'s `missed` row for `subscription_id` into `recovered`
/// (earshot re-sent it and the receiver answered 2xx at `at_ms`).
pub(crate) fn recovered(
    conn: &Connection,
    subscription_id: &str,
    event_id: &str,
    at_ms: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE event_outcomes SET state = 'recovered', settled_ms = ?3
         WHERE session_id IN (SELECT session_id FROM events WHERE event_id = ?2)
           AND subscription_id = ?1 AND event_key = ?2 AND state = 'missed'",
    )?
    .execute(params![subscription_id, event_id, at_ms])?;
    incidents::settle(conn, subscription_id, at_ms)
}

/// What the rebuild needs of a stored subscription.
struct Listening {
    events: Vec<String>,
    enabled: bool,
}

/// Rebuilds the rows of each session from every stored attempt, event and
/// recovery of it, at `now_ms` (inside the caller's transaction), and
/// brings the incidents of the subscriptions concerned up to date.
pub(crate) fn rebuild_sessions(
    conn: &Connection,
    session_ids: &[&str],
    now_ms: i64,
) -> rusqlite::Result<()> {
    let subscriptions = listening(conn)?;
    let mut touched: HashSet<String> = HashSet::new();
    for session_id in session_ids {
        let mut rows = session_outcomes(conn, session_id, &subscriptions, now_ms)?;
        rows.sort_by(|a, b| {
            (&a.subscription_id, &a.event_key).cmp(&(&b.subscription_id, &b.event_key))
        });
        // A re-check that changed nothing writes nothing: the sweep re-checks
        // sessions in turn, and a rewrite of the same rows would move every
        // live list's version and fill the WAL.
        if stored_rows(conn, session_id)? == rows {
            continue;
        }
        conn.prepare_cached("DELETE FROM event_outcomes WHERE session_id = ?1")?
            .execute([session_id])?;
        let mut insert = conn.prepare_cached(
            "INSERT OR REPLACE INTO event_outcomes
                 (subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                  attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                  settled_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        for row in &rows {
            insert.execute(params![
                row.subscription_id,
                row.event_key,
                row.event_id,
                row.event,
                row.session_id,
                row.occurred_ms,
                row.state.as_str(),
                row.attempts,
                row.http_status_code,
                row.error_class,
                row.first_failure_ms,
                row.last_failure_ms,
                row.settled_ms,
            ])?;
            if incidents::counts(row) {
                incidents::note_failure(conn, row)?;
            }
            touched.insert(row.subscription_id.clone());
        }
    }
    for subscription_id in touched {
        incidents::settle(conn, &subscription_id, now_ms)?;
    }
    Ok(())
}

/// The stored rows of `session_id`, in key order.
fn stored_rows(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = conn.prepare_cached(
        "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                settled_ms
         FROM event_outcomes WHERE session_id = ?1 ORDER BY subscription_id, event_key",
    )?;
    let rows = statement.query_map([session_id], outcome_row)?;
    rows.collect()
}

/// Every session with a stored attempt: what a store migrated from a
/// version without event rows rebuilds once.
pub(crate) fn rebuild_all(conn: &Connection, now_ms: i64) -> rusqlite::Result<()> {
    let ids: Vec<String> = conn
        .prepare("SELECT DISTINCT session_id FROM deliveries")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    rebuild_sessions(conn, &ids, now_ms)
}

fn listening(conn: &Connection) -> rusqlite::Result<HashMap<String, Listening>> {
    let mut statement = conn.prepare_cached("SELECT id, events, enabled FROM subscriptions")?;
    let rows = statement.query_map([], |row| {
        let events: String = row.get(1)?;
        Ok((
            row.get::<_, String>(0)?,
            Listening {
                events: serde_json::from_str(&events).unwrap_or_default(),
                enabled: row.get(2)?,
            },
        ))
    })?;
    super::readable(rows)
}

/// One session's rows, computed from what the store holds of it.
fn session_outcomes(
    conn: &Connection,
    session_id: &str,
    subscriptions: &HashMap<String, Listening>,
    now_ms: i64,
) -> rusqlite::Result<Vec<Outcome>> {
    let attempts = stored_attempts(conn, session_id)?;
    let (events, received) = stored_events(conn, session_id)?;
    let recovered = recoveries_of(conn, session_id)?;
    let is_call = events
        .first()
        .and_then(|event| EventKind::parse(&event.event))
        .map_or(session_id.starts_with("call_"), EventKind::is_call);

    let mut by_subscription: BTreeMap<&str, Vec<DeliveryRecord>> = BTreeMap::new();
    for attempt in &attempts {
        by_subscription
            .entry(attempt.subscription_id.as_str())
            .or_default()
            .push(attempt.clone());
    }
    let mut rows = Vec::new();
    let mut matched: HashSet<(String, String)> = HashSet::new();
    for (subscription_id, records) in &by_subscription {
        let listens = subscriptions.get(*subscription_id);
        let wanted: Vec<StoredEvent> = events
            .iter()
            .filter(|event| listens.is_none_or(|s| s.events.contains(&event.event)))
            .cloned()
            .collect();
        let chains = match_events(records, &wanted);
        let observed_types: HashSet<&str> = chains
            .iter()
            .filter_map(|chain| chain.event.map(|event| event.event.as_str()))
            .collect();
        // The type an unobserved chain must have, when the subscription's
        // types for this kind of session leave exactly one.
        let inferred = listens.and_then(|s| {
            let mut left = s.events.iter().filter(|name| {
                EventKind::parse(name).is_some_and(|kind| kind.is_call() == is_call)
                    && !observed_types.contains(name.as_str())
            });
            match (left.next(), left.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        });
        for chain in chains {
            let last_failure = chain
                .attempts
                .iter()
                .rev()
                .find(|attempt| attempt.status == DeliveryStatus::Failed);
            let failures = chain
                .attempts
                .iter()
                .filter(|attempt| attempt.status == DeliveryStatus::Failed)
                .map(|attempt| attempt.created_at.timestamp_millis());
            let first_failure_ms = failures.clone().min();
            let last_failure_ms = failures.max();
            let delivered_ms = chain
                .attempts
                .iter()
                .find(|attempt| attempt.status == DeliveryStatus::Delivered)
                .map(|attempt| {
                    attempt
                        .delivered_at
                        .unwrap_or(attempt.created_at)
                        .timestamp_millis()
                });
            let event_id = chain.event.map(|event| event.event_id.clone());
            let recovery = event_id
                .as_ref()
                .and_then(|id| recovered.get(&(subscription_id.to_string(), id.clone())));
            let (state, settled_ms) = match (chain.fate, recovery) {
                (Fate::Delivered, _) => (EventState::Delivered, delivered_ms),
                (Fate::Pending, _) => (EventState::Pending, None),
                (Fate::FailedForGood, Some(at)) => (EventState::Recovered, Some(*at)),
                (Fate::FailedForGood, None) => (EventState::Missed, None),
            };
            if let Some(event) = chain.event {
                matched.insert((subscription_id.to_string(), event.event_id.clone()));
            }
            let first = chain.attempts[0];
            rows.push(Outcome {
                subscription_id: subscription_id.to_string(),
                event_key: event_id
                    .clone()
                    .unwrap_or_else(|| format!("delivery:{}", first.id)),
                event: chain
                    .event
                    .map(|event| event.event.clone())
                    .or_else(|| inferred.clone()),
                session_id: session_id.to_owned(),
                occurred_ms: chain
                    .event
                    .map_or(first.created_at.timestamp_millis(), |event| {
                        event.occurred_ms
                    }),
                state,
                attempts: i64::try_from(chain.attempts.len()).unwrap_or(i64::MAX),
                http_status_code: last_failure
                    .and_then(|attempt| attempt.http_status_code)
                    .unwrap_or(0),
                error_class: last_failure.map_or_else(String::new, |attempt| {
                    error_class(attempt.http_status_code, attempt.error.as_deref())
                }),
                first_failure_ms,
                last_failure_ms,
                settled_ms,
                event_id,
            });
        }
    }
    // Observed events no attempt was found for yet: unknown while the
    // session may still be settling, else not sent to that subscription.
    for (index, event) in events.iter().enumerate() {
        if now_ms >= received[index] + SETTLE_MS {
            continue;
        }
        for (subscription_id, listens) in subscriptions {
            if listens.enabled
                && listens.events.contains(&event.event)
                && !matched.contains(&(subscription_id.clone(), event.event_id.clone()))
            {
                rows.push(Outcome {
                    subscription_id: subscription_id.clone(),
                    event_key: event.event_id.clone(),
                    event_id: Some(event.event_id.clone()),
                    event: Some(event.event.clone()),
                    session_id: session_id.to_owned(),
                    occurred_ms: event.occurred_ms,
                    state: EventState::Unknown,
                    attempts: 0,
                    http_status_code: 0,
                    error_class: String::new(),
                    first_failure_ms: None,
                    last_failure_ms: None,
                    settled_ms: None,
                });
            }
        }
    }
    Ok(rows)
}

fn at(ms: i64) -> DateTime<FixedOffset> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .fixed_offset()
}

/// The session's attempts, read from their columns (the JSON is not
/// needed, and a hand-edited one does not stop the rebuild).
fn stored_attempts(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<DeliveryRecord>> {
    let mut statement = conn.prepare_cached(
        "SELECT id, subscription_id, status, attempt_count, http_status_code, error, created_ms,
                next_retry_ms, delivered_ms
         FROM deliveries WHERE session_id = ?1",
    )?;
    let rows = statement.query_map([session_id], |row| {
        let status: String = row.get(2)?;
        Ok(DeliveryRecord {
            id: row.get(0)?,
            subscription_id: row.get(1)?,
            session_id: session_id.to_owned(),
            status: match status.as_str() {
                "pending" => DeliveryStatus::Pending,
                "delivered" => DeliveryStatus::Delivered,
                "failed" => DeliveryStatus::Failed,
                _ => DeliveryStatus::Other(status),
            },
            attempt_count: row.get(3)?,
            http_status_code: row.get(4)?,
            error: row.get(5)?,
            created_at: at(row.get(6)?),
            next_retry_at: row.get::<_, Option<i64>>(7)?.map(at),
            delivered_at: row.get::<_, Option<i64>>(8)?.map(at),
            extra: Default::default(),
        })
    })?;
    super::readable(rows)
}

/// The session's observed events (without their bodies) and, in the same
/// order, when each was received.
fn stored_events(
    conn: &Connection,
    session_id: &str,
) -> rusqlite::Result<(Vec<StoredEvent>, Vec<i64>)> {
    let mut statement = conn.prepare_cached(
        "SELECT event_id, event, occurred_ms, received_ms FROM events
         WHERE session_id = ?1 ORDER BY occurred_ms, event_id",
    )?;
    let mut events = Vec::new();
    let mut received = Vec::new();
    let rows = statement.query_map([session_id], |row| {
        Ok((
            StoredEvent {
                event_id: row.get(0)?,
                event: row.get(1)?,
                session_id: session_id.to_owned(),
                occurred_ms: row.get(2)?,
                body: Vec::new(),
            },
            row.get::<_, i64>(3)?,
        ))
    })?;
    for (event, at) in super::readable::<_, Vec<_>>(rows)? {
        events.push(event);
        received.push(at);
    }
    Ok((events, received))
}

/// (subscription, event) pairs of the session that earshot re-sent with a
/// 2xx answer, and when.
fn recoveries_of(
    conn: &Connection,
    session_id: &str,
) -> rusqlite::Result<HashMap<(String, String), i64>> {
    let mut statement = conn.prepare_cached(
        "SELECT subscription_id, event_id, min(coalesce(finished_ms, started_ms))
         FROM recoveries WHERE session_id = ?1 AND delivered = 1
         GROUP BY subscription_id, event_id",
    )?;
    let rows = statement.query_map([session_id], |row| {
        Ok(((row.get(0)?, row.get(1)?), row.get(2)?))
    })?;
    super::readable(rows)
}

/// Events of one subscription with one state, summed over a window and
/// grouped by type and the last failure's diagnosis.
#[derive(Clone, Debug, PartialEq)]
pub struct EventCount {
    pub subscription_id: String,
    pub state: EventState,
    /// Empty when the type is not known.
    pub event: String,
    pub http_status_code: Option<u16>,
    pub error_class: String,
    pub count: i64,
    /// The newest event counted.
    pub last_ms: i64,
    pub example_session_id: String,
}

/// Every subscription's event counts since `since_ms` (to the minute),
/// whole hours from the hourly counts and the minutes around them from the
/// minute counts, as the attempt counts are read.
pub fn counts_since(store: &Store, since_ms: i64) -> rusqlite::Result<Vec<EventCount>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, state, event, http_status_code, error_class, total(count),
                max(last_ms), example_session_id
         FROM (
             SELECT subscription_id, state, event, http_status_code, error_class, count,
                    last_ms, example_session_id
             FROM event_counts WHERE minute >= ?1 AND minute < ?2 * 60
             UNION ALL
             SELECT subscription_id, state, event, http_status_code, error_class, count,
                    last_ms, example_session_id
             FROM event_counts_hourly WHERE hour >= ?2
         )
         GROUP BY subscription_id, state, event, http_status_code, error_class
         HAVING total(count) > 0",
    )?;
    let first_minute = since_ms.div_euclid(60_000);
    let first_whole_hour = (first_minute + 59).div_euclid(60);
    let rows = statement.query_map(params![first_minute, first_whole_hour], |row| {
        let state: String = row.get(1)?;
        let code: i64 = row.get(3)?;
        Ok(EventCount {
            subscription_id: row.get(0)?,
            state: EventState::parse(&state).unwrap_or(EventState::Unknown),
            event: row.get(2)?,
            http_status_code: u16::try_from(code).ok().filter(|code| *code != 0),
            error_class: row.get(4)?,
            count: super::summed_count(row, 5)?,
            last_ms: row.get(6)?,
            example_session_id: row.get(7)?,
        })
    })?;
    super::readable(rows)
}

/// When `subscription_id` last had a 2xx: a delivered attempt, or an
/// event earshot re-sent.
pub fn last_success_ms(store: &Store, subscription_id: &str) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached(
            "SELECT max(
                 coalesce((SELECT max(created_ms) FROM deliveries
                  WHERE subscription_id = ?1 AND status = 'delivered'), 0),
                 coalesce((SELECT max(finished_ms) FROM recoveries
                  WHERE subscription_id = ?1 AND delivered = 1), 0))",
        )?
        .query_row([subscription_id], |row| row.get::<_, Option<i64>>(0))
        .map(|at| at.filter(|ms| *ms > 0))
}

/// The first failed attempt of `subscription_id` after `after_ms` (its
/// last success, or the beginning): when the current run of failures
/// began, or `None` when nothing failed since.
pub fn first_failure_after(
    store: &Store,
    subscription_id: &str,
    after_ms: Option<i64>,
) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached(
            "SELECT min(created_ms) FROM deliveries
             WHERE subscription_id = ?1 AND status = 'failed' AND created_ms > ?2",
        )?
        .query_row(
            params![subscription_id, after_ms.unwrap_or(i64::MIN)],
            |row| row.get(0),
        )
}

/// The newest event the sweep found attempts for that the observer never
/// received: traffic the observer did not see.
pub fn newest_unobserved_ms(store: &Store) -> rusqlite::Result<Option<i64>> {
    store
        .conn
        .prepare_cached("SELECT max(occurred_ms) FROM event_outcomes WHERE event_id IS NULL")?
        .query_row([], |row| row.get(0))
}

/// The rows of one subscription in one state since `since_ms`, oldest
/// first.
pub fn of_subscription(
    store: &Store,
    subscription_id: &str,
    state: EventState,
    since_ms: i64,
) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                settled_ms
         FROM event_outcomes
         WHERE subscription_id = ?1 AND state = ?2 AND occurred_ms >= ?3
         ORDER BY occurred_ms, event_key",
    )?;
    let rows = statement.query_map(
        params![subscription_id, state.as_str(), since_ms],
        outcome_row,
    )?;
    super::readable(rows)
}

/// Every subscription's row for one event.
pub fn of_event(store: &Store, event_id: &str) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                settled_ms
         FROM event_outcomes
         WHERE session_id IN (SELECT session_id FROM events WHERE event_id = ?1)
           AND event_id = ?1
         ORDER BY subscription_id",
    )?;
    let rows = statement.query_map([event_id], outcome_row)?;
    super::readable(rows)
}

/// One subscription's row for one event the store holds, if any.
pub fn get(
    store: &Store,
    subscription_id: &str,
    event_key: &str,
) -> rusqlite::Result<Option<Outcome>> {
    store
        .conn
        .prepare_cached(
            "SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
                    attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                    settled_ms
             FROM event_outcomes
             WHERE session_id IN (SELECT session_id FROM events WHERE event_id = ?2)
               AND subscription_id = ?1 AND event_key = ?2",
        )?
        .query_row(params![subscription_id, event_key], outcome_row)
        .optional()
}

pub(crate) fn outcome_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Outcome> {
    let state: String = row.get(6)?;
    Ok(Outcome {
        subscription_id: row.get(0)?,
        event_key: row.get(1)?,
        event_id: row.get(2)?,
        event: row.get(3)?,
        session_id: row.get(4)?,
        occurred_ms: row.get(5)?,
        state: EventState::parse(&state).unwrap_or(EventState::Unknown),
        attempts: row.get(7)?,
        http_status_code: row.get(8)?,
        error_class: row.get(9)?,
        first_failure_ms: row.get(10)?,
        last_failure_ms: row.get(11)?,
        settled_ms: row.get(12)?,
    })
}
