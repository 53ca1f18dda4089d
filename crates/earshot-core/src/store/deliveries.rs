//! Delivery records the sweep fetched, and the subscriptions they belong
//! to. Each record is kept as the platform returned it (unknown fields
//! too), with the columns the queries need beside it. What the sweep
//! writes is here for both backends (`SQLITE_*` and `POSTGRES_*` side by
//! side, one [`Columns`] mapping); of the reads, the board's, the
//! failing sessions', a session's attempts, a listed subscription and the
//! observer's subscriptions are on both, the rest SQLite's so far.

use rusqlite::{OptionalExtension, params};
use tokio_postgres::Transaction;

use super::incidents::{SubscriptionEnd, end_with_subscription, end_with_subscription_postgres};
use super::postgres::{PgError, PgStore};
use super::{Store, outcomes};

use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};

/// Stores one sweep of a session: every record upserted, the session marked
/// swept at `now_ms`, and settled unless an attempt is still pending or has
/// a retry scheduled. Whether the session is still unsettled.
pub fn record_sweep(
    store: &mut Store,
    session_id: &str,
    records: &[DeliveryRecord],
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let unsettled = record_sweeps(store, &[(session_id, records)], now_ms)?;
    Ok(unsettled.first().copied().unwrap_or(false))
}

/// A record's upsert: a row changes only when the platform's record did.
const SQLITE_UPSERT: &str = "
INSERT INTO deliveries
    (id, subscription_id, session_id, status, attempt_count, http_status_code,
     error, created_ms, next_retry_ms, delivered_ms, record)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
ON CONFLICT (id) DO UPDATE SET
    status = excluded.status, attempt_count = excluded.attempt_count,
    http_status_code = excluded.http_status_code, error = excluded.error,
    next_retry_ms = excluded.next_retry_ms, delivered_ms = excluded.delivered_ms,
    record = excluded.record
WHERE record IS NOT excluded.record";
const POSTGRES_UPSERT: &str = "
INSERT INTO earshot.deliveries AS d
    (id, subscription_id, session_id, status, attempt_count, http_status_code,
     error, created_ms, next_retry_ms, delivered_ms, record)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET
    status = excluded.status, attempt_count = excluded.attempt_count,
    http_status_code = excluded.http_status_code, error = excluded.error,
    next_retry_ms = excluded.next_retry_ms, delivered_ms = excluded.delivered_ms,
    record = excluded.record
WHERE d.record IS DISTINCT FROM excluded.record";

/// A session marked swept, and whether it is still unsettled (an id the
/// sweep met first is added).
const SQLITE_MARK: &str = "
INSERT INTO sessions (session_id, source, first_seen_ms, last_swept_ms, unsettled)
VALUES (?1, 'added', ?2, ?2, ?3)
ON CONFLICT (session_id) DO UPDATE SET
    last_swept_ms = excluded.last_swept_ms, unsettled = excluded.unsettled";
const POSTGRES_MARK: &str = "
INSERT INTO earshot.sessions (session_id, source, first_seen_ms, last_swept_ms, unsettled)
VALUES ($1, 'added', $2, $2, $3)
ON CONFLICT (session_id) DO UPDATE SET
    last_swept_ms = excluded.last_swept_ms, unsettled = excluded.unsettled";

/// A session the platform does not know: swept, settled.
const SQLITE_UNKNOWN: &str =
    "UPDATE sessions SET last_swept_ms = ?2, unsettled = 0 WHERE session_id = ?1";
const POSTGRES_UNKNOWN: &str =
    "UPDATE earshot.sessions SET last_swept_ms = $2, unsettled = false WHERE session_id = $1";

/// A record's columns as both backends store them (integers as `i64`).
struct Columns<'a> {
    status: &'a str,
    attempt_count: i64,
    http_status_code: Option<i64>,
    created_ms: i64,
    next_retry_ms: Option<i64>,
    delivered_ms: Option<i64>,
    record: String,
}

