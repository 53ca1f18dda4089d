//! The incident-history work of the console's own effects (the known
//! sessions, remembering a viewed session, the Deliveries pane's session
//! view, recover with progress) and what the panes' tasks share: opening
//! the store ([`open`], [`with_store`]), recording a change
//! ([`note_change`]), the sweep's budget. Each task
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
use earshot_core::history::incidents;
use earshot_core::history::session_view::{self, SessionView};
use earshot_core::history::{recover, sweep};
use earshot_core::redact::SecretString;
use earshot_core::store::{self, AsyncStore, Store, StoreError, changes, sessions};

/// Requests one console sweep may send (it runs every 5 s while the
/// Health pane is on screen: at most 600 a minute, one a sweep when
/// nothing is due).
pub(crate) const CONSOLE_SWEEP_BUDGET: usize = 50;

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

/// When the platform gave up retrying on this account, as the store's
/// history shows it, in words (`store::give_up`); "unknown" with why when
/// the store cannot be read.
pub(crate) async fn give_up_text(path: StorePath) -> String {
    give_up_words(
        with_store(path, |store| {
            earshot_core::store::give_up::observed(store).map_err(|error| error.to_string())
        })
        .await,
    )
}

/// [`give_up_text`]'s words for what the store's history showed.
pub(crate) fn give_up_words(
    observed: Result<Option<earshot_core::store::give_up::GiveUp>, Failure>,
) -> String {
    observed.map_or_else(
        |failure| format!("when the platform gives up: unknown ({})", failure.message),
        earshot_core::store::give_up::GiveUp::describe,
    )
}

/// Opens the store (on the blocking pool, as every call on it).
pub(crate) async fn open(path: StorePath) -> Result<AsyncStore, Failure> {
    let path = path.map_err(Failure::new)?;
    AsyncStore::open(path).await.map_err(failure)
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
            let detail = changes::recover_detail(report.sent.len(), delivered);
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

/// Records a change the console made on the platform (never a secret), so
/// `earshot changes` and the Health board show it; tried twice, as the
/// command line does ([`changes::record_with_retry`]); a store that cannot
/// be written is logged, and the change stands.
pub(crate) async fn note_change(
    path: StorePath,
    subscription_id: &str,
    action: &str,
    detail: String,
) {
    let change = changes::Change::now(incidents::operator(), subscription_id, action, detail);
    let recorded = tokio::task::spawn_blocking(move || {
        let path = path?;
        changes::record_with_retry(|| Store::open(&path), &change)
    })
    .await;
    match recorded {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "the change was not recorded"),
        Err(error) => tracing::warn!(%error, "the change was not recorded"),
    }
}
