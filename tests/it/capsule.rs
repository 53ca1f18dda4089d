//! An incident, replayed, through the real binary: an emulator, the
//! observer (`earshot listen --store`) and a receiver that answers every
//! event 401 (never retried). After a sweep (`health`), `capsule export`
//! writes the incident; a second export is byte-identical; none of the
//! secrets, signatures or callers' numbers is in it. `emulator --replay
//! --deliver-to` a fixed receiver sends every event signed with the secret
//! it prints, each attempt within 50 ms of its time, and `capsule compare`
//! says every missed event delivered; replayed `--as-recorded` to the
//! still-broken receiver, every event is missed again, as recorded.

use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{self, Observed, run, text};
use crate::common::{self, API_KEY, Receiver, Reply, SECRET, eventually, verifies_with};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

/// The JSON lines of `path`.
fn json_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_incident_replays_against_a_fixed_receiver_and_compare_says_each_delivered() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let db = observed.db.clone();
    let refusing = Receiver::start(|_, _| Reply::status(401, "invalid signature")).await;
    let broken = harness.subscribe(&refusing.url(), &EventKind::ALL).await;

    // Two sessions and two answered calls: eight events, each refused once.
    for _ in 0..2 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
        let call = harness.start_call("connected").await;
        harness.end_call(&call).await;
    }
    const EVENTS: usize = 8;
    let refused = refusing
        .wait_count(EVENTS, "one refused attempt per event")
        .await;
    // The sweep records the platform's attempts (the board: all missed).
    let health = ["health", "--json", "--since", "1h"];
    let output = run(&mut cli::against(&harness.base, &db, &health)).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));

    let dir = tempfile::tempdir().unwrap();
    // The second export names the subscription by a prefix of its id.
    let export = |name: &str, id: &str| {
        let mut command = cli::earshot();
        command
            .args(["capsule", "export", "--since", "1h", "--subscription", id])
            .arg("--out")
            .arg(dir.path().join(name))
            .arg("--store")
            .arg(&db);
        command
    };
    let out = run(&mut export("incident.jsonl", &broken.id)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("wrote 8 event(s)"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&mut export("again.jsonl", &broken.id[..8])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let capsule_path = dir.path().join("incident.jsonl");
    let bytes = std::fs::read(&capsule_path).unwrap();
    assert_eq!(
        bytes,
        std::fs::read(dir.path().join("again.jsonl")).unwrap(),
        "two exports of the same incident are byte-identical"
    );

    // No secret, no signature, no caller's number.
    let written = text(&bytes);
    let mut secrets = vec![
        OBSERVER_SECRET.to_owned(),
        SECRET.to_owned(),
        API_KEY.to_owned(),
    ];
    for request in &refused {
        let (_, digest) =
            common::signature_parts(request.header("x-svc-signature")).expect("a signed attempt");
        secrets.push(digest);
        let call = &request.json()["call"];
        for field in ["from_number", "to_number"] {
            if let Some(number) = call[field].as_str() {
                secrets.push(number.trim_start_matches('+').to_owned());
            }
        }
    }
    assert!(secrets.len() > 3 + EVENTS, "the numbers of the calls");
    for secret in &secrets {
        assert!(
            !written.contains(secret.as_str()),
            "{secret} in the capsule"
        );
    }
    assert!(!written.to_ascii_lowercase().contains("x-svc-signature"));

    // The format: a header, the subscription, the events oldest first.
    let lines = json_lines(&capsule_path);
    assert_eq!(lines[0]["kind"], "header");
    assert_eq!(lines[0]["format"], "earshot-capsule");
    assert_eq!(lines[0]["version"], 1);
    assert_eq!(lines[0]["events"], EVENTS);
    assert_eq!(lines[1]["kind"], "subscription");
    assert_eq!(lines[1]["id"], broken.id.as_str());
    let events: Vec<&Value> = lines
        .iter()
        .filter(|line| line["kind"] == "event")
        .collect();
    assert_eq!(events.len(), EVENTS);
    for event in &events {
        let delivery = &event["deliveries"][0];
        assert_eq!(delivery["state"], "missed", "{event}");
        assert!(
            delivery["diagnosis"].as_str().unwrap().starts_with("401"),
            "{event}"
        );
        assert_eq!(delivery["attempts"][0]["http_status_code"], 401);
    }
    let times: Vec<i64> = events
        .iter()
        .map(|event| event["occurred_ms"].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");

    // The replay against the fixed receiver.
    let fixed = Receiver::healthy().await;
    let mut replay = cli::earshot();
    replay
        .args(["emulator", "--speed", "10", "--replay"])
        .arg(&capsule_path)
        .args(["--deliver-to", &fixed.url()]);
    let out = run(&mut replay).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let secret = stdout
        .lines()
        .find_map(|line| line.strip_prefix("webhook secret: "))
        .expect("the test secret printed")
        .to_owned();
    let received = fixed.wait_count(EVENTS, "every event replayed").await;
    for request in &received {
        assert!(
            verifies_with(request, &secret),
            "signed with the printed secret"
        );
        assert!(
            request.header("x-svc-event").contains('.'),
            "the platform's headers"
        );
    }
    let results = json_lines(&earshot_core::capsule::results_path(&capsule_path));
    assert_eq!(results[0]["kind"], "replay");
    // In the recorded order, each at its time.
    let planned: Vec<i64> = results[1..]
        .iter()
        .map(|delivery| delivery["attempts"][0]["planned_ms"].as_i64().unwrap())
        .collect();
    assert!(
        planned.windows(2).all(|pair| pair[0] <= pair[1]),
        "{planned:?}"
    );
    for delivery in &results[1..] {
        assert_eq!(delivery["state"], "delivered", "{delivery}");
        let attempt = &delivery["attempts"][0];
        let late = attempt["sent_ms"].as_i64().unwrap() - attempt["planned_ms"].as_i64().unwrap();
        // Never early; late only by what a loaded machine's scheduling
        // costs (the replay's precision is a benchmark's, not a test's).
        assert!(
            (-5..=1_000).contains(&late),
            "{late} ms off its time: {delivery}"
        );
    }

    let out = run(cli::earshot()
        .args(["capsule", "compare"])
        .arg(&capsule_path))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let per_event: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" — replay "))
        .collect();
    assert_eq!(per_event.len(), EVENTS, "{stdout}");
    assert!(
        per_event.iter().all(
            |line| line.ends_with("recorded missed (401 invalid signature) — replay delivered")
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{}: recorded: 8 missed (401 invalid signature) — replay: 8 delivered",
            broken.id
        )),
        "{stdout}"
    );

    // As recorded, to the receiver that still refuses: missed again.
    let again = dir.path().join("as-recorded.jsonl");
    let mut replay = cli::earshot();
    replay
        .args(["emulator", "--speed", "10", "--as-recorded", "--replay"])
        .arg(&capsule_path)
        .arg("--results")
        .arg(&again);
    let out = run(&mut replay).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut compare = cli::earshot();
    compare
        .args(["capsule", "compare", "--json", "--results"])
        .arg(&again)
        .arg(&capsule_path);
    let out = run(&mut compare).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let objects: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("only JSON on stdout"))
        .collect();
    assert_eq!(objects.len(), EVENTS);
    assert!(objects.iter().all(|o| o["replay"]["state"] == "missed"
        && o["replay"]["why"].as_str().unwrap_or("").contains("401")));
    eventually(
        Duration::from_secs(5),
        "the refused replays arrived",
        || async { (refusing.count() == 2 * EVENTS).then_some(()) },
    )
    .await;

    // Personal data kept, one call: its events' exact bytes.
    let call = events[2]["session_id"].as_str().unwrap().to_owned();
    let kept = dir.path().join("kept.jsonl");
    let mut command = cli::earshot();
    command
        .args(["capsule", "export", "--since", "1h", "--keep-personal-data"])
        .args(["--session", &call, "--out"])
        .arg(&kept)
        .arg("--store")
        .arg(&db);
    let out = run(&mut command).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = json_lines(&kept);
    assert_eq!(lines[0]["sessions"][0], call.as_str());
    let of_call: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "event").collect();
    assert_eq!(of_call.len(), 2, "call.connected and call.ended");
    for event in of_call {
        assert_eq!(event["session_id"], call.as_str());
        assert_eq!(event["body_masked"], false);
        let sent = refused
            .iter()
            .find(|request| request.json()["event_id"] == event["event_id"])
            .expect("the platform sent it");
        assert_eq!(event["body"].as_str().unwrap().as_bytes(), &sent.body[..]);
    }
    // Another capsule's results are not compared with this one.
    let mut compare = cli::earshot();
    compare
        .args(["capsule", "compare", "--results"])
        .arg(earshot_core::capsule::results_path(&capsule_path))
        .arg(&kept);
    let out = run(&mut compare).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("another capsule"),
        "{}",
        text(&out.stderr)
    );
}

