//! The Subscriptions pane's background work: what it asks for
//! ([`SubsEffect`]) and the tasks that do it. The worker runs them as
//! [`PaneEffect`] says: the list read and the rotation watch "latest
//! wins", each in its own slot (stopping the watch is a watch that does
//! nothing); every change to the platform runs to its end and is recorded
//! in the store (never a secret).

use super::SubsResult;
use crate::tui::kernel::Failure;
use crate::tui::kernel::store::{
    self, StorePath, end_subscription, failure, newest_change, note_change, rotation_probe,
};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::api::Client;
use earshot_core::api::types::agents::{NewSubscription, Subscription, SubscriptionPatch};
use earshot_core::history::rotation::{self, WatchReport};
use earshot_core::redact::SecretString;
use earshot_core::store::changes;
use earshot_core::store::incidents::SubscriptionEnd;

/// How long the console watches a rotated subscription.
pub(crate) const ROTATION_WATCH: std::time::Duration = std::time::Duration::from_secs(600);

/// What the Subscriptions pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum SubsEffect {
    /// List the subscriptions; supersedes any list still running.
    Load {
        seq: u64,
        include_disabled: bool,
    },
    Create(NewSubscription),
    /// Pause or resume (the patch carries `enabled`), or an edit.
    Patch {
        id: String,
        patch: SubscriptionPatch,
    },
    Rotate {
        id: String,
        secret: SecretString,
    },
    /// Check a receiver accepts the new secret (and the current one, when
    /// given) before a rotation; both are masked in `Debug`.
    CheckRotation {
        id: String,
        url: String,
        new: SecretString,
        current: Option<SecretString>,
    },
    /// Watch a rotated subscription's deliveries (replacing any watch).
    WatchRotation {
        id: String,
        rotated_ms: i64,
    },
    /// Stop the watch (the dialog closed).
    StopRotationWatch,
    Delete {
        id: String,
    },
    /// Read the id of the newest change in the store's change log (made by
    /// this console, another one or the CLI).
    NewestChange,
}

impl PaneEffect<SubsResult> for SubsEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            SubsEffect::Load { .. } => Some("list"),
            SubsEffect::NewestChange => Some("newest change"),
            SubsEffect::WatchRotation { .. } | SubsEffect::StopRotationWatch => {
                Some("rotation watch")
            }
            SubsEffect::Create(_)
            | SubsEffect::Patch { .. }
            | SubsEffect::Rotate { .. }
            | SubsEffect::CheckRotation { .. }
            | SubsEffect::Delete { .. } => None,
        }
    }

    async fn run(self, input: TaskInput, report: Report<SubsResult>) {
        let TaskInput { client, store, .. } = input;
        let api = |error: earshot_core::api::ApiError| Failure::from_api(&error);
        let result = match self {
            SubsEffect::Load {
                seq,
                include_disabled,
            } => {
                tracing::debug!(seq, include_disabled, "list subscriptions");
                let result = client.list_subscriptions(include_disabled).await;
                SubsResult::Loaded {
                    seq,
                    result: result.map_err(api),
                }
            }
            SubsEffect::Create(request) => {
                tracing::info!("create subscription");
                let result = client.create_subscription(&request).await.map_err(api);
                if let Ok(created) = &result {
                    let detail = changes::detail(None, Some(created));
                    note_change(store, &created.id, "create", detail).await;
                }
                SubsResult::Created { result }
            }
            SubsEffect::Patch { id, patch } => {
                tracing::info!(%id, enabled = ?patch.enabled, "update subscription");
                let before = record_before(&client, &id).await;
                let result = client.update_subscription(&id, &patch).await.map_err(api);
                if let Ok(after) = &result {
                    let action = match patch.enabled {
                        Some(true) => "resume",
                        Some(false) => "pause",
                        None => "update",
                    };
                    note_change(
                        store.clone(),
                        &id,
                        action,
                        change_detail(before, Some(after)),
                    )
                    .await;
                    if patch.enabled == Some(false) {
                        end_incidents(store, &id, SubscriptionEnd::Paused).await;
                    }
                }
                SubsResult::Patched { id, result }
            }
            SubsEffect::Rotate { id, secret } => {
                tracing::info!(%id, "rotate subscription secret");
                let patch = SubscriptionPatch {
                    secret: Some(secret),
                    ..Default::default()
                };
                let before = record_before(&client, &id).await;
                let result = client.update_subscription(&id, &patch).await.map_err(api);
                if let Ok(rotated) = &result {
                    // The version, never the secret.
                    let detail = change_detail(before, Some(rotated));
                    note_change(store, &id, "rotate", detail).await;
                }
                SubsResult::Rotated { id, result }
            }
            SubsEffect::CheckRotation {
                id,
                url,
                new,
                current,
            } => {
                tracing::info!(%id, "check the receiver before a rotation");
                let policy = client.url_policy();
                let result = check_rotation(store, id.clone(), url, new, current, policy).await;
                SubsResult::Checked { id, result }
            }
            SubsEffect::WatchRotation { id, rotated_ms } => {
                watch_rotation(client, store, id, rotated_ms, report).await;
                return;
            }
            // Taking the watch's slot stopped it.
            SubsEffect::StopRotationWatch => return,
            SubsEffect::Delete { id } => {
                tracing::info!(%id, "delete subscription");
                let before = record_before(&client, &id).await;
                let result = client.delete_subscription(&id).await.map_err(api);
                if result.is_ok() {
                    note_change(store.clone(), &id, "delete", change_detail(before, None)).await;
                    end_incidents(store, &id, SubscriptionEnd::Deleted).await;
                }
                SubsResult::Deleted { id, result }
            }
            SubsEffect::NewestChange => SubsResult::NewestChange(newest_change(store).await),
        };
        report.send(result);
    }
}