impl Columns<'_> {
    fn of(record: &DeliveryRecord) -> Columns<'_> {
        Columns {
            status: record.status.as_str(),
            attempt_count: i64::from(record.attempt_count),
            http_status_code: record.http_status_code.map(i64::from),
            created_ms: record.created_at.timestamp_millis(),
            next_retry_ms: record.next_retry_at.map(|at| at.timestamp_millis()),
            delivered_ms: record.delivered_at.map(|at| at.timestamp_millis()),
            record: serde_json::to_string(record).unwrap_or_default(),
        }
    }
}

/// Whether a session swept with `records` is still unsettled at `now_ms`:
/// an attempt in flight, or a retry scheduled after now.
fn still_unsettled(records: &[DeliveryRecord], now_ms: i64) -> bool {
    records.iter().any(|record| {
        record.status == DeliveryStatus::Pending
            || record
                .next_retry_at
                .is_some_and(|at| at.timestamp_millis() > now_ms)
    })
}

/// [`record_sweep`] for many sessions in one transaction (one commit, not
/// one per session): all stored, or none. Whether each session, in order,
/// is still unsettled.
pub fn record_sweeps(
    store: &mut Store,
    swept: &[(&str, &[DeliveryRecord])],
    now_ms: i64,
) -> rusqlite::Result<Vec<bool>> {
    let tx = store.conn.transaction()?;
    let mut unsettled = Vec::with_capacity(swept.len());
    {
        let mut upsert = tx.prepare_cached(SQLITE_UPSERT)?;
        let mut mark = tx.prepare_cached(SQLITE_MARK)?;
        for (session_id, records) in swept {
            for record in *records {
                let columns = Columns::of(record);
                upsert.execute(params![
                    record.id,
                    record.subscription_id,
                    record.session_id,
                    columns.status,
                    columns.attempt_count,
                    columns.http_status_code,
                    record.error,
                    columns.created_ms,
                    columns.next_retry_ms,
                    columns.delivered_ms,
                    columns.record,
                ])?;
            }
            let pending = still_unsettled(records, now_ms);
            mark.execute(params![session_id, now_ms, pending])?;
            unsettled.push(pending);
        }
    }
    let ids: Vec<&str> = swept.iter().map(|(session_id, _)| *session_id).collect();
    outcomes::rebuild_sessions(&tx, &ids, now_ms)?;
    tx.commit()?;
    Ok(unsettled)
}

/// [`record_sweeps`] on PostgreSQL, in `tx` (committed by the caller,
/// fenced by the sweep's lease when a replica sweeps): the same rows, and
/// the outcome rows rebuilt by the same rule; the minute and hour counts
/// follow by trigger in the same transaction.
pub(crate) async fn record_sweeps_postgres(
    tx: &Transaction<'_>,
    swept: &[(&str, &[DeliveryRecord])],
    now_ms: i64,
) -> Result<Vec<bool>, PgError> {
    let upsert = tx.prepare(POSTGRES_UPSERT).await?;
    let mark = tx.prepare(POSTGRES_MARK).await?;
    let mut unsettled = Vec::with_capacity(swept.len());
    for (session_id, records) in swept {
        for record in *records {
            let columns = Columns::of(record);
            tx.execute(
                &upsert,
                &[
                    &record.id,
                    &record.subscription_id,
                    &record.session_id,
                    &columns.status,
                    &columns.attempt_count,
                    &columns.http_status_code,
                    &record.error,
                    &columns.created_ms,
                    &columns.next_retry_ms,
                    &columns.delivered_ms,
                    &columns.record,
                ],
            )
            .await?;
        }
        let pending = still_unsettled(records, now_ms);
        tx.execute(&mark, &[session_id, &now_ms, &pending]).await?;
        unsettled.push(pending);
    }
    let ids: Vec<&str> = swept.iter().map(|(session_id, _)| *session_id).collect();
    super::outcome_rebuild::rebuild_sessions_postgres(tx, &ids, now_ms).await?;
    Ok(unsettled)
}

