//! Incidents: one subscription's failure group (one diagnosis: the status
//! code and error class of its events' last failed attempts) over one
//! period. An incident opens with the first such event, grows while
//! events fail the same way, and is resolved on its own once a later
//! event to that subscription was delivered and none of its events is
//! missed or still retrying. A failure after that opens a new incident.
//! An incident also ends with its subscription: deleting or pausing it
//! resolves its open incidents with the reason ([`end_with_subscription`]),
//! and failures from before that end, swept later, open none.
//! Operators acknowledge one, with a note, so a second console on the
//! same store sees who is on it.
//!
//! Events delivered by a platform retry are not counted: a retry that
//! worked needs no one.
//!
//! Both backends keep incidents alike (`docs/postgres.md`, "Incidents and
//! acknowledgements"): each statement's SQLite text and its PostgreSQL
//! twin (`POSTGRES_*`) are side by side, rows are mapped by one function
//! ([`incident_from`], over [`Cells`]), and an incident's events are
//! counted when it is read, along the index `event_outcomes_failed` (which
//! holds the state, so no row is read) rather than in counters beside it:
//! the rows' own states are the count, whatever rewrote them.

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use tokio_postgres::Transaction;

use super::Store;
use super::cells::Cells;
use super::outcomes::{EventState, Outcome};
use super::postgres::{PgError, PgStore};

/// One incident, with its events counted.
#[derive(Clone, Debug, PartialEq)]
pub struct IncidentRow {
    /// 8 hex characters, stable for the incident's life.
    pub id: String,
    pub subscription_id: String,
    /// 0 when the failure had no status code.
    pub http_status_code: u16,
    pub error_class: String,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    pub resolved_ms: Option<i64>,
    /// What resolved it, when not its own recovery: `subscription deleted`,
    /// `subscription paused`.
    pub resolved_reason: Option<String>,
    pub acknowledged_by: Option<String>,
    pub acknowledged_ms: Option<i64>,
    pub note: Option<String>,
    pub missed: i64,
    pub recovered: i64,
    /// Failed, with a retry still to come.
    pub retrying: i64,
}

/// Whether an event belongs to an incident: it failed, and no platform
/// retry delivered it.
pub(crate) fn counts(row: &Outcome) -> bool {
    row.last_failure_ms.is_some() && row.state != EventState::Delivered
}

fn incident_id(subscription_id: &str, code: u16, class: &str, first_ms: i64) -> String {
    let digest = Sha256::digest(format!("{subscription_id}\n{code}\n{class}\n{first_ms}"));
    digest
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Why a subscription's incidents ended with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionEnd {
    Deleted,
    Paused,
}

impl SubscriptionEnd {
    /// The reason kept with each incident it resolved.
    pub fn reason(self) -> &'static str {
        match self {
            SubscriptionEnd::Deleted => "subscription deleted",
            SubscriptionEnd::Paused => "subscription paused",
        }
    }
}

/// A subscription was deleted or paused (by earshot, or seen so by a
/// sweep's listing): its open incidents are resolved at `now_ms` with the
/// reason, and the stored subscription follows (a deleted one leaves the
/// board, a paused one shows paused). How many incidents it resolved.
pub fn end_subscription(
    store: &Store,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    end_with_subscription(&store.conn, subscription_id, end, now_ms)
}

/// [`end_subscription`] inside a transaction (a sweep's listing).
pub(crate) fn end_with_subscription(
    conn: &Connection,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    let resolved =
        conn.prepare_cached(SQLITE_END)?
            .execute(params![subscription_id, now_ms, end.reason()])?;
    let follow = match end {
        SubscriptionEnd::Deleted => SQLITE_FOLLOW_DELETED,
        SubscriptionEnd::Paused => SQLITE_FOLLOW_PAUSED,
    };
    conn.prepare_cached(follow)?.execute([subscription_id])?;
    Ok(resolved)
}

const SQLITE_END: &str = "UPDATE incidents SET resolved_ms = ?2, resolved_reason = ?3
     WHERE subscription_id = ?1 AND resolved_ms IS NULL";
const POSTGRES_END: &str = "UPDATE earshot.incidents SET resolved_ms = $2, resolved_reason = $3
     WHERE subscription_id = $1 AND resolved_ms IS NULL";
