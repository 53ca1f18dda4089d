//! The maintenance replica's work for `earshot listen --store
//! postgres://…` (`docs/postgres.md`): while this replica holds the
//! maintenance lease it makes today's and tomorrow's partitions of
//! `events` ahead, and with a retention (`--retention D` or the profile's)
//! drops the days older than it ([`PgStore::prune`], fenced by the lease):
//! once [`pruner::FIRST_RUN_AFTER`] after taking the lease, then every hour
//! (every period, when shorter) as on SQLite. A replica that does not hold
//! the lease does nothing; one that loses it stops after the day or batch
//! in flight. Each run is said on stderr, naming this replica, and kept in
//! [`MaintenanceGauges`] for `/metrics`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use earshot_core::duration_text;
use earshot_core::observer::metrics::MaintenanceGauges;
use earshot_core::store::postgres::leases::MAINTENANCE;
use earshot_core::store::postgres::{Fence, PgPruneReport, PgStore};
use earshot_core::store::pruner;
use earshot_core::store::retention::Period;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::output::plain;
use super::store_check::size_text;
use super::store_cmd::{removed_list, thousands};
use super::store_prune_postgres::days_text;

/// The lease and the retention's figures, shared by the work and
/// `/metrics`.
pub(super) type SharedFigures = Arc<MaintenanceGauges>;

/// The maintenance work running in the background.
pub(super) struct Work {
    stop: Arc<AtomicBool>,
    wake: Arc<Notify>,
    task: JoinHandle<()>,
}

/// Starts the work of the lease holder: `held` says whether this replica
/// (`holder`) holds the maintenance lease.
pub(super) fn start(
    store: PgStore,
    held: watch::Receiver<bool>,
    holder: String,
    retention: Option<Period>,
    figures: SharedFigures,
) -> Work {
    let stop = Arc::new(AtomicBool::new(false));
    let wake = Arc::new(Notify::new());
    let task = tokio::spawn(run(
        store,
        held,
        Fence {
            lease: MAINTENANCE.to_owned(),
            holder,
        },
        retention,
        figures,
        Stopping {
            stop: stop.clone(),
            wake: wake.clone(),
        },
    ));
    Work { stop, wake, task }
}

impl Work {
    /// Stops after the day or batch in flight (at most `within`; then cut,
    /// and a detach left midway is finished by the next run).
    pub(super) async fn stop(self, within: Duration) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_one();
        let task = self.task;
        let abort = task.abort_handle();
        if tokio::time::timeout(within, task).await.is_err() {
            abort.abort();
        }
    }
}

/// How the work is told to stop: the flag a prune reads between days and
/// batches, and a wake-up for its waits.
struct Stopping {
    stop: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

async fn run(
    store: PgStore,
    mut held: watch::Receiver<bool>,
    fence: Fence,
    retention: Option<Period>,
    figures: SharedFigures,
    Stopping { stop, wake }: Stopping,
) {
    let every = retention.map_or(pruner::AT_LEAST_EVERY, pruner::interval);
    loop {
        // Until this replica holds the lease.
        while !*held.borrow_and_update() {
            tokio::select! {
                changed = held.changed() => if changed.is_err() { return },
                () = wake.notified() => return,
            }
        }
        let mut wait = pruner::FIRST_RUN_AFTER;
        loop {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = wake.notified() => return,
                changed = held.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if !*held.borrow_and_update() {
                        break;
                    }
                    continue;
                }
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
            wait = every;
            if let Err(error) = store.ensure_days_ahead(earshot_core::store::now_ms()).await {
                tracing::warn!(%error, "the next days' partitions could not be made");
            }
            if let Some(period) = retention {
                let outcome = store
                    .prune(period, earshot_core::store::now_ms(), Some(&fence), &stop)
                    .await;
                say(&fence.holder, period, every, &outcome);
                record(&figures, &outcome);
            }
        }
    }
}

fn record(
    figures: &SharedFigures,
    outcome: &Result<PgPruneReport, earshot_core::store::postgres::PgError>,
) {
    figures.update(|figures| {
        figures.retention_last_run_ms = Some(earshot_core::store::now_ms());
        match outcome {
            Ok(report) => {
                figures.retention_runs += 1;
                figures.retention_last_freed_bytes = report.bytes_freed();
                figures.retention_freed_bytes += report.bytes_freed();
            }
            Err(_) => figures.retention_failures += 1,
        }
    });
}

/// One stderr line a run: what it dropped and removed, or why it failed.
fn say(
    holder: &str,
    period: Period,
    every: Duration,
    outcome: &Result<PgPruneReport, earshot_core::store::postgres::PgError>,
) {
    let line = match outcome {
        Ok(report) => format!(
            "this replica ({holder}) ran the retention ({period}): dropped {} of events, \
             removed {} rows ({}), freed {} in {}",
            days_text(report.days.len()),
            thousands(report.report.removed.total()),
            removed_list(&report.report.removed),
            size_text(report.bytes_freed()),
            duration_text::of(report.report.elapsed)
        ),
        Err(error) => format!(
            "this replica ({holder}): the retention ({period}) failed ({error}); trying again \
             in {}",
            duration_text::of(every)
        ),
    };
    eprintln!("earshot listen: {}", plain(&line));
}