/// Marks a session the platform does not know (404): swept, settled.
pub(crate) fn record_unknown(store: &Store, session_id: &str, now_ms: i64) -> rusqlite::Result<()> {
    store
        .conn
        .execute(SQLITE_UNKNOWN, params![session_id, now_ms])?;
    outcomes::rebuild_sessions(&store.conn, &[session_id], now_ms)
}

/// [`record_unknown`] on PostgreSQL, in `tx`.
pub(crate) async fn record_unknown_postgres(
    tx: &Transaction<'_>,
    session_id: &str,
    now_ms: i64,
) -> Result<(), PgError> {
    tx.execute(POSTGRES_UNKNOWN, &[&session_id, &now_ms])
        .await?;
    super::outcome_rebuild::rebuild_sessions_postgres(tx, &[session_id], now_ms).await
}

const SQLITE_FOR_SESSION: &str =
    "SELECT record FROM deliveries WHERE session_id = ?1 ORDER BY created_ms, attempt_count, id";
/// [`SQLITE_FOR_SESSION`] on PostgreSQL: ties by id in byte order.
const POSTGRES_FOR_SESSION: &str = "
SELECT record FROM earshot.deliveries WHERE session_id = $1
ORDER BY created_ms, attempt_count, id COLLATE \"C\"";

/// Every stored attempt of one session, oldest first.
pub fn for_session(store: &Store, session_id: &str) -> rusqlite::Result<Vec<DeliveryRecord>> {
    let mut statement = store.conn.prepare_cached(SQLITE_FOR_SESSION)?;
    let rows = statement.query_map([session_id], |row| row.get::<_, String>(0))?;
    Ok(records_from(super::readable::<String, Vec<_>>(rows)?))
}

/// [`for_session`] on a PostgreSQL store.
pub async fn for_session_postgres(
    store: &PgStore,
    session_id: &str,
) -> Result<Vec<DeliveryRecord>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_FOR_SESSION).await?;
    let mut json = Vec::new();
    for row in client.query(&statement, &[&session_id]).await? {
        json.push(row.try_get::<_, String>(0)?);
    }
    Ok(records_from(json))
}

/// The stored records read back; one this build cannot read (hand-edited)
/// is skipped, not fatal.
fn records_from(json: Vec<String>) -> Vec<DeliveryRecord> {
    let mut records = Vec::new();
    for json in json {
        match serde_json::from_str(&json) {
            Ok(record) => records.push(record),
            Err(_) => super::skip_row("a delivery record that is not JSON"),
        }
    }
    records
}

/// How many delivery records are stored.
pub fn count(store: &Store) -> rusqlite::Result<i64> {
    store
        .conn
        .query_row("SELECT count(*) FROM deliveries", [], |row| row.get(0))
}

/// A listed subscription's upsert, with when it was listed.
const SQLITE_UPSERT_SUBSCRIPTION: &str = "
INSERT INTO subscriptions (id, url, events, enabled, secret_version, seen_ms, record)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events,
    enabled = excluded.enabled, secret_version = excluded.secret_version,
    seen_ms = excluded.seen_ms, record = excluded.record";
const POSTGRES_UPSERT_SUBSCRIPTION: &str = "
INSERT INTO earshot.subscriptions (id, url, events, enabled, secret_version, seen_ms, record)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events,
    enabled = excluded.enabled, secret_version = excluded.secret_version,
    seen_ms = excluded.seen_ms, record = excluded.record";

/// A subscription's columns as both backends store them.
fn subscription_columns(subscription: &Subscription) -> (String, i64, String) {
    (
        serde_json::to_string(&subscription.events).unwrap_or_else(|_| "[]".into()),
        i64::from(subscription.secret_version),
        serde_json::to_string(subscription).unwrap_or_default(),
    )
}

