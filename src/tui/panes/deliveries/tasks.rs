//! The Deliveries pane's background work ([`DeliveriesEffect`]): a load
//! (every attempt of a session or call from the platform, then its session
//! block and when the platform gives up, from the store), remembering an
//! id viewed here in the incident history, and the known sessions the
//! prompt offers. A load is "latest wins": a newer one aborts it.

use super::DeliveriesResult;
use crate::tui::kernel::store::{
    StorePath, give_up_text, known_session_ids, remember_sessions, session_stored,
};
use crate::tui::kernel::{Failure, PaneEffect, Report, TaskInput};
use earshot_core::api::Client;
use earshot_core::history::session_view::{self, SessionView};

/// Known session ids the Deliveries prompt offers at most.
const KNOWN_SESSIONS_OFFERED: usize = 10_000;

/// What the Deliveries pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum DeliveriesEffect {
    /// Every attempt of a session or call (`latest`: the newest per
    /// subscription); supersedes any load still running.
    Load { seq: u64, id: String, latest: bool },
    /// Add an id viewed here to the incident history's known sessions
    /// (local; once per id in a row).
    Remember { id: String },
    /// Read the known sessions' ids for the prompt (local).
    LoadKnownSessions,
}

impl PaneEffect<DeliveriesResult> for DeliveriesEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            DeliveriesEffect::Load { .. } => Some("load"),
            DeliveriesEffect::Remember { .. } | DeliveriesEffect::LoadKnownSessions => None,
        }
    }

    async fn run(self, input: TaskInput, report: Report<DeliveriesResult>) {
        let TaskInput { client, store, .. } = input;
        match self {
            DeliveriesEffect::Load { seq, id, latest } => {
                tracing::debug!(seq, %id, latest, "list deliveries");
                let result = if latest {
                    client.latest_deliveries(&id).await
                } else {
                    client.list_deliveries(&id).await
                }
                .map_err(|error| Failure::from_api(&error));
                report.send(DeliveriesResult::Loaded { seq, result });
                let result = session_block(&client, store.clone(), id.clone()).await;
                report.send(DeliveriesResult::Session { seq, id, result });
                let text = give_up_text(store).await;
                report.send(DeliveriesResult::GiveUp { seq, text });
            }
            DeliveriesEffect::Remember { id } => {
                let result = remember_sessions(store, vec![id]).await;
                if let Err(error) = result {
                    tracing::debug!(error = %error.message, "viewed id not remembered");
                }
            }
            DeliveriesEffect::LoadKnownSessions => {
                let result = known_session_ids(store, KNOWN_SESSIONS_OFFERED).await;
                // No store is no list: the prompt still takes any id.
                if let Ok(ids) = result {
                    report.send(DeliveriesResult::Known(ids));
                }
            }
        }
    }
}

/// The session block: the record from the platform, the events and
/// attempts from either backend's store; where they cannot be read (no
/// store, a failed read) the events are unknown, with why, never none.
async fn session_block(
    client: &Client,
    path: StorePath,
    id: String,
) -> Result<Box<SessionView>, Failure> {
    let record = client
        .get_session(&id)
        .await
        .map_err(|error| Failure::from_api(&error))?;
    let (stored, unknown) = match session_stored(path, id.clone()).await {
        Ok(stored) => (stored, None),
        Err(failure) => {
            tracing::debug!(error = %failure.message, "the session's events not read");
            ((Vec::new(), Vec::new()), Some(failure.message))
        }
    };
    let mut view = session_view::build(
        &id,
        Some(record),
        &stored.0,
        &stored.1,
        chrono::Utc::now(),
    );
    view.events_unknown = unknown;
    Ok(Box::new(view))
}
