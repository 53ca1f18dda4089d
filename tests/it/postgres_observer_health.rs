//! The observer's store in `/healthz` and `/metrics` on a PostgreSQL store
//! (the real binary, the emulator, the test kit's cluster).
//!
//! The same events filed into a SQLite file and a PostgreSQL database and
//! swept by `listen --sweep` on each (one observer on the file, two
//! replicas on the database): every replica's `/metrics` shows the same
//! `earshot_observer_silent*`, `earshot_subscriptions_enabled` and
//! `earshot_subscription_events` series as the observer on the file, the
//! replica that does not sweep included (each exposition checked by
//! `promtool check metrics` and the Python checker).
//!
//! A replica whose database is made read-only, then stopped, with no event
//! sent: `/healthz` turns 503 `store_not_writable` and
//! `earshot_store_writable` 0 within a few seconds, `/metrics` still
//! answers, and both come back once the database takes writes again.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver as Lines;
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, now_ms};
use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{earshot_async, line_with, listening_url, stderr_lines};
use crate::common::{self, API_KEY, Receiver, Reply, SECRET};
use crate::observer_metrics::checked_metrics_at;
use crate::postgres_listen_sweep::session;

/// The silence floor the observers judge by (`EARSHOT_SILENCE_FLOOR_MS`),
/// so a quiet second is silence to them.
const FLOOR_MS: &str = "1000";

/// `/healthz` and the gauge must follow the store within this.
const FOLLOWS_WITHIN: Duration = Duration::from_secs(8);

/// `earshot listen` on `store` with `extra` flags, the silence floor
/// lowered and the cluster's password given: the child (killed when
/// dropped) and its stderr lines.
fn observer(
    cluster: Option<&PgCluster>,
    store: &str,
    extra: &[&str],
) -> (tokio::process::Child, Lines<String>) {
    let mut command = earshot_async();
    command
        .args(["listen", "--secret", SECRET, "--store", store])
        .args(extra)
        .env("EARSHOT_SILENCE_FLOOR_MS", FLOOR_MS);
    if let Some(cluster) = cluster {
        command.env("PGPASSWORD", cluster.password());
    }
    let mut child = command.spawn().expect("earshot listen starts");
    let lines = stderr_lines(&mut child);
    listening_url(&mut child);
    (child, lines)
}

/// `http://HOST:PORT` of an observer's /healthz and /metrics.
fn monitor_of(lines: &Lines<String>) -> String {
    let needle = "serving /healthz and /metrics on ";
    let (line, before) = line_with(lines, needle, Duration::from_secs(20));
    let line = line.unwrap_or_else(|| panic!("no metrics address: {before:?}"));
    line.split(needle)
        .nth(1)
        .expect("an address")
        .trim()
        .to_owned()
}

/// The silence and per-subscription series of one scrape (checked by
/// promtool and Python).
async fn observer_series(monitor: &str) -> BTreeMap<String, f64> {
    let samples = checked_metrics_at(monitor).await;
    samples
        .as_object()
        .expect("samples")
        .iter()
        .filter(|(series, _)| {
            series.starts_with("earshot_observer_silent")
                || series.starts_with("earshot_subscription")
        })
        .map(|(series, value)| (series.clone(), value.as_f64().expect("a number")))
        .collect()
}

