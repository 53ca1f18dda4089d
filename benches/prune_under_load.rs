//! Retention under load: `earshot store prune` removes ROWS old rows from
//! a store while the release binary's `earshot listen --store` files
//! RATE signed events a second, open loop (each request is sent at its
//! scheduled time whatever the answers before it, and its latency counts
//! from that time, so a stall shows in full). Interleaved, in the same
//! run, on the same store and the same observer: a reference window of
//! WINDOW seconds without a prune before each prune segment.
//!
//! The store is built first with plain SQL in big transactions: units of
//! an event (a call event body of about 600 bytes and its delivery
//! headers), its outcome row and its attempt, and one session per four
//! events, received from 41 to 31 days ago, evenly; 3.25 rows per unit.
//! Segment k runs `store prune --older-than (40 - k)d`, so each of the
//! SEGMENTS segments removes a tenth of them.
//!
//! Reported: per segment, the rows removed, how long it took, its batches
//! and the longest a batch held the write lock; the answer latency during
//! it and during the reference before it; at the end, every event the
//! observer acknowledged looked up in the store (nothing lost).
//!
//! Run: `cargo build --release && cargo bench --bench
//! prune_under_load -- [rows=10000000] [rate=5000] [window=20] [segments=10]
//! [dir=/tmp]` (the store takes about 2 KB per unit: 10 million rows need
//! about 7 GB in `dir`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support;

use support::{ChildGuard, isolated};

use chrono::Utc;
use rusqlite::{Connection, OpenFlags};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &str = "whsec_prune_bench_0123456789abcdefghijk";
const DAY_MS: i64 = 86_400_000;
/// Rows per unit: an event, its outcome row, its attempt, a quarter session.
const ROWS_PER_UNIT: f64 = 3.25;
/// Requests in flight at most (each on its own keep-alive connection).
const MAX_CONNECTIONS: usize = 256;
/// Units per seeding transaction.
const SEED_CHUNK: i64 = 100_000;

struct Options {
    rows: u64,
    rate: u64,
    window: u64,
    segments: u64,
    dir: PathBuf,
}

