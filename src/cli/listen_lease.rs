//! `earshot listen` on a PostgreSQL store takes part in the maintenance
//! lease (`docs/postgres.md`, "Leases"): a [`LeaseKeeper`] tries to take
//! or renew it every 2 s for this replica, named `HOST:PID`, and one
//! stderr line says whether this replica holds it, once the first try is
//! done and again each time that changes (a dead holder's lease is taken
//! over within 8 s). The holder makes the next days' partitions, runs
//! the retention ([`super::listen_pg_retention`]) and, with `--sweep`, the
//! sweep ([`super::listen_pg_sweep`]). Stopped with `listen`, it gives the
//! lease up at once, so another replica need not wait out the expiry.

use std::time::Duration;

use earshot_core::store::postgres::leases::MAINTENANCE;
use earshot_core::store::postgres::{LeaseKeeper, LeaseTerms, PgStore, host_name};
use earshot_core::store::retention::Period;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::listen_pg_retention::{self, SharedFigures, Work};
use super::listen_pg_sweep::{self, SweepJob};
use super::output::plain;

/// How long the first try may take before it counts as not holding it.
const FIRST_TRY_WITHIN: Duration = Duration::from_secs(3);
/// How long giving the lease up at the stop may take.
const RELEASE_WITHIN: Duration = Duration::from_secs(2);
/// How long the work in flight may take to end at the stop.
const WORK_ENDS_WITHIN: Duration = Duration::from_secs(5);

/// The lease kept for this replica, the task saying its changes, and the
/// work done while it is held.
pub(super) struct Maintenance {
    keeper: LeaseKeeper,
    saying: JoinHandle<()>,
    showing: JoinHandle<()>,
    work: Work,
    sweeping: Option<JoinHandle<()>>,
}

/// Starts keeping the maintenance lease on `store` for this replica, and
/// the holder's work: the next days' partitions, with `retention` the
/// retention, whose runs go to `figures`, and with `sweep` the sweep.
pub(super) fn start(
    store: &PgStore,
    retention: Option<Period>,
    figures: SharedFigures,
    sweep: Option<SweepJob>,
) -> Maintenance {
    let holder = holder_name();
    let keeper = LeaseKeeper::start(store.clone(), MAINTENANCE, &holder, LeaseTerms::DEFAULT);
    let work_said = if sweep.is_some() {
        "it makes the next days' partitions, runs the retention and sweeps"
    } else {
        "it makes the next days' partitions and runs the retention"
    };
    let saying = tokio::spawn(say_changes(
        store.clone(),
        keeper.watch(),
        holder.clone(),
        work_said,
    ));
    let sweeping =
        sweep.map(|job| listen_pg_sweep::start(store.clone(), keeper.watch(), holder.clone(), job));
    let showing = tokio::spawn(show_holder(store.clone(), keeper.watch(), figures.clone()));
    let work = listen_pg_retention::start(
        store.clone(),
        keeper.watch(),
        holder.clone(),
        retention,
        figures,
    );
    Maintenance {
        keeper,
        saying,
        showing,
        work,
        sweeping,
    }
}

impl Maintenance {
    /// Ends the work in flight, stops renewing and gives the lease up (if
    /// held), within 7 s.
    pub(super) async fn stop(self) {
        self.saying.abort();
        self.showing.abort();
        // A sweep's transaction cut midway rolls back; the next holder
        // sweeps that session again.
        if let Some(sweeping) = &self.sweeping {
            sweeping.abort();
        }
        self.work.stop(WORK_ENDS_WITHIN).await;
        if let Ok(Err(error)) = tokio::time::timeout(RELEASE_WITHIN, self.keeper.release()).await {
            tracing::warn!(%error, "the maintenance lease could not be given up");
        }
    }
}

/// This replica's name in the lease: the host's name and the process id.
pub(super) fn holder_name() -> String {
    let host = Some(host_name())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// Says whether this replica holds the lease after the first try, then at
/// each change.
async fn say_changes(
    store: PgStore,
    mut held: watch::Receiver<bool>,
    holder: String,
    work: &'static str,
) {
    // A first try that holds it is a change; one that does not is none.
    let _ = tokio::time::timeout(FIRST_TRY_WITHIN, held.changed()).await;
    loop {
        let now = *held.borrow_and_update();
        say(&store, now, &holder, work).await;
        if held.changed().await.is_err() {
            return;
        }
    }
}

/// How often `/metrics`' view of the holder is read from the lease row.
const SHOW_EVERY: Duration = Duration::from_secs(2);

/// Keeps whether this replica holds the lease, and who does, in `figures`
/// (for `/metrics`): read from the lease row every 2 s and at each change.
async fn show_holder(store: PgStore, mut held: watch::Receiver<bool>, figures: SharedFigures) {
    loop {
        let holds = *held.borrow_and_update();
        let holder = match store.lease(MAINTENANCE).await {
            Ok(Some(state)) if state.expires_in_ms > 0 => Some(state.holder),
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(%error, "the maintenance lease could not be read");
                figures.figures().holder
            }
        };
        figures.update(|now| {
            now.held = holds;
            now.holder = holder;
        });
        tokio::select! {
            _ = tokio::time::sleep(SHOW_EVERY) => {}
            changed = held.changed() => if changed.is_err() { return },
        }
    }
}

async fn say(store: &PgStore, held: bool, holder: &str, work: &str) {
    let line = if held {
        format!("this replica ({holder}) holds the maintenance lease ({work})")
    } else {
        let other = match store.lease(MAINTENANCE).await {
            Ok(Some(state)) => format!("; {} holds it", state.holder),
            Ok(None) | Err(_) => String::new(),
        };
        format!("this replica ({holder}) does not hold the maintenance lease{other}")
    };
    eprintln!("earshot listen: {}", plain(&line));
}
