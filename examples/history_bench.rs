//! Benchmark of the incident-history store and the commands built on it.
//!
//! Four measurements, each printed as a small table:
//!
//! 1. `health`: a Health board refresh (`history::report::health`, what
//!    `earshot health` and the console run) on RECORDS delivery records over
//!    SESSIONS sessions and SUBS subscriptions, every outcome, spread over
//!    24 h; windows of 1 h and 24 h, RUNS runs each, interleaved with a
//!    reference that does the same work with a plain `GROUP BY` over
//!    `deliveries` (no trigger-kept `delivery_counts`); both must agree.
//! 2. `size`: bytes on disk per EVENTS observer events (emulator-shaped
//!    bodies) written through `store::writer::Writer`, the path of `listen`.
//! 3. `listen`: the release binary's `earshot listen --store` flooded with
//!    FLOOD signed events from CONNS keep-alive connections; requests/s,
//!    latency, rows stored vs 2xx answers, the child's RSS during the flood;
//!    interleaved, ROUNDS times, with `listen` without `--store`.
//! 4. `sweep`: SWEEP sessions created on an in-process emulator, one
//!    subscription to a local receiver answering 200, swept with a budget of
//!    20,000 requests until nothing is due, then swept once more.
//!
//! Run: `cargo build --release && cargo run --release --example history_bench [name=value …]`
//! with names (defaults) records=1000000 sessions=100000 subs=20 runs=20
//! events=100000 flood=50000 conns=32 rounds=2 sweep=10000 and
//! only=health,size,listen,sweep.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support;

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use earshot::api::types::agents::{
    CallObject, DeliveryRecord, DeliveryStatus, EventKind, EventObject, NewSubscription,
    SessionObject, Subscription, WebhookEvent,
};
use earshot::history::{self, report::SubscriptionHealth};
use earshot::redact::SecretString;
use earshot::signature;
use earshot::store::events::ObservedEvent;
use earshot::store::writer::Writer;
use earshot::store::{self, Store, deliveries, health, sessions};
use rusqlite::{Connection, OpenFlags};
use serde_json::Map;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const KEY: &str = "bench_key_0123456789";
const SECRET: &str = "whsec_bench_secret_0123456789abcdefghij";
const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// The sizes of the run, from `name=value` arguments.
struct Options {
    records: usize,
    sessions: usize,
    subs: usize,
    runs: usize,
    events: usize,
    flood: usize,
    conns: usize,
    rounds: usize,
    sweep: usize,
    only: Vec<String>,
}

impl Options {
    fn parse() -> Result<Options, BoxError> {
        let mut options = Options {
            records: 1_000_000,
            sessions: 100_000,
            subs: 20,
            runs: 20,
            events: 100_000,
            flood: 50_000,
            conns: 32,
            rounds: 2,
            sweep: 10_000,
            only: ["health", "size", "listen", "sweep"]
                .map(String::from)
                .to_vec(),
        };
        for argument in std::env::args().skip(1) {
            let (name, value) = argument
                .split_once('=')
                .ok_or_else(|| format!("expected name=value, got {argument:?}"))?;
            let number = || value.parse::<usize>().map(|n| n.max(1));
            match name {
                "records" => options.records = number()?,
                "sessions" => options.sessions = number()?,
                "subs" => options.subs = number()?,
                "runs" => options.runs = number()?,
                "events" => options.events = number()?,
                "flood" => options.flood = number()?,
                "conns" => options.conns = number()?,
                "rounds" => options.rounds = number()?,
                "sweep" => options.sweep = number()?,
                "only" => options.only = value.split(',').map(String::from).collect(),
                _ => return Err(format!("unknown option {name}").into()),
            }
        }
        Ok(options)
    }

    fn wants(&self, part: &str) -> bool {
        self.only.iter().any(|only| only == part)
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let options = Options::parse()?;
    if options.wants("health") {
        bench_health(&options)?;
    }
    if options.wants("size") {
        bench_event_size(&options).await?;
    }
    if options.wants("listen") {
        bench_listen(&options).await?;
    }
    if options.wants("sweep") {
        bench_sweep(&options).await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Shared bits

/// A small deterministic generator (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    fn hex32(&mut self) -> String {
        format!("{:016x}{:016x}", self.next(), self.next())
    }
}

fn at(ms: i64) -> DateTime<FixedOffset> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .fixed_offset()
}

