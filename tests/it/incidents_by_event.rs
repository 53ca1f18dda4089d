//! Incidents by event, end to end through the real binary: an emulator, an
//! observer (`earshot listen --store`), a receiver that answers each event
//! 500 then 401 (two attempts, one event) and a healthy one. `health`
//! counts events, not attempts, with a `failing_since` and missed events
//! by type; `redeliver --dry-run` lists exactly the board's missed events;
//! against the still-broken receiver `redeliver` stops after the canary;
//! once fixed, `--type call.ended` sends only those, a plain run the rest,
//! and `health` shows them recovered, exits 0. `incidents` lists the
//! failure group, and an acknowledgement names who is on it. With no
//! observer, `health` says it cannot know, and exits 3.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{self, Observed, earshot, run};
use crate::common::{self, Captured, Receiver, Reply, SECRET, eventually};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

/// Answers an event's first attempt 500 (the platform retries), its second
/// 401 (never retried), until fixed; then 200.
async fn refusing_on_retry() -> (Receiver, Arc<AtomicBool>) {
    let fixed = Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let seen: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let receiver = Receiver::start(move |request: &Captured, _| {
        if flag.load(Ordering::SeqCst) {
            return Reply::ok();
        }
        let event_id = request.json()["event_id"].as_str().unwrap_or("").to_owned();
        let mut seen = seen.lock().unwrap();
        let tries = seen.entry(event_id).or_default();
        *tries += 1;
        if *tries == 1 {
            Reply::status(500, "busy")
        } else {
            Reply::status(401, "invalid signature")
        }
    })
    .await;
    (receiver, fixed)
}

fn against(base: &str, db: &Path, args: &[&str]) -> Command {
    let mut command = cli::against(base, db, args);
    command.env("USER", "alice");
    command
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{error}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn row(report: &Value, id: &str) -> Value {
    report["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} in {report}"))
}

