//! `cargo build --release && cargo bench --bench forward [-- events=1000
//! rounds=3 rate=500]`: what `earshot listen --forward-to` adds to an
//! app's latency (targets: ≤ 2 ms p50, ≤ 10 ms p99 at 500 events/s), and
//! that every forwarded body is the bytes received.
//!
//! An app on 127.0.0.1 answers 200 at once and keeps the SHA-256 of every
//! body it gets. The release binary's `listen --forward-to APP` is sent
//! EVENTS signed `call.ended` events (made as `earshot trigger` makes
//! them, each new) at RATE a second, each on its own request, and the
//! same number straight to the app (the reference), interleaved ROUNDS
//! times. Latency is the sender's, request to answer; the forwarded
//! events' digests must all be among the app's.

mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use earshot_core::receiver::check::with_fields;
use earshot_core::signature;
use sha2::{Digest, Sha256};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &str = "whsec_bench_forward_secret_0123456789ab";

/// The app: 200 at once, every body's digest kept.
async fn app() -> Result<(String, Arc<Mutex<HashSet<Vec<u8>>>>), BoxError> {
    let digests: Arc<Mutex<HashSet<Vec<u8>>>> = Arc::default();
    let kept = digests.clone();
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let digest = Sha256::digest(&body).to_vec();
                kept.lock().map(|mut set| set.insert(digest)).ok();
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok((url, digests))
}

/// `count` new signed events: body and signature header.
fn events(count: usize) -> Result<Vec<(Vec<u8>, String)>, BoxError> {
    (0..count)
        .map(|_| {
            let made = with_fields(EventKind::CallEnded, chrono::Utc::now(), &[])?;
            let header = signature::sign(
                SECRET.as_bytes(),
                chrono::Utc::now().timestamp(),
                &made.bytes,
            );
            Ok((made.bytes, header))
        })
        .collect()
}

/// Sends `events` to `url` at `rate` a second, each on its own task: the
/// latencies in ms (sorted) and the answers that were not 200.
async fn flood(
    http: &reqwest::Client,
    url: &str,
    events: Vec<(Vec<u8>, String)>,
    rate: u64,
) -> (Vec<f64>, usize) {
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    let mut sends = Vec::new();
    for (body, header) in events {
        tick.tick().await;
        let request = http
            .post(url)
            .header("content-type", "application/json")
            .header("x-svc-event", "call.ended")
            .header("x-svc-signature", header)
            .body(body);
        sends.push(tokio::spawn(async move {
            let started = Instant::now();
            let ok = request.send().await.map(|answer| answer.status() == 200);
            (
                started.elapsed().as_secs_f64() * 1e3,
                matches!(ok, Ok(true)),
            )
        }));
    }
    let (mut latencies, mut failed) = (Vec::new(), 0);
    for send in sends {
        if let Ok((ms, ok)) = send.await {
            latencies.push(ms);
            failed += usize::from(!ok);
        }
    }
    latencies.sort_by(f64::total_cmp);
    (latencies, failed)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str, default: u64| -> u64 {
        args.iter()
            .find_map(|arg| arg.strip_prefix(&format!("{name}=")))
            .and_then(|text| text.parse().ok())
            .unwrap_or(default)
    };
    let (count, rounds, rate) = (
        value("events", 1000),
        value("rounds", 3),
        value("rate", 500),
    );
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (app_url, digests) = app().await?;
        let dir = tempfile::tempdir()?;
        let secret_file = dir.path().join("secret");
        std::fs::write(&secret_file, SECRET)?;
        let mut command = support::isolated(&binary, dir.path());
        command
            .args(["listen", "--secret-file"])
            .arg(&secret_file)
            .args(["--forward-to", &app_url]);
        let (_child, listen_url) = support::start_listen(command, Duration::from_secs(20))?;
        let http = earshot_http::client_builder().no_proxy().build()?;
        println!("| round | to | events | rate/s | p50 ms | p99 ms | not 200 |");
        println!("|---|---|---|---|---|---|---|");
        let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
        let mut sent_digests = HashSet::new();
        for round in 0..rounds {
            for via in [round % 2 == 1, round % 2 == 0] {
                let batch = events(usize::try_from(count)?)?;
                if via {
                    sent_digests.extend(batch.iter().map(|(body, _)| Sha256::digest(body).to_vec()));
                }
                let url = if via { listen_url.as_str() } else { app_url.as_str() };
                let (latencies, failed) = flood(&http, url, batch, rate).await;
                println!(
                    "| {round} | {} | {count} | {rate} | {:.2} | {:.2} | {failed} |",
                    if via { "listen --forward-to" } else { "the app" },
                    percentile(&latencies, 0.5),
                    percentile(&latencies, 0.99)
                );
                if via {
                    forwarded.extend(latencies);
                } else {
                    direct.extend(latencies);
                }
            }
        }
        direct.sort_by(f64::total_cmp);
        forwarded.sort_by(f64::total_cmp);
        let received = digests.lock().map(|set| set.clone()).unwrap_or_default();
        let missing = sent_digests.difference(&received).count();
        println!(
            "all rounds: the app {:.2} / {:.2} ms, through listen {:.2} / {:.2} ms (p50 / p99): \
             forwarding adds {:.2} / {:.2} ms; {} forwarded bodies, {missing} not received byte for byte",
            percentile(&direct, 0.5),
            percentile(&direct, 0.99),
            percentile(&forwarded, 0.5),
            percentile(&forwarded, 0.99),
            percentile(&forwarded, 0.5) - percentile(&direct, 0.5),
            percentile(&forwarded, 0.99) - percentile(&direct, 0.99),
            sent_digests.len()
        );
        Ok::<(), BoxError>(())
    })
}
