//! Whole-process filing (`listen`): the release binary's `earshot listen
//! --store` flooded with FLOOD signed events (the builder's bodies and
//! headers, new events of the same mix) from CONNS keep-alive
//! connections, filing into a copy of the realistic store, into a new
//! store given its two subscriptions (so each event files the same rows),
//! and with no store (the reference), interleaved ROUNDS times (the two
//! stores taking turns going first): requests/s, latency, rows stored
//! against 2xx answers, the child's RSS during the flood; then each
//! store's median rate and their ratio, with each round's. `listen`
//! checks every page of its store a moment after it starts (and then
//! daily); with `settled=1` each flood waits for that check to end (how
//! long it took is shown), so it measures filing as an observer does it
//! the rest of the day.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use earshot_core::signature;
use earshot_core::store::{Store, deliveries};
use rusqlite::{Connection, OpenFlags};

use super::builder::{LIVE_MS, Planned, plan, subscriptions};
use super::support::{self, ChildGuard};
use super::timing::median;
use super::{BoxError, SECRET};

fn events_in(db: &Path) -> Result<i64, BoxError> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(conn.query_row("SELECT count(*) FROM events", [], |row| row.get(0))?)
}

/// (VmRSS, VmHWM) in kB at 25, 50, 75, 100 % of a flood.
type Quarters = [Option<(u64, u64)>; 4];

/// Where `listen` files what it takes.
#[derive(Clone, Copy, PartialEq)]
enum Where {
    /// A copy of the realistic store.
    Built,
    /// A new store.
    Empty,
    /// No store (the reference).
    Nothing,
}

impl Where {
    fn label(self) -> &'static str {
        match self {
            Where::Built => "--store built",
            Where::Empty => "--store empty",
            Where::Nothing => "no store",
        }
    }
}

/// One flood's figures.
struct Flood {
    into: Where,
    seconds: f64,
    ok: usize,
    other: usize,
    p50_ms: f64,
    p99_ms: f64,
    rows: Option<i64>,
    memory: Quarters,
    /// How long the start-up check ran before the flood (`settled=1`).
    checked: Option<Duration>,
}

/// What `listen` says on stderr when its check of the store has ended.
const CHECK_ENDED: &str = "store check:";

/// Starts `earshot listen` (with the store at `db` or without), returns
/// the child and its URL, once its start-up check of the store has ended
/// if `settled` (and how long that took); a thread keeps draining its
/// stdout.
fn start_listen(
    binary: &Path,
    dir: &Path,
    db: Option<&Path>,
    settled: bool,
) -> Result<(ChildGuard, String, Option<Duration>), BoxError> {
    let mut command = support::isolated(binary, dir);
    command.args(["listen", "--secret", SECRET]);
    let Some(db) = db else {
        let (child, url) = support::start_listen(command, Duration::from_secs(20))?;
        return Ok((child, url, None));
    };
    command.arg("--store").arg(db);
    if !settled {
        let (child, url) = support::start_listen(command, Duration::from_secs(20))?;
        return Ok((child, url, None));
    }
    let started = Instant::now();
    let (child, url, checks) =
        support::start_listen_noting(command, Duration::from_secs(20), CHECK_ENDED)?;
    checks
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| "listen's start-up check of the store did not end within 10 min")?;
    Ok((child, url, Some(started.elapsed())))
}

