//! The incident-history work the worker runs for the Health and Deliveries
//! panes: store reads, the sweep, recover with progress and the Deliveries
//! pane's session view; and what panes' own tasks share (opening the
//! store, recording a change). Each
//! opens the store at the configured path for its own work (SQLite
//! connections are cheap; WAL lets them run beside a `listen` that
//! writes), as an [`AsyncStore`]: the one way the console reaches the
//! store, every call on the blocking pool (never on the render path, never
//! on a runtime thread between two awaits).

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::action::{Action, Failure};
use super::context::ActionTx;
use super::panes::health::HealthResult;
use earshot_core::api::Client;
use earshot_core::history::incidents::{self, Acknowledged};
use earshot_core::history::session_view::{self, SessionView};
use earshot_core::history::{recover, report, sweep};
use earshot_core::redact::SecretString;
use earshot_core::store::{self, AsyncStore, Store, StoreError, deliveries, sessions};

/// Requests one console sweep may send (it runs every 5 s while the
/// Health pane is on screen: at most 600 a minute, one a sweep when
/// nothing is due).
const CONSOLE_SWEEP_BUDGET: usize = 50;
/// Failing sessions listed at most for one subscription.
const FAILING_SESSIONS_SHOWN: usize = 500;

/// Where the console's store is, or why there is none.
pub(crate) type StorePath = Result<PathBuf, String>;

pub(crate) fn failure(error: impl std::fmt::Display) -> Failure {
    Failure::new(error.to_string())
}

/// Opens the store and runs `work` with it ([`AsyncStore::run`]).
pub(crate) async fn with_store<T: Send + 'static>(
    path: StorePath,
    work: impl FnOnce(&mut Store) -> Result<T, String> + Send + 'static,
) -> Result<T, Failure> {
    let store = open(path).await?;
    store
        .run(move |store| Ok::<_, StoreError>(work(store)))
        .await
        .map_err(failure)?
        .map_err(Failure::new)
}

pub(crate) async fn load_health(path: StorePath, seq: u64, since_ms: i64, tx: ActionTx) {
    let result = with_store(path, move |store| {
        report::board(store, since_ms, store::now_ms()).map_err(|error| error.to_string())
    })
    .await;
    let _ = tx.send(Action::Health(HealthResult::Loaded { seq, result }));
}

pub(crate) async fn load_failing_sessions(
    path: StorePath,
    seq: u64,
    subscription_id: String,
    since_ms: i64,
    tx: ActionTx,
) {
    let id = subscription_id.clone();
    let result = with_store(path, move |store| {
        deliveries::failing_sessions(store, &id, since_ms, FAILING_SESSIONS_SHOWN)
            .map_err(|error| error.to_string())
    })
    .await;
    let _ = tx.send(Action::Health(HealthResult::Sessions {
        seq,
        subscription_id,
        result,
    }));
}

/// Known session ids the Deliveries prompt offers at most.
const KNOWN_SESSIONS_OFFERED: usize = 10_000;

pub(crate) async fn load_known_sessions(path: StorePath, tx: ActionTx) {
    let result = with_store(path, |store| {
        sessions::ids(store, KNOWN_SESSIONS_OFFERED).map_err(|error| error.to_string())
    })
    .await;
    // No store is no list: the prompt still takes any id.
    if let Ok(ids) = result {
        let _ = tx.send(Action::KnownSessions(ids));
    }
}

pub(crate) async fn remember_session(path: StorePath, id: String) {
    let result = with_store(path, move |store| {
        sessions::add(store, &[id], sessions::Source::Console, store::now_ms())
            .map_err(|error| error.to_string())
    })
    .await;
    if let Err(error) = result {
        tracing::debug!(error = %error.message, "viewed id not remembered");
    }
}

/// The Deliveries pane's session block: the record from the platform,
/// the events and attempts from the store (none when there is no store).
pub(crate) async fn session_view(
    client: &Client,
    path: StorePath,
    id: String,
) -> Result<Box<SessionView>, Failure> {
    let record = client
        .get_session(&id)
        .await
        .map_err(|error| Failure::from_api(&error))?;
    let key = id.clone();
    let (stored_events, stored_deliveries) = with_store(path, move |store| {
        session_view::stored(store, &key).map_err(|error| error.to_string())
    })
    .await
    .unwrap_or_default();
    Ok(Box::new(session_view::build(
        &id,
        Some(record),
        &stored_events,
        &stored_deliveries,
        chrono::Utc::now(),
    )))
}

/// Opens the store (on the blocking pool, as every call on it).
pub(crate) async fn open(path: StorePath) -> Result<AsyncStore, Failure> {
    let path = path.map_err(Failure::new)?;
    AsyncStore::open(path).await.map_err(failure)
}

pub(crate) async fn sweep(client: Client, path: StorePath, tx: ActionTx) {
    let store = match open(path).await {
        Ok(store) => store,
        Err(failure) => {
            let _ = tx.send(Action::Health(HealthResult::NoStore(failure.message)));
            return;
        }
    };
    let result = sweep::sweep(&client, &store, CONSOLE_SWEEP_BUDGET)
        .await
        .map_err(failure);
    let _ = tx.send(Action::Health(HealthResult::Swept(result)));
}

