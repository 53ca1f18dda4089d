//! The incident-history loop end to end, through the real binary: an
//! emulator, an observer (`earshot listen --store`), a receiver that
//! rejects every signature and a healthy one, sessions and calls through
//! the control routes; `earshot health --json` names the failing
//! subscription with the right counts and diagnosis; once the receiver is
//! fixed, `earshot redeliver` re-sends exactly the missed events (original
//! bytes and `event_id`s, valid signatures, checked with an HMAC computed
//! here), and a second run sends nothing.

use crate::common;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::cli::{Observed, against, earshot, run};
use crate::common::{Receiver, Reply, SECRET, eventually, hmac_hex, signature_parts};
use earshot_core::api::types::agents::EventKind;
use serde_json::Value;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

/// A receiver that rejects every signature (401) until the flag is set,
/// then answers `fixed_reply`.
async fn rejecting_until_fixed(fixed_reply: Reply) -> (Receiver, Arc<AtomicBool>) {
    let fixed = Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let receiver = Receiver::start(move |_, _| {
        if flag.load(Ordering::SeqCst) {
            fixed_reply.clone()
        } else {
            Reply::status(401, "invalid signature")
        }
    })
    .await;
    (receiver, fixed)
}

/// `earshot redeliver SUBSCRIPTION [FLAGS] --secret-file FILE`, against the
/// emulator and store.
fn redeliver(base: &str, db: &Path, subscription: &str, flags: &[&str], secret: &Path) -> Command {
    let mut command = against(base, db, &["redeliver", subscription]);
    command.args(flags).arg("--secret-file").arg(secret);
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_names_the_failing_subscription_and_redeliver_recovers_its_events() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());

    let (failing, fixed) = rejecting_until_fixed(Reply::ok()).await;
    let healthy = Receiver::healthy().await;
    let everything = EventKind::ALL;
    let broken = harness.subscribe(&failing.url(), &everything).await;
    let fine = harness.subscribe(&healthy.url(), &everything).await;

    // Two sessions, two answered calls, one failed call: nine events.
    for _ in 0..2 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
        let call = harness.start_call("connected").await;
        harness.end_call(&call).await;
    }
    harness.start_call("failed").await;
    const EVENTS: usize = 9;
    eventually(Duration::from_secs(10), "nine deliveries each", || async {
        (failing.count() == EVENTS && healthy.count() == EVENTS).then_some(())
    })
    .await;
    let originals = failing.captured();

    // The observer has stored every event by the time it answered.
    let listed = run(earshot()
        .args(["sessions", "list", "--json", "--store"])
        .arg(&db))
    .await;
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let stored_events: i64 = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["events"].as_i64().unwrap())
        .sum();
    assert_eq!(sessions.as_array().unwrap().len(), 5);
    assert_eq!(stored_events, EVENTS as i64);

    // Health: the broken subscription failed nine times with 401.
    let health = ["health", "--json", "--since", "1h"];
    let output = run(&mut against(&harness.base, &db, &health)).await;
    assert_eq!(output.status.code(), Some(1), "something failed: exit 1");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["sessions_swept"], 5);
    assert!(report["requests"].as_u64().unwrap() >= 6, "{report}");
    let row = |id: &str| {
        report["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {report}"))
    };
    let broken_row = row(&broken.id);
    assert_eq!(broken_row["url"], failing.url());
    assert_eq!(broken_row["failed"], 9);
    assert_eq!(broken_row["delivered"], 0);
    assert_eq!(broken_row["pending"], 0);
    assert!(broken_row["last_failure_at"].is_string());
    let failures = broken_row["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["http_status"], 401);
    assert_eq!(failures[0]["count"], 9);
    assert!(
        failures[0]["diagnosis"]
            .as_str()
            .unwrap()
            .starts_with("401 invalid signature"),
        "{failures:?}"
    );
    let fine_row = row(&fine.id);
    assert_eq!(
        (fine_row["delivered"].clone(), fine_row["failed"].clone()),
        (9.into(), 0.into())
    );

    // A dry run lists the nine missed events and sends nothing.
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
    let dry = ["redeliver", &broken.id, "--dry-run", "--json"];
    let output = run(&mut against(&harness.base, &db, &dry)).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let planned: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(planned["events"].as_array().unwrap().len(), EVENTS);
    assert_eq!(failing.count(), EVENTS);

    // Fixed: redeliver sends exactly the missed events, as they were.
    fixed.store(true, Ordering::SeqCst);
    let mut by_prefix = redeliver(&harness.base, &db, &broken.id[..8], &[], &secret_file);
    let output = run(&mut by_prefix).await;
    let printed = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.contains("9 delivered, 0 failed"), "{printed}");
    let resent = &failing.captured()[EVENTS..];
    assert_eq!(resent.len(), EVENTS);
    let bodies = |requests: &[common::Captured]| -> BTreeSet<Vec<u8>> {
        requests
            .iter()
            .map(|request| request.body.to_vec())
            .collect()
    };
    assert_eq!(
        bodies(resent),
        bodies(&originals),
        "the exact original bytes"
    );
    for request in resent {
        let (t, digest) = signature_parts(request.header("x-svc-signature")).expect("signed");
        let expected = hmac_hex(
            SECRET.as_bytes(),
            &[t.to_string().as_bytes(), b".", &request.body],
        );
        assert_eq!(digest, expected, "signed with the subscription's secret");
        assert!(
            (chrono::Utc::now().timestamp() - t).abs() < 120,
            "signed now"
        );
        let event = request.json();
        assert_eq!(
            request.header("x-svc-event"),
            event["event"].as_str().unwrap()
        );
        assert!(!request.header("x-svc-delivery-id").is_empty());
    }
    assert_eq!(
        healthy.count(),
        EVENTS,
        "nothing is re-sent to the healthy receiver"
    );

    // A second run finds nothing left to send.
    let mut again = redeliver(&harness.base, &db, &broken.id, &[], &secret_file);
    let output = run(&mut again).await;
    let printed = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("0 delivered, 0 failed"), "{printed}");
    assert!(printed.contains("9 already recovered"), "{printed}");
    assert_eq!(failing.count(), 2 * EVENTS);
}

