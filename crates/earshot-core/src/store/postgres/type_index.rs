//! Schema version 12, the indexes of the Events filters on PostgreSQL:
//! chiefly the one a `type:` filter reads along, `events_by_type (event
//! COLLATE "C", occurred_ms, event_id COLLATE "C")` on the partitioned
//! `events`, and the stored types that a typed term is contained in
//! ([`matching_types`]); with it `sessions_unswept` ([`version_12`]).
//!
//! `type:call` finds every type containing `call` in any case (Rust's
//! [`fold`]), which no btree serves; but a day holds a handful of distinct
//! types. So the distinct types of the window are read first along this
//! index, one seek each (a recursive CTE: a loose index scan), tested in
//! Rust with [`fold`], and the list reads `event = ANY(types)`: the index
//! for a rare type, the time index for a common one (the planner's
//! choice from the type's statistics).
//!
//! Built in the migration's transaction on a store of up to
//! [`BUILD_IN_MIGRATION`] events (filing waits for it: well under a
//! second). On a larger store the migration makes the index on the parent
//! only (`ON ONLY`, invalid, a catalog change), and [`finish`] builds it
//! on each day's partition with `CREATE INDEX CONCURRENTLY` after the
//! migration commits (filing goes on meanwhile) and attaches each; when
//! every partition's is attached the parent's is valid. Until then the
//! list does not use it ([`matching_types`] says `None`) and tests the
//! type on the window's rows, as before. A day made later gets its own
//! index when it is attached (`days.rs`).

use tokio_postgres::Client;

use super::PgError;
use super::schema::{LOCK_CLASS, lock};
use crate::query::fold;

/// Events a store may hold for the index to be built in the migration's
/// transaction; above, [`finish`] builds it concurrently.
pub const BUILD_IN_MIGRATION: i64 = 100_000;

/// The migration to version 12: the type index, and `sessions_unswept`,
/// the sessions with an event received since their last sweep, where
/// `status:unknown` and `sub:` find the events with no outcome row yet
/// (`event_list::UNSWEPT_SESSIONS`; `sessions` is one row a session, built
/// in the transaction).
pub(super) fn version_12() -> String {
    let columns = "(event COLLATE \"C\", occurred_ms, event_id COLLATE \"C\")";
    format!(
        "
DO $v12$
BEGIN
    IF (SELECT count(*) FROM (SELECT 1 FROM earshot.events LIMIT {over}) AS e) <= {most} THEN
        CREATE INDEX events_by_type ON earshot.events {columns};
    ELSE
        CREATE INDEX events_by_type ON ONLY earshot.events {columns};
    END IF;
END
$v12$;
CREATE INDEX sessions_unswept ON earshot.sessions (session_id)
    WHERE last_swept_ms IS NULL OR last_swept_ms < last_event_ms;
",
        over = BUILD_IN_MIGRATION + 1,
        most = BUILD_IN_MIGRATION,
    )
}

/// Whether the index serves reads: built on every partition.
const VALID: &str = "
SELECT coalesce((SELECT indisvalid FROM pg_index
                 WHERE indexrelid = to_regclass('earshot.events_by_type')), false)";

/// The partitions of `events` whose index is not attached yet.
const MISSING: &str = "
SELECT c.relname::text FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'earshot.events'::regclass
  AND NOT EXISTS (
      SELECT 1 FROM pg_inherits AS ii JOIN pg_index AS x ON x.indexrelid = ii.inhrelid
      WHERE ii.inhparent = 'earshot.events_by_type'::regclass AND x.indrelid = c.oid)
ORDER BY c.relname";

/// How the index stands after [`finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeIndex {
    /// Built on every partition: `type:` reads along it.
    Built,
    /// Another process is building it now; `type:` tests the window's
    /// rows meanwhile.
    Building,
}

/// Builds the index on each partition that lacks it, concurrently (each
/// `CREATE INDEX CONCURRENTLY` outside a transaction, then attached),
/// unless it is valid already or another process holds the build's lock.
/// `client` must not be in a transaction.
pub async fn finish(client: &Client) -> Result<TypeIndex, PgError> {
    if client.query_one(VALID, &[]).await?.try_get::<_, bool>(0)? {
        return Ok(TypeIndex::Built);
    }
    let row = client
        .query_one(
            "SELECT pg_try_advisory_lock($1, $2)",
            &[&LOCK_CLASS, &lock::TYPE_INDEX],
        )
        .await?;
    if !row.try_get::<_, bool>(0)? {
        return Ok(TypeIndex::Building);
    }
    let built = build_missing(client).await;
    client
        .execute(
            "SELECT pg_advisory_unlock($1, $2)",
            &[&LOCK_CLASS, &lock::TYPE_INDEX],
        )
        .await?;
    built?;
    Ok(TypeIndex::Built)
}

/// Each missing partition's index: made (a leftover of a build cut
/// midway, invalid and unattached, dropped first) and attached.
async fn build_missing(client: &Client) -> Result<(), PgError> {
    let partitions: Vec<String> = client
        .query(MISSING, &[])
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    for partition in partitions {
        // Names come from the catalog and are `events_dYYYYMMDD`; quoted
        // all the same.
        let index = format!("\"{}_by_type\"", partition.replace('"', ""));
        let table = format!("\"{}\"", partition.replace('"', ""));
        client
            .batch_execute(&format!(
                "DROP INDEX CONCURRENTLY IF EXISTS earshot.{index}"
            ))
            .await?;
        client
            .batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY {index} ON earshot.{table}
                     (event COLLATE \"C\", occurred_ms, event_id COLLATE \"C\")"
            ))
            .await?;
        client
            .batch_execute(&format!(
                "ALTER INDEX earshot.events_by_type ATTACH PARTITION earshot.{index}"
            ))
            .await?;
    }
    Ok(())
}

/// The distinct types of the events since `since_ms`, one seek of the
/// index each, oldest partition's order (byte order).
const TYPES: &str = "
WITH RECURSIVE t(x) AS (
    SELECT min(event COLLATE \"C\") FROM earshot.events WHERE occurred_ms >= $1
    UNION ALL
    SELECT (SELECT min(event COLLATE \"C\") FROM earshot.events
            WHERE event COLLATE \"C\" > t.x AND occurred_ms >= $1)
    FROM t WHERE t.x IS NOT NULL)
SELECT x FROM t WHERE x IS NOT NULL";

/// The types stored since `since_ms` that `typed` is contained in (any
/// case, by [`fold`]), read in `tx`; `None` while the index is not built
/// (reading every type would then read the window).
pub async fn matching_types(
    tx: &deadpool_postgres::Transaction<'_>,
    since_ms: i64,
    typed: &str,
) -> Result<Option<Vec<String>>, PgError> {
    if !tx.query_one(VALID, &[]).await?.try_get::<_, bool>(0)? {
        return Ok(None);
    }
    let wanted = fold(typed);
    let statement = tx.prepare_cached(TYPES).await?;
    let mut types = Vec::new();
    for row in tx.query(&statement, &[&since_ms]).await? {
        let stored: String = row.try_get(0)?;
        if fold(&stored).contains(wanted.as_ref()) {
            types.push(stored);
        }
    }
    Ok(Some(types))
}
