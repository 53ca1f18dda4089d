//! Schema version 15 and the forwarder's place on PostgreSQL (`listen
//! --store postgres://… --forward-to`): what a forwarder has yet to pass
//! on, in the order the events were filed, and where it got to, kept per
//! app so that the replica that takes the forwarding over resumes there.
//!
//! "Filed after" is the live list's transaction order
//! (`store::live_list`), made durable and indexed: each event row gets
//! `filed_xid`, its filing transaction's 64-bit id
//! (`pg_current_xact_id()`, the column's default), indexed. A snapshot's
//! `xmin` is the oldest transaction still running when it was taken:
//! every event filed by an older one was seen by that read. The cursor
//! (`relay_cursors`) is such a `from_xid`, and the events at or after it
//! the app already took are kept by key in `relay_sent`: a read takes
//! the events filed at or after `from_xid` that are not in `relay_sent`,
//! oldest transaction first. An event whose transaction took its id early
//! and committed late is read at its commit, never skipped (a clock or a
//! `received_ms` position would skip it). Once a batch is passed on,
//! `from_xid` moves up to the batch's horizon (its snapshot's `xmin`, or
//! the last row's transaction when the batch was full) and the keys below
//! it are dropped. Events filed before version 15 have no `filed_xid`:
//! history, never passed on (a new forwarder starts at the newest event,
//! as on SQLite).
//!
//! A file's cursor is translated into a place by `store copy`
//! ([`super::copy_relay`]; `copied_from` and `copied_seq` say from what,
//! until a forwarder here writes).
//!
//! Every write is fenced by the forwarding lease ([`PgStore::leased`]): a
//! forwarder that stalled past its lease writes nothing after the
//! takeover ([`PgError::LeaseLost`]).

use super::{Fence, PgError, PgStore};
use crate::store::relay::Pending;

/// The migration to version 15: the filing transaction of each event
/// (existing rows keep none: their filing is history), its index, and
/// the forwarders' places (each made only if missing, as version 13's, so
/// a store taken back to an older version by hand migrates again).
pub(super) const VERSION_15: &str = "
ALTER TABLE earshot.events ADD COLUMN IF NOT EXISTS filed_xid bigint;
ALTER TABLE earshot.events ALTER COLUMN filed_xid
    SET DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX IF NOT EXISTS events_by_filed_xid ON earshot.events (filed_xid) WHERE filed_xid IS NOT NULL;
CREATE TABLE IF NOT EXISTS earshot.relay_cursors (
    app          text   PRIMARY KEY,
    from_xid     bigint NOT NULL,
    at_ms        bigint NOT NULL,
    copied_from  text,
    copied_seq   bigint
);
CREATE TABLE IF NOT EXISTS earshot.relay_sent (
    app          text   NOT NULL,
    event_id     text   NOT NULL,
    occurred_ms  bigint NOT NULL,
    filed_xid    bigint NOT NULL,
    PRIMARY KEY (app, event_id, occurred_ms)
);
";

/// The name of the lease of forwarding to `app` (the routes' key).
pub fn lease_name(app: &str) -> String {
    format!("forward:{app}")
}

/// Where a forwarder to one app stands: every event filed before
/// `from_xid` was passed on (or is history), and those after it that
/// were are in `relay_sent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XidPlace {
    pub from_xid: i64,
}

/// A batch of events to pass on, and how far `from_xid` may move once
/// every one of them is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub events: Vec<Pending>,
    /// The batch's snapshot's `xmin`, or, when the batch filled its limit,
    /// the last row's transaction if that is older.
    pub horizon: i64,
}

/// The cursor of `app`, and whether it is usable: its `from_xid` is not
/// past the newest transaction (a database restored elsewhere starts its
/// ids again).
const CURSOR: &str = "
SELECT from_xid, from_xid <= pg_snapshot_xmax(pg_current_snapshot())::text::bigint
FROM earshot.relay_cursors WHERE app = $1";

/// A new cursor at the newest event: the snapshot's `xmin`, and every
/// event filed at or after it already visible counted as passed on (one
/// statement: one snapshot).
const START_AT_NEWEST: &str = "
WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS x),
cursor AS (
    INSERT INTO earshot.relay_cursors (app, from_xid, at_ms)
    SELECT $1, x, $2 FROM s
    ON CONFLICT (app) DO UPDATE SET from_xid = excluded.from_xid, at_ms = excluded.at_ms,
        copied_from = NULL, copied_seq = NULL
    RETURNING from_xid)