/// Replaces the stored subscriptions with `list` (the platform's whole
/// list, paused ones included). A subscription no longer listed was deleted
/// on the platform; its delivery rows stay (history is never dropped by a
/// sweep) but reports leave it out. The open incidents of one deleted or
/// paused are resolved with that reason.
pub fn replace_subscriptions(
    store: &mut Store,
    list: &[Subscription],
    now_ms: i64,
) -> rusqlite::Result<()> {
    let tx = store.conn.transaction()?;
    {
        let mut upsert = tx.prepare_cached(SQLITE_UPSERT_SUBSCRIPTION)?;
        for subscription in list {
            let (events, secret_version, record) = subscription_columns(subscription);
            upsert.execute(params![
                subscription.id,
                subscription.url,
                events,
                subscription.enabled,
                secret_version,
                now_ms,
                record,
            ])?;
        }
    }
    // What the listing shows ended (deleted by any tool, or paused) ends
    // its open incidents, with the reason.
    let ended: Vec<(String, bool)> = {
        let mut statement = tx.prepare_cached(SQLITE_ENDED)?;
        let rows = statement.query_map([now_ms], |row| Ok((row.get(0)?, row.get(1)?)))?;
        super::readable(rows)?
    };
    for (id, deleted) in ended {
        end_with_subscription(&tx, &id, ending(deleted), now_ms)?;
    }
    tx.commit()
}

/// What the listing at `?1` shows ended: a subscription not listed (or
/// with an open incident and not listed) was deleted (`1`), a listed one
/// paused (`0`).
const SQLITE_ENDED: &str = "
SELECT id, 1 FROM subscriptions WHERE seen_ms <> ?1
UNION
SELECT DISTINCT subscription_id, 1 FROM incidents
WHERE resolved_ms IS NULL
  AND subscription_id NOT IN (SELECT id FROM subscriptions WHERE seen_ms = ?1)
UNION
SELECT id, 0 FROM subscriptions WHERE seen_ms = ?1 AND enabled = 0";
const POSTGRES_ENDED: &str = "
SELECT id, true FROM earshot.subscriptions WHERE seen_ms <> $1
UNION
SELECT DISTINCT subscription_id, true FROM earshot.incidents
WHERE resolved_ms IS NULL
  AND subscription_id NOT IN (SELECT id FROM earshot.subscriptions WHERE seen_ms = $1)
UNION
SELECT id, false FROM earshot.subscriptions WHERE seen_ms = $1 AND NOT enabled";

fn ending(deleted: bool) -> SubscriptionEnd {
    if deleted {
        SubscriptionEnd::Deleted
    } else {
        SubscriptionEnd::Paused
    }
}

/// [`replace_subscriptions`] on PostgreSQL, in `tx`: the same rows, and
/// what the listing shows ended ends its open incidents, with the reason.
pub(crate) async fn replace_subscriptions_postgres(
    tx: &Transaction<'_>,
    list: &[Subscription],
    now_ms: i64,
) -> Result<(), PgError> {
    let upsert = tx.prepare(POSTGRES_UPSERT_SUBSCRIPTION).await?;
    for subscription in list {
        let (events, secret_version, record) = subscription_columns(subscription);
        tx.execute(
            &upsert,
            &[
                &subscription.id,
                &subscription.url,
                &events,
                &subscription.enabled,
                &secret_version,
                &now_ms,
                &record,
            ],
        )
        .await?;
    }
    for row in tx.query(POSTGRES_ENDED, &[&now_ms]).await? {
        let (id, deleted): (String, bool) = (row.try_get(0)?, row.try_get(1)?);
        end_with_subscription_postgres(tx, &id, ending(deleted), now_ms).await?;
    }
    Ok(())
}

/// The ids of the stored subscriptions, as last listed.
pub fn subscription_ids(store: &Store) -> rusqlite::Result<Vec<String>> {
    let mut statement = store.conn.prepare_cached("SELECT id FROM subscriptions")?;
    let rows = statement.query_map([], |row| row.get(0))?;
    super::readable(rows)
}

