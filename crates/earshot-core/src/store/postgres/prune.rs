//! Retention on PostgreSQL (`docs/postgres.md`, "Retention by dropping
//! partitions"): whole days of `earshot.events` go, not rows. A day whose
//! end is older than now − the period is detached with `ALTER TABLE …
//! DETACH PARTITION … CONCURRENTLY` (outside any transaction: it takes
//! SHARE UPDATE EXCLUSIVE on `events`, which filing's ROW EXCLUSIVE does
//! not wait for), its size read with `pg_total_relation_size`, its rows
//! taken from the day's received counts (`received.rs`; a partition not
//! named for a day is counted), and then dropped (the ACCESS EXCLUSIVE lock of the drop is on
//! the detached table alone); a day holding an event of a session an open
//! incident or an unfinished recovery needs is kept until its end is one
//! more period back, as SQLite keeps such a session's rows. A detach left
//! pending by a run that died is finished with `DETACH … FINALIZE`; a day
//! detached but not dropped is dropped. The unpartitioned tables lose rows
//! in small batches by SQLite's rules ([`super::prune_rows`]).
//!
//! Two prunes never run at once on one store: the run holds a session
//! advisory lock on a connection taken out of the pool (closed at the end,
//! which frees the lock whatever happened). Run by the maintenance
//! replica, each day is preceded by a check that the lease is still its
//! own ([`PgStore::leased`]) and each row batch commits fenced by it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio_postgres::Client;

use super::prune_rows::{self, RowTable};
use super::schema::{LOCK_CLASS, lock};
use super::{PgError, PgStore, days};
use crate::store::retention::{Period, PruneReport, Rules, Table};

/// Rows a batch of the unpartitioned tables removes at most.
const BATCH: i64 = 500;
/// How long a statement of the prune waits for a lock before failing (the
/// next run tries again) rather than waiting without end.
const LOCK_TIMEOUT: &str = "30s";

/// Every table of `earshot` that is a day of `events` or was one: attached,
/// detached midway (`pending`), or detached and not dropped (`attached`
/// false).
const DAYS: &str = "
SELECT c.relname::text, coalesce(i.inhdetachpending, false), i.inhrelid IS NOT NULL
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'earshot.events'::regclass
WHERE n.nspname = 'earshot' AND c.relkind = 'r' AND c.relname ~ '^events_[dmn][0-9]+$'
ORDER BY c.relname";

/// Whose lease a prune runs under: each day and each batch only while
/// `holder` holds `lease`.
#[derive(Clone, Debug)]
pub struct Fence {
    pub lease: String,
    pub holder: String,
}

/// A day of events dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedDay {
    /// `events_d20261205`.
    pub partition: String,
    /// Its rows when dropped.
    pub rows: u64,
    /// `pg_total_relation_size` before the drop (table, indexes, TOAST).
    pub bytes: u64,
}

/// What one prune of a PostgreSQL store did: the rows per table as on
/// SQLite (`report`; `batches` are the row batches, `longest_hold` the
/// longest detach), and the days dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PgPruneReport {
    pub report: PruneReport,
    pub days: Vec<DroppedDay>,
    /// Detaches a dead run left pending, finished by this one.
    pub finalized: usize,
}

impl PgPruneReport {
    /// The bytes of the days dropped.
    pub fn bytes_freed(&self) -> u64 {
        self.days.iter().map(|day| day.bytes).sum()
    }
}

/// How a day's table stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Attached,
    DetachPending,
    Detached,
}

