//! Rebuilding a session's outcome rows (`event_outcomes`) from what the
//! store holds of it, on either backend: the session's attempts, observed
//! events and recoveries read ([`SessionFacts`]), the one rule applied
//! ([`super::outcome_rule::session_outcomes`]), and the rows replaced only
//! when they changed. The statements of each step live here side by side,
//! `SQLITE_*` and `POSTGRES_*`; rows of both are mapped by the same
//! functions ([`attempt_from`], [`outcome_from`], over [`Cells`]).
//!
//! Both rebuilds also keep the incidents of the subscriptions they
//! touched (`incidents::note_failure`, `settle`, each backend's twin); on
//! PostgreSQL the rows' minute and hour counts are kept by its triggers.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, params};
use tokio_postgres::Transaction;

use super::cells::Cells;
use super::events::StoredEvent;
use super::incidents;
use super::numbered_events::SESSION_EVENTS;
use super::outcome_rule::{Listening, SessionFacts, attempt, session_outcomes};
use super::outcomes::{EventState, Outcome};
use super::postgres::PgError;
use crate::api::types::agents::DeliveryRecord;

const SQLITE_LISTENING: &str = "SELECT id, events, enabled FROM subscriptions";
const POSTGRES_LISTENING: &str = "SELECT id, events, enabled FROM earshot.subscriptions";

/// A session's attempts, in the column order [`attempt_from`] reads.
const SQLITE_ATTEMPTS: &str = "
SELECT id, subscription_id, status, attempt_count, http_status_code, error, created_ms,
       next_retry_ms, delivered_ms
FROM deliveries WHERE session_id = ?1";
const POSTGRES_ATTEMPTS: &str = "
SELECT id, subscription_id, status, attempt_count, http_status_code, error, created_ms,
       next_retry_ms, delivered_ms
FROM earshot.deliveries WHERE session_id = $1";

/// A session's observed events, oldest first, ties by id in byte order.
fn sqlite_events() -> String {
    format!(
        "SELECT event_id, event, occurred_ms, received_ms FROM {SESSION_EVENTS}
         ORDER BY occurred_ms, event_id"
    )
}
const POSTGRES_EVENTS: &str = "
SELECT event_id, event, occurred_ms, received_ms FROM earshot.events
WHERE session_id = $1 ORDER BY occurred_ms, event_id COLLATE \"C\"";

/// (subscription, event) pairs of the session re-sent with a 2xx, and
/// when.
const SQLITE_RECOVERIES: &str = "
SELECT subscription_id, event_id, min(coalesce(finished_ms, started_ms))
FROM recoveries WHERE session_id = ?1 AND delivered = 1
GROUP BY subscription_id, event_id";
const POSTGRES_RECOVERIES: &str = "
SELECT subscription_id, event_id, min(coalesce(finished_ms, started_ms))
FROM earshot.recoveries WHERE session_id = $1 AND delivered
GROUP BY subscription_id, event_id";

/// A session's stored rows in key order (bytewise, as Rust sorts).
const SQLITE_STORED: &str = "
SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
       attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
FROM event_outcomes WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)
ORDER BY subscription_id, event_key";
const POSTGRES_STORED: &str = "
SELECT subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
       attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms
FROM earshot.event_outcomes WHERE session_id = $1
ORDER BY subscription_id COLLATE \"C\", event_key COLLATE \"C\"";

/// By the session's number (SQLite) or id (PostgreSQL).
const SQLITE_DELETE: &str = "DELETE FROM event_outcomes WHERE session_no = ?1";
const POSTGRES_DELETE: &str = "DELETE FROM earshot.event_outcomes WHERE session_id = $1";

const SQLITE_INSERT: &str = "
INSERT OR REPLACE INTO event_outcomes
    (subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
     attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms,
     session_no)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";