/// [`subscription_ids`] on a PostgreSQL store.
pub async fn subscription_ids_postgres(store: &PgStore) -> Result<Vec<String>, PgError> {
    let client = store.client().await?;
    let rows = client
        .query("SELECT id FROM earshot.subscriptions", &[])
        .await?;
    rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
}

/// The stored subscriptions, as last listed.
pub fn subscriptions(store: &Store) -> rusqlite::Result<Vec<Subscription>> {
    let mut statement = store
        .conn
        .prepare_cached("SELECT record FROM subscriptions ORDER BY id")?;
    let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
    let mut list = Vec::new();
    for json in super::readable::<String, Vec<_>>(rows)? {
        match serde_json::from_str(&json) {
            Ok(subscription) => list.push(subscription),
            Err(_) => super::skip_row("a subscription record that is not JSON"),
        }
    }
    Ok(list)
}

const POSTGRES_SUBSCRIPTIONS: &str =
    "SELECT record FROM earshot.subscriptions ORDER BY id COLLATE \"C\"";

/// [`subscriptions`] on a PostgreSQL store.
pub async fn subscriptions_postgres(store: &PgStore) -> Result<Vec<Subscription>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_SUBSCRIPTIONS).await?;
    let mut list = Vec::new();
    for row in client.query(&statement, &[]).await? {
        let json: String = row.try_get(0)?;
        match serde_json::from_str(&json) {
            Ok(subscription) => list.push(subscription),
            Err(_) => super::skip_row("a subscription record that is not JSON"),
        }
    }
    Ok(list)
}

/// One stored subscription, as last listed, and when that was (Unix
/// milliseconds).
pub fn listed(store: &Store, id: &str) -> rusqlite::Result<Option<(Subscription, i64)>> {
    let row = store
        .conn
        .prepare_cached("SELECT record, seen_ms FROM subscriptions WHERE id = ?1")?
        .query_row([id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .optional()?;
    Ok(
        row.and_then(|(json, seen_ms)| match serde_json::from_str(&json) {
            Ok(subscription) => Some((subscription, seen_ms)),
            Err(_) => {
                super::skip_row("a subscription record that is not JSON");
                None
            }
        }),
    )
}

/// [`listed`]'s statement on PostgreSQL.
const POSTGRES_LISTED: &str = "SELECT record, seen_ms FROM earshot.subscriptions WHERE id = $1";

/// [`listed`] on a PostgreSQL store.
pub async fn listed_postgres(
    store: &PgStore,
    id: &str,
) -> Result<Option<(Subscription, i64)>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_LISTED).await?;
    let Some(row) = client.query_opt(&statement, &[&id]).await? else {
        return Ok(None);
    };
    let (json, seen_ms): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
    Ok(match serde_json::from_str(&json) {
        Ok(subscription) => Some((subscription, seen_ms)),
        Err(_) => {
            super::skip_row("a subscription record that is not JSON");
            None
        }
    })
}

/// A session where a subscription's attempts failed, for the Health pane's
/// drill-down.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FailingSession {
    pub session_id: String,
    pub failed_attempts: i64,
    pub last_failure_ms: i64,
    /// The newest failure's status code and error.
    pub http_status_code: Option<u16>,
    pub error: Option<String>,
    /// The types of the session's events that failed there (`call.ended`,
    /// …; empty when no event is known for the attempts yet).
    pub event_types: Vec<String>,
    /// Of those events, how many are missed now (not recovered, no retry).
    pub missed: i64,
}