fn event_ids(requests: &[Captured]) -> BTreeSet<String> {
    requests
        .iter()
        .map(|request| request.json()["event_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_counts_events_and_a_scoped_braked_recover_shows_as_recovered() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let (failing, fixed) = refusing_on_retry().await;
    let healthy = Receiver::healthy().await;
    let broken = harness.subscribe(&failing.url(), &EventKind::ALL).await;
    let fine = harness.subscribe(&healthy.url(), &EventKind::ALL).await;

    // Two sessions, two answered calls, one failed call: nine events.
    for _ in 0..2 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
        let call = harness.start_call("connected").await;
        harness.end_call(&call).await;
    }
    harness.start_call("failed").await;
    const EVENTS: usize = 9;
    eventually(
        Duration::from_secs(20),
        "two attempts per event",
        || async { (failing.count() == 2 * EVENTS && healthy.count() == EVENTS).then_some(()) },
    )
    .await;
    let sent_ids = event_ids(&failing.captured());
    assert_eq!(sent_ids.len(), EVENTS);

    // The board counts events: nine missed, eighteen failed attempts.
    let health = ["health", "--json", "--since", "1h"];
    let output = run(&mut against(&harness.base, &db, &health)).await;
    assert_eq!(output.status.code(), Some(1), "missed events: exit 1");
    let report = json(&output);
    assert_eq!(report["observer"]["state"], "ok", "{report}");
    assert!(report["observer"]["events_in_window"].as_i64().unwrap() >= EVENTS as i64);
    let bad = row(&report, &broken.id);
    assert_eq!(bad["events"]["missed"], EVENTS, "{bad}");
    assert_eq!(bad["events"]["delivered"], 0);
    assert_eq!(bad["failed"], 2 * EVENTS, "attempts stay as the drill-down");
    assert!(bad["failing_since"].is_string(), "{bad}");
    assert!(bad["last_success_at"].is_null(), "{bad}");
    let by_type: BTreeMap<String, i64> =
        serde_json::from_value(bad["missed_by_type"].clone()).unwrap();
    let expected: BTreeMap<String, i64> = [
        ("call.connected", 2),
        ("call.ended", 2),
        ("call.failed", 1),
        ("session.completed", 2),
        ("session.started", 2),
    ]
    .into_iter()
    .map(|(kind, count)| (kind.to_owned(), count))
    .collect();
    assert_eq!(by_type, expected);
    let groups = bad["failures"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(
        groups[0]["http_status"], 401,
        "the last failure names the group"
    );
    assert_eq!(groups[0]["missed"], EVENTS);
    let good = row(&report, &fine.id);
    assert_eq!(good["events"]["delivered"], EVENTS);
    assert_eq!(good["events"]["missed"], 0);
    assert!(good["failing_since"].is_null());

    // The dry run lists exactly the board's missed events.
    let dry = ["redeliver", &broken.id, "--dry-run", "--json"];
    let planned = json(&run(&mut against(&harness.base, &db, &dry)).await);
    let planned_ids: BTreeSet<String> = planned["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(planned_ids, sent_ids);

    // Still broken: the canary fails and nothing else is sent.
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, SECRET).unwrap();
    let redeliver = |flags: &[&str]| {
        let mut command = against(&harness.base, &db, &["redeliver", &broken.id]);
        command.args(flags).arg("--secret-file").arg(&secret_file);
        command
    };
    let output = run(&mut redeliver(&[])).await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(printed.contains("canary"), "{printed}");
    assert!(printed.contains("8 not attempted"), "{printed}");
    assert_eq!(failing.count(), 2 * EVENTS + 1, "only the canary went out");

    // Fixed: only the call.ended events first, then the rest.
    fixed.store(true, Ordering::SeqCst);
    let output = run(&mut redeliver(&["--type", "call.ended"])).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let ended: Vec<String> = failing.captured()[2 * EVENTS + 1..]
        .iter()
        .map(|request| request.json()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ended, vec!["call.ended", "call.ended"]);
    let output = run(&mut redeliver(&[])).await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("7 delivered, 0 failed"), "{printed}");
    assert_eq!(event_ids(&failing.captured()[2 * EVENTS + 1..]), sent_ids);

    // The repair shows: recovered, nothing missed; the incident stays open
    // until a later event is delivered, so the one exit rule says 1.
    let output = run(&mut against(&harness.base, &db, &health)).await;
    let report = json(&output);
    let bad = row(&report, &broken.id);
    assert_eq!(bad["events"]["missed"], 0, "{bad}");
    assert_eq!(bad["events"]["recovered"], EVENTS, "{bad}");
    assert!(bad["failing_since"].is_null(), "{bad}");
    assert!(bad["last_success_at"].is_string(), "{bad}");
    assert_eq!(output.status.code(), Some(1), "{report}");

    // The incident: one failure group, its events recovered; acknowledged
    // by the operator with a note.
    let listed = json(&run(&mut against(&harness.base, &db, &["incidents", "--json"])).await);
    let incidents = listed.as_array().unwrap();
    let ours: Vec<&Value> = incidents
        .iter()
        .filter(|incident| incident["subscription_id"] == broken.id.as_str())
        .collect();
    assert_eq!(ours.len(), 1, "{listed}");
    let incident = ours[0];
    assert!(
        incident["diagnosis"].as_str().unwrap().starts_with("401"),
        "{incident}"
    );
    assert_eq!(incident["missed"], 0);
    assert_eq!(incident["recovered"], EVENTS);
    assert_eq!(incident["state"], "open");
    let id = incident["id"].as_str().unwrap();
    let mut ack = earshot();
    ack.args([
        "incidents",
        "ack",
        &id[..6],
        "--note",
        "deploying fix",
        "--store",
    ])
    .arg(&db)
    .env("USER", "alice");
    let output = run(&mut ack).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let again = ["incidents", "--json", "--no-sweep"];
    let listed = json(&run(&mut against(&harness.base, &db, &again)).await);
    let acknowledged = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|incident| incident["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} in {listed}"));
    assert_eq!(acknowledged["state"], "acknowledged");
    assert_eq!(acknowledged["acknowledged_by"], "alice");
    assert_eq!(acknowledged["note"], "deploying fix");

    // `events` lists them with each subscription's outcome.
    let query = [
        "events",
        "--json",
        "--no-sweep",
        "type:call.ended",
        "status:recovered",
    ];
    let listed = json(&run(&mut against(&harness.base, &db, &query)).await);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for event in listed {
        assert_eq!(event["type"], "call.ended");
        let ours = event["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|outcome| outcome["id"] == broken.id.as_str())
            .cloned()
            .unwrap();
        assert_eq!(ours["state"], "recovered");
        assert_eq!(ours["attempts"], 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_observer_health_says_it_cannot_know_and_exits_3() {
    let harness = common::start().await;
    let refusing = Receiver::start(|_, _| Reply::status(401, "invalid signature")).await;
    harness.subscribe(&refusing.url(), &EventKind::ALL).await;
    let call = harness.start_call("connected").await;
    harness.end_call(&call).await;
    eventually(
        Duration::from_secs(10),
        "two refused deliveries",
        || async { (refusing.count() == 2).then_some(()) },
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let output = run(&mut against(&harness.base, &db, &["health", "--json"])).await;
    assert_eq!(output.status.code(), Some(3), "unknown, not all clear");
    assert_eq!(json(&output)["observer"]["state"], "none");
    let output = run(&mut against(&harness.base, &db, &["health"])).await;
    assert_eq!(output.status.code(), Some(3));
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.contains("cannot be known"), "{printed}");
}