const SQLITE_FOLLOW_DELETED: &str = "DELETE FROM subscriptions WHERE id = ?1";
const POSTGRES_FOLLOW_DELETED: &str = "DELETE FROM earshot.subscriptions WHERE id = $1";
const SQLITE_FOLLOW_PAUSED: &str = "UPDATE subscriptions
     SET enabled = 0, record = json_set(record, '$.enabled', json('false')) WHERE id = ?1";
const POSTGRES_FOLLOW_PAUSED: &str = "UPDATE earshot.subscriptions
     SET enabled = false, record = jsonb_set(record::jsonb, '{enabled}', 'false')::text
     WHERE id = $1";

/// [`end_subscription`] on a PostgreSQL store, in one transaction.
pub async fn end_subscription_postgres(
    store: &PgStore,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> Result<usize, PgError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await?;
    let resolved = end_with_subscription_postgres(&tx, subscription_id, end, now_ms).await?;
    tx.commit().await?;
    Ok(resolved)
}

/// [`end_with_subscription`] on PostgreSQL, in `tx` (a sweep's listing).
pub(crate) async fn end_with_subscription_postgres(
    tx: &Transaction<'_>,
    subscription_id: &str,
    end: SubscriptionEnd,
    now_ms: i64,
) -> Result<usize, PgError> {
    let resolved = tx
        .execute(POSTGRES_END, &[&subscription_id, &now_ms, &end.reason()])
        .await?;
    let follow = match end {
        SubscriptionEnd::Deleted => POSTGRES_FOLLOW_DELETED,
        SubscriptionEnd::Paused => POSTGRES_FOLLOW_PAUSED,
    };
    tx.execute(follow, &[&subscription_id]).await?;
    Ok(usize::try_from(resolved).unwrap_or(usize::MAX))
}

/// Whether a failure at `last_ms` of `subscription_id` happened before its
/// subscription ended (or it was deleted): it opens no incident.
fn before_end(conn: &Connection, subscription_id: &str, last_ms: i64) -> rusqlite::Result<bool> {
    let (ended_ms, deleted): (Option<i64>, bool) = conn.prepare_cached(SQLITE_ENDED)?.query_row(
        params![subscription_id, SubscriptionEnd::Deleted.reason()],
        |found| Ok((found.get(0)?, found.get(1)?)),
    )?;
    Ok(deleted || ended_ms.is_some_and(|ended| last_ms <= ended))
}

/// When the subscription's incidents last ended with it, and whether it
/// was deleted.
const SQLITE_ENDED: &str = "
SELECT max(resolved_ms), coalesce(max(resolved_reason = ?2), 0) FROM incidents
WHERE subscription_id = ?1 AND resolved_reason IS NOT NULL";
const POSTGRES_ENDED: &str = "
SELECT max(resolved_ms), coalesce(bool_or(resolved_reason = $2), false) FROM earshot.incidents
WHERE subscription_id = $1 AND resolved_reason IS NOT NULL";

/// The newest incident of a failure group: its id, last seen, resolved.
const SQLITE_NEWEST: &str = "
SELECT id, last_seen_ms, resolved_ms FROM incidents
WHERE subscription_id = ?1 AND http_status_code = ?2 AND error_class = ?3
ORDER BY first_seen_ms DESC LIMIT 1";
const POSTGRES_NEWEST: &str = "
SELECT id, last_seen_ms, resolved_ms FROM earshot.incidents
WHERE subscription_id = $1 AND http_status_code = $2 AND error_class = $3
ORDER BY first_seen_ms DESC, id COLLATE \"C\" LIMIT 1";

/// An open incident grown by one failure.
const SQLITE_GROW: &str = "
UPDATE incidents SET first_seen_ms = min(first_seen_ms, ?2), last_seen_ms = max(last_seen_ms, ?3)
WHERE id = ?1";
const POSTGRES_GROW: &str = "
UPDATE earshot.incidents
SET first_seen_ms = least(first_seen_ms, $2), last_seen_ms = greatest(last_seen_ms, $3)
WHERE id = $1";

