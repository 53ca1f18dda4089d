//! The prune itself: every step run to its end batch by batch, each batch
//! one short immediate transaction sized to hold the write lock about
//! [`TARGET_HOLD`], followed by a pause (with the prune's checkpoints) so
//! that a running observer keeps filing events.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::steps::{self, Candidate, Step};
use super::{Period, PruneReport, Removed, Rules, held_sessions};
use crate::store::{Store, StoreError};

/// How long one batch should hold the write lock.
pub const TARGET_HOLD: Duration = Duration::from_millis(4);

/// The pause after a batch, per time it held the lock.
const PAUSE_PER_HOLD: u32 = 2;

/// Least pause after a batch, however quick it was.
const LEAST_PAUSE: Duration = Duration::from_millis(2);

/// Rows a first batch looks at; later batches double or halve it to stay
/// near [`TARGET_HOLD`], within [`SMALLEST_BATCH`]..=[`LARGEST_BATCH`].
const FIRST_BATCH: usize = 256;

pub(super) const SMALLEST_BATCH: usize = 16;

pub(super) const LARGEST_BATCH: usize = 4096;

/// Removes what `store` holds that is older than `period` at `now_ms`
/// (see the module comment), batch by batch. `stop` is read between
/// batches: once set, the prune ends after the batch in flight, keeping
/// what it removed. `progress` sees the running totals after each batch.
pub fn prune(
    store: &mut Store,
    period: Period,
    now_ms: i64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Removed),
) -> Result<PruneReport, StoreError> {
    let started = Instant::now();
    let rules = Rules::at(period, now_ms);
    store.conn.pragma_update(None, "secure_delete", "ON")?;
    let held = held_sessions(&store.conn)?;
    let mut report = PruneReport {
        rules: Some(rules),
        held_sessions: held.len(),
        ..PruneReport::default()
    };
    let mut steps = steps::all();
    // The prune's own checkpoints run in its pauses (below), not inside
    // its commits, where they would count as holding the lock.
    store.conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let outcome = run_steps(
        store,
        &mut steps,
        &rules,
        &held,
        stop,
        progress,
        &mut report,
    );
    store
        .conn
        .pragma_update(None, "wal_autocheckpoint", DEFAULT_AUTOCHECKPOINT)?;
    outcome?;
    checkpoint(&store.conn);
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Batches between two of the prune's checkpoints: often enough that the
/// log stays under SQLite's 1,000-page threshold, at which the observer's
/// own commits would checkpoint the prune's pages (with an fsync) while
/// events wait.
const CHECKPOINT_EVERY: u64 = 4;

/// SQLite's default `wal_autocheckpoint`, in pages.
const DEFAULT_AUTOCHECKPOINT: i64 = 1000;

/// Runs every step to its end (or to `stop`), batch by batch: candidates
/// read without the lock, removed in one immediate transaction, then a
/// pause [`PAUSE_PER_HOLD`] times as long as the lock was held, which
/// includes a checkpoint every [`CHECKPOINT_EVERY`] batches.
fn run_steps(
    store: &mut Store,
    steps: &mut [Box<dyn Step>],
    rules: &Rules,
    held: &HashSet<String>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Removed),
    report: &mut PruneReport,
) -> Result<(), StoreError> {
    let mut size = FIRST_BATCH;
    for step in steps {
        loop {
            if stop.load(Ordering::Relaxed) {
                report.stopped = true;
                return Ok(());
            }
            let rows = step.select(&store.conn, rules, size)?;
            let done = rows.len() < size;
            let (doomed, kept): (Vec<&Candidate>, Vec<&Candidate>) = rows.iter().partition(|row| {
                !step.holds() || rules.removes(row.time_ms, row.session.as_deref(), held)
            });
            report.kept_rows += kept.len() as u64;
            if !doomed.is_empty() {
                let tx = store
                    .conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)?;
                let locked = Instant::now();
                for row in doomed {
                    step.remove(&tx, row, rules, &mut report.removed)?;
                }
                tx.commit()?;
                let hold = locked.elapsed();
                report.batches += 1;
                report.longest_hold = report.longest_hold.max(hold);
                // A checkpoint that takes long is a disk behind with its
                // writes (the observer's among them): wait as long again
                // before adding more.
                let mut backlog = Duration::ZERO;
                if report.batches.is_multiple_of(CHECKPOINT_EVERY) {
                    let started = Instant::now();
                    checkpoint(&store.conn);
                    backlog = started.elapsed();
                }
                size = next_size(size, hold);
                std::thread::sleep((hold * PAUSE_PER_HOLD).max(LEAST_PAUSE) + backlog);
                progress(&report.removed);
            }
            if done {
                break;
            }
        }
    }
    Ok(())
}

/// Copies what is in the write-ahead log into the main file as far as no
/// reader is in the way; never waits for anyone.
fn checkpoint(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// The next batch's size: doubled when the last one held the lock under
/// half the target, halved when over twice.
pub(super) fn next_size(size: usize, hold: Duration) -> usize {
    if hold < TARGET_HOLD / 2 {
        (size * 2).min(LARGEST_BATCH)
    } else if hold > TARGET_HOLD * 2 {
        (size / 2).max(SMALLEST_BATCH)
    } else {
        size
    }
}
