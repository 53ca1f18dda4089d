//! `cargo bench --bench metrics [-- events=50000]`: the observer's `GET
//! /metrics` (target: under 10 ms with 1,000 subscriptions).
//!
//! The gauges are seeded from the realistic store (`store_scale/builder.rs`,
//! built on first use: its two subscriptions, the observer's and a
//! customer's with a bad day's failures) along the observer's own seed
//! path (`Store::open`, `totals::last_received_ms`,
//! `totals::subscription_totals`, then `Metrics::set_last_event_ms` and
//! `set_subscriptions`, what `listen --metrics-listen` does on start and
//! the sweep after each sweep, the read timed too, warm and with the
//! store's file evicted from the page cache first), so the per-subscription
//! counts come from the hour counts such a store really holds. Two cases:
//!
//! - the store as built (2 subscriptions): what an account has;
//! - the same store with 998 more subscriptions listed the way a sweep
//!   lists them (`deliveries::replace_subscriptions`, on a copy in memory
//!   when `/dev/shm` exists): the target's 1,000. Kept because the answer
//!   grows with the listed subscriptions alone (five series each, whatever
//!   their events) and the platform sets no limit on how many an account
//!   lists; the subscriptions added have no events, so the store read is
//!   the realistic one and the render the target's.
//!
//! The real endpoints (`observer::endpoints::router`, served by
//! `http_server::serve` on 127.0.0.1) answer over HTTP/1.1 keep-alive,
//! OpenMetrics (what Prometheus asks for) and the Prometheus text format.
//! The reference, interleaved in the same run on the same server: a static
//! answer of the same size (`/static`), i.e. what the HTTP round trip alone
//! costs. Median, p99 and max of 300 requests each after 30 warm-up
//! requests.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use earshot_core::api::types::agents::Subscription;
use earshot_core::observer::endpoints::{self, MonitorServer, Monitored};
use earshot_core::observer::health::StoreHealth;
use earshot_core::observer::metrics::{Covered, Format, Metrics};
use earshot_core::store::{Store, deliveries, totals};

// Only the store is used here; the rest is the builder's.
#[allow(dead_code)]
#[path = "store_scale/builder.rs"]
mod builder;
#[path = "store_scale/cache.rs"]
mod cache;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SUBSCRIPTIONS: usize = 1_000;
const ROUNDS: usize = 300;
const WARMUP: usize = 30;
const READS: usize = 20;
const TARGET_MS: f64 = 10.0;
const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;q=0.3";

struct Summary {
    median: f64,
    p99: f64,
    max: f64,
}

