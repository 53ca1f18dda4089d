//! `listen --store postgres://… --forward-to` (or `--forward`): one
//! forwarder per app across the replicas. Each replica started with the
//! same routes keeps trying the lease `forward:<routes>` (a
//! [`LeaseKeeper`], 6 s renewed every 2 s, as the maintenance lease);
//! the holder runs the relay ([`Relay::start_postgres`]) over what every
//! replica files, the others file only. One stderr line says which, at
//! the start and at each change; a dead holder's lease is taken over
//! within 8 s, and the new holder resumes at the place the last one kept.
//! Stopped, a replica gives the lease up at once.

use std::sync::Arc;
use std::time::Duration;

use earshot_core::receiver::listen::Forward;
use earshot_core::receiver::relay::{Relay, RelayNote};
use earshot_core::store::postgres::relay::lease_name;
use earshot_core::store::postgres::{Fence, LeaseKeeper, LeaseTerms, PgStore};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::output::plain;

/// How long the first try may take before it counts as not holding it.
const FIRST_TRY_WITHIN: Duration = Duration::from_secs(3);
/// How long giving the lease up at the stop may take.
const RELEASE_WITHIN: Duration = Duration::from_secs(2);

/// The forwarding lease kept for this replica, and the task that runs
/// the relay while it is held.
pub(super) struct PgForwarding {
    keeper: LeaseKeeper,
    task: JoinHandle<()>,
}

impl PgForwarding {
    /// Starts keeping the forwarding lease of `forward`'s routes on
    /// `store` for `holder`, relaying while it is held; notes go to
    /// `notes`.
    pub(super) fn start(
        store: PgStore,
        forward: Arc<Forward>,
        holder: String,
        notes: mpsc::Sender<RelayNote>,
    ) -> PgForwarding {
        let key = forward.routes().key();
        let fence = Fence {
            lease: lease_name(&key),
            holder,
        };
        let keeper = LeaseKeeper::start(
            store.clone(),
            &fence.lease,
            &fence.holder,
            LeaseTerms::DEFAULT,
        );
        let task = tokio::spawn(relay_while_held(
            store,
            key,
            fence,
            forward,
            notes,
            keeper.watch(),
        ));
        PgForwarding { keeper, task }
    }

    /// Stops the relay (an event being sent is sent again by the next
    /// holder) and gives the lease up.
    pub(super) async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        if let Ok(Err(error)) = tokio::time::timeout(RELEASE_WITHIN, self.keeper.release()).await {
            tracing::warn!(%error, "the forwarding lease could not be given up");
        }
    }
}

/// Runs the relay while `held` says this replica holds the lease, and
/// says each change.
async fn relay_while_held(
    store: PgStore,
    key: String,
    fence: Fence,
    forward: Arc<Forward>,
    notes: mpsc::Sender<RelayNote>,
    mut held: watch::Receiver<bool>,
) {
    // A first try that holds it is a change; one that does not is none.
    let _ = tokio::time::timeout(FIRST_TRY_WITHIN, held.changed()).await;
    loop {
        let holds = *held.borrow_and_update();
        say(&store, holds, &fence).await;
        let relay = holds.then(|| {
            Relay::start_postgres(
                store.clone(),
                key.clone(),
                fence.clone(),
                forward.clone(),
                notes.clone(),
            )
        });
        if held.changed().await.is_err() {
            return;
        }
        drop(relay);
    }
}

async fn say(store: &PgStore, holds: bool, fence: &Fence) {
    let me = &fence.holder;
    let line = if holds {
        format!(
            "this replica ({me}) holds the forwarding lease: it forwards the events every \
             replica stores to your app"
        )
    } else {
        let other = match store.lease(&fence.lease).await {
            Ok(Some(state)) if state.holder != *me => format!("; {} holds it", state.holder),
            Ok(_) | Err(_) => String::new(),
        };
        format!(
            "this replica ({me}) does not hold the forwarding lease{other}: it stores events, \
             and the holder forwards them"
        )
    };
    eprintln!("earshot listen: {}", plain(&line));
}
