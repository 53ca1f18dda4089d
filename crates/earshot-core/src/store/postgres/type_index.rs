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
use super::partition_index::{Build, PartitionedIndex};
use super::schema::lock;
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
    let columns = INDEX.body;
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

/// The index, built per partition on a large store (`partition_index.rs`).
const INDEX: PartitionedIndex<'static> = PartitionedIndex {
    name: "events_by_type",
    body: "(event COLLATE \"C\", occurred_ms, event_id COLLATE \"C\")",
    lock: lock::TYPE_INDEX,
};

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
    Ok(match INDEX.finish(client).await? {
        Build::Built => TypeIndex::Built,
        Build::Building => TypeIndex::Building,
    })
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
    if !INDEX.is_valid(&**tx).await? {
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
