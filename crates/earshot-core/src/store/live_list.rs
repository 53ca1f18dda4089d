//! The live event list on either backend: a read that brings a list up to
//! date with only the events filed since the last read, and the cursor
//! ([`LiveCursor`]) that says where that read stood.
//!
//! On SQLite one writer gives `events.rowid` in commit order, so the
//! events filed since are those after the newest rowid held (and the list
//! state says whether anything else a list shows changed; see
//! [`super::mark`]).
//!
//! On PostgreSQL no number given at insert is given in commit order: a
//! replica can commit 10 before another commits 9, and a reader that saw
//! 10 would skip 9 for good. What is in commit order is what a snapshot
//! sees: every transaction older than the snapshot's `xmin` (the oldest
//! still running when it was taken) had ended, so its rows were seen by
//! that read. A read therefore takes, in one snapshot, the snapshot's
//! `xmin` and the rows whose filing transaction (the row's own `xmin`
//! column) is the last read's `xmin` or later, and drops the rows it
//! already returned by their key `(event_id, occurred_ms)`; it keeps the
//! keys of the rows whose transaction is at or after its own snapshot's
//! `xmin`, since the next read takes those again. No clock is involved
//! (replicas' clocks and a slow transaction cannot make a row skipped),
//! and no schema change: `xmin` is on every row. The cost: no index
//! serves it, so a live read tests the window's rows (`docs/postgres.md`).

use std::collections::BTreeMap;

use super::event_list::{self, Filter, ListedEvent, XID_SPAN, postgres_lacks};
use super::mark::{self, ListState};
use super::postgres::PgStore;
use super::{Store, StoreError};

/// Where a live list stood at its last read, per backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveCursor {
    /// SQLite: the list state (what changed other than by filing, and
    /// the newest rowid).
    Sqlite(ListState),
    /// PostgreSQL: the snapshot's oldest running transaction and the keys
    /// read at or after it.
    Postgres(XidCursor),
}

/// Where a live read on PostgreSQL stood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XidCursor {
    /// The oldest transaction (a 64-bit id) still running when the last
    /// read's snapshot was taken: every row filed by an older one was
    /// seen by that read.
    from_xid: i64,
    /// The rows returned whose transaction is `from_xid` or later, by key
    /// `(event_id, occurred_ms)`, with their transaction: the next read
    /// takes them again and drops them.
    held: BTreeMap<(String, i64), i64>,
    /// The oldest time a row can have and still be among the newest
    /// `limit` the holder shows: the whole read's last row when it filled
    /// the limit, else the window's start. A live read looks no further
    /// back (an event filed late but older than that would be cut from the
    /// list anyway), so it reads along the time index about `limit` rows,
    /// not the window.
    floor_ms: i64,
    /// `earshot.list_changes` at that read: another number means
    /// something besides filing changed, and the next read is whole.
    changes: i64,
}

impl XidCursor {
    /// How many rows the next read will drop as already returned.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// What a live read found.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveRead<T> {
    /// Nothing filed since the cursor, nothing else a list shows changed.
    Same,
    /// Only the events filed since the cursor that the filter passes,
    /// newest first, at most the limit: none of them returned before.
    Newer(Vec<T>),
    /// The whole list (no cursor, or something besides filing changed).
    All(Vec<T>),
}

impl<T> LiveRead<T> {
    /// The same read with each row turned into another.
    pub fn try_map<U, E>(
        self,
        rows: impl FnOnce(Vec<T>) -> Result<Vec<U>, E>,
    ) -> Result<LiveRead<U>, E> {
        Ok(match self {
            LiveRead::Same => LiveRead::Same,
            LiveRead::Newer(found) => LiveRead::Newer(rows(found)?),
            LiveRead::All(found) => LiveRead::All(rows(found)?),
        })
    }
}

/// The live read on SQLite: the list state first (a commit after it
/// shows in the next read, where an event read twice is merged by the
/// list's holder), then nothing when it equals `known`'s, the events
/// after `known`'s newest rowid when only events were filed, else the
/// whole list. The cursor is `None` when the state could not be read
/// (the next read is whole).
pub fn read_sqlite(
    store: &Store,
    filter: &Filter<'_>,
    limit: usize,
    known: Option<&LiveCursor>,
) -> Result<(LiveRead<ListedEvent>, Option<LiveCursor>), StoreError> {
    let state = mark::list_state(store).ok();
    let then = match known {
        Some(LiveCursor::Sqlite(then)) => Some(*then),
        _ => None,
    };
    let after_seq = match (state, then) {
        (Some(now), Some(then)) if now == then => {
            return Ok((LiveRead::Same, state.map(LiveCursor::Sqlite)));
        }
        (Some(now), Some(then)) if now.version == then.version => Some(then.newest_seq),
        _ => None,
    };
    let filter = Filter {
        after_seq,
        after_xid: None,
        ..filter.clone()
    };
    let rows = event_list::list(store, &filter, limit)?;
    let read = match after_seq {
        Some(_) => LiveRead::Newer(rows),
        None => LiveRead::All(rows),
    };
    Ok((read, state.map(LiveCursor::Sqlite)))
}

