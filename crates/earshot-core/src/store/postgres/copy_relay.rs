//! `earshot store copy` of a file's forwarder cursors (`relay_cursors`:
//! per app, the last row id the app took) into the PostgreSQL forwarder's
//! place ([`super::relay`]), after the events are copied, so that an app
//! relayed up to `after_seq` from the file is relayed from the next event
//! once the observer runs on PostgreSQL.
//!
//! A row id means nothing in PostgreSQL, and the copy's batches gave the
//! copied events new filing transactions, so the cursor is translated
//! into the place's own terms: `from_xid` is the oldest filing
//! transaction of a copied event the app had not taken (row id after
//! `after_seq`), and the copied events it had taken filed at or after
//! that transaction (those in the same batch, or filed again by a replica
//! later) are kept in `relay_sent` as taken. Events replicas filed into
//! PostgreSQL at or after `from_xid` that the file does not hold are
//! forwarded (filed after the cursor); those before it are history, as
//! for a new forwarder. When the app had taken every event, the place is
//! the newest event, as a new forwarder's.
//!
//! Idempotent: the place remembers the source and the `after_seq` it was
//! translated from (`copied_from`, `copied_seq`, cleared by the first
//! write of a forwarder on PostgreSQL). The same cursor again is "already
//! there"; the file's forwarder having moved on since, it is translated
//! again; a place a PostgreSQL forwarder has written, or another file's,
//! is left alone (counted as already there).

use deadpool_postgres::Client;
use rusqlite::Connection;

use super::copy::{CopyError, TableCopied};
use super::copy_source::CopySource;
use super::schema::{LOCK_CLASS, lock};
use crate::store::StoreError;

/// The source's table this copies.
pub(super) const TABLE: &str = "relay_cursors";

/// The place of `$1` now, locked: where it was translated from.
const PLACE: &str = "
SELECT copied_from, copied_seq FROM earshot.relay_cursors WHERE app = $1 FOR UPDATE";

/// The oldest filing transaction of the given copied events.
const OLDEST_OF: &str = "
SELECT min(e.filed_xid) FROM earshot.events AS e
JOIN unnest($1::text[], $2::bigint[]) AS u (event_id, occurred_ms)
  ON e.event_id = u.event_id AND e.occurred_ms = u.occurred_ms";

const SNAPSHOT_XMIN: &str = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// The events filed at or after `$1`.
const FILED_FROM: &str = "
SELECT event_id, occurred_ms, filed_xid FROM earshot.events
WHERE filed_xid IS NOT NULL AND filed_xid >= $1";

const FORGET_SENT: &str = "DELETE FROM earshot.relay_sent WHERE app = $1";

const WRITE_PLACE: &str = "
INSERT INTO earshot.relay_cursors (app, from_xid, at_ms, copied_from, copied_seq)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (app) DO UPDATE SET
    from_xid = excluded.from_xid, at_ms = excluded.at_ms,
    copied_from = excluded.copied_from, copied_seq = excluded.copied_seq";

const WRITE_SENT: &str = "
INSERT INTO earshot.relay_sent (app, event_id, occurred_ms, filed_xid)
SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[])
ON CONFLICT DO NOTHING";

/// A file's cursor: the app (the routes' key) and the last row id taken.
struct FileCursor {
    app: String,
    after_seq: i64,
    at_ms: i64,
}

/// Translates each of the source's cursors (the events are copied
/// already), one transaction each under the copy lock.
pub(super) async fn copy(
    client: &mut Client,
    source: &CopySource,
) -> Result<TableCopied, CopyError> {
    let started = std::time::Instant::now();
    let conn = source.connection();
    let cursors = file_cursors(conn)?;
    let mut totals = TableCopied {
        table: TABLE,
        source_rows: cursors.len() as u64,
        ..TableCopied::default()
    };
    for cursor in cursors {
        totals.read += 1;
        if translate(client, conn, source.identity(), &cursor).await? {
            totals.copied += 1;
        } else {
            totals.already += 1;
        }
    }
    totals.elapsed = started.elapsed();
    Ok(totals)
}

/// One cursor translated; false when the place was left as it was.
async fn translate(
    client: &mut Client,
    conn: &Connection,
    identity: &str,
    cursor: &FileCursor,
) -> Result<bool, CopyError> {
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &lock::COPY],
    )
    .await?;
    if let Some(row) = tx.query_opt(PLACE, &[&cursor.app]).await? {
        let (from, seq): (Option<String>, Option<i64>) = (row.try_get(0)?, row.try_get(1)?);
        let ours = from.as_deref() == Some(identity);
        if !ours || seq == Some(cursor.after_seq) {
            return Ok(false);
        }
    }
    let (ids, times) = untaken(conn, cursor.after_seq)?;
    let oldest: Option<i64> = tx.query_one(OLDEST_OF, &[&ids, &times]).await?.try_get(0)?;
    let from_xid = match oldest {
        Some(xid) => xid,
        None => tx.query_one(SNAPSHOT_XMIN, &[]).await?.try_get(0)?,
    };
    let (mut sent_ids, mut sent_times, mut sent_xids) = (Vec::new(), Vec::new(), Vec::new());
    for row in tx.query(FILED_FROM, &[&from_xid]).await? {
        let (id, occurred_ms, xid): (String, i64, i64) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        if taken_in_file(conn, &id, occurred_ms, cursor.after_seq)? {
            sent_ids.push(id);
            sent_times.push(occurred_ms);
            sent_xids.push(xid);
        }
    }
    tx.execute(FORGET_SENT, &[&cursor.app]).await?;
    tx.execute(
        WRITE_PLACE,
        &[
            &cursor.app,
            &from_xid,
            &cursor.at_ms,
            &identity,
            &cursor.after_seq,
        ],
    )
    .await?;
    tx.execute(
        WRITE_SENT,
        &[&cursor.app, &sent_ids, &sent_times, &sent_xids],
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// The file's cursors (none in a store older than the table).
fn file_cursors(conn: &Connection) -> Result<Vec<FileCursor>, StoreError> {
    let has: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [TABLE],
        |row| row.get(0),
    )?;
    if has == 0 {
        return Ok(Vec::new());
    }
    let mut statement =
        conn.prepare("SELECT app, after_seq, at_ms FROM relay_cursors ORDER BY app")?;
    let rows = statement.query_map([], |row| {
        Ok(FileCursor {
            app: row.get(0)?,
            after_seq: row.get(1)?,
            at_ms: row.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The keys of the file's events the app had not taken (after `seq`).
fn untaken(conn: &Connection, seq: i64) -> Result<(Vec<String>, Vec<i64>), StoreError> {
    let mut statement =
        conn.prepare("SELECT event_id, occurred_ms FROM events WHERE rowid > ?1")?;
    let mut rows = statement.query([seq])?;
    let (mut ids, mut times) = (Vec::new(), Vec::new());
    while let Some(row) = rows.next()? {
        ids.push(row.get(0)?);
        times.push(row.get(1)?);
    }
    Ok((ids, times))
}

/// Whether the file holds the event `id` at `occurred_ms` at a row id
/// the app had taken (`seq` or before).
fn taken_in_file(
    conn: &Connection,
    id: &str,
    occurred_ms: i64,
    seq: i64,
) -> Result<bool, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT count(*) FROM events WHERE event_id = ?1 AND occurred_ms = ?2 AND rowid <= ?3",
    )?;
    let found: i64 =
        statement.query_row(rusqlite::params![id, occurred_ms, seq], |row| row.get(0))?;
    Ok(found > 0)
}