impl PgStore {
    /// Removes what the store holds that is older than `period` at
    /// `now_ms`: whole days of events, then rows of the unpartitioned
    /// tables (see the module comment). `stop` is read before each day and
    /// batch; once set, the prune ends there, keeping what it removed.
    /// [`PgError::PruneRunning`] when another prune holds the store,
    /// [`PgError::LeaseLost`] when `fence`'s lease is no longer held.
    pub async fn prune(
        &self,
        period: Period,
        now_ms: i64,
        fence: Option<&Fence>,
        stop: &AtomicBool,
    ) -> Result<PgPruneReport, PgError> {
        let started = Instant::now();
        let rules = Rules::at(period, now_ms);
        // Out of the pool: dropped at the end, the connection closes and
        // the server frees its session lock, however the run ended.
        let client = deadpool_postgres::Client::take(self.client().await?);
        client
            .batch_execute(&format!("SET lock_timeout = '{LOCK_TIMEOUT}'"))
            .await?;
        let locked: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock($1, $2)",
                &[&LOCK_CLASS, &lock::PRUNE],
            )
            .await?
            .try_get(0)?;
        if !locked {
            return Err(PgError::PruneRunning);
        }
        let mut done = PgPruneReport {
            report: PruneReport {
                rules: Some(rules),
                ..PruneReport::default()
            },
            ..PgPruneReport::default()
        };
        let held: i64 = client
            .query_one(&prune_rows::held_count(), &[])
            .await?
            .try_get(0)?;
        done.report.held_sessions = usize::try_from(held).unwrap_or_default();
        self.drop_days(&client, &rules, fence, stop, &mut done)
            .await?;
        for rows in prune_rows::row_tables() {
            self.remove_rows(&rows, &rules, fence, stop, &mut done.report)
                .await?;
        }
        done.report.stopped = stop.load(Ordering::Relaxed);
        done.report.elapsed = started.elapsed();
        Ok(done)
    }

    /// Makes the partitions of the day of `now_ms` and the day after, when
    /// missing: what the maintenance replica does ahead of midnight.
    pub async fn ensure_days_ahead(&self, now_ms: i64) -> Result<(), PgError> {
        let mut client = self.client().await?;
        days::ensure_around(&mut client, now_ms).await
    }

    /// Detaches and drops every day that ended before the cutoff.
    async fn drop_days(
        &self,
        client: &Client,
        rules: &Rules,
        fence: Option<&Fence>,
        stop: &AtomicBool,
        done: &mut PgPruneReport,
    ) -> Result<(), PgError> {
        for (partition, standing) in old_days(client, rules.cutoff_ms).await? {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if let Some(fence) = fence {
                self.leased(&fence.lease, &fence.holder, |_| Box::pin(async { Ok(()) }))
                    .await?;
            }
            // The name is one this store's own days follow (checked by
            // `old_days`): nothing from outside is spliced in.
            if standing == Standing::Attached
                && days::day_start(&partition)
                    .is_some_and(|start| start.saturating_add(days::DAY_MS) > rules.hold_limit_ms)
            {
                let row = client
                    .query_one(&prune_rows::day_holds(&partition), &[])
                    .await?;
                let (rows, held): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
                if held > 0 {
                    done.report.kept_rows += u64::try_from(rows).unwrap_or_default();
                    continue;
                }
            }
            // A day's outcome rows go first: once the day is dropped
            // nothing finds them but a scan (a run that dies after this
            // finds the day again).
            let outcomes = client
                .execute(&prune_rows::day_outcomes(&partition), &[])
                .await?;
            done.report.removed.add(Table::EventOutcomes, outcomes);
            let detaching = Instant::now();
            match standing {
                Standing::Attached => {
                    client
                        .batch_execute(&format!(
                            "ALTER TABLE earshot.events DETACH PARTITION earshot.{partition} \
                             CONCURRENTLY"
                        ))
                        .await?;
                }
                Standing::DetachPending => {
                    client
                        .batch_execute(&format!(
                            "ALTER TABLE earshot.events DETACH PARTITION earshot.{partition} \
                             FINALIZE"
                        ))
                        .await?;
                    done.finalized += 1;
                }
                Standing::Detached => {}
            }
            done.report.longest_hold = done.report.longest_hold.max(detaching.elapsed());
            let day = days::day_start(&partition).map(|start| start.div_euclid(days::DAY_MS));
            // The day's rows from its kept counts, which filing keeps exact:
            // reading the day itself (hundreds of MB) slowed the filing
            // beside it. A partition not named for a day is counted.
            let rows: i64 = match day {
                Some(day) => {
                    client
                        .query_one(super::received::DAY_COUNT, &[&day])
                        .await?
                }
                None => {
                    let count = format!("SELECT count(*) FROM earshot.{partition}");
                    client.query_one(&count, &[]).await?
                }
            }
            .try_get(0)?;
            let size = format!("SELECT pg_total_relation_size('earshot.{partition}')");
            let bytes: i64 = client.query_one(&size, &[]).await?.try_get(0)?;
            client
                .batch_execute(&format!("DROP TABLE earshot.{partition}"))
                .await?;
            if let Some(day) = day {
                client.execute(super::received::FORGET_DAY, &[&day]).await?;
            }
            let rows = u64::try_from(rows).unwrap_or_default();
            done.report.removed.add(Table::Events, rows);
            done.days.push(DroppedDay {
                partition,
                rows,
                bytes: u64::try_from(bytes).unwrap_or_default(),
            });
        }
        Ok(())
    }

    /// Runs `rows`' delete (at most `$2` rows older than `$1`, the hold
    /// limit `$3` where it takes one) batch by batch until a batch removes
    /// fewer than [`BATCH`].
    async fn remove_rows(
        &self,
        rows: &RowTable,
        rules: &Rules,
        fence: Option<&Fence>,
        stop: &AtomicBool,
        report: &mut PruneReport,
    ) -> Result<(), PgError> {
        // `$1`, `$2` and, where the statement takes it, `$3`.
        let values = [rules.cutoff_ms, BATCH, rules.hold_limit_ms];
        let taken = if rows.holds { 3 } else { 2 };
        let sql = rows.sql.as_str();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let removed = match fence {
                Some(fence) => {
                    // Owned: the fenced work may borrow its transaction only.
                    let sql = sql.to_owned();
                    self.leased(&fence.lease, &fence.holder, move |tx| {
                        Box::pin(
                            async move { Ok(tx.execute(&sql, &bound(&values[..taken])).await?) },
                        )
                    })
                    .await?
                }
                None => {
                    let client = self.client().await?;
                    client.execute(sql, &bound(&values[..taken])).await?
                }
            };
            if removed > 0 {
                report.batches += 1;
                report.removed.add(rows.table, removed);
            }
            if removed < BATCH as u64 {
                return Ok(());
            }
        }
    }
}

/// `values` as a statement's parameters.
fn bound(values: &[i64]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    values
        .iter()
        .map(|value| value as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect()
}

/// The days whose end is at or before `cutoff_ms`, oldest first, with how
/// each stands; a table whose name is not one of a day is left alone.
async fn old_days(client: &Client, cutoff_ms: i64) -> Result<Vec<(String, Standing)>, PgError> {
    let mut old = Vec::new();
    for row in client.query(DAYS, &[]).await? {
        let name: String = row.try_get(0)?;
        let pending: bool = row.try_get(1)?;
        let attached: bool = row.try_get(2)?;
        let Some(start) = days::day_start(&name) else {
            continue;
        };
        if start.saturating_add(days::DAY_MS) > cutoff_ms {
            continue;
        }
        let standing = match (attached, pending) {
            (true, false) => Standing::Attached,
            (true, true) => Standing::DetachPending,
            (false, _) => Standing::Detached,
        };
        old.push((start, name, standing));
    }
    old.sort_by_key(|(start, _, _)| *start);
    Ok(old
        .into_iter()
        .map(|(_, name, standing)| (name, standing))
        .collect())
}