const POSTGRES_INSERT: &str = "
INSERT INTO earshot.event_outcomes
    (subscription_id, event_key, event_id, event, session_id, occurred_ms, state,
     attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, settled_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// An attempt from the columns of [`SQLITE_ATTEMPTS`] / [`POSTGRES_ATTEMPTS`].
fn attempt_from<R: Cells>(row: &R, session_id: &str) -> Result<DeliveryRecord, R::Error> {
    Ok(attempt(
        row.text(0)?,
        row.text(1)?,
        session_id,
        row.text(2)?,
        row.small(3)?,
        row.maybe_small(4)?,
        row.maybe_text(5)?,
        row.int(6)?,
        row.maybe_int(7)?,
        row.maybe_int(8)?,
    ))
}

/// An observed event (no body) and when it was received, from the
/// columns of [`sqlite_events`] / [`POSTGRES_EVENTS`].
fn event_from<R: Cells>(row: &R, session_id: &str) -> Result<(StoredEvent, i64), R::Error> {
    Ok((
        StoredEvent {
            event_id: row.text(0)?,
            event: row.text(1)?,
            session_id: session_id.to_owned(),
            occurred_ms: row.int(2)?,
            body: Vec::new(),
        },
        row.int(3)?,
    ))
}

/// An outcome row from the columns of [`SQLITE_STORED`] / [`POSTGRES_STORED`]
/// (and of every other read of whole rows, in that order).
pub(crate) fn outcome_from<R: Cells>(row: &R) -> Result<Outcome, R::Error> {
    let state = row.text(6)?;
    Ok(Outcome {
        subscription_id: row.text(0)?,
        event_key: row.text(1)?,
        event_id: row.maybe_text(2)?,
        event: row.maybe_text(3)?,
        session_id: row.text(4)?,
        occurred_ms: row.int(5)?,
        state: EventState::parse(&state).unwrap_or(EventState::Unknown),
        attempts: row.int(7)?,
        http_status_code: row.small(8)?,
        error_class: row.text(9)?,
        first_failure_ms: row.maybe_int(10)?,
        last_failure_ms: row.maybe_int(11)?,
        settled_ms: row.maybe_int(12)?,
    })
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
        let rows = session_outcomes(
            session_id,
            &session_facts(conn, session_id)?,
            &subscriptions,
            now_ms,
        );
        // A re-check that changed nothing writes nothing: the sweep re-checks
        // sessions in turn, and a rewrite of the same rows would move every
        // live list's version and fill the WAL.
        if stored_rows(conn, session_id)? == rows {
            continue;
        }
        let session_no = super::session_number::number(conn, session_id, now_ms)?;
        conn.prepare_cached(SQLITE_DELETE)?.execute([session_no])?;
        let mut insert = conn.prepare_cached(SQLITE_INSERT)?;
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
                session_no,
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

fn stored_rows(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<Outcome>> {
    let mut statement = conn.prepare_cached(SQLITE_STORED)?;
    let rows = statement.query_map([session_id], |row| outcome_from(row))?;
    rows.collect()
}

fn listening(conn: &Connection) -> rusqlite::Result<HashMap<String, Listening>> {
    let mut statement = conn.prepare_cached(SQLITE_LISTENING)?;
    let rows = statement.query_map([], |row| {
        let events: String = row.get(1)?;
        Ok((
            row.get::<_, String>(0)?,
            Listening::from_columns(&events, row.get(2)?),
        ))
    })?;
    super::readable(rows)
}

/// What SQLite holds of one session.
fn session_facts(conn: &Connection, session_id: &str) -> rusqlite::Result<SessionFacts> {
    let mut statement = conn.prepare_cached(SQLITE_ATTEMPTS)?;
    let rows = statement.query_map([session_id], |row| attempt_from(row, session_id))?;
    let attempts = super::readable(rows)?;
    let mut statement = conn.prepare_cached(&sqlite_events())?;
    let rows = statement.query_map([session_id], |row| event_from(row, session_id))?;
    let (events, received) = super::readable::<_, Vec<_>>(rows)?.into_iter().unzip();
    let mut statement = conn.prepare_cached(SQLITE_RECOVERIES)?;
    let rows = statement.query_map([session_id], |row| {
        Ok(((row.get(0)?, row.get(1)?), row.get(2)?))
    })?;
    Ok(SessionFacts {
        attempts,
        events,
        received,
        recovered: super::readable(rows)?,
    })
}

/// [`rebuild_sessions`] on PostgreSQL, in `tx` (the sweep's transaction,
/// fenced by its lease when a replica sweeps): the same rule and the same
/// incidents, with the session's recoveries (`redeliver`'s log).
pub(crate) async fn rebuild_sessions_postgres(
    tx: &Transaction<'_>,
    session_ids: &[&str],
    now_ms: i64,
) -> Result<(), PgError> {
    let mut subscriptions = HashMap::new();
    for row in tx.query(POSTGRES_LISTENING, &[]).await? {
        let events: String = row.try_get(1)?;
        subscriptions.insert(
            row.try_get::<_, String>(0)?,
            Listening::from_columns(&events, row.try_get(2)?),
        );
    }
    let read_attempts = tx.prepare(POSTGRES_ATTEMPTS).await?;
    let read_events = tx.prepare(POSTGRES_EVENTS).await?;
    let read_recoveries = tx.prepare(POSTGRES_RECOVERIES).await?;
    let read_stored = tx.prepare(POSTGRES_STORED).await?;
    let delete = tx.prepare(POSTGRES_DELETE).await?;
    let insert = tx.prepare(POSTGRES_INSERT).await?;
    let mut touched: HashSet<String> = HashSet::new();
    for session_id in session_ids {
        let mut facts = SessionFacts::default();
        for row in tx.query(&read_attempts, &[session_id]).await? {
            facts.attempts.push(attempt_from(&row, session_id)?);
        }
        for row in tx.query(&read_events, &[session_id]).await? {
            let (event, received_ms) = event_from(&row, session_id)?;
            facts.events.push(event);
            facts.received.push(received_ms);
        }
        for row in tx.query(&read_recoveries, &[session_id]).await? {
            facts.recovered.insert(
                (row.try_get(0)?, row.try_get(1)?),
                row.try_get::<_, i64>(2)?,
            );
        }
        let rows = session_outcomes(session_id, &facts, &subscriptions, now_ms);
        let mut stored = Vec::new();
        for row in tx.query(&read_stored, &[session_id]).await? {
            stored.push(outcome_from(&row)?);
        }
        if stored == rows {
            continue;
        }
        tx.execute(&delete, &[session_id]).await?;
        for row in &rows {
            tx.execute(
                &insert,
                &[
                    &row.subscription_id,
                    &row.event_key,
                    &row.event_id,
                    &row.event,
                    &row.session_id,
                    &row.occurred_ms,
                    &row.state.as_str(),
                    &row.attempts,
                    &i64::from(row.http_status_code),
                    &row.error_class,
                    &row.first_failure_ms,
                    &row.last_failure_ms,
                    &row.settled_ms,
                ],
            )
            .await?;
            if incidents::counts(row) {
                incidents::note_failure_postgres(tx, row).await?;
            }
            touched.insert(row.subscription_id.clone());
        }
    }
    for subscription_id in touched {
        incidents::settle_postgres(tx, &subscription_id, now_ms).await?;
    }
    Ok(())
}
