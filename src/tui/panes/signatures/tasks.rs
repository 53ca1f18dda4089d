//! The Signatures pane's background work ([`SigsEffect`]): reading a
//! body file or one request of a capture file, off the render path; for a
//! delivery refused with 401, finding the observer's copy of its event in
//! the store (a file or PostgreSQL: `kernel::store::checks`), and asking
//! its receiver which secret it holds
//! ([`earshot_core::history::refused_delivery`]). The reads run to their
//! end; a newer probe replaces one running. The pane drops an answer
//! whose sequence number a newer request has passed.

use super::SigsResult;
use super::refused::{Asked, Located};
use crate::tui::kernel::RefusedDelivery as Refused;
use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{
    StorePath, failure, listed_subscription, refused_event, refused_known, stored_event,
};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use crate::tui::panes::subscriptions::short_id;
use earshot_core::api::Client;
use earshot_core::history::refused_delivery::{self, Checked, RecordFrom};
use earshot_core::receiver::capture::{self, Selector};
use earshot_core::redact::SecretString;

/// What the Signatures pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum SigsEffect {
    /// Read a body file.
    ReadBodyFile { seq: u64, path: String },
    /// Read one request from a capture file (`line`: its line; `None`:
    /// the last signed one).
    ReadCapture {
        seq: u64,
        path: String,
        line: Option<usize>,
    },
    /// Find the observer's copy of the event a refused delivery was.
    LoadRefused { seq: u64, target: Refused },
    /// Ask the subscription's receiver about the event, signed with
    /// `given` (and `second`), then a wrong secret.
    AskReceiver {
        seq: u64,
        event_id: String,
        subscription_id: String,
        given: SecretString,
        second: Option<SecretString>,
    },
}

impl PaneEffect<SigsResult> for SigsEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            SigsEffect::AskReceiver { .. } => Some("ask receiver"),
            _ => None,
        }
    }

    async fn run(self, input: TaskInput, report: Report<SigsResult>) {
        let result = match self {
            SigsEffect::ReadBodyFile { seq, path } => {
                // The path only: the body may carry anything.
                tracing::debug!(seq, %path, "read body file");
                let file = std::path::PathBuf::from(&path);
                let result = tokio::task::spawn_blocking(move || {
                    earshot_core::bounded_file::read(&file, earshot_core::bounded_file::BODY_FILE)
                        .map_err(|error| error.to_string())
                })
                .await
                .unwrap_or_else(|error| Err(error.to_string()));
                SigsResult::BodyLoaded { seq, path, result }
            }
            SigsEffect::ReadCapture { seq, path, line } => {
                tracing::debug!(seq, %path, ?line, "read a capture");
                let selector = line.map_or(Selector::LastSigned, Selector::Line);
                let result = tokio::task::spawn_blocking(move || {
                    capture::replay(std::path::Path::new(&path), &selector)
                })
                .await
                .unwrap_or_else(|error| Err(error.to_string()));
                SigsResult::CaptureLoaded { seq, result }
            }
            SigsEffect::LoadRefused { seq, target } => {
                tracing::debug!(seq, subscription = %target.subscription_id, "find a refused event");
                let result = locate(input.store, &target)
                    .await
                    .map_err(|failure| failure.message);
                SigsResult::RefusedLoaded { seq, result }
            }
            SigsEffect::AskReceiver {
                seq,
                event_id,
                subscription_id,
                given,
                second,
            } => {
                tracing::info!(seq, %event_id, subscription = %subscription_id, "ask a receiver");
                let result = ask(
                    &input,
                    event_id.clone(),
                    subscription_id.clone(),
                    given,
                    second,
                )
                .await;
                SigsResult::Asked {
                    seq,
                    asked: Box::new(Asked {
                        event_id,
                        subscription_id,
                        at_ms: earshot_core::store::now_ms(),
                        result,
                    }),
                }
            }
        };
        report.send(result);
    }
}

/// The observer's copy of the event `target` was, or why there is none,
/// from either backend.
async fn locate(store: StorePath, target: &Refused) -> Result<Located, Failure> {
    let short = short_id(&target.subscription_id);
    let event = match &target.event_id {
        Some(event_id) => stored_event(store, event_id.clone()).await?,
        None => match refused_event(
            store,
            target.subscription_id.clone(),
            target.session_id.clone(),
            target.delivery_id.clone(),
        )
        .await?
        {
            refused_delivery::Located::Event(event) => Some(event),
            refused_delivery::Located::NotFiled => {
                return Ok(Located::Missing(format!(
                    "the observer never filed the event of this attempt (session {}, \
                     subscription {short}): earshot holds no bytes of it to ask the receiver \
                     with; point a subscription to every event at the observer (`earshot \
                     observer`) so the next ones are kept",
                    target.session_id
                )));
            }
            refused_delivery::Located::NoRefusal => {
                return Ok(Located::Missing(format!(
                    "the store holds no attempt of subscription {short} refused with 401 in \
                     session {}: let the sweep read it (the Health pane sweeps; `earshot \
                     health`), then press s again",
                    target.session_id
                )));
            }
        },
    };
    Ok(match event {
        Some(event) => Located::Event {
            event_id: event.event_id,
            body: event.body,
        },
        None => Located::Missing(format!(
            "the store holds no event {}: the observer never filed it",
            target.event_id.as_deref().unwrap_or_default()
        )),
    })
}

/// The probe: the event's bytes and the subscription's record from the
/// store, either backend (the record from the platform when the store
/// does not list it), then the receiver's answers.
async fn ask(
    input: &TaskInput,
    event_id: String,
    subscription_id: String,
    given: SecretString,
    second: Option<SecretString>,
) -> Result<Checked, String> {
    let message = |failure: Failure| failure.message;
    let event = stored_event(input.store.clone(), event_id.clone())
        .await
        .map_err(message)?
        .ok_or_else(|| format!("the store no longer holds event {event_id}"))?;
    let stored = listed_subscription(input.store.clone(), subscription_id.clone())
        .await
        .map_err(message)?;
    let (record, from) = match stored {
        Some(stored) => stored,
        None => (
            fetch(&input.client, &subscription_id).await?,
            RecordFrom::Platform,
        ),
    };
    let now_ms = earshot_core::store::now_ms();
    let known = refused_known(input.store.clone(), record.clone(), from, now_ms)
        .await
        .map_err(message)?;
    refused_delivery::check(
        &record,
        &known,
        &event,
        (&given, second.as_ref()),
        (now_ms, crate::tui::widgets::utc_clock),
        input.client.url_policy(),
    )
    .await
    .map_err(|error| failure(error).message)
}

async fn fetch(
    client: &Client,
    id: &str,
) -> Result<earshot_core::api::types::agents::Subscription, String> {
    client
        .get_subscription(id)
        .await
        .map_err(|error| format!("the subscription's record could not be read: {error}"))
}