#[tokio::test]
async fn redeliver_without_a_secret_or_with_an_unknown_subscription_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let no_secret = run(earshot()
        .args(["redeliver", "abcdef12", "--no-sweep", "--store"])
        .arg(&db))
    .await;
    assert_eq!(no_secret.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_secret.stderr).contains("EARSHOT_WEBHOOK_SECRET"));
    let unknown = run(earshot()
        .args([
            "redeliver",
            "abcdef12",
            "--no-sweep",
            "--dry-run",
            "--store",
        ])
        .arg(&db))
    .await;
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("earshot health"));
}

#[tokio::test]
async fn a_damaged_store_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let junk = b"not a database, but an operator's precious notes\n".repeat(200);
    std::fs::write(&db, &junk).unwrap();
    let output = run(earshot().args(["sessions", "list", "--store"]).arg(&db)).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("left untouched"), "{stderr}");
    assert_eq!(std::fs::read(&db).unwrap(), junk);
}

/// A recover stopped mid-way (SIGKILL while the receiver holds one event)
/// and run again sends every event exactly once; the one in flight is held
/// back until asked for with `--resend-interrupted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_redeliver_rerun_sends_each_event_once() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let (receiver, fixed) = rejecting_until_fixed(Reply {
        delay: Duration::from_millis(300),
        ..Reply::ok()
    })
    .await;
    let broken = harness.subscribe(&receiver.url(), &EventKind::ALL).await;
    for _ in 0..3 {
        let call = harness.start_call("connected").await;
        harness.end_call(&call).await;
    }
    const EVENTS: usize = 6;
    eventually(
        Duration::from_secs(10),
        "six rejected deliveries",
        || async { (receiver.count() == EVENTS).then_some(()) },
    )
    .await;
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, SECRET).unwrap();
    fixed.store(true, Ordering::SeqCst);

    // Killed while the receiver holds the third event.
    let mut first = redeliver(&harness.base, &db, &broken.id, &[], &secret_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually(
        Duration::from_secs(20),
        "the third re-sent event",
        || async { (receiver.count() == EVENTS + 3).then_some(()) },
    )
    .await;
    first.kill().unwrap();
    first.wait().unwrap();

    let mut again = redeliver(&harness.base, &db, &broken.id, &[], &secret_file);
    let output = run(&mut again).await;
    let printed = stdout(&output);
    assert!(printed.contains("3 delivered, 0 failed"), "{printed}");
    assert!(printed.contains("2 already recovered"), "{printed}");
    assert!(printed.contains("1 held back"), "{printed}");
    let event_ids = |requests: &[common::Captured]| -> Vec<String> {
        let mut ids: Vec<String> = requests
            .iter()
            .map(|request| request.json()["event_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let originals = event_ids(&receiver.captured()[..EVENTS]);
    let resent = event_ids(&receiver.captured()[EVENTS..]);
    assert_eq!(
        resent, originals,
        "every event re-sent exactly once across both runs"
    );

    let resend = ["--resend-interrupted"];
    let mut held = redeliver(&harness.base, &db, &broken.id, &resend, &secret_file);
    let output = run(&mut held).await;
    let printed = stdout(&output);
    assert!(printed.contains("1 delivered, 0 failed"), "{printed}");
    assert_eq!(receiver.count(), 2 * EVENTS + 1);
}
