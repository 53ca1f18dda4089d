//! `earshot listen` on a PostgreSQL store takes part in the maintenance
//! lease (`docs/postgres.md`, "Leases"): a [`LeaseKeeper`] tries to take
//! or renew it every 2 s for this replica, named `HOST:PID`, and one
//! stderr line says whether this replica holds it, once the first try is
//! done and again each time that changes (a dead holder's lease is taken
//! over within 8 s). Nothing runs under it yet (the sweep and the
//! retention on PostgreSQL are later slices). Stopped with `listen`, it
//! gives the lease up at once, so another replica need not wait out the
//! expiry.

use std::time::Duration;

use earshot_core::store::postgres::leases::MAINTENANCE;
use earshot_core::store::postgres::{LeaseKeeper, LeaseTerms, PgStore, host_name};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::output::plain;

/// How long the first try may take before it counts as not holding it.
const FIRST_TRY_WITHIN: Duration = Duration::from_secs(3);
/// How long giving the lease up at the stop may take.
const RELEASE_WITHIN: Duration = Duration::from_secs(2);

/// The lease kept for this replica, and the task saying its changes.
pub(super) struct Maintenance {
    keeper: LeaseKeeper,
    saying: JoinHandle<()>,
}

/// Starts keeping the maintenance lease on `store` for this replica.
pub(super) fn start(store: &PgStore) -> Maintenance {
    let holder = holder_name();
    let keeper = LeaseKeeper::start(store.clone(), MAINTENANCE, &holder, LeaseTerms::DEFAULT);
    let saying = tokio::spawn(say_changes(store.clone(), keeper.watch(), holder));
    Maintenance { keeper, saying }
}

impl Maintenance {
    /// Stops renewing and gives the lease up (if held), within 2 s.
    pub(super) async fn stop(self) {
        self.saying.abort();
        if let Ok(Err(error)) = tokio::time::timeout(RELEASE_WITHIN, self.keeper.release()).await {
            tracing::warn!(%error, "the maintenance lease could not be given up");
        }
    }
}

/// This replica's name in the lease: the host's name and the process id.
fn holder_name() -> String {
    let host = Some(host_name())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// Says whether this replica holds the lease after the first try, then at
/// each change.
async fn say_changes(store: PgStore, mut held: watch::Receiver<bool>, holder: String) {
    // A first try that holds it is a change; one that does not is none.
    let _ = tokio::time::timeout(FIRST_TRY_WITHIN, held.changed()).await;
    loop {
        let now = *held.borrow_and_update();
        say(&store, now, &holder).await;
        if held.changed().await.is_err() {
            return;
        }
    }
}

async fn say(store: &PgStore, held: bool, holder: &str) {
    let line = if held {
        format!(
            "this replica ({holder}) holds the maintenance lease (nothing runs under it on \
             PostgreSQL yet)"
        )
    } else {
        let other = match store.lease(MAINTENANCE).await {
            Ok(Some(state)) => format!("; {} holds it", state.holder),
            Ok(None) | Err(_) => String::new(),
        };
        format!("this replica ({holder}) does not hold the maintenance lease{other}")
    };
    eprintln!("earshot listen: {}", plain(&line));
}
