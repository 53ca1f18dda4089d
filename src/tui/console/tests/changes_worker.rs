//! What the console changes on the platform lands in the store's change
//! log, as the CLI's changes do: the worker pauses and rotates a
//! subscription on the emulator over real HTTP, and `changes` (the store)
//! lists both with the operator and the secret's version, never the
//! secret; the Health board shows the newest change next to the failures.
//! The same changes made with `earshot subs` and through the worker are
//! recorded with the same details.

use std::time::Duration;

use super::support::{NoClipboard, start};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::worker::Worker;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
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
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard))
        .with_store(Ok(db.clone().into()));
    // One after the other: each change's detail is what it changed.
    console(
        &mut worker,
        &mut rx,
        Effect::Subs(SubsEffect::Patch {
            id: subscription.id.clone(),
            patch: SubscriptionPatch {
                enabled: Some(false),
                ..SubscriptionPatch::default()
            },
        }),
    )
    .await;
    console(
        &mut worker,
        &mut rx,
        Effect::Subs(SubsEffect::Rotate {
            id: subscription.id.clone(),
            secret: SecretString::new(NEW_SECRET),
        }),
    )
    .await;

    // Recorded before the answer reaches the console.
    let store = Store::open(&db).expect("the store");
    let listed = changes::since(&store, 0).expect("changes");
    let mut actions: Vec<(&str, &str)> = listed
        .iter()
        .map(|change| (change.action.as_str(), change.detail.as_str()))
        .collect();
    actions.sort();
    assert_eq!(
        actions,
        [
            ("pause", "state enabled → paused"),
            ("rotate", "secret version 1 → 2")
        ]
    );
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

/// Runs `earshot ARGS` in-process, as the binary does, on a thread of its
/// own (the command line builds its own runtime); its exit code.
fn command_line(args: Vec<String>) -> std::process::ExitCode {
    std::thread::spawn(move || {
        let cli = <crate::Cli as clap::Parser>::try_parse_from(args).expect("the flags parse");
        crate::run(cli).expect("the command runs")
    })
    .join()
    .expect("the command line's thread")
}

/// Sends `effect` through the worker and waits for its answer.
async fn console(worker: &mut Worker, rx: &mut mpsc::UnboundedReceiver<Action>, effect: Effect) {
    worker.start_all(vec![effect]);
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match rx.recv().await.expect("the worker is alive") {
                Action::Subs(SubsResult::Patched { result, .. }) => {
                    result.expect("the platform accepts");
                    return;
                }
                Action::Subs(SubsResult::Deleted { result, .. }) => {
                    result.expect("the platform accepts");
                    return;
                }
                Action::Subs(SubsResult::Rotated { result, .. }) => {
                    result.expect("the platform accepts");
                    return;
                }
                _ => {}
            }
        }
    })
    .await
    .expect("answered within 20 s");
}

/// The (action, detail) pairs of the store at `db`, oldest first.
fn changes_in(db: &std::path::Path) -> Vec<(String, String)> {
    let store = Store::open(db).expect("the store");
    let mut listed = changes::since(&store, 0).expect("changes");
    listed.reverse();
    listed
        .into_iter()
        .map(|change| (change.action, change.detail))
        .collect()
}

/// The same four changes (update, pause, resume, delete) made to two
/// twin subscriptions, one with `earshot subs`, one through the console's
/// worker: the change log holds the same details for both, each saying
/// what changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_and_the_console_record_the_same_details() {
    let harness = start().await;
    let (from, to) = ("https://hooks.example.com/a", "https://hooks.example.com/b");
    let by_cli = harness
        .subscribe_with(from, &[EventKind::CallEnded], None)
        .await;
    let by_console = harness
        .subscribe_with(from, &[EventKind::CallEnded], None)
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (cli_db, console_db) = (dir.path().join("cli.db"), dir.path().join("console.db"));

    let base = harness.base.clone();
    let cli_db_text = cli_db.display().to_string();
    let subs = |args: &[&str]| -> Vec<String> {
        ["earshot", "subs"]
            .iter()
            .chain(args)
            .chain(&["--url", &base, "--api-key", super::support::API_KEY])
            .chain(&["--store", &cli_db_text])
            .map(|arg| (*arg).to_owned())
            .collect()
    };
    let id = by_cli.id.as_str();
    let update = [
        "update",
        id,
        "--receiver-url",
        to,
        "--event",
        "call.ended,call.failed",
    ];
    for args in [
        subs(&[&update[..], &["--yes"]].concat()),
        subs(&["pause", id]),
        subs(&["resume", id]),
        subs(&["delete", id, "--yes"]),
    ] {
        assert_eq!(
            command_line(args.clone()),
            std::process::ExitCode::SUCCESS,
            "{args:?}"
        );
    }

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard))
        .with_store(Ok(console_db.clone().into()));
    let id = by_console.id.clone();
    let patch = |patch: SubscriptionPatch| {
        Effect::Subs(SubsEffect::Patch {
            id: id.clone(),
            patch,
        })
    };
    for effect in [
        patch(SubscriptionPatch {
            url: Some(to.to_owned()),
            events: Some(vec![EventKind::CallEnded, EventKind::CallFailed]),
            ..SubscriptionPatch::default()
        }),
        patch(SubscriptionPatch {
            enabled: Some(false),
            ..SubscriptionPatch::default()
        }),
        patch(SubscriptionPatch {
            enabled: Some(true),
            ..SubscriptionPatch::default()
        }),
        Effect::Subs(SubsEffect::Delete { id: id.clone() }),
    ] {
        console(&mut worker, &mut rx, effect).await;
    }

    let recorded = changes_in(&cli_db);
    assert_eq!(
        recorded,
        [
            (
                "update".to_owned(),
                format!("url {from} → {to}; events call.ended → call.ended,call.failed")
            ),
            ("pause".to_owned(), "state enabled → paused".to_owned()),
            ("resume".to_owned(), "state paused → enabled".to_owned()),
            ("delete".to_owned(), to.to_owned()),
        ]
    );
    assert_eq!(changes_in(&console_db), recorded, "the console's, the same");
}
