//! A staged rotation through the real binary against the emulator: with a
//! receiver that holds only the old secret, `subs rotate --secret-file NEW
//! --current-secret-file OLD` exits 1 and sends no `PATCH`; once the
//! receiver accepts both, it rotates, and its probe carried an `event_id`
//! the receiver had already been delivered; `--skip-check` rotates
//! regardless. `subs update --receiver-url` keeps the id and the history. `changes
//! --json` lists them, with times and no secret.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{self, Observed, earshot, run};
use crate::common::{self, Captured, Receiver, Reply, SECRET, eventually, verifies_with};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";
const NEW_SECRET: &str = "whsec_the_new_secret_0123456789abcdefghij";
const THIRD_SECRET: &str = "whsec_a_third_secret_0123456789abcdefghij";

/// A receiver that verifies each request with the secrets it holds.
async fn verifying(holds: Arc<Mutex<Vec<&'static str>>>) -> Receiver {
    Receiver::start(move |request: &Captured, _| {
        let held = holds.lock().unwrap().clone();
        if held.iter().any(|secret| verifies_with(request, secret)) {
            Reply::ok()
        } else {
            Reply::status(401, "invalid signature")
        }
    })
    .await
}

fn against(base: &str, db: &Path, args: &[&str]) -> Command {
    let mut command = cli::against(base, db, args);
    command.env("USER", "bob");
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_waits_for_a_receiver_that_accepts_both_secrets() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let holds = Arc::new(Mutex::new(vec![SECRET]));
    let receiver = verifying(holds.clone()).await;
    let sub = harness.subscribe(&receiver.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    eventually(Duration::from_secs(10), "two deliveries", || async {
        (receiver.count() == 2).then_some(())
    })
    .await;
    let delivered: BTreeSet<String> = receiver
        .captured()
        .iter()
        .map(|request| request.json()["event_id"].as_str().unwrap().to_owned())
        .collect();
    // The sweep learns what was delivered.
    let health = run(&mut against(&harness.base, &db, &["health", "--json"])).await;
    assert_eq!(
        health.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&health.stdout)
    );

    let new_file = dir.path().join("new");
    let old_file = dir.path().join("old");
    let third_file = dir.path().join("third");
    std::fs::write(&new_file, NEW_SECRET).unwrap();
    std::fs::write(&old_file, SECRET).unwrap();
    std::fs::write(&third_file, THIRD_SECRET).unwrap();
    let path = format!("/v1/webhook-subscriptions/{}", sub.id);
    let version = || async {
        harness.get(&path).await.1["secret_version"]
            .as_i64()
            .unwrap()
    };
    let before = version().await;
    let rotate = |extra: &[&str]| {
        let mut command = against(&harness.base, &db, &["subs", "rotate", &sub.id]);
        command
            .arg("--allow-private-urls")
            .arg("--secret-file")
            .arg(&new_file)
            .arg("--current-secret-file")
            .arg(&old_file)
            .args(["--watch", "0"])
            .args(extra);
        command
    };

    // The receiver holds only the old secret: no PATCH.
    let output = run(&mut rotate(&["--json"])).await;
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["rotated"], false);
    assert_eq!(report["check"]["passed"], false);
    assert_eq!(version().await, before, "no PATCH was sent");
    let probes = &receiver.captured()[2..];
    assert_eq!(probes.len(), 3, "new, current, wrong");
    assert_eq!(
        probes[0].json()["event_id"].as_str(),
        report["check"]["event_id"].as_str()
    );

    // Both held: it rotates, with a probe the receiver had been delivered.
    holds.lock().unwrap().push(NEW_SECRET);
    let output = run(&mut rotate(&[])).await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("rotated"), "{printed}");
    assert_eq!(version().await, before + 1);
    let probes = &receiver.captured()[5..8];
    for probe in probes {
        let event_id = probe.json()["event_id"].as_str().unwrap().to_owned();
        assert!(
            delivered.contains(&event_id),
            "a duplicate of a delivered event"
        );
    }
    assert!(verifies_with(&probes[0], NEW_SECRET) && verifies_with(&probes[1], SECRET));
    assert!(!verifies_with(&probes[2], NEW_SECRET) && !verifies_with(&probes[2], SECRET));

    // --skip-check rotates even to a secret the receiver does not hold.
    let mut skip = against(&harness.base, &db, &["subs", "rotate", &sub.id]);
    skip.arg("--secret-file")
        .arg(&third_file)
        .args(["--skip-check", "--watch", "0"]);
    let output = run(&mut skip).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(version().await, before + 2);

    // A new URL is checked with the subscription's secret when it is
    // given: a receiver without it is refused, one with it is taken.
    let without = verifying(Arc::new(Mutex::new(vec![NEW_SECRET]))).await;
    let with = verifying(Arc::new(Mutex::new(vec![THIRD_SECRET]))).await;
    let checked_update = |url: String| {
        let mut command = against(
            &harness.base,
            &db,
            &["subs", "update", &sub.id, "--receiver-url", &url],
        );
        command
            .args(["--allow-private-urls", "--yes", "--secret-file"])
            .arg(&third_file);
        command
    };
    let output = run(&mut checked_update(without.url())).await;
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("not updated"), "{said}");
    assert_eq!(without.count(), 2, "the secret's probe and a wrong one");
    let (_, record) = harness
        .get(&format!("/v1/webhook-subscriptions/{}", sub.id))
        .await;
    assert_eq!(record["url"], receiver.url().as_str(), "no PATCH");
    let output = run(&mut checked_update(with.url())).await;
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(verifies_with(&with.captured()[0], THIRD_SECRET));
    let delivered_id = with.captured()[0].json()["event_id"]
        .as_str()
        .map(str::to_owned);
    assert!(delivered_id.is_some_and(|id| delivered.contains(&id)));

    // An update keeps the id and the history.
    let moved = Receiver::healthy().await;
    let update = [
        "subs",
        "update",
        &sub.id,
        "--receiver-url",
        &moved.url(),
        "--allow-private-urls",
        "--yes",
    ];
    let output = run(&mut against(&harness.base, &db, &update)).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (_, record) = harness
        .get(&format!("/v1/webhook-subscriptions/{}", sub.id))
        .await;
    assert_eq!(record["url"], moved.url().as_str());
    let history = harness.records_of(&session, &sub.id).await;
    assert_eq!(history.len(), 2, "the delivery history stays");

    // What changed, when, by whom; never a secret.
    let output = run(earshot().args(["changes", "--json", "--store"]).arg(&db)).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let changes: Value = serde_json::from_str(&text).unwrap();
    let actions: Vec<&str> = changes
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["update", "update", "rotate", "rotate"], "{text}");
    for change in changes.as_array().unwrap() {
        assert_eq!(change["operator"], "bob");
        assert_eq!(change["subscription_id"], sub.id.as_str());
        assert!(change["at_ms"].as_i64().unwrap() > 0);
    }
    for secret in [SECRET, NEW_SECRET, THIRD_SECRET] {
        assert!(!text.contains(secret), "no secret in the change log");
    }
}