/// The subscription as the platform holds it before a change, for the
/// change log's detail (the command line reads it the same way); `None`
/// when it cannot be read, and the change goes ahead.
async fn record_before(client: &Client, id: &str) -> Option<Subscription> {
    client.get_subscription(id).await.ok()
}

/// The change log's detail ([`changes::detail`]), or that the record
/// before is unknown.
fn change_detail(before: Option<Subscription>, after: Option<&Subscription>) -> String {
    match before {
        Some(before) => changes::detail(Some(&before), after),
        None => "unknown: the subscription could not be read before the change".to_owned(),
    }
}

/// Resolves the open incidents of a subscription the console deleted or
/// paused, with the reason; a store that cannot be written is logged.
async fn end_incidents(store: StorePath, id: &str, end: SubscriptionEnd) {
    if let Err(failure) = end_subscription(store, id.to_owned(), end).await {
        tracing::warn!(error = %failure.message, "its incidents were not resolved");
    }
}

/// The signed-duplicate check of a receiver at `url` (the rotate dialog's,
/// and the edit dialog's for a new URL): the newest event the subscription
/// was delivered (the observer's bytes), signed with `new`, `current` when
/// given and a wrong secret.
async fn check_rotation(
    path: StorePath,
    id: String,
    url: String,
    new: SecretString,
    current: Option<SecretString>,
    client_policy: earshot_core::api::validate::UrlPolicy,
) -> Result<rotation::CheckReport, Failure> {
    let probe = rotation_probe(path, id).await?.ok_or_else(|| {
        Failure::new(
            "the store holds no event this subscription was delivered, so there is \
             nothing to check the receiver with: let the observer (`earshot listen \
             --store`) and the sweep file one, or use `earshot subs rotate ID \
             --synthetic-probe`",
        )
    })?;
    rotation::check(&url, &probe, &new, current.as_ref(), client_policy)
        .await
        .map_err(failure)
}

/// Sweeps the rotated subscription's sessions every 5 s for
/// [`ROTATION_WATCH`], reporting each time (stops at a 401).
async fn watch_rotation(
    client: Client,
    path: StorePath,
    id: String,
    rotated_ms: i64,
    report: Report<SubsResult>,
) {
    let each = |watched: &WatchReport| {
        report.send(SubsResult::Watched {
            id: id.clone(),
            report: watched.clone(),
        });
    };
    let last = store::watch_rotation(path, &client, &id, rotated_ms, ROTATION_WATCH, each).await;
    match last {
        Ok(last) => {
            report.send(SubsResult::Watched { id, report: last });
        }
        Err(failure) => tracing::warn!(error = %failure.message, "the rotation watch stopped"),
    }
}