fn summary(samples: &mut [Duration]) -> Summary {
    samples.sort_unstable();
    let pick = |q: f64| {
        let index = (samples.len().saturating_sub(1) as f64 * q).round() as usize;
        samples
            .get(index)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    Summary {
        median: pick(0.5),
        p99: pick(0.99),
        max: pick(1.0),
    }
}

/// Lists `SUBSCRIPTIONS` subscriptions in the store at `db`, the built
/// store's own first, as a sweep lists them.
fn list_many(db: &Path) -> Result<(), BoxError> {
    let mut store = Store::open(db)?;
    let mut listed = builder::subscriptions()?;
    for n in listed.len()..SUBSCRIPTIONS {
        listed.push(serde_json::from_value::<Subscription>(serde_json::json!({
            "id": format!("{n:08x}-0000-4000-8000-000000000000"),
            "url": format!("https://receiver-{n}.example.com/hooks"),
            "events": ["session.started", "session.completed", "call.ended"],
            "enabled": n % 10 != 0,
        }))?);
    }
    deliveries::replace_subscriptions(&mut store, &listed, earshot_core::store::now_ms())?;
    Ok(())
}

/// The observer's seed read, `READS` times (each after evicting the
/// store's file from the page cache when `cold`): its times, and the last
/// read put into the gauges.
fn seed(db: &Path, metrics: &Metrics, cold: bool) -> Result<(Vec<Duration>, usize), BoxError> {
    let mut reads = Vec::with_capacity(READS);
    let mut read = (None, Vec::new());
    for _ in 0..READS {
        if cold {
            cache::evict(db);
        }
        let started = Instant::now();
        let store = Store::open(db)?;
        read = (
            totals::last_received_ms(&store)?,
            totals::subscription_totals(&store)?,
        );
        reads.push(started.elapsed());
    }
    let (last, subscriptions) = read;
    let listed = subscriptions.len();
    let events: i64 = subscriptions
        .iter()
        .flat_map(|totals| totals.events.iter())
        .sum();
    if events == 0 {
        return Err(format!("{}: the gauges would count no event", db.display()).into());
    }
    if let Some(last) = last {
        metrics.set_last_event_ms(last);
    }
    metrics.set_subscriptions(subscriptions);
    Ok((reads, listed))
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    accept: Option<&str>,
) -> Result<(Duration, usize), BoxError> {
    let started = Instant::now();
    let mut request = client.get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await?.error_for_status()?;
    let body = response.bytes().await?;
    Ok((started.elapsed(), body.len()))
}

/// Seeds the gauges from `db`, serves them and times the scrapes; with
/// `cold`, times the seed read with the store's file evicted too.
async fn case(db: &Path, label: &str, cold: bool) -> Result<f64, BoxError> {
    let health = Arc::new(StoreHealth::default());
    health.note_probe(Ok(()));
    let metrics = Arc::new(Metrics::new(Covered {
        store: Some((Some(db.to_owned()), health.clone())),
        sweep: true,
        ..Covered::default()
    }));
    let mut cold_reads = if cold {
        seed(db, &metrics, true)?.0
    } else {
        Vec::new()
    };
    let (mut reads, listed) = seed(db, &metrics, false)?;
    let mut renders = Vec::new();
    for _ in 0..100 {
        let started = Instant::now();
        let text = metrics.render(Format::OpenMetrics)?;
        renders.push(started.elapsed());
        std::hint::black_box(text);
    }
    let sample = metrics.render(Format::OpenMetrics)?;
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
    let server = MonitorServer::start("127.0.0.1:0".parse()?, router).await?;
    let base = server.url();
    let client = earshot_http::client_builder().no_proxy().build()?;
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
            let (took, size) = fetch(&client, url, *accept).await?;
            sizes[index] = size;
            if round >= WARMUP {
                timings[index].push(took);
            }
        }
    }
    server.stop().await;

    println!();
    println!(
        "GET /metrics, {label}: {listed} subscriptions ({series} series), 127.0.0.1, keep-alive (ms)"
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
        "| the seed read (open, last_received_ms, subscription_totals), warm | - | {:.2} | {:.2} | {:.2} |",
        read.median, read.p99, read.max
    );
    if !cold_reads.is_empty() {
        let read = summary(&mut cold_reads);
        println!(
            "| the seed read, the store's file evicted first (cold) | - | {:.2} | {:.2} | {:.2} |",
            read.median, read.p99, read.max
        );
    }
    Ok(timings[..2]
        .iter_mut()
        .map(|samples| summary(samples).p99)
        .fold(0.0, f64::max))
}

fn main() -> Result<(), BoxError> {
    let events = std::env::args()
        .find_map(|arg| arg.strip_prefix("events=").map(str::to_owned))
        .map_or(Ok(50_000), |text| text.parse())?;
    let built = builder::built(events)?;
    // The copy given more subscriptions: in memory when the machine has
    // it (no disk for a second store), else beside the built one.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir_in(built.parent().ok_or("the store has no directory")?)?
    };
    let many = dir.path().join("many.db");
    std::fs::copy(&built, &many)?;
    list_many(&many)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let typical = runtime.block_on(case(&built, "the realistic store", true))?;
    // In memory: no cold read to take.
    let worst = runtime.block_on(case(&many, "the same store listing 1,000", !shm.is_dir()))?;
    println!();
    println!(
        "target: p99 under {TARGET_MS} ms with {SUBSCRIPTIONS} subscriptions: {} (p99 {worst:.2} ms; {typical:.2} ms as built)",
        if worst < TARGET_MS { "met" } else { "MISSED" }
    );
    Ok(())
}