/// The oldest transaction still running in this transaction's snapshot.
/// The snapshot's oldest running transaction, and how many times what a
/// list shows changed other than by filing (`earshot.list_changes`).
const SNAPSHOT_XMIN_AND_CHANGES: &str =
    "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
        (SELECT n FROM earshot.list_changes)";

/// The live read on PostgreSQL, in one `REPEATABLE READ` snapshot: with
/// `known`'s cursor, the events filed by its `from_xid` or later that
/// could be among the newest `limit` (no older than its `floor_ms`), less
/// those it holds ([`LiveRead::Same`] when none is left); without, the
/// whole list. A filter [`postgres_lacks`] is refused.
pub async fn read_postgres(
    store: &PgStore,
    filter: &Filter<'_>,
    limit: usize,
    known: Option<&LiveCursor>,
) -> Result<(LiveRead<ListedEvent>, Option<LiveCursor>), StoreError> {
    if let Some(why) = postgres_lacks(filter) {
        return Err(StoreError::NotOnPostgres(why));
    }
    let known = match known {
        Some(LiveCursor::Postgres(cursor)) => Some(cursor),
        _ => None,
    };
    let window_ms = filter.since_ms;
    let read = async {
        let mut client = store.client().await?;
        let tx = super::postgres::snapshot(&mut client).await?;
        let row = tx.query_one(SNAPSHOT_XMIN_AND_CHANGES, &[]).await?;
        let (snapshot_xmin, changes): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        // Something besides filing changed (an outcome, a subscription):
        // the whole list again, as on SQLite.
        let cursor = known.filter(|cursor| cursor.changes == changes);
        let held = cursor.map_or(0, XidCursor::held);
        let filter = Filter {
            after_xid: cursor.map(|cursor| cursor.from_xid),
            since_ms: cursor.map_or(window_ms, |cursor| cursor.floor_ms.max(window_ms)),
            ..filter.clone()
        };
        // Up to `held` of them are dropped below: the rest are the newest
        // `limit` not returned before.
        let rows = if limit == 0 {
            Vec::new()
        } else {
            event_list::scan_postgres(&tx, &filter, limit.saturating_add(held)).await?
        };
        tx.commit().await?;
        Ok::<_, super::postgres::PgError>((snapshot_xmin, changes, cursor, rows))
    };
    let (snapshot_xmin, changes, cursor, rows) = read.await?;
    // Transactions before either `xmin` had ended when its read was taken.
    let from_xid = cursor.map_or(snapshot_xmin, |cursor| cursor.from_xid.max(snapshot_xmin));
    let mut kept = cursor.map(|cursor| cursor.held.clone()).unwrap_or_default();
    let mut found = Vec::new();
    for (event, xid32) in rows {
        let key = (event.event_id.clone(), event.occurred_ms);
        if cursor.is_some() && kept.contains_key(&key) {
            continue;
        }
        if found.len() < limit {
            kept.insert(key, widen(xid32, snapshot_xmin));
            found.push(event);
        }
    }
    kept.retain(|_, xid| *xid >= from_xid);
    let floor_ms = match (cursor, found.last()) {
        (Some(cursor), _) => cursor.floor_ms,
        (None, Some(oldest)) if found.len() == limit => oldest.occurred_ms,
        (None, _) => window_ms,
    };
    let read = match (cursor, found.is_empty()) {
        (Some(_), true) => LiveRead::Same,
        (Some(_), false) => LiveRead::Newer(found),
        (None, _) => LiveRead::All(found),
    };
    let cursor = XidCursor {
        from_xid,
        held: kept,
        floor_ms,
        changes,
    };
    Ok((read, Some(LiveCursor::Postgres(cursor))))
}

/// A row's 32-bit transaction id as the 64-bit one nearest `reference`
/// (a 64-bit id read in the same snapshot): within 2³¹ of it, as
/// PostgreSQL compares them. A row frozen more than 2³¹ transactions ago
/// may be placed wrongly; it is then read once more by a live read (the
/// holder merges it by id), never skipped.
fn widen(xid32: i64, reference: i64) -> i64 {
    let ahead = (xid32 - reference.rem_euclid(XID_SPAN)).rem_euclid(XID_SPAN);
    if ahead >= XID_SPAN / 2 {
        reference + ahead - XID_SPAN
    } else {
        reference + ahead
    }
}

#[cfg(test)]
mod tests {
    use super::widen;

    #[test]
    fn a_row_id_is_placed_within_half_the_span_of_the_snapshot() {
        assert_eq!(widen(724, 724), 724);
        assert_eq!(widen(730, 724), 730);
        assert_eq!(widen(700, 724), 700);
        // Across an epoch: the snapshot just past 2^32, rows on both sides.
        let snapshot = (1_i64 << 32) + 5;
        assert_eq!(widen(3, snapshot), snapshot - 2);
        assert_eq!(widen((1 << 32) - 10, snapshot), snapshot - 15);
        assert_eq!(widen(9, snapshot), snapshot + 4);
        assert_ne!(widen(9, snapshot), 9, "not taken as it reads");
    }
}
