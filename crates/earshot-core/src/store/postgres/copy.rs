//! `earshot store copy`: an existing SQLite store copied into a
//! PostgreSQL store, for the tables PostgreSQL holds (`events`,
//! `sessions`, `unfiled_events`, then the sweep's tables by
//! [`super::copy_sweep`], then incidents, changes and recover runs by
//! [`super::copy_team`]), and after the events a forwarder's cursor,
//! translated by [`super::copy_relay`]. The source is opened read-only and
//! judged as every command judges a store (a newer schema or another
//! program's file refused, a damaged page an error); nothing writes to it.
//!
//! Rows go over in rowid order, a batch a transaction, with `ON CONFLICT
//! DO NOTHING` on the destination's keys: what is there already (copied
//! before, or filed by a live replica meanwhile) is counted, never doubled.
//! Each batch's transaction also moves the copy's cursor
//! (`earshot.copy_cursors`, schema version 5): the source's rowid and key
//! of the last row copied, per source file and table, so a copy stopped
//! anywhere resumes after its last committed batch. The cursor is only
//! trusted while the source row it names is still at that rowid with that
//! key (a `VACUUM` renumbers rowids, `forget` deletes rows): otherwise the
//! table is copied from its start again, which the keys make harmless.
//! The destination's own rows are no cursor: replicas may be filing into
//! it meanwhile.
//!
//! The SQL of the destination's side is here; the source's reading is in
//! [`super::copy_source`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::Client;

use super::copy_source::{Batch, CopySource, CopyTable, NotCopied, Rows};
use super::copy_sweep::{self, After, Spec};
use super::copy_team;
use super::schema::{LOCK_CLASS, lock};
use super::{PgError, PgStore, days};
use crate::store::StoreError;

/// Rows a transaction, unless the caller says (see docs/postgres.md for
/// the measurement).
pub const DEFAULT_BATCH_ROWS: usize = 2_000;

const READ_CURSOR: &str = "
SELECT last_rowid, last_key FROM earshot.copy_cursors
WHERE source = $1 AND table_name = $2";

pub(super) const MOVE_CURSOR: &str = "
INSERT INTO earshot.copy_cursors (source, table_name, last_rowid, last_key, updated_at)
VALUES ($1, $2, $3, $4, now())
ON CONFLICT (source, table_name) DO UPDATE SET
    last_rowid = excluded.last_rowid,
    last_key = excluded.last_key,
    updated_at = excluded.updated_at";

// A table read in key order and finished: the next run reads it again.
pub(super) const CLEAR_CURSOR: &str = "
DELETE FROM earshot.copy_cursors WHERE source = $1 AND table_name = $2";

const INSERT_EVENTS: &str = "
INSERT INTO earshot.events
    (event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
                     $6::text[], $7::text[], $8::bytea[])
ON CONFLICT (event_id, occurred_ms) DO NOTHING";

// A session known on both sides is merged (first seen the earlier, last
// event the later), and only when that changes it, so a second copy writes
// nothing; `xmax = 0` tells a row inserted from one merged.
const UPSERT_SESSIONS: &str = "
INSERT INTO earshot.sessions AS s
    (session_id, kind, source, first_seen_ms, last_event_ms, last_swept_ms, unsettled)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
                     $6::bigint[], $7::boolean[])
ON CONFLICT (session_id) DO UPDATE SET
    kind = coalesce(s.kind, excluded.kind),
    first_seen_ms = least(s.first_seen_ms, excluded.first_seen_ms),
    last_event_ms = greatest(s.last_event_ms, excluded.last_event_ms)
WHERE s.first_seen_ms > excluded.first_seen_ms
   OR coalesce(s.last_event_ms, -1) < coalesce(excluded.last_event_ms, -1)
   OR (s.kind IS NULL AND excluded.kind IS NOT NULL)
RETURNING xmax = 0";

// A delivery without an `event_id` has no key: it is taken as there when a
// row without one was received at the same millisecond with the same bytes.
const INSERT_UNFILED: &str = "
INSERT INTO earshot.unfiled_events
    (received_ms, event_id, event, session_id, occurred_ms, delivery_id, headers, body, reason)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                     $6::text[], $7::text[], $8::bytea[], $9::text[])
    AS u (received_ms, event_id, event, session_id, occurred_ms, delivery_id, headers, body,
          reason)
WHERE u.event_id IS NOT NULL OR NOT EXISTS (
    SELECT 1 FROM earshot.unfiled_events f
    WHERE f.event_id IS NULL AND f.received_ms = u.received_ms AND f.body = u.body)
