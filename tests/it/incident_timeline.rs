//! `earshot incidents ID` through the real binary, on a store earshot
//! filled: a subscription refusing every event with 401 for half an hour,
//! its secret rotated in the middle; the incident's chart shows the missed
//! events and the rotation marked under the bucket it happened in.

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use crate::common::cli::{earshot, run, text};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};
use earshot_core::store::changes::{self, Change};
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, deliveries};

const SUB: &str = "5ab0c0de-0000-4000-8000-000000000001";

fn refused(n: usize, session: &str, at_ms: i64) -> DeliveryRecord {
    DeliveryRecord {
        id: format!("dlv_{n}"),
        subscription_id: SUB.into(),
        session_id: session.into(),
        error: Some("HTTP 401: invalid signature".into()),
        status: DeliveryStatus::Failed,
        attempt_count: 1,
        http_status_code: Some(401),
        delivered_at: None,
        next_retry_at: None,
        created_at: Utc.timestamp_millis_opt(at_ms).unwrap().into(),
        extra: Default::default(),
    }
}

/// A store with 30 sessions a minute apart, every event refused, and a
/// rotation 15 minutes in; the rotation's time.
async fn staged(db: &std::path::Path, start_ms: i64) -> i64 {
    let mut store = Store::open(db).unwrap();
    let subscription: Subscription = serde_json::from_value(json!({
        "id": SUB, "url": "https://hooks.example.invalid/voice",
        "events": ["session.started"], "enabled": true, "secret_version": 1,
    }))
    .unwrap();
    deliveries::replace_subscriptions(&mut store, &[subscription], start_ms).unwrap();
    drop(store);
    let (writer, thread) = Writer::start(Store::open(db).unwrap()).unwrap();
    for n in 0..30 {
        let at_ms = start_ms + n as i64 * 60_000;
        let body = json!({
            "event_id": format!("evt_{n}"), "event": "session.started",
            "timestamp": Utc.timestamp_millis_opt(at_ms).unwrap().to_rfc3339(),
            "session": { "session_id": format!("ses_{n}") },
        });
        let event =
            ObservedEvent::from_delivery(body.to_string().as_bytes(), vec![], None, at_ms).unwrap();
        writer.write(event).await.unwrap();
    }
    drop(writer);
    thread.join().unwrap();
    let mut store = Store::open(db).unwrap();
    for n in 0..30 {
        let at_ms = start_ms + n as i64 * 60_000 + 100;
        let session = format!("ses_{n}");
        deliveries::record_sweep(&mut store, &session, &[refused(n, &session, at_ms)], at_ms)
            .unwrap();
    }
    let rotated_ms = start_ms + 15 * 60_000 + 30_000;
    changes::record(
        &store,
        &Change {
            at_ms: rotated_ms,
            operator: "alice".into(),
            subscription_id: Some(SUB.into()),
            action: "rotate".into(),
            detail: "secret v1 → v2".into(),
        },
    )
    .unwrap();
    rotated_ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incident_shows_its_missed_events_and_a_rotation_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let start_ms = Utc::now().timestamp_millis() - 40 * 60_000;
    let rotated_ms = staged(&db, start_ms).await;
    let incidents = |args: &[&str]| {
        let mut command = earshot();
        command
            .arg("incidents")
            .args(args)
            .args(["--no-sweep", "--store"])
            .arg(&db);
        command
    };
    let listed = run(&mut incidents(&["--json"])).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = listed[0]["id"].as_str().expect("one incident").to_owned();

    let out = run(&mut incidents(&[&id[..6], "--json"])).await;
    assert_eq!(out.status.code(), Some(1), "open: exit 1");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chart = &shown["timeline"];
    let (start, bucket) = (
        chart["start_ms"].as_i64().unwrap(),
        chart["bucket_ms"].as_i64().unwrap(),
    );
    let missed: i64 = chart["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|bucket| bucket["missed"].as_i64().unwrap())
        .sum();
    assert_eq!(missed, 30, "{chart}");
    let expected_column = (rotated_ms - start) / bucket;
    assert_eq!(chart["marks"][0]["column"], expected_column, "{chart}");
    assert_eq!(chart["marks"][0]["action"], "rotate");

    let out = run(&mut incidents(&[&id, "--ascii"])).await;
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{printed}");
    let lines: Vec<&str> = printed.lines().collect();
    assert!(
        lines[0].starts_with(&format!("incident {id} · 5ab0c0de · open")),
        "{printed}"
    );
    assert!(lines[1].starts_with("401"), "{printed}");
    let chart_at = lines
        .iter()
        .position(|line| line.starts_with("events of 5ab0c0de per "))
        .expect("the chart's heading");
    let line = lines[chart_at + 1];
    assert!(
        line.starts_with("  ") && line.contains('x'),
        "missed, in ASCII: {printed}"
    );
    assert!(!line.contains('✗'), "{printed}");
    let mark = lines[chart_at + 2];
    let clock = Utc
        .timestamp_millis_opt(rotated_ms)
        .unwrap()
        .format("%H:%M:%S");
    assert!(
        mark.ends_with(&format!("^ {clock} rotate by alice: secret v1 → v2")),
        "{printed}"
    );
    assert_eq!(
        mark.find('^').unwrap() - 2,
        usize::try_from(expected_column).unwrap(),
        "the mark under the rotation's bucket:\n{printed}"
    );

    let out = run(&mut incidents(&["nosuch"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no incident nosuch"),
        "{}",
        text(&out.stderr)
    );
}