INSERT INTO earshot.relay_sent (app, event_id, occurred_ms, filed_xid)
SELECT $1, e.event_id, e.occurred_ms, e.filed_xid FROM earshot.events AS e, s
WHERE e.filed_xid IS NOT NULL AND e.filed_xid >= s.x
ON CONFLICT DO NOTHING";

/// A place at the newest event for `$1` unless it has one (then nothing:
/// the keys go in only with a place made here).
const PLACE_IF_NONE: &str = "
WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS x),
cursor AS (
    INSERT INTO earshot.relay_cursors (app, from_xid, at_ms)
    SELECT $1, x, $2 FROM s
    ON CONFLICT (app) DO NOTHING
    RETURNING from_xid)
INSERT INTO earshot.relay_sent (app, event_id, occurred_ms, filed_xid)
SELECT $1, e.event_id, e.occurred_ms, e.filed_xid FROM earshot.events AS e, cursor
WHERE e.filed_xid IS NOT NULL AND e.filed_xid >= cursor.from_xid
ON CONFLICT DO NOTHING";

const FORGET_SENT: &str = "DELETE FROM earshot.relay_sent WHERE app = $1";

const SNAPSHOT_XMIN: &str = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// The events filed at or after `$2` that `$1` has not taken, oldest
/// transaction first (ties: received, then id).
const AFTER: &str = "
SELECT e.event_id, e.occurred_ms, e.filed_xid, e.event, e.session_id, e.delivery_id, e.body
FROM earshot.events AS e
WHERE e.filed_xid IS NOT NULL AND e.filed_xid >= $2
  AND NOT EXISTS (SELECT 1 FROM earshot.relay_sent AS s
                  WHERE s.app = $1 AND s.event_id = e.event_id
                    AND s.occurred_ms = e.occurred_ms)
ORDER BY e.filed_xid, e.received_ms, e.event_id
LIMIT $3";

const WAITING: &str = "
SELECT count(*) FROM earshot.events AS e
WHERE e.filed_xid IS NOT NULL AND e.filed_xid >= $2
  AND NOT EXISTS (SELECT 1 FROM earshot.relay_sent AS s
                  WHERE s.app = $1 AND s.event_id = e.event_id
                    AND s.occurred_ms = e.occurred_ms)";

const SENT: &str = "
INSERT INTO earshot.relay_sent (app, event_id, occurred_ms, filed_xid)
VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";

// A forwarder's write makes the place its own: `store copy` leaves it be.
const TOUCH: &str = "
UPDATE earshot.relay_cursors SET at_ms = $2, copied_from = NULL, copied_seq = NULL
WHERE app = $1";

const ADVANCE: &str = "
UPDATE earshot.relay_cursors SET from_xid = greatest(from_xid, $2), at_ms = $3,
    copied_from = NULL, copied_seq = NULL
WHERE app = $1";

const DROP_BELOW: &str = "
DELETE FROM earshot.relay_sent WHERE app = $1
  AND filed_xid < (SELECT from_xid FROM earshot.relay_cursors WHERE app = $1)";

impl PgStore {
    /// Where the forwarder to `app` resumes: its cursor, or a new one at
    /// the newest event when it has none or a broken one (both kept),
    /// written under `fence`.
    pub async fn relay_resume(
        &self,
        fence: &Fence,
        app: &str,
        now_ms: i64,
    ) -> Result<XidPlace, PgError> {
        let app = app.to_owned();
        self.leased(&fence.lease, &fence.holder, move |tx| {
            Box::pin(async move {
                if let Some(row) = tx.query_opt(CURSOR, &[&app]).await? {
                    let (from_xid, usable): (i64, bool) = (row.try_get(0)?, row.try_get(1)?);
                    if usable {
                        return Ok(XidPlace { from_xid });
                    }
                }
                tx.execute(FORGET_SENT, &[&app]).await?;
                tx.execute(START_AT_NEWEST, &[&app, &now_ms]).await?;
                let row = tx.query_one(CURSOR, &[&app]).await?;
                Ok(XidPlace {
                    from_xid: row.try_get(0)?,
                })
            })
        })
        .await
    }