impl Options {
    fn parse() -> Result<Options, BoxError> {
        let mut options = Options {
            rows: 10_000_000,
            rate: 5_000,
            window: 20,
            segments: 10,
            dir: std::env::temp_dir(),
        };
        for (name, value) in support::key_values()? {
            match name.as_str() {
                "rows" => options.rows = value.parse()?,
                "rate" => options.rate = value.parse::<u64>()?.max(1),
                "window" => options.window = value.parse()?,
                "segments" => options.segments = value.parse::<u64>()?.clamp(1, 10),
                "dir" => options.dir = PathBuf::from(value),
                _ => return Err(format!("unknown option {name}").into()),
            }
        }
        Ok(options)
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let options = Options::parse()?;
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    let dir = tempfile::Builder::new()
        .prefix("earshot-prune-bench-")
        .tempdir_in(&options.dir)?;
    let db = dir.path().join("earshot.db");
    let units = (options.rows as f64 / ROWS_PER_UNIT).round() as i64;
    println!(
        "== seeding {} rows ({units} events, outcomes and attempts, {} sessions) ==",
        options.rows,
        units / 4
    );
    let started = Instant::now();
    seed(&db, units)?;
    let rows = count_rows(&db)?;
    println!(
        "seeded {rows} rows in {:.0} s; the store is {:.2} GB",
        started.elapsed().as_secs_f64(),
        store_bytes(&db) as f64 / 1e9
    );

    println!("== starting listen --store (its open checks the whole file) ==");
    let started = Instant::now();
    let (listen, url) = start_listen(&binary, dir.path(), &db)?;
    println!("listening after {:.0} s", started.elapsed().as_secs_f64());

    let load = Load::start(url, options.rate);
    // Warm up: connections, the page cache.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut segments = Vec::new();
    for k in 0..options.segments {
        load.window.store(reference(k), Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(options.window)).await;
        load.window.store(during(k), Ordering::Relaxed);
        let older_than = format!("{}d", 40 - k);
        let prune = prune(&binary, dir.path(), &db, &older_than).await?;
        println!(
            "  prune --older-than {older_than}: {} rows in {:.1} s",
            prune.removed, prune.seconds
        );
        segments.push((older_than, prune));
    }
    load.window
        .store(reference(options.segments), Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(options.window)).await;
    let samples = load.stop().await;
    drop(listen);

    report(&options, &segments, &samples);
    let acknowledged: Vec<&Sample> = samples.iter().filter(|s| s.ok).collect();
    let stored = stored_ids(&db)?;
    let lost = acknowledged
        .iter()
        .filter(|sample| !stored.contains(&sample.id))
        .count();
    println!(
        "acknowledged {} events, {} not 2xx; {lost} acknowledged events missing from the store; \
         {} seeded events left",
        acknowledged.len(),
        samples.len() - acknowledged.len(),
        seeded_left(&db)?
    );
    Ok(())
}

/// Window numbers: 0 the warm-up, odd a reference, even a prune segment.
fn reference(k: u64) -> usize {
    2 * k as usize + 1
}

fn during(k: u64) -> usize {
    2 * k as usize + 2
}

// ---------------------------------------------------------------------------
// The store

fn seed(db: &Path, units: i64) -> Result<(), BoxError> {
    drop(earshot_core::store::Store::open(db)?);
    let conn = Connection::open(db)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    let newest = Utc::now().timestamp_millis() - 31 * DAY_MS;
    let span = 10 * DAY_MS;
    let mut first = 0;
    while first < units {
        let last = (first + SEED_CHUNK).min(units) - 1;
        conn.execute_batch(&format!(
            "BEGIN;
             CREATE TEMP TABLE chunk AS
             WITH RECURSIVE n(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM n WHERE i < {last})
             SELECT i, {newest} - {span} + i * {span} / {units} AS at,
                    printf('call_%032x', i / 4) AS call,
                    printf('%08x-7d3a-4e6b-9c0f-%012x', i, i) AS id
             FROM n;
             INSERT INTO events (event_id, event, session_id, occurred_ms, received_ms,
                                 delivery_id, headers, body)
             SELECT id, 'call.ended', call, at, at, printf('%08x-dlv0-4000-8000-%012x', i, i),
                 printf('[[\"content-type\",\"application/json\"],[\"user-agent\",\"SVC-Webhooks/1.0\"],[\"x-svc-event\",\"call.ended\"],[\"x-svc-delivery-id\",\"%08x-dlv0-4000-8000-%012x\"],[\"x-svc-signature\",\"t=%d,v1=%064x\"]]',
                        i, i, at / 1000, i),
                 CAST(printf('{{\"event_id\":\"%s\",\"event\":\"call.ended\",\"timestamp\":\"%s\",\"call\":{{\"call_id\":\"%s\",\"session_id\":\"%s\",\"account_id\":4242,\"agent_id\":\"5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f\",\"status\":\"ended\",\"direction\":\"inbound\",\"from_number\":\"+1415%07d\",\"to_number\":\"+14155550100\",\"created_at\":\"%s\",\"ended_at\":\"%s\",\"recording_url\":\"https://svc-artifacts.s3.us-west-2.amazonaws.com/accounts/4242/calls/%s/recording.wav?X-Amz-Expires=3600&X-Amz-Signature=%064x\",\"transcript_url\":\"https://svc-artifacts.s3.us-west-2.amazonaws.com/accounts/4242/calls/%s/transcript.json?X-Amz-Expires=3600&X-Amz-Signature=%064x\"}}}}',
                        id, strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000, 'unixepoch'), call, call,
                        i % 10000000, strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000 - 300, 'unixepoch'),
                        strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000, 'unixepoch'), call, i, call, i)
                      AS BLOB)
             FROM chunk;
             INSERT OR IGNORE INTO sessions (session_id, kind, source, first_seen_ms,
                 last_event_ms, last_swept_ms, unsettled)
             SELECT call, 'call', 'observer', at, at, at, 0 FROM chunk WHERE i % 4 = 3;
             INSERT INTO event_outcomes (subscription_id, event_key, event_id, event, session_id,
                 session_no, occurred_ms, state, attempts, http_status_code, error_class,
                 settled_ms)
             SELECT 'db318dee-0000-4000-8000-000000000001', c.id, c.id, 'call.ended', c.call,
                    s.session_no, c.at, 'delivered', 1, 0, '', c.at
             FROM chunk c JOIN sessions s ON s.session_id = c.call;
             INSERT INTO deliveries (id, subscription_id, session_id, status, attempt_count,
                 http_status_code, created_ms, delivered_ms, record)
             SELECT printf('%08x-dlv0-4000-8000-%012x', i, i),
                    'db318dee-0000-4000-8000-000000000001', call, 'delivered', 1, 200, at, at,
                    printf('{{\"id\":\"%08x-dlv0-4000-8000-%012x\",\"subscription_id\":\"db318dee-0000-4000-8000-000000000001\",\"session_id\":\"%s\",\"status\":\"delivered\",\"attempt_count\":1,\"http_status_code\":200,\"error\":null,\"delivered_at\":\"%s\",\"next_retry_at\":null,\"created_at\":\"%s\"}}',
                           i, i, call, strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000, 'unixepoch'),
                           strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000, 'unixepoch'))
             FROM chunk;
             DROP TABLE chunk;
             COMMIT;"
        ))?;
        first = last + 1;
        if (first / SEED_CHUNK) % 10 == 0 || first == units {
            println!("  {first} / {units} units");
        }
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}

