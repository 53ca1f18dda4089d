//! Runs [`Effect`]s: every platform call in its own tokio task that sends
//! its result back as an [`Action`]. A new load aborts the one still
//! running (its answer would be stale anyway; `update` also drops it by
//! sequence number). Dropping the worker aborts everything in flight.
//!
//! Logs name the call, never its body: bodies can carry secrets.

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use super::action::{Action, DeliveriesResult, Effect, Failure, SubsResult};
use super::clipboard::Clipboard;
use crate::api::Client;

pub struct Worker {
    client: Client,
    tx: UnboundedSender<Action>,
    clipboard: Box<dyn Clipboard>,
    /// The subscriptions load in flight, if any.
    load: Option<AbortHandle>,
    /// The deliveries load in flight, if any.
    deliveries_load: Option<AbortHandle>,
    /// Every other task in flight (finished ones are pruned as we go).
    tasks: Vec<AbortHandle>,
}

/// What the loop must do after an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Continue,
    Quit,
}

impl Worker {
    pub fn new(client: Client, tx: UnboundedSender<Action>, clipboard: Box<dyn Clipboard>) -> Self {
        Worker {
            client,
            tx,
            clipboard,
            load: None,
            deliveries_load: None,
            tasks: Vec::new(),
        }
    }

    /// Starts every effect; `Quit` if one of them asks to leave.
    pub fn start_all(&mut self, effects: Vec<Effect>) -> Next {
        let mut next = Next::Continue;
        for effect in effects {
            if self.start(effect) == Next::Quit {
                next = Next::Quit;
            }
        }
        next
    }

    pub fn start(&mut self, effect: Effect) -> Next {
        self.tasks.retain(|task| !task.is_finished());
        let client = self.client.clone();
        let tx = self.tx.clone();
        match effect {
            Effect::Quit => return Next::Quit,
            Effect::Copy { what, text } => {
                if let Err(error) = self.clipboard.copy(text.expose()) {
                    tracing::warn!(what, %error, "clipboard copy failed");
                    let _ = self.tx.send(Action::Failed(Failure::new(format!(
                        "could not copy the {what} to the clipboard: {error}"
                    ))));
                }
            }
            Effect::LoadSubscriptions {
                seq,
                include_disabled,
            } => {
                if let Some(previous) = self.load.take() {
                    previous.abort();
                }
                tracing::debug!(seq, include_disabled, "list subscriptions");
                let task = tokio::spawn(async move {
                    let result = client
                        .list_subscriptions(include_disabled)
                        .await
                        .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Subs(SubsResult::Loaded { seq, result }));
                });
                self.load = Some(task.abort_handle());
            }
            Effect::LoadDeliveries { seq, id, latest } => {
                if let Some(previous) = self.deliveries_load.take() {
                    previous.abort();
                }
                tracing::debug!(seq, %id, latest, "list deliveries");
                let task = tokio::spawn(async move {
                    let result = if latest {
                        client.latest_deliveries(&id).await
                    } else {
                        client.list_deliveries(&id).await
                    }
                    .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Deliveries(DeliveriesResult::Loaded {
                        seq,
                        id,
                        latest,
                        result,
                    }));
                });
                self.deliveries_load = Some(task.abort_handle());
            }
            Effect::CreateSubscription(request) => {
                tracing::info!("create subscription");
                self.spawn(async move {
                    let result = client
                        .create_subscription(&request)
                        .await
                        .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Subs(SubsResult::Created { result }));
                });
            }
            Effect::PatchSubscription { id, patch } => {
                tracing::info!(%id, enabled = ?patch.enabled, "update subscription");
                self.spawn(async move {
                    let result = client
                        .update_subscription(&id, &patch)
                        .await
                        .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Subs(SubsResult::Patched { id, result }));
                });
            }
            Effect::RotateSecret { id, secret } => {
                tracing::info!(%id, "rotate subscription secret");
                self.spawn(async move {
                    let patch = crate::api::types::agents::SubscriptionPatch {
                        secret: Some(secret),
                        ..Default::default()
                    };
                    let result = client
                        .update_subscription(&id, &patch)
                        .await
                        .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Subs(SubsResult::Rotated { id, result }));
                });
            }
            Effect::DeleteSubscription { id } => {
                tracing::info!(%id, "delete subscription");
                self.spawn(async move {
                    let result = client
                        .delete_subscription(&id)
                        .await
                        .map_err(|error| Failure::from_api(&error));
                    let _ = tx.send(Action::Subs(SubsResult::Deleted { id, result }));
                });
            }
        }
        Next::Continue
    }

    fn spawn(&mut self, work: impl Future<Output = ()> + Send + 'static) {
        self.tasks.push(tokio::spawn(work).abort_handle());
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(load) = self.load.take() {
            load.abort();
        }
        if let Some(load) = self.deliveries_load.take() {
            load.abort();
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}
