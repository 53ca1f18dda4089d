//! Recover's log: one row per event re-sent to a subscription, written
//! before the POST and completed with its answer, so a rerun skips every
//! event already delivered and shows what an interrupted run left. Kept
//! in either backend (`*_postgres` beside SQLite's).

use std::collections::HashSet;

use rusqlite::params;

use super::postgres::{PgError, PgStore};
use super::{Store, outcomes};

/// How one re-sent event ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryResult {
    pub http_status_code: Option<u16>,
    pub error: Option<String>,
    pub latency_ms: i64,
    pub delivered: bool,
}

/// Records that `event_id` is being sent to `subscription_id`; the row id.
pub fn start(
    store: &Store,
    subscription_id: &str,
    event_id: &str,
    session_id: &str,
    now_ms: i64,
) -> rusqlite::Result<i64> {
    store.conn.execute(
        "INSERT INTO recoveries (subscription_id, event_id, session_id, started_ms)
         VALUES (?1, ?2, ?3, ?4)",
        params![subscription_id, event_id, session_id, now_ms],
    )?;
    Ok(store.conn.last_insert_rowid())
}

/// Completes row `id` with the answer.
pub fn finish(
    store: &Store,
    id: i64,
    result: &RecoveryResult,
    now_ms: i64,
) -> rusqlite::Result<()> {
    store.conn.execute(
        "UPDATE recoveries SET finished_ms = ?2, http_status_code = ?3, error = ?4,
             latency_ms = ?5, delivered = ?6
         WHERE id = ?1",
        params![
            id,
            now_ms,
            result.http_status_code,
            result.error,
            result.latency_ms,
            result.delivered
        ],
    )?;
    if result.delivered {
        let (subscription_id, session_id, event_id): (String, String, String) =
            store.conn.query_row(
                "SELECT subscription_id, session_id, event_id FROM recoveries WHERE id = ?1",
                [id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )?;
        outcomes::recovered(
            &store.conn,
            &subscription_id,
            (&session_id, &event_id),
            now_ms,
        )?;
    }
    Ok(())
}

/// Event ids whose last send to `subscription_id` was interrupted: logged
/// as started, never completed, and never delivered by another run. The
/// receiver may or may not have processed them.
pub fn interrupted_events(
    store: &Store,
    subscription_id: &str,
) -> rusqlite::Result<HashSet<String>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT event_id FROM recoveries WHERE subscription_id = ?1
         GROUP BY event_id
         HAVING max(delivered) = 0 AND max(id) IN
             (SELECT id FROM recoveries WHERE subscription_id = ?1 AND finished_ms IS NULL)",
    )?;
    let rows = statement.query_map([subscription_id], |row| row.get(0))?;
    super::readable(rows)
}

/// [`interrupted_events`] on a PostgreSQL store.
pub async fn interrupted_events_postgres(
    store: &PgStore,
    subscription_id: &str,
) -> Result<HashSet<String>, PgError> {
    let client = store.client().await?;
    let rows = client
        .query(
            "SELECT event_id FROM earshot.recoveries WHERE subscription_id = $1
             GROUP BY event_id
             HAVING NOT bool_or(delivered) AND max(id) IN
                 (SELECT id FROM earshot.recoveries
                  WHERE subscription_id = $1 AND finished_ms IS NULL)",
            &[&subscription_id],
        )
        .await?;
    rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
}

/// [`start`] on a PostgreSQL store, committed before it returns.
pub async fn start_postgres(
    store: &PgStore,
    subscription_id: &str,
    event_id: &str,
    session_id: &str,
    now_ms: i64,
) -> Result<i64, PgError> {
    let client = store.client().await?;
    let row = client
        .query_one(
            "INSERT INTO earshot.recoveries (subscription_id, event_id, session_id, started_ms)
             VALUES ($1, $2, $3, $4) RETURNING id",
            &[&subscription_id, &event_id, &session_id, &now_ms],
        )
        .await?;
    Ok(row.try_get(0)?)
}

/// [`finish`] on a PostgreSQL store: the answer, and when delivered the
/// outcome row `recovered` and its incidents settled, in one transaction.
pub async fn finish_postgres(
    store: &PgStore,
    id: i64,
    result: &RecoveryResult,
    now_ms: i64,
) -> Result<(), PgError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await?;
    let status = result.http_status_code.map(i64::from);
    let row = tx
        .query_one(
            "UPDATE earshot.recoveries SET finished_ms = $2, http_status_code = $3, error = $4,
                 latency_ms = $5, delivered = $6
             WHERE id = $1 RETURNING subscription_id, session_id, event_id",
            &[
                &id,
                &now_ms,
                &status,
                &result.error,
                &result.latency_ms,
                &result.delivered,
            ],
        )
        .await?;
    if result.delivered {
        let (subscription_id, session_id, event_id): (String, String, String) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        outcomes::recovered_postgres(&tx, &subscription_id, (&session_id, &event_id), now_ms)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