/// Median, p90 and max of `samples`, in milliseconds.
fn spread(samples: &mut [Duration]) -> (f64, f64, f64) {
    samples.sort_unstable();
    let pick = |p: f64| {
        let index = ((samples.len().saturating_sub(1)) as f64 * p).round() as usize;
        samples.get(index).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (pick(0.5), pick(0.9), pick(1.0))
}

/// Bytes of the store file plus its WAL, after a checkpoint.
fn store_bytes(path: &Path) -> Result<(u64, u64), BoxError> {
    let conn = Connection::open(path)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    drop(conn);
    let db = std::fs::metadata(path)?.len();
    let mut wal_path = path.as_os_str().to_owned();
    wal_path.push("-wal");
    let wal = std::fs::metadata(&wal_path).map_or(0, |m| m.len());
    Ok((db, wal))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------
// 1. Health refresh

/// One seeded attempt's outcome: status, code, error, retry after (min).
fn outcome(
    rng: &mut Rng,
) -> (
    DeliveryStatus,
    Option<u16>,
    Option<&'static str>,
    Option<i64>,
) {
    match rng.below(100) {
        0..60 => (DeliveryStatus::Delivered, Some(200), None, None),
        60..70 => (
            DeliveryStatus::Failed,
            Some(401),
            Some("HTTP 401: invalid signature"),
            None,
        ),
        70..78 => (
            DeliveryStatus::Failed,
            Some(500),
            Some("HTTP 500: internal server error"),
            Some(1 + rng.below(60) as i64),
        ),
        78..84 => (
            DeliveryStatus::Failed,
            None,
            Some("timeout: no answer within 15 s"),
            Some(1 + rng.below(60) as i64),
        ),
        84..90 => (
            DeliveryStatus::Failed,
            None,
            Some("connection error: Connection refused (os error 111)"),
            Some(1 + rng.below(60) as i64),
        ),
        90..95 => (DeliveryStatus::Pending, None, None, None),
        _ => (
            DeliveryStatus::Failed,
            Some(404),
            Some("HTTP 404: not found"),
            None,
        ),
    }
}

/// `per_session` attempts of one session, created within 24 h before `now`.
fn seeded_session(
    index: usize,
    per_session: usize,
    subs: &[Subscription],
    now: i64,
    rng: &mut Rng,
) -> (String, Vec<DeliveryRecord>) {
    let session_id = format!("ses_{}", rng.hex32());
    let start = now - 1 - rng.below(24 * HOUR_MS as u64 - MINUTE_MS as u64) as i64;
    let records = (0..per_session)
        .map(|attempt| {
            let subscription = &subs[rng.below(subs.len() as u64) as usize];
            let created = start + (attempt as i64) * 1_500 + rng.below(1_000) as i64;
            let (status, code, error, retry_minutes) = outcome(rng);
            let delivered = status == DeliveryStatus::Delivered;
            DeliveryRecord {
                id: format!("dlv_{index:07}_{attempt:02}_{}", rng.hex32()),
                subscription_id: subscription.id.clone(),
                session_id: session_id.clone(),
                status,
                attempt_count: 1 + rng.below(3) as u32,
                http_status_code: code,
                error: error.map(str::to_owned),
                delivered_at: delivered.then(|| at(created + 40 + rng.below(400) as i64)),
                next_retry_at: retry_minutes.map(|minutes| at(created + minutes * MINUTE_MS)),
                created_at: at(created),
                extra: Map::new(),
            }
        })
        .collect();
    (session_id, records)
}

fn seeded_subscriptions(count: usize) -> Vec<Subscription> {
    (0..count)
        .map(|i| Subscription {
            id: format!("{:08x}-7d3a-4e6b-9c0f-{:012x}", 0x5f2b_8c00 + i, i),
            url: format!("https://hooks-{i}.example.com/svc/voice-agent"),
            events: vec!["session.started".into(), "session.completed".into()],
            agent_id: None,
            enabled: i % 7 != 6,
            secret_version: 1,
            extra: Map::new(),
        })
        .collect()
}

/// An outcome bucket: subscription, status, code (0 for none), error class.
type Bucket = (String, String, i64, String);

/// What the reference computes: per bucket the count and newest attempt;
/// per subscription the retries still due.
struct Reference {
    buckets: BTreeMap<Bucket, (i64, i64)>,
    totals: BTreeMap<String, [i64; 4]>,
}

/// The same board without `delivery_counts`: the subscription list, one
/// `GROUP BY` over `deliveries` for the window (to the minute, as the
/// board counts), the retries due, folded into per-subscription totals.
fn reference_health(conn: &Connection, since: i64, now: i64) -> rusqlite::Result<Reference> {
    let mut listed = conn.prepare_cached("SELECT id FROM subscriptions")?;
    let mut totals: BTreeMap<String, [i64; 4]> = listed
        .query_map([], |row| row.get::<_, String>(0))?
        .map(|id| id.map(|id| (id, [0; 4])))
        .collect::<rusqlite::Result<_>>()?;
    let mut grouped = conn.prepare_cached(
        "SELECT subscription_id, status, coalesce(http_status_code, 0),
                CASE WHEN http_status_code IS NOT NULL OR error IS NULL THEN ''
                     WHEN error LIKE 'timeout%' THEN 'timeout'
                     WHEN error LIKE 'connection error%' THEN 'connection error'
                     ELSE substr(error, 1, 8) END,
                count(*), max(created_ms)
         FROM deliveries WHERE created_ms >= ?1
         GROUP BY 1, 2, 3, 4",
    )?;
    let mut buckets = BTreeMap::new();
    let rows = grouped.query_map([since.div_euclid(MINUTE_MS) * MINUTE_MS], |row| {
        Ok((
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?),
            (row.get(4)?, row.get(5)?),
        ))
    })?;
    for row in rows {
        let (bucket, counted): (Bucket, (i64, i64)) = row?;
        if let Some(total) = totals.get_mut(&bucket.0) {
            let slot = match bucket.1.as_str() {
                "delivered" => 0,
                "pending" => 2,
                _ => 1,
            };
            total[slot] += counted.0;
        }
        buckets.insert(bucket, counted);
    }
    let mut due = conn.prepare_cached(
        "SELECT subscription_id, count(*) FROM deliveries
         WHERE next_retry_ms IS NOT NULL AND next_retry_ms > ?1 GROUP BY subscription_id",
    )?;
    let rows = due.query_map([now], |row| Ok((row.get::<_, String>(0)?, row.get(1)?)))?;
    for row in rows {
        let (id, count) = row?;
        if let Some(total) = totals.get_mut(&id) {
            total[3] = count;
        }
    }
    Ok(Reference { buckets, totals })
}

/// Fails unless the board and the reference counted the same attempts.
fn check_agree(
    store: &Store,
    board: &[SubscriptionHealth],
    reference: &Reference,
    since: i64,
) -> Result<(), BoxError> {
    let kept: BTreeMap<Bucket, (i64, i64)> = health::outcomes_since(store, since)?
        .into_iter()
        .map(|o| {
            let code = i64::from(o.http_status_code.unwrap_or(0));
            (
                (o.subscription_id, o.status, code, o.error_class),
                (o.count, o.last_ms),
            )
        })
        .collect();
    if kept != reference.buckets {
        return Err("delivery_counts and the GROUP BY reference disagree".into());
    }
    for row in board {
        let total = reference
            .totals
            .get(&row.id)
            .ok_or("a row the reference lacks")?;
        let grouped: i64 = row.failures.iter().map(|group| group.count).sum();
        let board_total = [row.delivered, row.failed, row.pending, row.retries_due];
        if board_total != *total || grouped != row.failed {
            return Err(format!(
                "{}: board {board_total:?} (grouped failures {grouped}) vs reference {total:?}",
                row.id
            )
            .into());
        }
    }
    if board.len() != reference.totals.len() {
        return Err("the board and the reference list different subscriptions".into());
    }
    Ok(())
}

fn bench_health(options: &Options) -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("health.db");
    let mut store = Store::open(&path)?;
    let now = store::now_ms();
    let subs = seeded_subscriptions(options.subs);
    deliveries::replace_subscriptions(&mut store, &subs, now)?;
    let per_session = (options.records / options.sessions).max(1);
    println!(
        "== 1. Health refresh: {} records, {} sessions, {} subscriptions, 24 h ==",
        per_session * options.sessions,
        options.sessions,
        subs.len()
    );

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeding = Instant::now();
    const SESSIONS_PER_BATCH: usize = 2_000;
    let mut first = 0;
    while first < options.sessions {
        let last = (first + SESSIONS_PER_BATCH).min(options.sessions);
        let batch: Vec<(String, Vec<DeliveryRecord>)> = (first..last)
            .map(|index| seeded_session(index, per_session, &subs, now, &mut rng))
            .collect();
        let view: Vec<(&str, &[DeliveryRecord])> = batch
            .iter()
            .map(|(id, records)| (id.as_str(), records.as_slice()))
            .collect();
        deliveries::record_sweeps(&mut store, &view, now)?;
        first = last;
    }
    let seeding = seeding.elapsed();
    let stored = deliveries::count(&store)?;
    let (db, wal) = store_bytes(&path)?;
    println!(
        "seeded           {stored} records in {:.1} s ({:.0} records/s), store {:.1} MiB (+ WAL {:.1} MiB), {:.0} B/record",
        seeding.as_secs_f64(),
        stored as f64 / seeding.as_secs_f64(),
        mib(db),
        mib(wal),
        (db + wal) as f64 / stored.max(1) as f64,
    );

    let reference_conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    println!(
        "{:<8} {:>9} {:>11} {:>9} {:>9} {:>9} {:>24}",
        "window", "attempts", "variant", "median", "p90", "max", "runs"
    );
    for (label, window) in [("1 h", HOUR_MS), ("24 h", 24 * HOUR_MS)] {
        let since = now - window;
        let mut board_times = Vec::with_capacity(options.runs);
        let mut reference_times = Vec::with_capacity(options.runs);
        let mut attempts = 0;
        for run in 0..options.runs {
            let started = Instant::now();
            let board = history::report::health(&store, since, now)?;
            board_times.push(started.elapsed());
            let started = Instant::now();
            let reference = reference_health(&reference_conn, since, now)?;
            reference_times.push(started.elapsed());
            if run == 0 {
                check_agree(&store, &board, &reference, since)?;
                attempts = board
                    .iter()
                    .map(|row| row.delivered + row.failed + row.pending)
                    .sum::<i64>();
            }
        }
        for (variant, times) in [
            ("counts", &mut board_times),
            ("GROUP BY", &mut reference_times),
        ] {
            let (median, p90, max) = spread(times);
            println!(
                "{label:<8} {attempts:>9} {variant:>11} {median:>7.2}ms {p90:>7.2}ms {max:>7.2}ms {:>24}",
                format!("{} (interleaved, agree)", times.len())
            );
        }
    }
    println!();
    Ok(())
}

