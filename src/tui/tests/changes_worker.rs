//! What the console changes on the platform lands in the store's change
//! log, as the CLI's changes do: the worker pauses and rotates a
//! subscription on the emulator over real HTTP, and `changes` (the store)
//! lists both with the operator and the secret's version, never the
//! secret; the Health board shows the newest change next to the failures.

use std::time::Duration;

use super::support::{NoClipboard, start};
use crate::tui::action::{Action, Effect};
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use crate::tui::worker::Worker;
use earshot_core::api::types::agents::{EventKind, SubscriptionPatch};
use earshot_core::history::report;
use earshot_core::redact::SecretString;
use earshot_core::store::{Store, changes};
use tokio::sync::mpsc;

const NEW_SECRET: &str = "whsec_rotated_in_the_console_0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_pause_and_rotate_are_recorded_without_the_secret() {
    let harness = start().await;
    let subscription = harness
        .subscribe_with("https://hooks.example.com/a", &[EventKind::CallEnded], None)
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("earshot.db");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker =
        Worker::new(harness.client.clone(), tx, Box::new(NoClipboard)).with_store(Ok(db.clone()));
    worker.start_all(vec![
        Effect::Subs(SubsEffect::Patch {
            id: subscription.id.clone(),
            patch: SubscriptionPatch {
                enabled: Some(false),
                ..SubscriptionPatch::default()
            },
        }),
        Effect::Subs(SubsEffect::Rotate {
            id: subscription.id.clone(),
            secret: SecretString::new(NEW_SECRET),
        }),
    ]);
    let mut answered = 0;
    tokio::time::timeout(Duration::from_secs(20), async {
        while answered < 2 {
            match rx.recv().await.expect("the worker is alive") {
                Action::Subs(SubsResult::Patched { result, .. })
                | Action::Subs(SubsResult::Rotated { result, .. }) => {
                    result.expect("the platform accepts");
                    answered += 1;
                }
                _ => {}
            }
        }
    })
    .await
    .expect("both answered within 20 s");

    // Recorded before the answer reaches the console.
    let store = Store::open(&db).expect("the store");
    let listed = changes::since(&store, 0).expect("changes");
    let mut actions: Vec<(&str, &str)> = listed
        .iter()
        .map(|change| (change.action.as_str(), change.detail.as_str()))
        .collect();
    actions.sort();
    assert_eq!(actions, [("pause", ""), ("rotate", "secret version 2")]);
    assert!(listed.iter().all(|change| change.subscription_id.as_deref()
        == Some(subscription.id.as_str())
        && !change.operator.is_empty()));
    assert!(!format!("{listed:?}").contains("rotated_in_the_console"));

    // The board names the newest change next to the subscription.
    earshot_core::store::deliveries::replace_subscriptions(
        &mut Store::open(&db).expect("the store"),
        std::slice::from_ref(&subscription),
        earshot_core::store::now_ms(),
    )
    .expect("listed");
    let board = report::board(&store, 0, earshot_core::store::now_ms()).expect("board");
    let latest = board.subscriptions[0]
        .latest_change
        .as_ref()
        .map(|change| change.action.clone());
    assert!(
        matches!(latest.as_deref(), Some("rotate" | "pause")),
        "{latest:?}"
    );
}
