//! The store at the scale of a real account, and what a user runs on it.
//!
//! `cargo bench --bench store_scale -- build [events=1000000]` fills
//! `target/bench-stores/events-N.db` through earshot's own write paths
//! (`builder.rs`: realistic bodies and headers, a failure mix, a rare
//! type, an incident of a tenth of the events); a store already built is
//! kept, and every command builds the store it needs first.
//!
//! `cargo bench --bench store_scale -- time [events=1000000] [runs=5]`
//! times the release binary's `health --json --no-sweep`, `events --json
//! --limit 100` (with each filter an operator types) and `incidents
//! --json` as whole processes, each interleaved with the `sqlite3` shell
//! doing the same work in plain SQL, warm and with the store's file
//! evicted from the page cache first (cold); `only=incidents,status` picks
//! the rows whose name holds a word. Build the binary first: `cargo build
//! --release`.
//!
//! `cargo bench --bench store_scale -- list [events=1000000] [runs=5]
//! [only=missed,…]` times the console's Events read in process (the
//! newest 5,000 events passing each filter) against plain SQL, warm and
//! cold, interleaved (`list.rs`).
//!
//! `cargo bench --bench store_scale -- health [events=1000000] [runs=5]`
//! times a Health board refresh in process over 1 h and 24 h against
//! plain `GROUP BY`s, warm and cold, interleaved (`board.rs`).
//!
//! `cargo bench --bench store_scale -- listen [events=1000000]
//! [flood=20000] [conns=32] [rounds=2] [settled=1]` floods the release
//! binary's `listen --store` filing into a copy of the built store, into a
//! new one and with no store, interleaved, each flood at once or (`settled=1`)
//! after `listen`'s start-up check of its store (`listen.rs`; `cargo build
//! --release` first).
//!
//! `cargo bench --bench store_scale -- sweep [events=1000000]
//! [sessions=10000]` sweeps that many sessions of an in-process emulator
//! into a copy of the built store (`sweep.rs`).
//!
//! `cargo bench --bench store_scale -- filing [events=1000000] [n=20000]
//! [rounds=3] [only=empty|built] [store=PATH]` files `n` new events through
//! the observer's writer into an empty store and into the built one (or
//! the store at PATH, a copy), interleaved (`filing.rs`), and adds them to
//! that store; `only` runs one side (to profile or count its writes).

mod board;
mod builder;
mod cache;
mod cases;
mod console_read;
mod filing;
mod list;
mod listen;
// The helpers the examples share (the release binary, `listen` started
// isolated, a process's memory).
#[path = "../support/mod.rs"]
mod support;
mod sweep;
mod timing;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The signing secret of the `listen` and `sweep` benchmarks' webhooks.
const SECRET: &str = "whsec_bench_secret_0123456789abcdefghij";

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let command = args.first().map(String::as_str).unwrap_or("");
    let value = |name: &str, default: usize| -> Result<usize, BoxError> {
        match args
            .iter()
            .find_map(|arg| arg.strip_prefix(&format!("{name}=")))
        {
            Some(text) => Ok(text.parse()?),
            None => Ok(default),
        }
    };
    let events = value("events", 1_000_000)?;
    let only: Vec<String> = args
        .iter()
        .filter_map(|arg| arg.strip_prefix("only="))
        .flat_map(|list| list.split(',').map(str::to_owned))
        .collect();
    match command {
        "build" => builder::built(events).map(|path| eprintln!("{} is built", path.display())),
        "time" => timing::run(&builder::built(events)?, value("runs", 5)?, &only),
        "list" => list::run(&builder::built(events)?, value("runs", 5)?, &only),
        "health" => board::run(&builder::built(events)?, value("runs", 5)?),
        "listen" => {
            let built = builder::built(events)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(listen::run(
                    &built,
                    value("flood", 20_000)?,
                    value("conns", 32)?,
                    value("rounds", 2)?,
                    value("settled", 0)? == 1,
                ))
        }
        "sweep" => {
            let built = builder::built(events)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(sweep::run(&built, value("sessions", 10_000)?))
        }
        "filing" => filing::run(
            &match args.iter().find_map(|arg| arg.strip_prefix("store=")) {
                Some(path) => path.into(),
                None => builder::built(events)?,
            },
            value("n", 20_000)?,
            value("rounds", 3)?,
            &only,
        ),
        _ => Err(
            "usage: store_scale build|time|list|health|listen|sweep|filing [events=N] [runs=N] [only=WORD,…] [flood=N] [conns=N] [sessions=N] [n=N] [rounds=N]"
                .into(),
        ),
    }
}