// ---------------------------------------------------------------------------
// 2. Store size per observer event

/// The `n`th event of an emulator-shaped stream: sessions (started,
/// completed) and calls (connected, ended) alternate; the exact body bytes
/// and the headers a delivery carries.
fn realistic_event(n: usize, rng: &mut Rng) -> (Vec<u8>, Vec<(String, String)>, String) {
    let conversation = n / 2;
    let ending = n % 2 == 1;
    let now = Utc::now().fixed_offset();
    let agent_id = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f".to_owned();
    let (kind, object) = if conversation.is_multiple_of(2) {
        let session_id = format!("ses_{:032x}", conversation as u128 * 0x9E37_79B9);
        let session = SessionObject {
            s3_prefix: (!ending).then(|| format!("accounts/4242/sessions/{session_id}/")),
            session_id,
            account_id: 4242,
            agent_id,
            status: if ending { "completed" } else { "created" }.into(),
            duration_seconds: ending.then_some(73.418),
            public_close_reason: ending.then(|| "client_disconnected".into()),
            created_at: now,
            ended_at: ending.then_some(now),
            extra: Map::new(),
        };
        let kind = if ending {
            EventKind::SessionCompleted
        } else {
            EventKind::SessionStarted
        };
        (kind, EventObject::Session(session))
    } else {
        let call_id = format!("call_{:032x}", conversation as u128 * 0x9E37_79B9);
        let (recording_signature, transcript_signature) = (rng.hex32(), rng.hex32());
        let artifact = |what: &str, signature: &str| {
            format!(
                "https://svc-artifacts.s3.us-west-2.amazonaws.com/accounts/4242/calls/{call_id}/{what}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature={signature}"
            )
        };
        let call = CallObject {
            session_id: call_id.clone(),
            account_id: 4242,
            agent_id,
            status: if ending { "ended" } else { "connected" }.into(),
            direction: "inbound".into(),
            from_number: "+15555550123".into(),
            to_number: "+15555550188".into(),
            created_at: now,
            ended_at: ending.then_some(now),
            recording_url: ending.then(|| artifact("recording.wav", &recording_signature)),
            transcript_url: ending.then(|| artifact("transcript.json", &transcript_signature)),
            call_id,
            extra: Map::new(),
        };
        let kind = if ending {
            EventKind::CallEnded
        } else {
            EventKind::CallConnected
        };
        (kind, EventObject::Call(call))
    };
    let event = WebhookEvent {
        event_id: uuid::Uuid::new_v4().to_string(),
        event: kind.as_str().to_owned(),
        timestamp: now,
        object,
    };
    let body = serde_json::to_vec(&event).unwrap_or_default();
    let delivery_id = format!("dlv_{}", rng.hex32());
    let headers = vec![
        ("content-type".into(), "application/json".into()),
        ("user-agent".into(), "SVC-Webhooks/1.0".into()),
        (
            "x-svc-signature".into(),
            signature::sign(SECRET.as_bytes(), now.timestamp(), &body),
        ),
        ("x-svc-event".into(), kind.as_str().to_owned()),
        ("x-svc-delivery-id".into(), delivery_id.clone()),
        ("accept".into(), "*/*".into()),
        ("host".into(), "127.0.0.1:8787".into()),
        ("content-length".into(), body.len().to_string()),
    ];
    (body, headers, delivery_id)
}