async fn flood_once(
    binary: &Path,
    built: &Path,
    into: Where,
    bodies: Arc<Vec<Planned>>,
    conns: usize,
    settled: bool,
) -> Result<Flood, BoxError> {
    // Beside the built store: the same disk.
    let dir = tempfile::tempdir_in(built.parent().ok_or("the store has no directory")?)?;
    let db = dir.path().join("listen.db");
    match into {
        Where::Built => {
            std::fs::copy(built, &db)?;
            // Written back before the flood, not during it.
            std::fs::File::open(&db)?.sync_all()?;
        }
        // The built store's two subscriptions, so each event files the
        // same outcome rows and counts into both.
        Where::Empty => {
            let mut store = Store::open(&db)?;
            let now = Utc::now().timestamp_millis();
            deliveries::replace_subscriptions(&mut store, &subscriptions()?, now)?;
        }
        Where::Nothing => {}
    }
    let before = if into == Where::Built {
        events_in(&db)?
    } else {
        0
    };
    let with_store = into != Where::Nothing;
    let (child, url, checked) = start_listen(
        binary,
        dir.path(),
        with_store.then_some(db.as_path()),
        settled,
    )?;
    let pid = child.0.id().to_string();
    let http = earshot_http::client_builder()
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
                let Some(planned) = bodies.get(n) else {
                    break;
                };
                let event = &planned.event;
                let sent = Instant::now();
                let header =
                    signature::sign(SECRET.as_bytes(), Utc::now().timestamp(), &event.body);
                // The platform's headers as the builder made them, signed now.
                let mut request = http.post(&url);
                for (name, value) in &event.headers {
                    if !matches!(name.as_str(), "host" | "content-length" | "x-svc-signature") {
                        request = request.header(name.as_str(), value.as_str());
                    }
                }
                let answer = request
                    .header("X-SVC-Signature", header)
                    .body(event.body.clone())
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
        Some(events_in(&db)? - before)
    } else {
        None
    };
    drop(child);
    let memory = *memory.lock().map_err(|_| "poisoned")?;
    Ok(Flood {
        into,
        seconds,
        ok,
        other,
        p50_ms: percentile(0.5),
        p99_ms: percentile(0.99),
        rows,
        memory,
        checked,
    })
}

/// `rounds` rounds of a `flood` from `conns` connections into each target,
/// each after `listen`'s start-up check of its store if `settled`.
pub async fn run(
    built: &Path,
    flood: usize,
    conns: usize,
    rounds: usize,
    settled: bool,
) -> Result<(), BoxError> {
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    println!(
        "listen throughput: {flood} signed events from {conns} keep-alive connections, {rounds} rounds, built store {}",
        built.display()
    );
    println!(
        "| variant | req/s | 2xx | not 2xx | p50 | p99 | rows filed | RSS kB at 25/50/75/100 % (peak) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // Requests/s into the built store and into the new one, by round.
    let (mut built_rates, mut empty_rates) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // The two stores take turns going first, as `filing`'s do.
        let order = if round % 2 == 0 {
            [Where::Built, Where::Empty, Where::Nothing]
        } else {
            [Where::Empty, Where::Built, Where::Nothing]
        };
        for into in order {
            // New events each flood: never repeats of the built store's.
            let nanos = u64::try_from(Utc::now().timestamp_nanos_opt().unwrap_or_default())?;
            let mut rng = fastrand::Rng::with_seed(0x115E_0000 ^ nanos ^ round as u64);
            let planned: Vec<Planned> =
                plan(flood, Utc::now().timestamp_millis(), LIVE_MS, &mut rng)
                    .into_iter()
                    .flatten()
                    .collect();
            let flood = flood_once(&binary, built, into, Arc::new(planned), conns, settled).await?;
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
                format!("{rows} {verdict} 2xx")
            });
            let label = match flood.checked {
                Some(took) => format!(
                    "{}, after its {:.1} s check",
                    flood.into.label(),
                    took.as_secs_f64()
                ),
                None => flood.into.label().to_owned(),
            };
            let rate = (flood.ok + flood.other) as f64 / flood.seconds;
            match flood.into {
                Where::Built => built_rates.push(rate),
                Where::Empty => empty_rates.push(rate),
                Where::Nothing => {}
            }
            println!(
                "| {label} | {rate:.0} | {} | {} | {:.2} ms | {:.2} ms | {rows} | {} ({peak}) |",
                flood.ok,
                flood.other,
                flood.p50_ms,
                flood.p99_ms,
                memory.join("/"),
            );
        }
    }
    let by_round: Vec<String> = built_rates
        .iter()
        .zip(&empty_rates)
        .map(|(built, empty)| format!("{:.2}", built / empty))
        .collect();
    let (built, empty) = (median(&mut built_rates), median(&mut empty_rates));
    println!(
        "median: built store {built:.0} requests/s, new store {empty:.0}: {:.2}× (by round: {})",
        built / empty,
        by_round.join(", ")
    );
    Ok(())
}
