//! `earshot redeliver` on both backends: one platform (on a clock the
//! test moves), a receiver that refuses every event for good (404) until
//! it is fixed; the same events filed into a SQLite and a PostgreSQL store
//! and both swept. Through the real binary, the dry run plans the same
//! events on both; once fixed, the run re-sends each event's exact bytes
//! from either store, marks the outcome rows recovered and records the
//! run in the change log alike, and a later sweep of the session keeps
//! them recovered; a second run sends nothing and counts them already
//! recovered, on both.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::now_ms;
use serde_json::Value;

use super::sweep::platform;
use super::{Backend, TestStore};
use crate::common::cli::text;
use crate::common::{self, Receiver, Reply, SECRET};

/// `earshot redeliver ID --no-sweep ARGS` on `store`: exit code, stdout,
/// stderr.
async fn redeliver(store: &TestStore, id: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["redeliver", id, "--no-sweep"];
    all.extend_from_slice(args);
    let output = store.earshot_with(&all, &[("USER", "alice")]).await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The JSON a run printed, each send's latency taken out (its own).
fn without_latency(stdout: &str) -> Value {
    let mut printed: Value =
        serde_json::from_str(stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    for event in printed["events"].as_array_mut().expect("events") {
        let took = event
            .as_object_mut()
            .expect("an object")
            .remove("latency_ms");
        assert!(took.is_some(), "a send says how long it took: {event}");
    }
    printed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeliver_plans_sends_and_logs_the_same_on_sqlite_and_postgres() {
    let harness = platform().await;
    let healthy = Receiver::healthy().await;
    let fixed = Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let refusing = Receiver::start(move |_, _| {
        if flag.load(Ordering::SeqCst) {
            Reply::ok()
        } else {
            Reply::status(404, "no such hook")
        }
    })
    .await;
    // A retry held back by the clock keeps the session unsettled, so the
    // next sweep rebuilds its rows.
    let flaky = Receiver::busy_once_per_event().await;
    harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    harness.subscribe(&flaky.url(), &EventKind::ALL).await;
    let broken = harness.subscribe(&refusing.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    let events = healthy.wait_count(2, "two events delivered").await;
    refusing.wait_count(2, "two events refused").await;
    flaky.wait_count(2, "two events answered busy").await;

    let stores = [
        TestStore::new(Backend::Sqlite).await,
        TestStore::new(Backend::Postgres).await,
    ];
    let received_ms = now_ms();
    for store in &stores {
        let handle = store.replica().await;
        for captured in &events {
            assert!(
                handle
                    .file(common::observed_event(captured, received_ms))
                    .await
                    .expect("filed")
            );
        }
        let report = store.sweep(&harness.client).await;
        assert_eq!(
            report.sessions_swept,
            1,
            "{:?}: {report:?}",
            store.backend()
        );
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).expect("the secret written");
    let secret = secret.to_string_lossy().into_owned();

    // The dry run: the same two events planned on both, none sent.
    let mut planned = Vec::new();
    for store in &stores {
        let (code, stdout, stderr) = redeliver(store, &broken.id, &["--dry-run", "--json"]).await;
        assert_eq!(code, Some(0), "{:?}: {stderr}", store.backend());
        planned.push(stdout);
    }
    assert_eq!(planned[0], planned[1], "SQLite, then PostgreSQL");
    let plan: Value = serde_json::from_str(&planned[0]).expect("JSON");
    assert_eq!(plan["events"].as_array().map(Vec::len), Some(2), "{plan}");
    assert_eq!(refusing.count(), 2, "a dry run sends nothing");

    // Fixed: each store's run re-sends both events, their exact bytes.
    fixed.store(true, Ordering::SeqCst);
    let mut runs = Vec::new();
    for store in &stores {
        let (code, stdout, stderr) = redeliver(
            store,
            &broken.id[..8],
            &["--secret-file", &secret, "--json"],
        )
        .await;
        assert_eq!(code, Some(0), "{:?}: {stdout}{stderr}", store.backend());
        runs.push(without_latency(&stdout));
    }
    assert_eq!(runs[0], runs[1], "SQLite, then PostgreSQL");
    assert_eq!(runs[0]["delivered"], 2, "{}", runs[0]);
    let bodies = |captured: &[common::Captured]| {
        let mut bodies: Vec<Vec<u8>> = captured.iter().map(|c| c.body.to_vec()).collect();
        bodies.sort();
        bodies
    };
    let sent = refusing.captured();
    assert_eq!(sent.len(), 6, "two refused, two re-sent from each store");
    assert_eq!(bodies(&sent[2..4]), bodies(&events), "from SQLite");
    assert_eq!(bodies(&sent[4..6]), bodies(&events), "from PostgreSQL");

    // The outcome rows recovered, the log and the change record alike.
    let recovered = |store: &TestStore| {
        store.rows(&format!(
            "SELECT state FROM {{t}}event_outcomes WHERE subscription_id = '{}'
             ORDER BY event_key",
            broken.id
        ))
    };
    let logged = |store: &TestStore| {
        store.rows(
            "SELECT event_id || ':' || http_status_code || ':' ||
                    CASE WHEN delivered THEN 1 ELSE 0 END
             FROM {t}recoveries ORDER BY event_id",
        )
    };
    for store in &stores {
        assert_eq!(recovered(store), ["recovered"; 2], "{:?}", store.backend());
    }
    // The session is swept again (its retry still due): the rebuilt rows
    // keep the recoveries, on both.
    for store in &stores {
        let report = store.sweep(&harness.client).await;
        assert_eq!(
            report.sessions_swept,
            1,
            "{:?}: {report:?}",
            store.backend()
        );
        assert_eq!(recovered(store), ["recovered"; 2], "{:?}", store.backend());
    }
    assert_eq!(logged(&stores[0]), logged(&stores[1]));
    assert_eq!(logged(&stores[1]).len(), 2);
    let mut changes = Vec::new();
    for store in &stores {
        let output = store.earshot(&["changes", "--json"]).await;
        let listed: Value = serde_json::from_slice(&output.stdout).expect("changes JSON");
        let kept: Vec<(Value, Value, Value)> = listed
            .as_array()
            .expect("a list")
            .iter()
            .map(|change| {
                (
                    change["operator"].clone(),
                    change["action"].clone(),
                    change["detail"].clone(),
                )
            })
            .collect();
        changes.push(kept);
    }
    assert_eq!(changes[0], changes[1], "SQLite, then PostgreSQL");
    assert_eq!(changes[1].len(), 1, "{:?}", changes[1]);
    assert_eq!(changes[1][0].0, "alice");
    assert_eq!(changes[1][0].1, "recover");

    // Again: nothing left, both already recovered, on both.
    for store in &stores {
        let (code, stdout, stderr) =
            redeliver(store, &broken.id, &["--secret-file", &secret]).await;
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stdout.contains("0 delivered, 0 failed"), "{stdout}");
        assert!(stdout.contains("2 already recovered"), "{stdout}");
    }
    assert_eq!(refusing.count(), 6, "nothing sent twice");
    harness.emulator.shutdown().await;
}
