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

use earshot_core::api::Client;
use earshot_core::duration_text;
use earshot_core::history::sweep::sweep;
use earshot_core::observer::sweeper::{Failures, SweepPlan};
use earshot_core::store::SweepStore;
use earshot_core::store::postgres::leases::MAINTENANCE;
use earshot_core::store::postgres::{Fence, PgStore};
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
            match sweep(&job.client, target, job.plan.budget).await {
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

fn say(line: &str) {
    eprintln!("earshot listen: {}", plain(line));
}
