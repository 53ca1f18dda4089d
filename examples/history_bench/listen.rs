//! 3. `listen`: `earshot listen --store` flooded, against `listen` without a store.

use super::BoxError;
use super::Options;
use super::Rng;
use super::SECRET;
use super::support::{self, ChildGuard};
use chrono::Utc;
use earshot_core::signature;
use rusqlite::Connection;
use rusqlite::OpenFlags;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

/// (VmRSS, VmHWM) in kB at 25, 50, 75, 100 % of a flood.
type Quarters = [Option<(u64, u64)>; 4];

/// One flood's figures.
struct Flood {
    with_store: bool,
    seconds: f64,
    ok: usize,
    other: usize,
    p50_ms: f64,
    p99_ms: f64,
    rows: Option<i64>,
    memory: Quarters,
}

/// Starts `earshot listen` (with the store at `db` or without), returns
/// the child and its URL; a thread keeps draining its stdout.
fn start_listen(
    binary: &Path,
    dir: &Path,
    db: Option<&Path>,
) -> Result<(ChildGuard, String), BoxError> {
    let mut command = support::isolated(binary, dir);
    command.args(["listen", "--secret", SECRET]);
    if let Some(db) = db {
        command.arg("--store").arg(db);
    }
    support::start_listen(command, Duration::from_secs(20))
}

async fn flood_once(
    binary: &Path,
    with_store: bool,
    bodies: Arc<Vec<(Vec<u8>, String)>>,
    conns: usize,
) -> Result<Flood, BoxError> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("listen.db");
    let (child, url) = start_listen(binary, dir.path(), with_store.then_some(db.as_path()))?;
    let pid = child.0.id().to_string();
    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(conns)
        .timeout(Duration::from_secs(30))
        .build()?;
    let total = bodies.len();
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let memory: Arc<Mutex<Quarters>> = Arc::new(Mutex::new([None; 4]));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..conns {
        let (http, url, bodies, next, done, memory, pid) = (
            http.clone(),
            url.clone(),
            bodies.clone(),
            next.clone(),
            done.clone(),
            memory.clone(),
            pid.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let (mut ok, mut other) = (0usize, 0usize);
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some((body, event)) = bodies.get(n) else {
                    break;
                };
                let sent = Instant::now();
                let header = signature::sign(SECRET.as_bytes(), Utc::now().timestamp(), body);
                let answer = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("user-agent", "SVC-Webhooks/1.0")
                    .header("X-SVC-Signature", header)
                    .header("X-SVC-Event", event.as_str())
                    .header("X-SVC-Delivery-Id", format!("dlv_bench_{n}"))
                    .body(body.clone())
                    .send()
                    .await;
                match answer {
                    Ok(response) => {
                        let success = response.status().is_success();
                        let _ = response.bytes().await;
                        if success {
                            ok += 1;
                        } else {
                            other += 1;
                        }
                    }
                    Err(_) => other += 1,
                }
                latencies.push(sent.elapsed());
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                for quarter in 1..=4 {
                    if finished == total * quarter / 4 {
                        let sample = support::vm_rss_kb(&pid).zip(support::vm_hwm_kb(&pid));
                        if let Ok(mut memory) = memory.lock() {
                            memory[quarter - 1] = sample;
                        }
                    }
                }
            }
            (latencies, ok, other)
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    let (mut ok, mut other) = (0, 0);
    for worker in workers {
        let (mut times, good, bad) = worker.await?;
        latencies.append(&mut times);
        ok += good;
        other += bad;
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len().saturating_sub(1)) as f64 * p) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    // Every 2xx was committed before it was sent: count while it runs.
    let rows = if with_store {
        let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        Some(conn.query_row("SELECT count(*) FROM events", [], |row| row.get(0))?)
    } else {
        None
    };
    drop(child);
    let memory = *memory.lock().map_err(|_| "poisoned")?;
    Ok(Flood {
        with_store,
        seconds,
        ok,
        other,
        p50_ms: percentile(0.5),
        p99_ms: percentile(0.99),
        rows,
        memory,
    })
}

pub(super) async fn bench_listen(options: &Options) -> Result<(), BoxError> {
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    println!(
        "== 3. listen throughput: {} signed events from {} keep-alive connections, {} rounds ==",
        options.flood, options.conns, options.rounds
    );
    println!(
        "{:<13} {:>9} {:>7} {:>9} {:>8} {:>8} {:>8}  RSS kB at 25/50/75/100 % (peak)",
        "variant", "req/s", "2xx", "not 2xx", "p50", "p99", "rows",
    );
    for _ in 0..options.rounds {
        for with_store in [true, false] {
            let mut rng = Rng(0x5EED);
            let bodies: Vec<(Vec<u8>, String)> = (0..options.flood)
                .map(|n| {
                    let (body, headers, _) = super::event_size::realistic_event(n, &mut rng);
                    let event = headers
                        .iter()
                        .find(|(name, _)| name == "x-svc-event")
                        .map(|(_, value)| value.clone())
                        .unwrap_or_default();
                    (body, event)
                })
                .collect();
            let flood = flood_once(&binary, with_store, Arc::new(bodies), options.conns).await?;
            let memory: Vec<String> = flood
                .memory
                .iter()
                .map(|sample| sample.map_or("?".into(), |(rss, _)| rss.to_string()))
                .collect();
            let peak = flood
                .memory
                .iter()
                .flatten()
                .map(|(_, hwm)| *hwm)
                .max()
                .map_or("?".into(), |kb| kb.to_string());
            let rows = flood.rows.map_or("-".into(), |rows| {
                let verdict = if rows == flood.ok as i64 { "=" } else { "≠" };
                format!("{rows}{verdict}")
            });
            println!(
                "{:<13} {:>9.0} {:>7} {:>9} {:>6.2}ms {:>6.2}ms {:>8}  {} ({peak})",
                if flood.with_store {
                    "--store"
                } else {
                    "no store"
                },
                (flood.ok + flood.other) as f64 / flood.seconds,
                flood.ok,
                flood.other,
                flood.p50_ms,
                flood.p99_ms,
                rows,
                memory.join("/"),
            );
        }
    }
    println!("(rows: events stored; '=' when equal to the 2xx answers)");
    println!();
    Ok(())
}
