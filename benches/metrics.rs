//! `cargo bench --bench metrics`: the observer's `GET /metrics` (target:
//! under 10 ms with 1,000 subscriptions).
//!
//! A store is filled with 1,000 listed subscriptions and 20 events each
//! across every state (20,000 `event_outcomes` rows); the per-subscription
//! gauges are read from it the way the background sweep does after each
//! sweep (`store::totals::subscription_totals`, timed too), so the answer
//! holds 5,000 `earshot_subscription_events` series beside every other
//! metric. The real endpoints (`observer::endpoints::router`, served by
//! `http_server::serve` on 127.0.0.1) answer over HTTP/1.1 keep-alive,
//! OpenMetrics (what Prometheus asks for) and the Prometheus text format.
//! The reference, interleaved in the same run on the same server: a
//! static answer of the same size (`/static`), i.e. what the HTTP round
//! trip alone costs. Median, p99 and max of 300 requests each after 30
//! warm-up requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use earshot_core::api::types::agents::Subscription;
use earshot_core::observer::endpoints::{self, MonitorServer, Monitored};
use earshot_core::observer::health::StoreHealth;
use earshot_core::observer::metrics::{Covered, Format, Metrics};
use earshot_core::store::outcomes::EventState;
use earshot_core::store::{Store, deliveries, totals};

const SUBSCRIPTIONS: usize = 1_000;
const EVENTS_EACH: usize = 20;
const ROUNDS: usize = 300;
const WARMUP: usize = 30;
const TARGET_MS: f64 = 10.0;
const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;q=0.3";

struct Summary {
    median: f64,
    p99: f64,
    max: f64,
}

fn summary(samples: &mut [Duration]) -> Summary {
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Summary {
        median: pick(0.5).as_secs_f64() * 1e3,
        p99: pick(0.99).as_secs_f64() * 1e3,
        max: pick(1.0).as_secs_f64() * 1e3,
    }
}

/// 1,000 subscriptions, listed as a sweep lists them, and 20 events each
/// spread over the five states.
fn fill(store: &mut Store, db: &std::path::Path) {
    let listed: Vec<Subscription> = (0..SUBSCRIPTIONS)
        .map(|n| {
            serde_json::from_value(serde_json::json!({
                "id": format!("{n:08x}-0000-4000-8000-000000000000"),
                "url": format!("https://receiver-{n}.example.com/hooks"),
                "events": ["session.started", "session.completed", "call.ended"],
                "enabled": n % 10 != 0,
            }))
            .expect("a subscription")
        })
        .collect();
    deliveries::replace_subscriptions(store, &listed, 1_795_000_000_000).expect("listed");
    let mut conn = rusqlite::Connection::open(db).expect("the store");
    let tx = conn.transaction().expect("a transaction");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO event_outcomes (subscription_id, event_key, event_id, event,
                     session_id, occurred_ms, state, attempts, http_status_code, error_class)
                 VALUES (?1, ?2, ?2, 'session.started', ?3, ?4, ?5, 1, 0, '')",
            )
            .expect("prepared");
        for (n, subscription) in listed.iter().enumerate() {
            for e in 0..EVENTS_EACH {
                let state = EventState::ALL[(n + e) % EventState::ALL.len()];
                insert
                    .execute(rusqlite::params![
                        subscription.id,
                        format!("{e:08x}-1111-4000-8000-{n:012x}"),
                        format!("ses_{e}"),
                        1_795_000_000_000_i64 + e as i64 * 1000,
                        state.as_str(),
                    ])
                    .expect("inserted");
            }
        }
    }
    tx.commit().expect("committed");
}

async fn fetch(client: &reqwest::Client, url: &str, accept: Option<&str>) -> (Duration, usize) {
    let started = Instant::now();
    let mut request = client.get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.expect("an answer");
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let body = response.bytes().await.expect("a body");
    (started.elapsed(), body.len())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("earshot.db");
    let mut store = Store::open(&db).expect("a store");
    fill(&mut store, &db);

    let mut reads = Vec::new();
    let mut subscriptions = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        subscriptions = totals::subscription_totals(&store).expect("read");
        reads.push(started.elapsed());
    }
    assert_eq!(subscriptions.len(), SUBSCRIPTIONS);

    let health = Arc::new(StoreHealth::default());
    health.note_probe(Ok(()));
    let metrics = Arc::new(Metrics::new(Covered {
        store: Some((db.clone(), health.clone())),
        sweep: true,
    }));
    metrics.set_subscriptions(subscriptions);
    let mut renders = Vec::new();
    for _ in 0..100 {
        let started = Instant::now();
        let text = metrics.render(Format::OpenMetrics).expect("rendered");
        renders.push(started.elapsed());
        std::hint::black_box(text);
    }
    let sample = metrics.render(Format::OpenMetrics).expect("rendered");
    let series = sample.lines().filter(|line| !line.starts_with('#')).count();
    let reference = axum::body::Bytes::from(vec![b'x'; sample.len()]);
    let router = endpoints::router(Arc::new(Monitored {
        metrics: metrics.clone(),
        store: Some(health),
    }))
    .route(
        "/static",
        get(move || {
            let body = reference.clone();
            async move { body }
        }),
    );
    let server = MonitorServer::start("127.0.0.1:0".parse().expect("an address"), router)
        .await
        .expect("serving");
    let base = server.url();
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let targets = [
        (
            "/metrics, OpenMetrics",
            format!("{base}/metrics"),
            Some(OPENMETRICS),
        ),
        ("/metrics, Prometheus text", format!("{base}/metrics"), None),
        (
            "reference: static, same size",
            format!("{base}/static"),
            None,
        ),
    ];
    let mut timings: Vec<Vec<Duration>> = vec![Vec::new(); targets.len()];
    let mut sizes = vec![0; targets.len()];
    for round in 0..WARMUP + ROUNDS {
        // A different first target each round: no order favours one.
        for step in 0..targets.len() {
            let index = (round + step) % targets.len();
            let (_, url, accept) = &targets[index];
            let (took, size) = fetch(&client, url, *accept).await;
            sizes[index] = size;
            if round >= WARMUP {
                timings[index].push(took);
            }
        }
    }
    server.stop().await;

    println!();
    println!(
        "GET /metrics with {SUBSCRIPTIONS} subscriptions ({series} series), 127.0.0.1, keep-alive (ms)"
    );
    println!();
    println!("| what | bytes | median | p99 | max |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, _, _), (samples, size)) in targets.iter().zip(timings.iter_mut().zip(&sizes)) {
        let s = summary(samples);
        println!(
            "| {name} | {size} | {:.2} | {:.2} | {:.2} |",
            s.median, s.p99, s.max
        );
    }
    let render = summary(&mut renders);
    println!(
        "| render only, OpenMetrics (no HTTP) | {} | {:.2} | {:.2} | {:.2} |",
        sample.len(),
        render.median,
        render.p99,
        render.max
    );
    let read = summary(&mut reads);
    println!(
        "| store read after a sweep (subscription_totals, {} rows) | - | {:.2} | {:.2} | {:.2} |",
        SUBSCRIPTIONS * EVENTS_EACH,
        read.median,
        read.p99,
        read.max
    );
    let worst = timings[..2]
        .iter_mut()
        .map(|samples| summary(samples).p99)
        .fold(0.0, f64::max);
    println!();
    println!(
        "target: p99 under {TARGET_MS} ms: {}",
        if worst < TARGET_MS { "met" } else { "MISSED" }
    );
}
