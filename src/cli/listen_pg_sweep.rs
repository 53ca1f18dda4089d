//! The background sweep of `earshot listen --store postgres://… --sweep`
//! (`docs/postgres.md`, "The sweep on PostgreSQL"): it runs on the replica
//! holding the maintenance lease, the same lease as the retention (one
//! holder to show and to reason about; the sweep and the retention never
//! need two replicas), at once when this replica takes the lease and then
//! every `--sweep-every`, within `--sweep-budget` requests. Every write
//! of it is fenced by the lease ([`SweepStore::Postgres`] with a
//! [`Fence`]), so a replica that stalled past its lease writes nothing
//! after the takeover; losing the lease stops it after the write in
//! flight. It says on stderr when this replica starts and stops sweeping,
//! and what failed, by the same rule as SQLite's sweeper ([`Failures`]).
//! Each run is added to this replica's row of the store's sweep figures
//! (`earshot.sweep_figures`), which every replica's `/metrics` reads.

use std::time::Duration;

use earshot_core::api::Client;
use earshot_core::duration_text;
use earshot_core::history::HistoryError;
use earshot_core::history::sweep::{SweepReport, sweep};
use earshot_core::observer::sweeper::{Failures, SweepPlan};
use earshot_core::store::SweepStore;
use earshot_core::store::postgres::leases::MAINTENANCE;
use earshot_core::store::postgres::{Fence, PgStore, SweepRun};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::output::plain;

/// What the sweep needs: the platform, and how often and how much.
pub(super) struct SweepJob {
    pub(super) client: Client,
    pub(super) plan: SweepPlan,
}

/// Starts sweeping whenever `held` says this replica (`holder`) holds the
/// maintenance lease; the task ends when the lease's keeper does.
pub(super) fn start(
    store: PgStore,
    held: watch::Receiver<bool>,
    holder: String,
    job: SweepJob,
) -> JoinHandle<()> {
    tokio::spawn(run(
        store,
        held,
        Fence {
            lease: MAINTENANCE.to_owned(),
            holder,
        },
        job,
    ))
}

async fn run(store: PgStore, mut held: watch::Receiver<bool>, fence: Fence, job: SweepJob) {
    let mut failures = Failures::default();
    loop {
        while !*held.borrow_and_update() {
            if held.changed().await.is_err() {
                return;
            }
        }
        say(&format!(
            "this replica ({}) sweeps now, every {} within {} requests, while it holds the \
             maintenance lease",
            fence.holder,
            duration_text::of(job.plan.every),
            job.plan.budget
        ));
        let mut ticks = tokio::time::interval(job.plan.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                changed = held.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if !*held.borrow_and_update() {
                        say(&format!(
                            "this replica ({}) stopped sweeping: it no longer holds the \
                             maintenance lease",
                            fence.holder
                        ));
                        break;
                    }
                    continue;
                }
            }
            let target = SweepStore::Postgres {
                store: &store,
                fence: Some(&fence),
            };
            let next = format!("next try in {}", duration_text::of(job.plan.every));
            let swept = sweep(&job.client, target, job.plan.budget).await;
            record(&store, &fence.holder, &swept).await;
            match swept {
                Ok(report) => match report.stopped {
                    Some(why) => {
                        if let Some(times) = failures.failed(&why) {
                            say(&format!(
                                "the sweep stopped early{times} ({why}); what it fetched is \
                                 kept, {next}"
                            ));
                        }
                    }
                    None if failures.recovered() => say(&format!(
                        "the sweep works again ({} sessions swept, {} requests)",
                        report.sessions_swept, report.requests
                    )),
                    None => {}
                },
                Err(error) => {
                    if let Some(times) = failures.failed(&error.to_string()) {
                        say(&format!(
                            "the sweep failed{times} ({error}); receiving goes on, {next}"
                        ));
                    }
                }
            }
        }
    }
}

/// How long adding a run to the store's figures may take.
const RECORD_WITHIN: Duration = Duration::from_secs(5);

/// Adds this run to this replica's row of the store's sweep figures, which
/// every replica's `/metrics` shows; a failure to is logged, not said (the
/// figures then lag; the sweep's own failures are said).
async fn record(store: &PgStore, holder: &str, swept: &Result<SweepReport, HistoryError>) {
    let run = match swept {
        Ok(report) => SweepRun {
            failed: report.stopped.is_some(),
            requests: i64::try_from(report.requests).unwrap_or(i64::MAX),
            sessions_due: Some(report.left_for_later),
        },
        Err(_) => SweepRun {
            failed: true,
            requests: 0,
            sessions_due: None,
        },
    };
    match tokio::time::timeout(RECORD_WITHIN, store.record_sweep_run(holder, run)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "the sweep's figures were not recorded"),
        Err(_) => tracing::warn!("recording the sweep's figures took too long"),
    }
}

fn say(line: &str) {
    eprintln!("earshot listen: {}", plain(line));
}