fn count_rows(db: &Path) -> Result<u64, BoxError> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut total = 0;
    for table in ["events", "event_outcomes", "deliveries", "sessions"] {
        let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })?;
        total += rows as u64;
    }
    Ok(total)
}

fn seeded_left(db: &Path) -> Result<i64, BoxError> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(conn.query_row(
        "SELECT count(*) FROM events WHERE event_id NOT LIKE 'load-%'",
        [],
        |row| row.get(0),
    )?)
}

fn stored_ids(db: &Path) -> Result<HashSet<String>, BoxError> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = conn.prepare("SELECT event_id FROM events WHERE event_id LIKE 'load-%'")?;
    let ids = statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

fn store_bytes(db: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|suffix| {
            let mut path = db.as_os_str().to_owned();
            path.push(suffix);
            std::fs::metadata(path).ok()
        })
        .map(|meta| meta.len())
        .sum()
}

// ---------------------------------------------------------------------------
// The observer and the prune

fn start_listen(binary: &Path, dir: &Path, db: &Path) -> Result<(ChildGuard, String), BoxError> {
    let mut command = isolated(binary, dir);
    command
        .args(["listen", "--secret", SECRET, "--store"])
        .arg(db);
    support::start_listen(command, Duration::from_secs(600))
}

/// One prune segment's figures, from its `--json` summary and the clock.
struct Prune {
    removed: u64,
    seconds: f64,
    batches: u64,
    longest_hold_ms: f64,
}

async fn prune(binary: &Path, dir: &Path, db: &Path, older_than: &str) -> Result<Prune, BoxError> {
    let mut command = isolated(binary, dir);
    command
        .args([
            "store",
            "prune",
            "--json",
            "--older-than",
            older_than,
            "--store",
        ])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let output = tokio::process::Command::from(command).output().await?;
    let seconds = started.elapsed().as_secs_f64();
    if !output.status.success() {
        return Err(format!("store prune exited {}", output.status).into());
    }
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    Ok(Prune {
        removed: summary["total"].as_u64().unwrap_or(0),
        seconds,
        batches: summary["batches"].as_u64().unwrap_or(0),
        longest_hold_ms: summary["longest_hold_ms"].as_f64().unwrap_or(0.0),
    })
}

// ---------------------------------------------------------------------------
// The load

/// One request: the window it was scheduled in, its latency from its
/// scheduled time, whether it was answered 2xx, its event id.
struct Sample {
    window: usize,
    latency: Duration,
    ok: bool,
    id: String,
}

struct Load {
    window: Arc<AtomicUsize>,
    stop: tokio::sync::watch::Sender<bool>,
    ticker: tokio::task::JoinHandle<()>,
    samples: Arc<Mutex<Vec<Sample>>>,
    in_flight: Arc<AtomicUsize>,
}

impl Load {
    /// Sends `rate` events a second to `url`, each at its scheduled time.
    fn start(url: String, rate: u64) -> Load {
        let window = Arc::new(AtomicUsize::new(0));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let http = earshot_http::client_builder()
            .no_proxy()
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        // At most this many requests (and connections) at once; a request
        // waiting for its turn is still timed from its scheduled slot.
        let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let ticker = tokio::spawn({
            let (window, samples, in_flight) = (window.clone(), samples.clone(), in_flight.clone());
            async move {
                let every = Duration::from_nanos(1_000_000_000 / rate);
                let started = tokio::time::Instant::now();
                let mut n: u64 = 0;
                loop {
                    let due = started + every * u32::try_from(n).unwrap_or(u32::MAX);
                    tokio::select! {
                        _ = tokio::time::sleep_until(due) => {}
                        _ = stopped.changed() => return,
                    }
                    // Every request due by now, each timed from its slot.
                    let now = tokio::time::Instant::now();
                    while started + every * u32::try_from(n).unwrap_or(u32::MAX) <= now {
                        let scheduled =
                            (started + every * u32::try_from(n).unwrap_or(u32::MAX)).into_std();
                        let (http, url, samples, in_flight, connections) = (
                            http.clone(),
                            url.clone(),
                            samples.clone(),
                            in_flight.clone(),
                            connections.clone(),
                        );
                        let window = window.load(Ordering::Relaxed);
                        in_flight.fetch_add(1, Ordering::Relaxed);
                        tokio::spawn(async move {
                            let turn = connections.acquire_owned().await;
                            let (id, ok) = send(&http, &url, n).await;
                            drop(turn);
                            let latency = scheduled.elapsed();
                            if let Ok(mut samples) = samples.lock() {
                                samples.push(Sample {
                                    window,
                                    latency,
                                    ok,
                                    id,
                                });
                            }
                            in_flight.fetch_sub(1, Ordering::Relaxed);
                        });
                        n += 1;
                    }
                }
            }
        });
        Load {
            window,
            stop,
            ticker,
            samples,
            in_flight,
        }
    }