async fn bench_event_size(options: &Options) -> Result<(), BoxError> {
    println!(
        "== 2. Store size: {} observer events through the writer ==",
        options.events
    );
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("events.db");
    let (writer, thread) = Writer::start(Store::open(&path)?)?;
    let next = Arc::new(AtomicUsize::new(0));
    let body_bytes = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..64u64 {
        let (writer, next, body_bytes) = (writer.clone(), next.clone(), body_bytes.clone());
        let total = options.events;
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0xA5A5_0000 + task);
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return Ok::<_, BoxError>(());
                }
                let (body, headers, delivery_id) = realistic_event(n, &mut rng);
                body_bytes.fetch_add(body.len(), Ordering::Relaxed);
                let event = ObservedEvent::from_delivery(
                    &body,
                    headers,
                    Some(delivery_id),
                    store::now_ms(),
                )
                .ok_or("not a voice-agent event")?;
                writer.write(event).await?;
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    drop(writer);
    thread.join().map_err(|_| "the writer thread panicked")?;
    let elapsed = started.elapsed();
    let rows = {
        let store = Store::open(&path)?;
        store::events::count(&store)?
    };
    let (db, wal) = store_bytes(&path)?;
    let bodies = body_bytes.load(Ordering::Relaxed) as f64 / options.events as f64;
    println!(
        "{:>9} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "events", "body avg", "db", "wal", "per event", "write rate"
    );
    println!(
        "{rows:>9} {:>10.0} B {:>8.1} MiB {:>10} B {:>10.0} B {:>8.0} ev/s",
        bodies,
        mib(db),
        wal,
        (db + wal) as f64 / rows.max(1) as f64,
        rows as f64 / elapsed.as_secs_f64(),
    );
    println!(
        "per 100,000 events: {:.1} MiB",
        mib(((db + wal) as f64 / rows.max(1) as f64 * 100_000.0) as u64)
    );
    println!();
    Ok(())
}