/// A capsule line of `id` at `at_ms`, missed by `sub_1`, no attempt kept.
fn event_line(id: &str, at_ms: i64) -> String {
    serde_json::json!({
        "kind": "event", "event_id": id, "event": "call.ended", "session_id": "call_1",
        "occurred": "", "occurred_ms": at_ms, "received_ms": at_ms, "headers": [],
        "body": format!(r#"{{"event_id":"{id}"}}"#), "body_masked": false,
        "deliveries": [{"subscription_id": "sub_1", "state": "missed",
                        "diagnosis": "401 invalid signature", "attempts": []}],
    })
    .to_string()
}

/// A replay stopped by SIGTERM keeps what ended, exits 143, and `compare`
/// says which events were not replayed; bad input sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replay_keeps_what_ended_and_compare_names_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let capsule = dir.path().join("late.jsonl");
    let header = serde_json::json!({
        "kind": "header", "format": "earshot-capsule", "version": 1, "first_ms": 0,
        "last_ms": 0, "subscription": null, "sessions": [], "events": 2,
        "personal_data": "masked", "signatures": "dropped",
    });
    // The second event an hour after the first: never reached.
    let lines = [
        header.to_string(),
        event_line("evt_now", 1_000_000),
        event_line("evt_later", 1_000_000 + 3_600_000),
    ];
    std::fs::write(&capsule, lines.join("\n") + "\n").unwrap();
    let app = Receiver::healthy().await;
    let mut replay = cli::earshot_async();
    replay
        .args(["emulator", "--replay"])
        .arg(&capsule)
        .args(["--deliver-to", &app.url()]);
    let mut child = replay.spawn().expect("the replay starts");
    // Received is not ended: the stop comes once the replay has read the
    // app's answer and said so (its outcome line), not when the app has the
    // request (under load the signal once came between the two).
    let outcomes = cli::stdout_lines(&mut child);
    let (ended, seen) = cli::line_with(&outcomes, "evt_now", Duration::from_secs(15));
    assert!(ended.is_some(), "the first delivery ended: {seen:?}");
    cli::send_signal(&child, "TERM").await;
    let out = cli::wait_out(child).await;
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 of 2"),
        "{}",
        text(&out.stderr)
    );
    let results = json_lines(&earshot_core::capsule::results_path(&capsule));
    assert_eq!(results.len(), 2, "the header and the one that ended");
    let mut compare = cli::earshot();
    compare.args(["capsule", "compare"]).arg(&capsule);
    let out = run(&mut compare).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let said = |id: &str, replay: &str| {
        format!("{id} call.ended sub_1: recorded missed (401 invalid signature) — replay {replay}")
    };
    assert!(stdout.contains(&said("evt_now", "delivered")), "{stdout}");
    assert!(
        stdout.contains(&said("evt_later", "not replayed")),
        "{stdout}"
    );

    // Bad input sends nothing: no target, a file that is no capsule.
    let mut no_target = cli::earshot();
    no_target.args(["emulator", "--replay"]).arg(&capsule);
    assert_eq!(run(&mut no_target).await.status.code(), Some(2));
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, "{\"kind\":\"event\"}\n").unwrap();
    let mut not_one = cli::earshot();
    not_one
        .args(["emulator", "--replay"])
        .arg(&other)
        .args(["--deliver-to", &app.url()]);
    let out = run(&mut not_one).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("line 1"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(app.count(), 1, "nothing more sent");
}
