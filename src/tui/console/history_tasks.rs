//! The incident-history work of the console's own effects: the known
//! sessions, remembering a viewed session, the Deliveries pane's session
//! view, recover with progress. The store access they share with the
//! panes' tasks is the kernel's (`kernel::store`).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::action::Action;
use super::context::ActionTx;
use crate::tui::kernel::store::{
    CONSOLE_SWEEP_BUDGET, StorePath, failure, note_change, open, with_store,
};
use crate::tui::kernel::{Failure, Handover};
use crate::tui::panes::health::HealthResult;
use earshot_core::api::Client;
use earshot_core::history::session_view::{self, SessionView};
use earshot_core::history::{recover, sweep};
use earshot_core::redact::SecretString;
use earshot_core::store::{self, changes, sessions};

/// Known session ids the Deliveries prompt offers at most.
const KNOWN_SESSIONS_OFFERED: usize = 10_000;

pub(crate) async fn load_known_sessions(path: StorePath, tx: ActionTx) {
    let result = with_store(path, |store| {
        sessions::ids(store, KNOWN_SESSIONS_OFFERED).map_err(|error| error.to_string())
    })
    .await;
    // No store is no list: the prompt still takes any id.
    if let Ok(ids) = result {
        let _ = tx.send(Action::Handover(Handover::KnownSessions(ids)));
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