ON CONFLICT (event_id) DO NOTHING";

/// A copy failed: reading the source, or writing the destination.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(transparent)]
    Source(#[from] StoreError),
    #[error(transparent)]
    Destination(#[from] PgError),
}

impl From<tokio_postgres::Error> for CopyError {
    fn from(error: tokio_postgres::Error) -> Self {
        CopyError::Destination(PgError::Query(error))
    }
}

/// One table's copy, so far or in the end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableCopied {
    /// `events`, `sessions`, `unfiled_events` or one of the sweep's.
    pub table: &'static str,
    /// Rows the source holds (counted at the start).
    pub source_rows: u64,
    /// Rows this run read from the source (after the cursor).
    pub read: u64,
    /// Of those, rows new to the destination.
    pub copied: u64,
    /// Of those, rows the destination held already (a session merged
    /// counts here).
    pub already: u64,
    /// Rows before the cursor this run started from: copied by an earlier
    /// run.
    pub skipped: u64,
    /// Whether the earlier run's cursor could not be trusted, so this
    /// table was read from its start.
    pub restarted: bool,
    /// How long this run spent on the table.
    pub elapsed: Duration,
}

/// What a copy did.
#[derive(Clone, Debug, Default)]
pub struct Copied {
    pub tables: Vec<TableCopied>,
    /// What the source holds that PostgreSQL does not yet.
    pub not_copied: Vec<NotCopied>,
    pub batches: u64,
    pub elapsed: Duration,
    /// Stopped by the caller before the end.
    pub stopped: bool,
}

/// Copies `source` into `store`, `batch_rows` rows a transaction (at
/// least 1); `progress` is shown each table's totals after every batch,
/// and `stop` ends the copy after the batch in flight (its work kept).
pub async fn copy(
    mut source: CopySource,
    store: &PgStore,
    batch_rows: usize,
    stop: &AtomicBool,
    progress: &mut (dyn FnMut(&TableCopied) + Send),
) -> Result<Copied, CopyError> {
    let started = Instant::now();
    let batch_rows = batch_rows.max(1);
    let mut client = store.client().await?;
    let mut copied = Copied {
        not_copied: source.not_copied()?,
        ..Copied::default()
    };
    let mut days_made = std::collections::HashSet::new();
    for table in CopyTable::ALL {
        let table_started = Instant::now();
        let mut totals = TableCopied {
            table: table.name(),
            source_rows: source.count(table)?,
            ..TableCopied::default()
        };
        let mut after = start_after(&client, &source, table, &mut totals).await?;
        progress(&totals);
        while !stop.load(Ordering::Relaxed) {
            let batch = source.read(table, after, batch_rows)?;
            let Some(last) = batch.last.clone() else {
                break;
            };
            if let Rows::Events(events) = &batch.rows {
                for occurred_ms in events.occurred_ms.iter() {
                    if days_made.insert(occurred_ms.div_euclid(days::DAY_MS)) {
                        days::ensure_day(&mut client, *occurred_ms).await?;
                    }
                }
            }
            let new = write_batch(&mut client, &source, table, &batch).await?;
            let read = batch.len() as u64;
            totals.read += read;
            totals.copied += new;
            totals.already += read - new.min(read);
            copied.batches += 1;
            after = last.rowid;
            totals.elapsed = table_started.elapsed();
            progress(&totals);
        }
        totals.elapsed = table_started.elapsed();
        copied.tables.push(totals);
        if stop.load(Ordering::Relaxed) {
            copied.stopped = true;
            break;
        }
    }
    if !copied.stopped {
        // The events are there: a forwarder's cursor can be translated.
        let totals = super::copy_relay::copy(&mut client, &source).await?;
        progress(&totals);
        copied.tables.push(totals);
        for spec in copy_sweep::SPECS.iter().chain(&copy_team::SPECS) {
            let totals =
                copy_sweep_table(&mut client, &source, spec, batch_rows, stop, progress).await?;
            copied.batches += totals.1;
            copied.tables.push(totals.0);
            if stop.load(Ordering::Relaxed) {
                copied.stopped = true;
                break;
            }
        }
    }
    copied.elapsed = started.elapsed();
    Ok(copied)
}

