//! `earshot store copy --from PATH.db --to postgres://USER@HOST:PORT/DB
//! [--batch N] [--json]`: an existing SQLite store copied into a
//! PostgreSQL store ([`earshot_core::store::postgres::copy`]) for the
//! tables PostgreSQL holds (events, sessions, unfiled deliveries, and the
//! sweep's subscriptions, attempts, outcome rows and their counts). The
//! destination is migrated first; the source is only read. Idempotent
//! (what is there is counted, not doubled) and resumable (a run stopped
//! anywhere goes on after its last committed batch). Progress on stderr,
//! a summary per table at the end, and what the source holds that
//! PostgreSQL does not yet, with its rows. Exit 0 copied, 1 a failure, 2
//! bad input (nothing done); stopped by SIGINT, SIGTERM or SIGHUP it keeps
//! what it copied and exits 128 + the signal.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use serde_json::json;

use super::output::plain;
use super::store_cmd::{ProgressLine, thousands};
use earshot_core::duration_text;
use earshot_core::store::postgres::copy::{self, Copied, DEFAULT_BATCH_ROWS, TableCopied};
use earshot_core::store::postgres::copy_source::CopySource;
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget, is_postgres_url};

#[derive(Args, Debug)]
pub(crate) struct CopyArgs {
    /// The SQLite store to copy (read only; never written to).
    #[arg(long, value_name = "PATH")]
    pub(crate) from: PathBuf,
    /// The PostgreSQL store to copy into: postgres://USER@HOST:PORT/DATABASE
    /// (never with a password in it: EARSHOT_STORE_PASSWORD_FILE,
    /// PGPASSWORD or ~/.pgpass).
    #[arg(long, value_name = "URL")]
    pub(crate) to: String,
    /// Rows a transaction.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH_ROWS as u32,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) batch: u32,
    /// The summary as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Bad input: said, and exit 2 before anything was done.
fn refuse(text: &str) -> color_eyre::Result<ExitCode> {
    eprintln!("earshot store copy: {}", plain(text));
    Ok(ExitCode::from(2))
}

pub(crate) async fn run(args: CopyArgs) -> color_eyre::Result<ExitCode> {
    let from_text = args.from.to_string_lossy().into_owned();
    if from_text == args.to {
        return refuse("--from and --to name the same store; nothing was copied");
    }
    if is_postgres_url(&from_text) {
        return refuse("--from takes a SQLite store file; a PostgreSQL store cannot be copied yet");
    }
    if !is_postgres_url(&args.to) {
        return refuse(&format!(
            "--to takes a PostgreSQL store (postgres://USER@HOST:PORT/DATABASE), not {}",
            args.to
        ));
    }
    let target = match PgTarget::parse(&args.to) {
        Ok(target) => target,
        Err(error) => return refuse(&error.to_string()),
    };
    match std::fs::metadata(&args.from) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return refuse(&format!("{from_text} is not a regular file")),
        Err(error) => return refuse(&format!("cannot read the store {from_text}: {error}")),
    }
    let source = CopySource::open(&args.from)?;
    let shown_to = target.to_string();
    let store = match PgStore::connect(target, &PasswordSources::from_env()).await {
        Ok(store) => store,
        Err(error) => {
            eprintln!("earshot store copy: {}", plain(&error.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let stop = AtomicBool::new(false);
    let mut signals = std::pin::pin!(earshot_core::shutdown::signals()?);
    let mut line = ProgressLine::new();
    let mut reads = Vec::<(&'static str, u64)>::new();
    let (copied, stopped_by) = {
        let mut progress = |totals: &TableCopied| {
            match reads.iter_mut().find(|(table, _)| *table == totals.table) {
                Some(entry) => entry.1 = totals.read,
                None => reads.push((totals.table, totals.read)),
            }
            let all: u64 = reads.iter().map(|(_, read)| read).sum();
            line.show(|elapsed| progress_text(totals, all, elapsed));
        };
        let copying = copy::copy(source, &store, args.batch as usize, &stop, &mut progress);
        let mut copying = std::pin::pin!(copying);
        tokio::select! {
            copied = &mut copying => (copied, None),
            signal = &mut signals => {
                stop.store(true, Ordering::Relaxed);
                (copying.await, Some(signal))
            }
        }
    };
    line.finish();
    let copied = match copied {
        Ok(copied) => copied,
        Err(error) => {
            eprintln!(
                "earshot store copy: {}; what was copied stays, and the same command goes on from there",
                plain(&error.to_string())
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.json {
        println!("{}", summary_json(&from_text, &shown_to, &copied));
    } else {
        print!("{}", summary_text(&from_text, &shown_to, &copied));
    }
    match stopped_by {
        Some(signal) => {
            eprintln!(
                "stopped by {} before the end: what was copied stays; run the same command again \
                 to go on from there",
                signal.name()
            );
            Ok(signal.exit_code())
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `copying events: 12,000 of 50,000 rows (24%), 8,000 rows/s, 2 s`.
fn progress_text(totals: &TableCopied, all_read: u64, elapsed: std::time::Duration) -> String {
    let to_read = totals.source_rows.saturating_sub(totals.skipped);
    let percent = (totals.read.saturating_mul(100))
        .checked_div(to_read)
        .unwrap_or(100)
        .min(100);
    format!(
        "copying {}: {} of {} rows ({percent}%), {} rows/s, {}",
        totals.table,
        thousands(totals.read),
        thousands(to_read),
        thousands(rate(all_read, elapsed)),
        duration_text::of_secs(elapsed.as_secs())
    )
}

fn rate(rows: u64, elapsed: std::time::Duration) -> u64 {
    (rows as f64 / elapsed.as_secs_f64().max(0.001)) as u64
}

const NOT_COPIED: &str = "not copied (PostgreSQL does not hold it yet)";

fn summary_text(from: &str, to: &str, copied: &Copied) -> String {
    let read: u64 = copied.tables.iter().map(|table| table.read).sum();
    let mut out = format!(
        "{} {} into {to} in {} ({} rows/s):\n",
        if copied.stopped {
            "stopped copying"
        } else {
            "copied"
        },
        plain(from),
        duration_text::of(copied.elapsed),
        thousands(rate(read, copied.elapsed)),
    );
    out.push_str(&format!(
        "  {:<24}{:>12}{:>12}{:>16}{:>16}\n",
        "table", "in source", "copied", "already there", "by earlier runs"
    ));
    for table in &copied.tables {
        out.push_str(&format!(
            "  {:<24}{:>12}{:>12}{:>16}{:>16}{}\n",
            table.table,
            thousands(table.source_rows),
            thousands(table.copied),
            thousands(table.already),
            thousands(table.skipped),
            if table.restarted {
                "  (read from the start: the source changed since the last run)"
            } else {
                ""
            }
        ));
    }
    let left: Vec<_> = copied.not_copied.iter().filter(|t| t.rows > 0).collect();
    if !left.is_empty() {
        out.push_str(&format!("{NOT_COPIED}:\n"));
        for table in left {
            out.push_str(&format!(
                "  {:<24}{:>12} rows\n",
                plain(&table.table),
                thousands(table.rows)
            ));
        }
    }
    out
}

fn summary_json(from: &str, to: &str, copied: &Copied) -> serde_json::Value {
    let read: u64 = copied.tables.iter().map(|table| table.read).sum();
    json!({
        "from": from,
        "to": to,
        "tables": copied.tables.iter().map(|table| json!({
            "table": table.table,
            "source_rows": table.source_rows,
            "copied": table.copied,
            "already": table.already,
            "by_earlier_runs": table.skipped,
            "restarted": table.restarted,
            "seconds": table.elapsed.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "not_copied": copied.not_copied.iter().map(|table| json!({
            "table": table.table,
            "rows": table.rows,
            "why": "PostgreSQL does not hold it yet",
        })).collect::<Vec<_>>(),
        "batches": copied.batches,
        "seconds": copied.elapsed.as_secs_f64(),
        "rows_per_second": rate(read, copied.elapsed),
        "stopped": copied.stopped,
    })
}