/// [`failing_sessions`]' statement on SQLite: the newest failure's status
/// and error are its row's (SQLite takes bare columns from the row of
/// `max`).
const SQLITE_FAILING_SESSIONS: &str = "
    SELECT d.session_id, count(*), max(d.created_ms), d.http_status_code, d.error,
        (SELECT group_concat(DISTINCT o.event) FROM event_outcomes o
         WHERE o.session_no = (SELECT session_no FROM sessions WHERE session_id = d.session_id)
           AND o.subscription_id = ?1 AND o.last_failure_ms IS NOT NULL
           AND o.event IS NOT NULL),
        (SELECT count(*) FROM event_outcomes o
         WHERE o.session_no = (SELECT session_no FROM sessions WHERE session_id = d.session_id)
           AND o.subscription_id = ?1 AND o.state = 'missed')
    FROM deliveries d
    WHERE d.subscription_id = ?1 AND d.status = 'failed' AND d.created_ms >= ?2
    GROUP BY d.session_id ORDER BY max(d.created_ms) DESC, d.session_id LIMIT ?3";

/// [`SQLITE_FAILING_SESSIONS`] on PostgreSQL, which has no bare columns:
/// the newest failure's status and error are the first of the group's
/// attempts ordered newest first. Sessions whose newest failures tie go
/// in id order, bytewise, on both.
const POSTGRES_FAILING_SESSIONS: &str = "
    SELECT d.session_id, count(*), max(d.created_ms),
        (array_agg(d.http_status_code ORDER BY d.created_ms DESC))[1],
        (array_agg(d.error ORDER BY d.created_ms DESC))[1],
        (SELECT string_agg(DISTINCT o.event, ',') FROM earshot.event_outcomes o
         WHERE o.subscription_id = $1 AND o.session_id = d.session_id
           AND o.last_failure_ms IS NOT NULL AND o.event IS NOT NULL),
        (SELECT count(*) FROM earshot.event_outcomes o
         WHERE o.subscription_id = $1 AND o.session_id = d.session_id
           AND o.state = 'missed')
    FROM earshot.deliveries d
    WHERE d.subscription_id = $1 AND d.status = 'failed' AND d.created_ms >= $2
    GROUP BY d.session_id ORDER BY max(d.created_ms) DESC, d.session_id COLLATE \"C\"
    LIMIT $3";

/// The event types of a failing session as listed: `a,b` in name order
/// (neither backend orders what it concatenates).
fn event_types(listed: Option<String>) -> Vec<String> {
    let mut types: Vec<String> = listed
        .map(|types| types.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    types.sort_unstable();
    types
}

/// Sessions with failed attempts of `subscription_id` since `since_ms`,
/// newest failure first; at most `limit`.
pub fn failing_sessions(
    store: &Store,
    subscription_id: &str,
    since_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<FailingSession>> {
    let mut statement = store.conn.prepare_cached(SQLITE_FAILING_SESSIONS)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement.query_map(params![subscription_id, since_ms, limit], |row| {
        Ok(FailingSession {
            session_id: row.get(0)?,
            failed_attempts: row.get(1)?,
            last_failure_ms: row.get(2)?,
            http_status_code: row.get(3)?,
            error: row.get(4)?,
            event_types: event_types(row.get(5)?),
            missed: row.get(6)?,
        })
    })?;
    super::readable(rows)
}

/// [`failing_sessions`] on a PostgreSQL store.
pub async fn failing_sessions_postgres(
    store: &PgStore,
    subscription_id: &str,
    since_ms: i64,
    limit: usize,
) -> Result<Vec<FailingSession>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_FAILING_SESSIONS).await?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(&statement, &[&subscription_id, &since_ms, &limit])
        .await?;
    let mut sessions = Vec::with_capacity(rows.len());
    for row in &rows {
        let status: Option<i64> = row.try_get(3)?;
        sessions.push(FailingSession {
            session_id: row.try_get(0)?,
            failed_attempts: row.try_get(1)?,
            last_failure_ms: row.try_get(2)?,
            http_status_code: status
                .map(|code| {
                    u16::try_from(code)
                        .map_err(|_| PgError::Unreadable(format!("an HTTP status {code}")))
                })
                .transpose()?,
            error: row.try_get(4)?,
            event_types: event_types(row.try_get(5)?),
            missed: row.try_get(6)?,
        });
    }
    Ok(sessions)
}