    async fn stop(self) -> Vec<Sample> {
        let _ = self.stop.send(true);
        let _ = self.ticker.await;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Posts the `n`th event, signed now: its id and whether it got a 2xx.
async fn send(http: &reqwest::Client, url: &str, n: u64) -> (String, bool) {
    let id = format!("load-{n:012}");
    let call = format!("call_load_{:024x}", n / 2);
    let now = Utc::now();
    let body = format!(
        "{{\"event_id\":\"{id}\",\"event\":\"call.ended\",\"timestamp\":\"{}\",\"call\":{{\"call_id\":\"{call}\",\"session_id\":\"{call}\",\"account_id\":4242,\"agent_id\":\"5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f\",\"status\":\"ended\",\"direction\":\"inbound\",\"from_number\":\"+1415{:07}\",\"to_number\":\"+14155550100\",\"created_at\":\"{}\",\"ended_at\":\"{}\",\"recording_url\":\"https://svc-artifacts.s3.us-west-2.amazonaws.com/accounts/4242/calls/{call}/recording.wav?X-Amz-Expires=3600&X-Amz-Signature={n:064x}\",\"transcript_url\":null}}}}",
        now.to_rfc3339(),
        n % 10_000_000,
        now.to_rfc3339(),
        now.to_rfc3339(),
    );
    let header = earshot_core::signature::sign(SECRET.as_bytes(), now.timestamp(), body.as_bytes());
    let answer = http
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "SVC-Webhooks/1.0")
        .header("x-svc-event", "call.ended")
        .header("x-svc-delivery-id", format!("dlv-load-{n}"))
        .header("x-svc-signature", header)
        .body(body)
        .send()
        .await;
    let ok = match answer {
        Ok(response) => {
            let ok = response.status().is_success();
            let _ = response.bytes().await;
            ok
        }
        Err(_) => false,
    };
    (id, ok)
}

// ---------------------------------------------------------------------------
// The report

/// p50, p99, max in ms, and how many, of `latencies`.
fn stats(mut latencies: Vec<Duration>) -> (f64, f64, f64, usize) {
    latencies.sort_unstable();
    let at = |p: f64| {
        latencies
            .get(((latencies.len().saturating_sub(1)) as f64 * p).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (at(0.5), at(0.99), at(1.0), latencies.len())
}

fn of_window(samples: &[Sample], window: usize) -> Vec<Duration> {
    samples
        .iter()
        .filter(|sample| sample.window == window)
        .map(|sample| sample.latency)
        .collect()
}

fn report(options: &Options, segments: &[(String, Prune)], samples: &[Sample]) {
    println!(
        "== {} events/s into listen --store; reference windows of {} s before each prune segment ==",
        options.rate, options.window
    );
    println!(
        "{:<6} {:>10} {:>8} {:>9} {:>8} {:>9}   {:>27}   {:>27}",
        "older",
        "removed",
        "seconds",
        "rows/s",
        "batches",
        "max hold",
        "during prune p50/p99/max ms",
        "reference p50/p99/max ms"
    );
    let (mut during_all, mut reference_all) = (Vec::new(), Vec::new());
    let (mut removed, mut seconds) = (0u64, 0.0);
    for (k, (older_than, prune)) in segments.iter().enumerate() {
        let during_k = of_window(samples, during(k as u64));
        let reference_k = of_window(samples, reference(k as u64));
        during_all.extend(&during_k);
        reference_all.extend(&reference_k);
        removed += prune.removed;
        seconds += prune.seconds;
        let (d50, d99, dmax, dn) = stats(during_k);
        let (r50, r99, rmax, rn) = stats(reference_k);
        println!(
            "{older_than:<6} {:>10} {:>8.1} {:>9.0} {:>8} {:>7.1}ms   {d50:>6.1} {d99:>6.1} {dmax:>7.1} ({dn:>6})   {r50:>6.1} {r99:>6.1} {rmax:>7.1} ({rn:>6})",
            prune.removed,
            prune.seconds,
            prune.removed as f64 / prune.seconds.max(0.001),
            prune.batches,
            prune.longest_hold_ms,
        );
    }
    reference_all.extend(of_window(samples, reference(segments.len() as u64)));
    let (d50, d99, dmax, dn) = stats(during_all);
    let (r50, r99, rmax, rn) = stats(reference_all);
    println!(
        "all    {removed:>10} {seconds:>8.1} {:>9.0}                      {d50:>6.1} {d99:>6.1} {dmax:>7.1} ({dn:>6})   {r50:>6.1} {r99:>6.1} {rmax:>7.1} ({rn:>6})",
        removed as f64 / seconds.max(0.001)
    );
}
