//! Benchmark of the incident-history store and the commands built on it.
//!
//! Four measurements, each printed as a small table:
//!
//! 1. `health`: a Health board refresh (`history::report::health`, what
//!    `earshot health` and the console run) on RECORDS delivery records over
//!    SESSIONS sessions and SUBS subscriptions, every outcome, spread over
//!    24 h; windows of 1 h and 24 h, RUNS runs each, interleaved with a
//!    reference that does the same work with plain `GROUP BY`s over
//!    `deliveries` and `event_outcomes` (no trigger-kept counts); both must
//!    agree, attempts and events.
//! 2. `size`: bytes on disk per EVENTS observer events (emulator-shaped
//!    bodies) written through `store::writer::Writer`, the path of `listen`.
//! 3. `listen`: the release binary's `earshot listen --store` flooded with
//!    FLOOD signed events from CONNS keep-alive connections; requests/s,
//!    latency, rows stored vs 2xx answers, the child's RSS during the flood;
//!    interleaved, ROUNDS times, with `listen` without `--store`.
//! 4. `sweep`: SWEEP sessions created on an in-process emulator, one
//!    subscription to a local receiver answering 200, swept with a budget of
//!    20,000 requests until nothing is due, then swept once more.
//! 5. `eventlist`: the Events list over LIST events (`event_list.rs`).
//!
//! Run: `cargo build --release && cargo run --release --example history_bench [name=value …]`
//! with names (defaults) records=1000000 sessions=100000 subs=20 runs=20
//! events=100000 flood=50000 conns=32 rounds=2 sweep=10000 list=1000000 and
//! only=health,size,listen,sweep,eventlist.

use std::path::Path;
use std::time::Duration;

#[path = "../support/mod.rs"]
mod support;

mod board;
mod event_list;
mod event_size;
mod listen;
mod sweep;

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use rusqlite::Connection;

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
    list: usize,
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
            list: 1_000_000,
            only: ["health", "size", "listen", "sweep", "eventlist"]
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
                "list" => options.list = number()?,
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
        board::bench_health(&options)?;
    }
    if options.wants("size") {
        event_size::bench_event_size(&options).await?;
    }
    if options.wants("listen") {
        listen::bench_listen(&options).await?;
    }
    if options.wants("sweep") {
        sweep::bench_sweep(&options).await?;
    }
    if options.wants("eventlist") {
        event_list::bench_event_list(&options)?;
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