/// A subscription's attempts around a time (a rotation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SinceTime {
    /// Attempts delivered at or after the time.
    pub delivered: i64,
    /// Sessions with an attempt refused with 401 at or after the time.
    pub refused_sessions: Vec<String>,
    /// Events from before the time still in flight or with a retry to come
    /// (signed with what was the secret then).
    pub old_pending: i64,
}

/// What `subscription_id`'s attempts did around `at_ms`.
pub fn since(store: &Store, subscription_id: &str, at_ms: i64) -> rusqlite::Result<SinceTime> {
    let delivered = store
        .conn
        .prepare_cached(
            "SELECT count(*) FROM deliveries
             WHERE subscription_id = ?1 AND status = 'delivered' AND created_ms >= ?2",
        )?
        .query_row(params![subscription_id, at_ms], |row| row.get(0))?;
    let mut refused = store.conn.prepare_cached(
        "SELECT DISTINCT session_id FROM deliveries
         WHERE subscription_id = ?1 AND status = 'failed' AND http_status_code = 401
           AND created_ms >= ?2",
    )?;
    let rows = refused.query_map(params![subscription_id, at_ms], |row| row.get(0))?;
    let refused_sessions = super::readable(rows)?;
    let old_pending = store
        .conn
        .prepare_cached(
            "SELECT count(*) FROM event_outcomes
             WHERE subscription_id = ?1 AND state = 'pending' AND occurred_ms < ?2",
        )?
        .query_row(params![subscription_id, at_ms], |row| row.get(0))?;
    Ok(SinceTime {
        delivered,
        refused_sessions,
        old_pending,
    })
}

/// [`since`] on a PostgreSQL store: the same three reads, in one
/// read-only snapshot.
pub async fn since_postgres(
    store: &PgStore,
    subscription_id: &str,
    at_ms: i64,
) -> Result<SinceTime, PgError> {
    let mut client = store.client().await?;
    let tx = super::postgres::snapshot(&mut client).await?;
    let delivered: i64 = tx
        .query_one(
            "SELECT count(*) FROM earshot.deliveries
             WHERE subscription_id = $1 AND status = 'delivered' AND created_ms >= $2",
            &[&subscription_id, &at_ms],
        )
        .await?
        .try_get(0)?;
    let mut refused_sessions = Vec::new();
    for row in tx
        .query(
            "SELECT DISTINCT session_id FROM earshot.deliveries
             WHERE subscription_id = $1 AND status = 'failed' AND http_status_code = 401
               AND created_ms >= $2
             ORDER BY session_id",
            &[&subscription_id, &at_ms],
        )
        .await?
    {
        refused_sessions.push(row.try_get(0)?);
    }
    let old_pending: i64 = tx
        .query_one(
            "SELECT count(*) FROM earshot.event_outcomes
             WHERE subscription_id = $1 AND state = 'pending' AND occurred_ms < $2",
            &[&subscription_id, &at_ms],
        )
        .await?
        .try_get(0)?;
    tx.commit().await?;
    Ok(SinceTime {
        delivered,
        refused_sessions,
        old_pending,
    })
}

/// How many of the observer's newest filed events
/// [`observer_subscriptions`] looks at.
const OBSERVER_EVIDENCE_EVENTS: i64 = 500;