fn events(subscription: &str, state: &str) -> String {
    format!(r#"earshot_subscription_events{{subscription="{subscription}",state="{state}"}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_shows_the_silence_and_subscription_series_sqlite_shows_for_the_same_events()
{
    let harness = common::start().await;
    let (receiver, healthy) = harness.healthy_subscriber(&EventKind::ALL).await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such receiver")).await;
    let missing = harness.subscribe(&gone.url(), &EventKind::ALL).await;
    let mut seen = 0;
    for _ in 0..6 {
        session(&harness, &receiver, seen).await;
        seen += 2;
    }
    // Twelve events received 100 ms apart, the last 20 s ago: the pace
    // they set makes the quiet since then silence, from the last one.
    let first_ms = now_ms() - 21_100;
    let observed: Vec<ObservedEvent> = receiver
        .captured()
        .iter()
        .enumerate()
        .map(|(index, request)| common::observed_event(request, first_ms + 100 * index as i64))
        .collect();
    assert_eq!(observed.len(), 12);
    let last_ms = first_ms + 1_100;

    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("earshot.db");
    let (writer, thread) =
        Writer::start(Store::open(&db).expect("the file opens")).expect("writer");
    for event in &observed {
        writer
            .write(event.clone())
            .await
            .expect("filed in the file");
    }
    drop(writer);
    thread.join().expect("the writer ends");
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let store = PgStore::connect(
        PgTarget::parse(&url).expect("a URL"),
        &cluster.password_sources(),
    )
    .await
    .expect("the store opens");
    for event in &observed {
        store.file(event).await.expect("filed in the database");
    }

    let flags = [
        "--sweep",
        "--sweep-every",
        "1h",
        "--url",
        harness.base.as_str(),
        "--api-key",
        API_KEY,
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    let db_text = db.to_string_lossy().into_owned();
    let (on_file, file_err) = observer(None, &db_text, &flags);
    let (first, first_err) = observer(Some(&cluster), &url, &flags);
    let (second, second_err) = observer(Some(&cluster), &url, &flags);
    let monitors = [
        monitor_of(&file_err),
        monitor_of(&first_err),
        monitor_of(&second_err),
    ];
    let delivered = events(&healthy.id, "delivered");
    let missed = events(&missing.id, "missed");
    let deadline = Instant::now() + Duration::from_secs(40);
    let shown = loop {
        let mut scrapes = Vec::new();
        for monitor in &monitors {
            scrapes.push(observer_series(monitor).await);
        }
        let swept = scrapes.iter().all(|scrape| {
            scrape.get(&delivered) == Some(&12.0) && scrape.get(&missed) == Some(&12.0)
        });
        if swept && scrapes.windows(2).all(|pair| pair[0] == pair[1]) {
            break scrapes.swap_remove(0);
        }
        assert!(
            Instant::now() < deadline,
            "the file's observer and the replicas never showed the same series: {scrapes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let mut expected = BTreeMap::from([
        ("earshot_observer_silent".to_owned(), 1.0),
        (
            "earshot_observer_silent_since_timestamp_seconds".to_owned(),
            last_ms as f64 / 1000.0,
        ),
        ("earshot_subscriptions_enabled".to_owned(), 2.0),
    ]);
    for (subscription, ended) in [(&healthy.id, "delivered"), (&missing.id, "missed")] {
        for state in ["delivered", "pending", "missed", "recovered", "unknown"] {
            let count = if state == ended { 12.0 } else { 0.0 };
            expected.insert(events(subscription, state), count);
        }
    }
    assert_eq!(
        shown, expected,
        "SQLite's series, on both replicas (the one that does not sweep too)"
    );
    drop((on_file, first, second));
    harness.emulator.shutdown().await;
}

/// `/healthz`'s status and body.
async fn healthz(monitor: &str) -> (u16, serde_json::Value) {
    let client = earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("an HTTP client");
    let response = client
        .get(format!("{monitor}/healthz"))
        .send()
        .await
        .expect("/healthz answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// `earshot_store_writable` of one checked scrape.
async fn writable(monitor: &str) -> Option<f64> {
    checked_metrics_at(monitor).await["earshot_store_writable"].as_f64()
}

/// Waits until `/healthz` answers `status` (asked every 100 ms), then
/// checks the gauge says the same; the body, and how long it took.
async fn until_health(monitor: &str, status: u16, gauge: f64) -> (serde_json::Value, Duration) {
    let started = Instant::now();
    loop {
        let (now, body) = healthz(monitor).await;
        if now == status {
            let took = started.elapsed();
            assert_eq!(writable(monitor).await, Some(gauge), "{body}");
            return (body, took);
        }
        assert!(
            started.elapsed() < FOLLOWS_WITHIN,
            "/healthz {now} {body} after {:?}, waiting for {status}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_be_written_turns_healthz_and_the_gauge_down_and_back_with_no_event() {
    let mut cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let (replica, replica_err) =
        observer(Some(&cluster), &url, &["--metrics-listen", "127.0.0.1:0"]);
    let monitor = monitor_of(&replica_err);
    let (body, _) = until_health(&monitor, 200, 1.0).await;
    assert_eq!(
        body,
        serde_json::json!({ "status": "ok", "store": "writable" })
    );

    // Read-only: every read still works, a write is refused.
    cluster
        .psql(
            "postgres",
            "ALTER SYSTEM SET default_transaction_read_only = on",
        )
        .expect("read-only set");
    cluster
        .psql("postgres", "SELECT pg_reload_conf()")
        .expect("reloaded");
    let (body, took) = until_health(&monitor, 503, 0.0).await;
    eprintln!("read-only: /healthz 503 after {took:?}: {body}");
    assert_eq!(body["status"], "unavailable", "{body}");
    assert_eq!(body["reason"], "store_not_writable", "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("read-only")),
        "{body}"
    );
    assert!(
        !body.to_string().contains(cluster.password()),
        "no password in /healthz: {body}"
    );
    cluster
        .psql(
            "postgres",
            "ALTER SYSTEM RESET default_transaction_read_only",
        )
        .expect("read-only reset");
    cluster
        .psql("postgres", "SELECT pg_reload_conf()")
        .expect("reloaded");
    let (_, took) = until_health(&monitor, 200, 1.0).await;
    eprintln!("writable again: /healthz 200 after {took:?}");

    // Stopped: nothing answers.
    tokio::task::block_in_place(|| cluster.stop_server());
    let (body, took) = until_health(&monitor, 503, 0.0).await;
    eprintln!("stopped: /healthz 503 after {took:?}: {body}");
    assert_eq!(body["reason"], "store_not_writable", "{body}");
    tokio::task::block_in_place(|| cluster.restart()).expect("the server starts again");
    let (body, took) = until_health(&monitor, 200, 1.0).await;
    eprintln!("restarted: /healthz 200 after {took:?}");
    assert_eq!(body["store"], "writable", "{body}");
    drop(replica);
}