// ---------------------------------------------------------------------------
// 3. `earshot listen --store` throughput

/// Kills the child if the benchmark stops early.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    let mut command = Command::new(binary);
    command
        .args(["listen", "--secret", SECRET])
        .env("EARSHOT_CONFIG", dir.join("no-config.toml"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("EARSHOT_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(db) = db {
        command.arg("--store").arg(db);
    }
    let mut child = ChildGuard(command.spawn()?);
    let stdout = child.0.stdout.take().ok_or("no stdout")?;
    let (first_line, line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = first_line.send(first);
        }
        for _ in lines.map_while(Result::ok) {}
    });
    let line = line
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| "listen printed no `listening on` line within 20 s")?;
    let url = line
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line {line:?}"))?
        .trim()
        .to_owned();
    Ok((child, url))
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

async fn bench_listen(options: &Options) -> Result<(), BoxError> {
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
                    let (body, headers, _) = realistic_event(n, &mut rng);
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

// ---------------------------------------------------------------------------
// 4. Sweep of many sessions

async fn bench_sweep(options: &Options) -> Result<(), BoxError> {
    const BUDGET: usize = 20_000;
    const CONCURRENCY: usize = 32;
    println!(
        "== 4. Sweep: {} sessions, one subscription, budget {BUDGET} ==",
        options.sweep
    );
    let (receiver_url, received) = support::counting_receiver().await?;
    let (emulator, client) = support::emulator_with_client(KEY).await?;
    client
        .create_subscription(&NewSubscription {
            url: receiver_url,
            events: vec![EventKind::SessionStarted, EventKind::SessionCompleted],
            secret: SecretString::new(SECRET),
            agent_id: None,
            enabled: None,
        })
        .await?;

    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?;
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    let next = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(Mutex::new(Vec::with_capacity(options.sweep)));
    let creating = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (http, base, next, ids, total) = (
            http.clone(),
            base.clone(),
            next.clone(),
            ids.clone(),
            options.sweep,
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let answer: serde_json::Value = http
                    .post(format!("{base}/_emulator/sessions"))
                    .json(&serde_json::json!({}))
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?;
                let id = answer["session_id"]
                    .as_str()
                    .ok_or("no session_id")?
                    .to_owned();
                http.post(format!("{base}/_emulator/sessions/{id}/complete"))
                    .send()
                    .await?
                    .error_for_status()?;
                ids.lock().map_err(|_| "poisoned")?.push(id);
            }
            Ok::<_, BoxError>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let expected = options.sweep * 2;
    while received.load(Ordering::Relaxed) < expected {
        if creating.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {} of {expected} deliveries after 300 s",
                received.load(Ordering::Relaxed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The receiver has answered every attempt; let the engine record them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "setup            {} sessions created and completed, {expected} deliveries answered 200, in {:.1} s",
        options.sweep,
        creating.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir()?;
    let mut store = Store::open(&dir.path().join("sweep.db"))?;
    let ids = ids.lock().map_err(|_| "poisoned")?.clone();
    sessions::add(&mut store, &ids, sessions::Source::Added, store::now_ms())?;
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11}",
        "sweep", "requests", "sessions", "left due", "seconds", "sessions/s", "req/session"
    );
    let mut pass = 0;
    loop {
        pass += 1;
        let started = Instant::now();
        let report = history::sweep::sweep(&client, &mut store, BUDGET).await?;
        let seconds = started.elapsed().as_secs_f64();
        let label = if report.sessions_swept == 0 {
            "settled again".to_owned()
        } else {
            format!("pass {pass}")
        };
        println!(
            "{label:<14} {:>9} {:>9} {:>9} {seconds:>9.2} {:>10.0} {:>11}",
            report.requests,
            report.sessions_swept,
            report.left_for_later,
            report.sessions_swept as f64 / seconds,
            if report.sessions_swept == 0 {
                "-".to_owned()
            } else {
                format!(
                    "{:.3}",
                    report.requests as f64 / report.sessions_swept as f64
                )
            },
        );
        if let Some(stopped) = report.stopped {
            return Err(format!("the sweep stopped: {stopped}").into());
        }
        if report.sessions_swept == 0 || pass >= 10 {
            break;
        }
    }
    println!(
        "stored           {} delivery records for {} sessions",
        deliveries::count(&store)?,
        sessions::count(&store)?
    );
    emulator.shutdown().await;
    println!();
    Ok(())
}
