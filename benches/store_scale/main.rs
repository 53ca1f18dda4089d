//! The store at the scale of a real account, and what a user runs on it.
//!
//! `cargo bench --bench store_scale -- build [events=1000000]` fills
//! `target/bench-stores/events-N.db` through earshot's own write paths
//! (`builder.rs`: realistic bodies and headers, a failure mix, a rare
//! type, an incident of about 100,000 events); a store already built is
//! kept.
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
//! `cargo bench --bench store_scale -- filing [events=1000000] [n=20000]
//! [rounds=3]` files `n` new events through the observer's writer into an
//! empty store and into the built one, interleaved (`filing.rs`), and
//! adds them to the built store.

mod builder;
mod filing;
mod timing;

use std::path::PathBuf;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
    let path = store_path(events)?;
    match command {
        "build" => {
            if path.exists() {
                eprintln!(
                    "{} is built already (remove it to build again)",
                    path.display()
                );
                return Ok(());
            }
            let partial = path.with_extension("partial");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", partial.display()));
            }
            builder::build(&partial, events)?;
            let conn = rusqlite::Connection::open(&partial)?;
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            drop(conn);
            std::fs::rename(&partial, &path)?;
            let bytes = std::fs::metadata(&path)?.len();
            eprintln!("built {} ({:.2} GB)", path.display(), bytes as f64 / 1e9);
            Ok(())
        }
        "time" => {
            let only: Vec<String> = args
                .iter()
                .filter_map(|arg| arg.strip_prefix("only="))
                .flat_map(|list| list.split(',').map(str::to_owned))
                .collect();
            timing::run(&path, value("runs", 5)?, &only)
        }
        "filing" => filing::run(&path, value("n", 20_000)?, value("rounds", 3)?),
        _ => {
            Err("usage: store_scale build|time|filing [events=N] [runs=N] [n=N] [rounds=N]".into())
        }
    }
}

/// `target/bench-stores/events-N.db`, beside the benchmark's own binary.
fn store_path(events: usize) -> Result<PathBuf, BoxError> {
    let exe = std::env::current_exe()?;
    let target = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "target"))
        .ok_or("cannot locate the target directory")?;
    let dir = target.join("bench-stores");
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join(format!("events-{events}.db")))
}