/// One of the sweep's tables copied (see [`copy_sweep`]): its totals and
/// the batches written.
async fn copy_sweep_table(
    client: &mut Client,
    source: &CopySource,
    spec: &Spec,
    batch_rows: usize,
    stop: &AtomicBool,
    progress: &mut (dyn FnMut(&TableCopied) + Send),
) -> Result<(TableCopied, u64), CopyError> {
    let started = Instant::now();
    let conn = source.connection();
    let mut totals = TableCopied {
        table: spec.table,
        source_rows: spec.count(conn)?,
        ..TableCopied::default()
    };
    let cursor = client
        .query_opt(READ_CURSOR, &[&source.identity(), &spec.table])
        .await?;
    let mut after = match cursor {
        None => After::Start,
        Some(row) => {
            let (rowid, key): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
            match spec.resume(conn, rowid, &key)? {
                Some(after) => {
                    totals.skipped = spec.count_through(conn, &after)?;
                    after
                }
                None => {
                    totals.restarted = true;
                    After::Start
                }
            }
        }
    };
    progress(&totals);
    let mut batches = 0;
    while !stop.load(Ordering::Relaxed) {
        let batch = spec.read(conn, &after, batch_rows)?;
        if batch.last.is_none() {
            copy_sweep::clear_cursor(client, source.identity(), spec).await?;
            break;
        }
        let read = batch.len() as u64;
        let last_batch = batch.len() < batch_rows;
        let new = spec
            .write(client, source.identity(), &batch, last_batch)
            .await?;
        totals.read += read;
        totals.copied += new;
        totals.already += read - new.min(read);
        batches += 1;
        after = batch.next;
        totals.elapsed = started.elapsed();
        progress(&totals);
        if last_batch {
            break;
        }
    }
    totals.elapsed = started.elapsed();
    Ok((totals, batches))
}

/// The rowid this run starts after: the cursor of an earlier run when the
/// source still holds the row it names, else 0.
async fn start_after(
    client: &Client,
    source: &CopySource,
    table: CopyTable,
    totals: &mut TableCopied,
) -> Result<i64, CopyError> {
    let row = client
        .query_opt(READ_CURSOR, &[&source.identity(), &table.name()])
        .await?;
    let Some(row) = row else {
        return Ok(0);
    };
    let (rowid, key): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
    if source.holds(table, rowid, &key)? {
        totals.skipped = source.count_through(table, rowid)?;
        Ok(rowid)
    } else {
        totals.restarted = true;
        Ok(0)
    }
}

/// Writes `batch` and moves the cursor past it, in one transaction under
/// the copy lock; the rows new to the destination.
async fn write_batch(
    client: &mut Client,
    source: &CopySource,
    table: CopyTable,
    batch: &Batch,
) -> Result<u64, CopyError> {
    let Some(last) = &batch.last else {
        return Ok(0);
    };
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &lock::COPY],
    )
    .await?;
    let new = match &batch.rows {
        Rows::Events(rows) => {
            let statement = tx.prepare_cached(INSERT_EVENTS).await?;
            tx.execute(
                &statement,
                &[
                    &rows.event_id,
                    &rows.event,
                    &rows.session_id,
                    &rows.occurred_ms,
                    &rows.received_ms,
                    &rows.delivery_id,
                    &rows.headers,
                    &rows.body,
                ],
            )
            .await?
        }
        Rows::Sessions(rows) => {
            let statement = tx.prepare_cached(UPSERT_SESSIONS).await?;
            let written = tx
                .query(
                    &statement,
                    &[
                        &rows.session_id,
                        &rows.kind,
                        &rows.source,
                        &rows.first_seen_ms,
                        &rows.last_event_ms,
                        &rows.last_swept_ms,
                        &rows.unsettled,
                    ],
                )
                .await?;
            let mut inserted = 0;
            for row in written {
                if row.try_get::<_, bool>(0)? {
                    inserted += 1;
                }
            }
            inserted
        }
        Rows::Unfiled(rows) => {
            let statement = tx.prepare_cached(INSERT_UNFILED).await?;
            tx.execute(
                &statement,
                &[
                    &rows.received_ms,
                    &rows.event_id,
                    &rows.event,
                    &rows.session_id,
                    &rows.occurred_ms,
                    &rows.delivery_id,
                    &rows.headers,
                    &rows.body,
                    &rows.reason,
                ],
            )
            .await?
        }
    };
    tx.execute(
        MOVE_CURSOR,
        &[&source.identity(), &table.name(), &last.rowid, &last.key],
    )
    .await?;
    tx.commit().await?;
    Ok(new)
}