/// What recover would send: the store as last swept (recover itself
/// sweeps first, so it may send a little more).
pub(crate) async fn plan_recover(
    path: StorePath,
    subscription_id: String,
    since_ms: i64,
    tx: ActionTx,
) {
    let id = subscription_id.clone();
    let result = with_store(path, move |store| {
        recover::plan(store, &id, since_ms, &recover::Scope::default())
            .map(|plan| plan.preview())
            .map_err(|error| error.to_string())
    })
    .await;
    let _ = tx.send(Action::Health(HealthResult::Planned {
        subscription_id,
        result,
    }));
}

/// Sweeps, plans and re-sends what a subscription missed, with the
/// brakes (canary, failures in a row); `cancel` stops it after the event
/// being sent.
pub(crate) async fn recover(
    client: Client,
    path: StorePath,
    subscription_id: String,
    since_ms: i64,
    secret: SecretString,
    cancel: Arc<AtomicBool>,
    tx: ActionTx,
) {
    let progress = |done, total, sent: Option<&recover::Sent>| {
        let _ = tx.send(Action::Health(HealthResult::RecoverProgress {
            done,
            total,
            sent: sent.map(|sent| Box::new(sent.clone())),
        }));
    };
    let log = path.clone();
    let result = async {
        let store = open(path).await?;
        let swept = sweep::sweep(&client, &store, CONSOLE_SWEEP_BUDGET)
            .await
            .map_err(failure)?;
        if let Some(why) = swept.stopped {
            return Err(Failure::new(format!(
                "the sweep before recover stopped: {why}"
            )));
        }
        let id = subscription_id.clone();
        let plan = store
            .run(move |store| recover::plan(store, &id, since_ms, &recover::Scope::default()))
            .await
            .map_err(failure)?;
        let total = plan.to_send.len();
        progress(0, total, None);
        let mut done = 0;
        let report = recover::run(&store, &plan, &secret, Default::default(), |sent| {
            done += 1;
            progress(done, total, Some(sent));
            if cancel.load(Ordering::Relaxed) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await
        .map_err(failure)?;
        let delivered = report.delivered();
        if !report.sent.is_empty() {
            let detail = format!("{} re-sent, {delivered} delivered", report.sent.len());
            note_change(log, &subscription_id, "recover", detail).await;
        }
        let mut summary = format!(
            "{delivered} of {total} delivered to {}",
            plan.subscription.url
        );
        if let Some(why) = report.stop_reason() {
            summary.push_str(&format!("; {why}"));
        } else if delivered < total {
            let first = report
                .sent
                .iter()
                .find_map(|sent| sent.error.clone())
                .unwrap_or_default();
            summary.push_str(&format!("; {} failed ({first})", total - delivered));
        }
        summary.push_str(&plan.left_out());
        Ok(summary)
    }
    .await;
    let _ = tx.send(Action::Health(HealthResult::Recovered(result)));
}

pub(crate) async fn load_incidents(
    path: StorePath,
    seq: u64,
    since_ms: i64,
    all: bool,
    tx: ActionTx,
) {
    let result = with_store(path, move |store| {
        incidents::list(store, since_ms, all).map_err(|error| error.to_string())
    })
    .await;
    let _ = tx.send(Action::Health(HealthResult::Incidents { seq, result }));
}

/// Stores who is on an incident, for every console on the same store.
pub(crate) async fn acknowledge(path: StorePath, id: String, note: Option<String>, tx: ActionTx) {
    let result = with_store(path, move |store| {
        let by = incidents::operator();
        match incidents::acknowledge(store, &id, &by, note.as_deref(), store::now_ms()) {
            Ok(Acknowledged::Done(incident)) => {
                Ok(format!("acknowledged incident {} as {by}", incident.id))
            }
            Ok(Acknowledged::NotFound) => Err(format!("no incident {id} in the store any more")),
            Ok(Acknowledged::Ambiguous(count)) => Err(format!(
                "{id} matches {count} incidents: give more of the id"
            )),
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    let _ = tx.send(Action::Health(HealthResult::Acknowledged(result)));
}

/// Records a change the console made on the platform (never a secret), so
/// `earshot changes` and the Health board show it; a store that cannot be
/// written is logged, and the change stands.
pub(crate) async fn note_change(
    path: StorePath,
    subscription_id: &str,
    action: &str,
    detail: String,
) {
    let change = earshot_core::store::changes::Change::now(
        incidents::operator(),
        subscription_id,
        action,
        detail,
    );
    // The audit trail is worth a second try: two changes made at once can
    // meet a store that one of them is still creating.
    for attempt in 1..=2 {
        let change = change.clone();
        let result = with_store(path.clone(), move |store| {
            earshot_core::store::changes::record(store, &change).map_err(|error| error.to_string())
        })
        .await;
        match result {
            Ok(()) => return,
            Err(failure) if attempt == 1 => {
                tracing::debug!(error = %failure.message, "recording the change again");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(failure) => {
                tracing::warn!(error = %failure.message, "the change was not recorded");
            }
        }
    }
}