/// The subscriptions whose deliveries reached the observer, as evidence
/// shows it: a filed event keeps its `X-SVC-Delivery-Id`, which is the id
/// of the platform's delivery record for that attempt, so the swept
/// records matching the observer's newest filed events name its
/// subscription. Empty until a sweep has listed an attempt the observer
/// filed; earshot never guesses it from a URL.
pub fn observer_subscriptions(store: &Store) -> rusqlite::Result<Vec<String>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT DISTINCT d.subscription_id
         FROM (SELECT delivery_id FROM events WHERE delivery_id IS NOT NULL
               ORDER BY occurred_ms DESC LIMIT ?1) AS e
         JOIN deliveries AS d ON d.id = e.delivery_id
         ORDER BY d.subscription_id",
    )?;
    let rows = statement.query_map([OBSERVER_EVIDENCE_EVENTS], |row| row.get(0))?;
    super::readable(rows)
}

/// The newest attempt, delivered or failed, the platform made to any of
/// `subscription_ids` (the observer's own, [`observer_subscriptions`]):
/// two lookups per subscription in the partial indexes on
/// `(subscription_id, created_ms)`.
pub fn newest_attempt_ms(
    store: &Store,
    subscription_ids: &[String],
) -> rusqlite::Result<Option<i64>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT max(at) FROM (
             SELECT max(created_ms) AS at FROM deliveries
             WHERE subscription_id = ?1 AND status = 'failed'
             UNION ALL
             SELECT max(created_ms) FROM deliveries
             WHERE subscription_id = ?1 AND status = 'delivered')",
    )?;
    let mut newest: Option<i64> = None;
    for id in subscription_ids {
        let at: Option<i64> = statement.query_row([id], |row| row.get(0))?;
        newest = newest.max(at);
    }
    Ok(newest)
}

/// [`observer_subscriptions`]' statement on PostgreSQL (ids in byte
/// order, ties of time as `earshot events` orders them).
const POSTGRES_OBSERVER_SUBSCRIPTIONS: &str = "
SELECT DISTINCT d.subscription_id COLLATE \"C\"
FROM (SELECT delivery_id FROM earshot.events WHERE delivery_id IS NOT NULL
      ORDER BY occurred_ms DESC LIMIT $1) AS e
JOIN earshot.deliveries AS d ON d.id = e.delivery_id
ORDER BY 1";

/// [`newest_attempt_ms`]' statement on PostgreSQL.
const POSTGRES_NEWEST_ATTEMPT: &str = "
SELECT max(created_ms) FROM earshot.deliveries
WHERE subscription_id = $1 AND status IN ('failed', 'delivered')";

/// [`observer_subscriptions`] on a PostgreSQL store.
pub async fn observer_subscriptions_postgres(store: &PgStore) -> Result<Vec<String>, PgError> {
    let client = store.client().await?;
    let statement = client
        .prepare_cached(POSTGRES_OBSERVER_SUBSCRIPTIONS)
        .await?;
    let rows = client
        .query(&statement, &[&OBSERVER_EVIDENCE_EVENTS])
        .await?;
    rows.iter()
        .map(|row| row.try_get(0).map_err(PgError::from))
        .collect()
}

/// [`newest_attempt_ms`] on a PostgreSQL store.
pub async fn newest_attempt_ms_postgres(
    store: &PgStore,
    subscription_ids: &[String],
) -> Result<Option<i64>, PgError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(POSTGRES_NEWEST_ATTEMPT).await?;
    let mut newest: Option<i64> = None;
    for id in subscription_ids {
        let at: Option<i64> = client.query_one(&statement, &[id]).await?.try_get(0)?;
        newest = newest.max(at);
    }
    Ok(newest)
}

/// The newest event the observer filed from an attempt of
/// `subscription_id` (its `X-SVC-Delivery-Id` is that attempt's id), as
/// [`observer_subscriptions`] reads the evidence.
pub fn observer_event(store: &Store, subscription_id: &str) -> rusqlite::Result<Option<String>> {
    store
        .conn
        .prepare_cached(
            "SELECT e.event_id FROM events AS e JOIN deliveries AS d ON d.id = e.delivery_id
             WHERE d.subscription_id = ?1 ORDER BY e.occurred_ms DESC LIMIT 1",
        )?
        .query_row([subscription_id], |row| row.get(0))
        .optional()
}