/// A new incident (an id already there is the same incident).
const SQLITE_OPEN: &str = "
INSERT OR IGNORE INTO incidents
    (id, subscription_id, http_status_code, error_class, first_seen_ms, last_seen_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const POSTGRES_OPEN: &str = "
INSERT INTO earshot.incidents
    (id, subscription_id, http_status_code, error_class, first_seen_ms, last_seen_ms)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING";

/// What [`note_failure`] does with a failed event.
enum Fold {
    /// Grows the group's open incident (its id).
    Grow(String),
    Nothing,
    /// Opens an incident (its id).
    Open(String),
}

/// The one rule both backends fold a failure that ended at `last` by,
/// from its group's newest incident (id, last seen, resolved): `None` when
/// it opens a new one, unless it came before its subscription ended
/// (which the caller then asks).
fn fold(newest: Option<(String, i64, Option<i64>)>, last: i64) -> Option<Fold> {
    match newest {
        Some((id, _, None)) => Some(Fold::Grow(id)),
        // Already part of an incident that has since been resolved.
        Some((_, last_seen, Some(_))) if last <= last_seen => Some(Fold::Nothing),
        _ => None,
    }
}

/// Folds one failed event into its group's current incident, or opens one.
pub(crate) fn note_failure(conn: &Connection, row: &Outcome) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (row.first_failure_ms, row.last_failure_ms) else {
        return Ok(());
    };
    let newest: Option<(String, i64, Option<i64>)> = conn
        .prepare_cached(SQLITE_NEWEST)?
        .query_row(
            params![row.subscription_id, row.http_status_code, row.error_class],
            |found| Ok((found.get(0)?, found.get(1)?, found.get(2)?)),
        )
        .optional()?;
    let fold = match fold(newest, last) {
        Some(fold) => fold,
        None if before_end(conn, &row.subscription_id, last)? => Fold::Nothing,
        None => Fold::Open(group_id(row, first)),
    };
    match fold {
        Fold::Grow(id) => {
            conn.prepare_cached(SQLITE_GROW)?
                .execute(params![id, first, last])?;
        }
        Fold::Nothing => {}
        Fold::Open(id) => {
            conn.prepare_cached(SQLITE_OPEN)?.execute(params![
                id,
                row.subscription_id,
                row.http_status_code,
                row.error_class,
                first,
                last
            ])?;
        }
    }
    Ok(())
}

/// [`note_failure`] on PostgreSQL, in `tx` (the sweep's transaction).
pub(crate) async fn note_failure_postgres(
    tx: &Transaction<'_>,
    row: &Outcome,
) -> Result<(), PgError> {
    let (Some(first), Some(last)) = (row.first_failure_ms, row.last_failure_ms) else {
        return Ok(());
    };
    let code = i64::from(row.http_status_code);
    let newest = match tx
        .query_opt(
            POSTGRES_NEWEST,
            &[&row.subscription_id, &code, &row.error_class],
        )
        .await?
    {
        Some(found) => Some((found.try_get(0)?, found.try_get(1)?, found.try_get(2)?)),
        None => None,
    };
    let fold = match fold(newest, last) {
        Some(fold) => fold,
        None => {
            let ended = tx
                .query_one(
                    POSTGRES_ENDED,
                    &[&row.subscription_id, &SubscriptionEnd::Deleted.reason()],
                )
                .await?;
            let (ended_ms, deleted): (Option<i64>, bool) = (ended.try_get(0)?, ended.try_get(1)?);
            if deleted || ended_ms.is_some_and(|ended| last <= ended) {
                Fold::Nothing
            } else {
                Fold::Open(group_id(row, first))
            }
        }
    };
    match fold {
        Fold::Grow(id) => {
            tx.execute(POSTGRES_GROW, &[&id, &first, &last]).await?;
        }
        Fold::Nothing => {}
        Fold::Open(id) => {
            tx.execute(
                POSTGRES_OPEN,
                &[
                    &id,
                    &row.subscription_id,
                    &code,
                    &row.error_class,
                    &first,
                    &last,
                ],
            )
            .await?;
        }
    }
    Ok(())
}

/// The id of the incident `row`'s failure group opens at `first`.
fn group_id(row: &Outcome, first: i64) -> String {
    incident_id(
        &row.subscription_id,
        row.http_status_code,
        &row.error_class,
        first,
    )
}

/// Marks resolved, at `now_ms`, every open incident of `subscription_id`
/// that a later delivered event ended and that has nothing missed or
/// retrying left.
pub(crate) fn settle(
    conn: &Connection,
    subscription_id: &str,
    now_ms: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(&numbered(settle_sql("")))?
        .execute(params![subscription_id, now_ms])?;
    Ok(())
}

/// [`settle`] on PostgreSQL, in `tx` (the sweep's transaction).
pub(crate) async fn settle_postgres(
    tx: &Transaction<'_>,
    subscription_id: &str,
    now_ms: i64,
) -> Result<(), PgError> {
    tx.execute(&settle_sql("earshot."), &[&subscription_id, &now_ms])
        .await?;
    Ok(())
}

