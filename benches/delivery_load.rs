//! Load benchmark for the emulator's delivery engine.
//!
//! Starts the emulator in-process, a minimal receiver on loopback, and
//! `SUBSCRIPTIONS` subscriptions to it; then emits `EVENTS` call events in
//! waves through the control route and waits until every delivery is
//! recorded. Reports sustained deliveries per second, p50/p99 attempt
//! latency (a record's `created_at` to `delivered_at`, i.e. sign + POST +
//! answer) and the process's peak RSS.
//!
//! Run: `cargo bench --bench delivery_load -- [EVENTS] [SUBSCRIPTIONS]`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod support;

use earshot_core::api::types::agents::{DeliveryStatus, EventKind, NewSubscription};
use earshot_core::redact::SecretString;

const KEY: &str = "bench_key_0123456789";
const SECRET: &str = "whsec_bench_secret_0123456789abcdefghij";
/// Control calls in flight at once.
const CONCURRENCY: usize = 32;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = support::args();
    let events: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let subscriptions: usize = args.next().map_or(Ok(5), |a| a.parse())?;

    let (receiver_url, received) = support::counting_receiver().await?;
    let (emulator, client) = support::emulator_with_client(KEY).await?;
    for _ in 0..subscriptions {
        client
            .create_subscription(&NewSubscription {
                url: receiver_url.clone(),
                events: vec![EventKind::CallConnected],
                secret: SecretString::new(SECRET),
                agent_id: None,
                enabled: None,
            })
            .await?;
    }

    let expected = events * subscriptions;
    println!(
        "emitting {events} call.connected events to {subscriptions} subscriptions ({expected} deliveries)"
    );
    let http = earshot_http::client_builder().no_proxy().build()?;
    let calls_url = format!("{}_emulator/calls", emulator.url());
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let call_ids = Arc::new(std::sync::Mutex::new(Vec::with_capacity(events)));
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (http, url, next, call_ids) = (
            http.clone(),
            calls_url.clone(),
            next.clone(),
            call_ids.clone(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < events {
                let answer: serde_json::Value = http
                    .post(&url)
                    .json(&serde_json::json!({ "outcome": "connected" }))
                    .send()
                    .await?
                    .json()
                    .await?;
                if let Some(id) = answer["call_id"].as_str() {
                    call_ids.lock().map_err(|_| "poisoned")?.push(id.to_owned());
                }
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for worker in workers {
        worker.await?.map_err(|error| error.to_string())?;
    }
    while received.load(Ordering::Relaxed) < expected {
        if started.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "only {} of {expected} deliveries after 120 s",
                received.load(Ordering::Relaxed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();

    // Attempt latency from the records (after the run, so reads do not
    // compete with the load).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ids = call_ids.lock().map_err(|_| "poisoned")?.clone();
    let mut latencies_us: Vec<i64> = Vec::with_capacity(expected);
    for id in ids.iter().step_by((ids.len() / 500).max(1)) {
        for record in client.list_deliveries(id).await? {
            if record.status == DeliveryStatus::Delivered
                && let Some(delivered) = record.delivered_at
            {
                latencies_us.push(
                    (delivered - record.created_at)
                        .num_microseconds()
                        .unwrap_or(0),
                );
            }
        }
    }
    latencies_us.sort_unstable();
    let percentile = |p: f64| latencies_us[((latencies_us.len() - 1) as f64 * p) as usize];

    println!(
        "deliveries       {expected} in {:.2} s",
        elapsed.as_secs_f64()
    );
    println!(
        "throughput       {:.0} deliveries/s",
        expected as f64 / elapsed.as_secs_f64()
    );
    println!(
        "attempt latency  p50 {:.2} ms, p99 {:.2} ms (sample of {} records)",
        percentile(0.50) as f64 / 1000.0,
        percentile(0.99) as f64 / 1000.0,
        latencies_us.len()
    );
    println!(
        "peak RSS         {} (whole process: emulator, receiver, load generator)",
        peak_rss()
    );
    emulator.shutdown().await;
    Ok(())
}

/// This process's peak RSS, or a note that it is unknown.
fn peak_rss() -> String {
    support::vm_hwm_kb("self")
        .map_or_else(|| "unknown (no /proc)".to_owned(), |kb| format!("{kb} kB"))
}