    /// Gives `app` a place at the newest event unless it has one: called
    /// by every replica that forwards before it receives anything, so the
    /// events it files before it (or any replica) takes the forwarding
    /// lease come after the place (a place starting at the holder's first
    /// read would leave them behind). Not fenced: it writes only where
    /// there is no place, once.
    pub async fn relay_place_if_none(&self, app: &str, now_ms: i64) -> Result<(), PgError> {
        let client = self.client().await?;
        client.execute(PLACE_IF_NONE, &[&app, &now_ms]).await?;
        Ok(())
    }

    /// Up to `limit` events `app` has not taken, filed at or after
    /// `place`, oldest transaction first, read in one snapshot.
    pub async fn relay_after(
        &self,
        app: &str,
        place: XidPlace,
        limit: usize,
    ) -> Result<Batch, PgError> {
        let mut client = self.client().await?;
        let tx = super::snapshot(&mut client).await?;
        let xmin: i64 = tx.query_one(SNAPSHOT_XMIN, &[]).await?.try_get(0)?;
        let wanted = i64::try_from(limit).unwrap_or(i64::MAX);
        let statement = tx.prepare_cached(AFTER).await?;
        let rows = tx
            .query(&statement, &[&app, &place.from_xid, &wanted])
            .await?;
        tx.commit().await?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            events.push(Pending {
                seq: None,
                event_id: row.try_get(0)?,
                occurred_ms: row.try_get(1)?,
                filed_xid: row.try_get(2)?,
                event: row.try_get(3)?,
                session_id: row.try_get(4)?,
                delivery_id: row.try_get(5)?,
                body: row.try_get(6)?,
            });
        }
        let last = events.last().and_then(|last| last.filed_xid);
        let horizon = horizon(xmin, last, events.len() >= limit);
        Ok(Batch { events, horizon })
    }

    /// How many events filed at or after `place` `app` has not taken.
    pub async fn relay_waiting(&self, app: &str, place: XidPlace) -> Result<i64, PgError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(WAITING).await?;
        Ok(client
            .query_one(&statement, &[&app, &place.from_xid])
            .await?
            .try_get(0)?)
    }

    /// Keeps that `app` is done with `event` (taken, or not for it),
    /// under `fence`.
    pub async fn relay_sent(
        &self,
        fence: &Fence,
        app: &str,
        event: &Pending,
        now_ms: i64,
    ) -> Result<(), PgError> {
        let Some(filed_xid) = event.filed_xid else {
            return Ok(());
        };
        let (app, event_id, occurred_ms) =
            (app.to_owned(), event.event_id.clone(), event.occurred_ms);
        self.leased(&fence.lease, &fence.holder, move |tx| {
            Box::pin(async move {
                tx.execute(SENT, &[&app, &event_id, &occurred_ms, &filed_xid])
                    .await?;
                tx.execute(TOUCH, &[&app, &now_ms]).await?;
                Ok(())
            })
        })
        .await
    }

    /// Moves `app`'s cursor up to `horizon` (never back) and drops the
    /// keys below it, under `fence`; the place now.
    pub async fn relay_advance(
        &self,
        fence: &Fence,
        app: &str,
        horizon: i64,
        now_ms: i64,
    ) -> Result<XidPlace, PgError> {
        let app = app.to_owned();
        self.leased(&fence.lease, &fence.holder, move |tx| {
            Box::pin(async move {
                tx.execute(ADVANCE, &[&app, &horizon, &now_ms]).await?;
                tx.execute(DROP_BELOW, &[&app]).await?;
                let row = tx.query_one(CURSOR, &[&app]).await?;
                Ok(XidPlace {
                    from_xid: row.try_get(0)?,
                })
            })
        })
        .await
    }
}

/// How far the place may move once a batch is passed on: every event
/// filed before the snapshot's `xmin` was visible to the read, and the
/// read returned all of them it did not know, unless it was `full`: then
/// only those before the last row's transaction (`last`) for sure (more
/// of that transaction may follow).
fn horizon(xmin: i64, last: Option<i64>, full: bool) -> i64 {
    match last {
        Some(last) if full => xmin.min(last),
        _ => xmin,
    }
}

#[cfg(test)]
mod tests {
    use super::horizon;

    #[test]
    fn a_full_batch_moves_the_place_no_further_than_its_last_transaction() {
        assert_eq!(horizon(900, Some(850), false), 900, "all read: to xmin");
        assert_eq!(horizon(900, Some(850), true), 850, "more of 850 may follow");
        assert_eq!(
            horizon(800, Some(850), true),
            800,
            "an older one still open"
        );
        assert_eq!(horizon(900, None, false), 900, "nothing new");
    }
}