/// A statement written for both backends with `$1…`, for SQLite: `?1…`,
/// which SQLite binds by number as PostgreSQL binds `$1…` (SQLite would
/// take `$1` as a name, numbered in the order names first appear). The
/// shared texts here hold no other `$`.
fn numbered(sql: String) -> String {
    sql.replace('$', "?")
}

/// The settling statement, one text for both (`$1…`: positional on
/// PostgreSQL, numbered on SQLite); `schema` before each table's name.
fn settle_sql(schema: &str) -> String {
    format!(
        "UPDATE {schema}incidents SET resolved_ms = $2
         WHERE subscription_id = $1 AND resolved_ms IS NULL
           AND EXISTS (SELECT 1 FROM {schema}event_outcomes o
                       WHERE o.subscription_id = $1 AND o.state = 'delivered'
                         AND o.occurred_ms > incidents.last_seen_ms)
           AND NOT EXISTS (SELECT 1 FROM {schema}event_outcomes o
                       WHERE o.subscription_id = $1
                         AND o.http_status_code = incidents.http_status_code
                         AND o.error_class = incidents.error_class
                         AND o.last_failure_ms BETWEEN incidents.first_seen_ms
                                                   AND incidents.last_seen_ms
                         AND o.state IN ('missed', 'pending'))"
    )
}

/// An incident's columns, in the order [`incident_from`] reads.
const COLUMNS: &str = "id, subscription_id, http_status_code, error_class, first_seen_ms, \
     last_seen_ms, resolved_ms, acknowledged_by, acknowledged_ms, note, resolved_reason";

/// Incidents seen since a time, newest first (ties by id, in byte order),
/// resolved ones too when the second parameter is true.
fn list_sql(schema: &str, collate: &str) -> String {
    format!(
        "SELECT {COLUMNS} FROM {schema}incidents
         WHERE last_seen_ms >= $1 AND ($2 OR resolved_ms IS NULL)
         ORDER BY last_seen_ms DESC, id{collate}"
    )
}

/// Incidents whose id starts with the parameter, at most 10.
fn find_sql(schema: &str, collate: &str) -> String {
    format!(
        "SELECT {COLUMNS} FROM {schema}incidents
         WHERE substr(id, 1, length($1)) = $1 ORDER BY id{collate} LIMIT 10"
    )
}

/// Byte order on PostgreSQL whatever the database's collation (SQLite's
/// `BINARY`).
const BYTES: &str = " COLLATE \"C\"";

/// Incidents seen since `since_ms`, newest first: the open and
/// acknowledged ones, and with `all` the resolved ones too.
pub fn list(store: &Store, since_ms: i64, all: bool) -> rusqlite::Result<Vec<IncidentRow>> {
    let mut statement = store.conn.prepare_cached(&numbered(list_sql("", "")))?;
    let rows = statement.query_map(params![since_ms, all], |row| incident_from(row))?;
    let mut incidents: Vec<IncidentRow> = super::readable(rows)?;
    for incident in &mut incidents {
        count_events(store, incident)?;
    }
    Ok(incidents)
}

/// [`list`] on a PostgreSQL store (one snapshot for the list and its
/// counts).
pub async fn list_postgres(
    store: &PgStore,
    since_ms: i64,
    all: bool,
) -> Result<Vec<IncidentRow>, PgError> {
    read_postgres(store, &list_sql("earshot.", BYTES), &[&since_ms, &all]).await
}

/// Incidents whose id starts with `prefix`.
pub fn find(store: &Store, prefix: &str) -> rusqlite::Result<Vec<IncidentRow>> {
    let mut statement = store.conn.prepare_cached(&numbered(find_sql("", "")))?;
    let rows = statement.query_map([prefix], |row| incident_from(row))?;
    let mut incidents: Vec<IncidentRow> = super::readable(rows)?;
    for incident in &mut incidents {
        count_events(store, incident)?;
    }
    Ok(incidents)
}

/// [`find`] on a PostgreSQL store.
pub async fn find_postgres(store: &PgStore, prefix: &str) -> Result<Vec<IncidentRow>, PgError> {
    read_postgres(store, &find_sql("earshot.", BYTES), &[&prefix]).await
}

/// The incidents `sql` selects, with their events counted, in one
/// read-only snapshot.
async fn read_postgres(
    store: &PgStore,
    sql: &str,
    parameters: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<IncidentRow>, PgError> {
    let mut client = store.client().await?;
    let tx = super::postgres::snapshot(&mut client).await?;
    let mut incidents = Vec::new();
    for row in tx.query(sql, parameters).await? {
        incidents.push(incident_from(&row)?);
    }
    let count = tx.prepare(&count_events_sql("earshot.")).await?;
    for incident in &mut incidents {
        let code = i64::from(incident.http_status_code);
        let row = tx
            .query_one(
                &count,
                &[
                    &incident.subscription_id,
                    &code,
                    &incident.error_class,
                    &incident.first_seen_ms,
                    &incident.last_seen_ms,
                ],
            )
            .await?;
        (incident.missed, incident.recovered, incident.retrying) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    }
    tx.commit().await?;
    Ok(incidents)
}

/// Records that `by` acknowledged incident `id` at `now_ms`, with a note
/// (replacing an earlier acknowledgement).
pub fn acknowledge(
    store: &Store,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let changed = store.conn.execute(
        &numbered(acknowledge_sql("")),
        params![id, by, now_ms, note],
    )?;
    Ok(changed == 1)
}

/// [`acknowledge`] on a PostgreSQL store: committed when it returns, so
/// every console on the store reads it at its next refresh.
pub async fn acknowledge_postgres(
    store: &PgStore,
    id: &str,
    by: &str,
    note: Option<&str>,
    now_ms: i64,
) -> Result<bool, PgError> {
    let client = store.client().await?;
    let changed = client
        .execute(&acknowledge_sql("earshot."), &[&id, &by, &now_ms, &note])
        .await?;
    Ok(changed == 1)
}

fn acknowledge_sql(schema: &str) -> String {
    format!(
        "UPDATE {schema}incidents SET acknowledged_by = $2, acknowledged_ms = $3, note = $4
         WHERE id = $1"
    )
}

/// An incident from the columns of [`COLUMNS`], its events not counted yet.
fn incident_from<R: Cells>(row: &R) -> Result<IncidentRow, R::Error> {
    Ok(IncidentRow {
        id: row.text(0)?,
        subscription_id: row.text(1)?,
        http_status_code: row.small(2)?,
        error_class: row.text(3)?,
        first_seen_ms: row.int(4)?,
        last_seen_ms: row.int(5)?,
        resolved_ms: row.maybe_int(6)?,
        acknowledged_by: row.maybe_text(7)?,
        acknowledged_ms: row.maybe_int(8)?,
        note: row.maybe_text(9)?,
        resolved_reason: row.maybe_text(10)?,
        missed: 0,
        recovered: 0,
        retrying: 0,
    })
}

/// An incident's events missed, recovered and pending, one text for both
/// (`$1…`, as [`settle_sql`]): one range of `event_outcomes_failed`, which
/// holds the state, so no row is read, counted as it is walked (a `GROUP
/// BY state` sorted the range first on SQLite: 27-38 ms for 100,000 events
/// against 11).
fn count_events_sql(schema: &str) -> String {
    format!(
        "SELECT count(*) FILTER (WHERE state = 'missed'),
                count(*) FILTER (WHERE state = 'recovered'),
                count(*) FILTER (WHERE state = 'pending')
         FROM {schema}event_outcomes
         WHERE subscription_id = $1 AND http_status_code = $2 AND error_class = $3
           AND last_failure_ms BETWEEN $4 AND $5"
    )
}

/// The incident's events missed, recovered and pending.
fn count_events(store: &Store, incident: &mut IncidentRow) -> rusqlite::Result<()> {
    let mut statement = store.conn.prepare_cached(&numbered(count_events_sql("")))?;
    (incident.missed, incident.recovered, incident.retrying) = statement.query_row(
        params![
            incident.subscription_id,
            incident.http_status_code,
            incident.error_class,
            incident.first_seen_ms,
            incident.last_seen_ms
        ],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    Ok(())
}

#[cfg(test)]
mod plan_tests {
    use super::{count_events_sql, numbered};
    use crate::store::tests::temp_store;

    #[test]
    fn an_incidents_events_are_counted_from_the_index_alone_as_it_is_walked() {
        let (_dir, store) = temp_store();
        let plan: Vec<String> = store
            .conn
            .prepare(&format!(
                "EXPLAIN QUERY PLAN {}",
                numbered(count_events_sql(""))
            ))
            .unwrap()
            .query_map(rusqlite::params!["s", 401, "", 0, 1], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("USING COVERING INDEX event_outcomes_failed")),
            "{plan:?}"
        );
        // Counted as the range is walked, never sorted first.
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}
