//! `earshot store prune --older-than D`, `earshot store forget ID…` and
//! `earshot store check` (`store_check.rs`): retention by hand, a data
//! subject's erasure and the whole-file check
//! ([`earshot_core::store::retention`], [`earshot_core::store::forget`]) on the store at
//! `--store` (`EARSHOT_STORE`) or the default; both are safe while
//! `listen --store` files events into it. Exit 0 done, 1 an id with
//! nothing held or a failure, 2 bad input; a prune stopped by SIGINT,
//! SIGTERM or SIGHUP keeps what it removed and exits 128 + the signal.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;

use super::GlobalOptions;
use super::history_args::{StoreArg, open_store, store_file};
use super::output::plain;
use earshot_core::duration_text;
use earshot_core::receiver::capture_erase::{self, CaptureErasure};
use earshot_core::shutdown::Stop;
use earshot_core::store::forget::{self, Forgotten};
use earshot_core::store::postgres::is_postgres_url;
use earshot_core::store::retention::{self, Period, PruneReport, Removed};

/// How long `forget` waits for readers on older snapshots before the
/// write-ahead log is emptied (writers wait meanwhile).
const EMPTY_WAL_WAIT: Duration = Duration::from_secs(2);
/// A prune shorter than this shows no progress line.
const QUIET_FOR: Duration = Duration::from_secs(1);

#[derive(Args, Debug)]
pub(crate) struct StoreArgs {
    #[command(subcommand)]
    pub(crate) command: StoreCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum StoreCommand {
    /// Remove what the store holds that is older than a period (what
    /// `listen --store --retention D` does hourly), in small batches that
    /// leave a running observer free to file events.
    Prune(PruneArgs),
    /// Erase everything the store holds about sessions or calls (a data
    /// subject's erasure request), and with `--capture` from capture files.
    Forget(ForgetArgs),
    /// Read every page of the store and say whether it is sound (opening a
    /// store reads only its header, so a damaged page shows only when a
    /// command reads it). Read-only: safe while the observer runs.
    Check(super::store_check::CheckArgs),
    /// Fill the free-text index of a store made by an earlier version (in
    /// short batches, safe while the observer runs); free text scans
    /// until it is complete.
    Index(super::store_index::IndexArgs),
    /// Bring the store's schema to this build's (every command also does
    /// at its start): a store file, or a PostgreSQL store
    /// (postgres://USER@HOST:PORT/DB) under a lock, so replicas starting
    /// meanwhile migrate nothing twice.
    Migrate(super::store_migrate::MigrateArgs),
    /// Copy a SQLite store into a PostgreSQL store (events, sessions,
    /// unfiled deliveries): idempotent and resumable, safe while replicas
    /// file into the destination; the source is only read.
    Copy(super::store_copy::CopyArgs),
}

#[derive(Args, Debug)]
pub(crate) struct PruneArgs {
    /// Remove rows older than this: whole days, hours or minutes (30d,
    /// 12h, 90m). What an open incident or an unfinished recovery still
    /// needs stays for at most one more period.
    #[arg(long, value_name = "D", value_parser = parse_period)]
    pub(crate) older_than: Period,
    /// The store: a file [default: the profile's `store`, else earshot.db
    /// in the state directory] or postgres://USER@HOST:PORT/DATABASE,
    /// where whole days of events are dropped.
    #[arg(long = "store", env = "EARSHOT_STORE", value_name = "PATH|URL")]
    pub(crate) store: Option<String>,
    /// The summary as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// Then rewrite the whole file (`VACUUM`) and empty the write-ahead
    /// log, so no pruned row is left in the file's bytes (index and table
    /// pages keep stale copies of some deleted cells). Holds the store's
    /// write lock for the whole rewrite (minutes on a store of gigabytes,
    /// while a running observer's deliveries wait and may be answered 503,
    /// which the platform retries) and needs the file's size in free space.
    #[arg(long)]
    pub(crate) erase: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ForgetArgs {
    /// Session or call ids, exactly as the platform gives them (no prefixes).
    #[arg(required = true, value_name = "SESSION_OR_CALL_ID")]
    pub(crate) ids: Vec<String>,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Also rewrite this capture file (`listen --capture FILE`) without the
    /// entries that name an id. Stop a listener writing to it first.
    /// Repeatable.
    #[arg(long, value_name = "FILE")]
    pub(crate) capture: Vec<PathBuf>,
    /// The summary as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--older-than` / `--retention`: a period, or the message for exit 2.
pub(super) fn parse_period(text: &str) -> Result<Period, String> {
    Period::parse(text).map_err(|error| error.to_string())
}

pub(crate) async fn run(args: StoreArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    match args.command {
        StoreCommand::Prune(args) => prune(args, global).await,
        StoreCommand::Forget(args) => forget(args, global),
        StoreCommand::Check(args) => super::store_check::run(args, global).await,
        StoreCommand::Index(args) => super::store_index::run(args, global).await,
        StoreCommand::Migrate(args) => super::store_migrate::run(args, global).await,
        StoreCommand::Copy(args) => super::store_copy::run(args).await,
    }
}

async fn prune(args: PruneArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    if let Some(url) = args.store.as_deref().filter(|url| is_postgres_url(url)) {
        return super::store_prune_postgres::run(url, &args).await;
    }
    let given = args
        .store
        .as_deref()
        .map(|path| store_file(path).map_err(color_eyre::eyre::Report::msg));
    let mut store = open_store(given.transpose()?.as_deref(), global)?;
    let period = args.older_than;
    let stop = Arc::new(AtomicBool::new(false));
    let mut signals = std::pin::pin!(earshot_core::shutdown::signals()?);
    let mut task = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || {
            let mut progress = ProgressLine::new();
            let report = retention::prune(
                &mut store,
                period,
                earshot_core::store::now_ms(),
                &stop,
                &mut |removed| {
                    progress.show(|elapsed| {
                        format!(
                            "pruning: {} rows removed so far ({}), {}",
                            thousands(removed.total()),
                            removed_list(removed),
                            duration_text::of_secs(elapsed.as_secs())
                        )
                    })
                },
            );
            progress.finish();
            report.map(|report| (report, store))
        }
    });
    let (report, stopped_by) = tokio::select! {
        joined = &mut task => (joined, None),
        signal = &mut signals => {
            stop.store(true, Ordering::Relaxed);
            (task.await, Some(signal))
        }
    };
    let (report, mut store) = report??;
    if args.erase && stopped_by.is_none() && report.removed.total() > 0 {
        eprintln!(
            "rewriting the store's file, so no pruned row is left in its bytes (the store is \
             locked meanwhile)…"
        );
        let started = Instant::now();
        earshot_core::store::erase_keys::rewrite(&store)?;
        let emptied = forget::empty_wal(&mut store, EMPTY_WAL_WAIT)?;
        eprintln!(
            "rewrote the file in {}{}",
            duration_text::of(started.elapsed()),
            if emptied {
                "; the write-ahead log is emptied"
            } else {
                "; the write-ahead log could not be emptied (a reader held it): run again"
            }
        );
    }
    if args.json {
        println!("{}", prune_json(period, &report));
    } else {
        print!("{}", prune_text(period, &report));
    }
    Ok(prune_exit(stopped_by))
}

/// How a prune that ran ends: 0, or 128 + the signal that stopped it
/// between batches, said on stderr (either backend).
pub(super) fn prune_exit(stopped_by: Option<Stop>) -> ExitCode {
    match stopped_by {
        Some(signal) => {
            eprintln!(
                "stopped by {} before the end: what was removed stays removed; run the same \
                 command again to finish",
                signal.name()
            );
            signal.exit_code()
        }
        None => ExitCode::SUCCESS,
    }
}

/// `1234567` as `1,234,567`.
pub(super) fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `events 1,000, deliveries 234`: the tables that lost rows.
pub(super) fn removed_list(removed: &Removed) -> String {
    let parts: Vec<String> = removed
        .per_table()
        .filter(|(_, rows)| *rows > 0)
        .map(|(table, rows)| format!("{} {}", table.as_str(), thousands(rows)))
        .collect();
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `2026-10-27 01:00:00Z`.
fn utc(ms: i64) -> String {
    earshot_core::clock_text::utc_datetime(ms)
}

pub(super) fn prune_text(period: Period, report: &PruneReport) -> String {
    let cutoff = report
        .rules
        .map(|rules| rules.cutoff_ms)
        .unwrap_or_default();
    let mut out = format!(
        "removed {} rows older than {period} (before {}) in {}:\n",
        thousands(report.removed.total()),
        utc(cutoff),
        duration_text::of(report.elapsed)
    );
    for (table, rows) in report.removed.per_table() {
        out.push_str(&format!(
            "  {:<24}{:>12}\n",
            table.as_str(),
            thousands(rows)
        ));
    }
    if report.kept_rows > 0 {
        let limit = report
            .rules
            .map(|rules| rules.hold_limit_ms)
            .unwrap_or_default();
        out.push_str(&format!(
            "kept past {period}: {} rows of the {} sessions an open incident or an unfinished \
             recovery still needs (removed once it no longer does, or once older than {})\n",
            thousands(report.kept_rows),
            thousands(report.held_sessions as u64),
            utc(limit).trim_end_matches(" UTC"),
        ));
    }
    out
}

pub(super) fn prune_json(period: Period, report: &PruneReport) -> serde_json::Value {
    let cutoff = report
        .rules
        .map(|rules| rules.cutoff_ms)
        .unwrap_or_default();
    json!({
        "older_than": period.to_string(),
        "cutoff_ms": cutoff,
        "removed": report.removed.to_json(),
        "total": report.removed.total(),
        "kept_rows": report.kept_rows,
        "held_sessions": report.held_sessions,
        "batches": report.batches,
        "longest_hold_ms": report.longest_hold.as_secs_f64() * 1000.0,
        "seconds": report.elapsed.as_secs_f64(),
        "stopped": report.stopped,
    })
}

/// Progress of long store work on stderr (a prune's running totals, a
/// whole-file check's time so far): on a terminal one line redrawn in
/// place every half second and cleared at the end; otherwise a line every
/// five seconds. Nothing during the first second.
pub(super) struct ProgressLine {
    started: Instant,
    shown: Option<Instant>,
    tty: bool,
    drawn: bool,
}

impl ProgressLine {
    pub(super) fn new() -> ProgressLine {
        ProgressLine {
            started: Instant::now(),
            shown: None,
            tty: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Shows `text` of the time since the start, when a line is due.
    pub(super) fn show(&mut self, text: impl FnOnce(Duration) -> String) {
        let now = Instant::now();
        let every = if self.tty {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(5)
        };
        let due = now.duration_since(self.started) >= QUIET_FOR
            && self.shown.is_none_or(|at| now.duration_since(at) >= every);
        if !due {
            return;
        }
        self.shown = Some(now);
        let text = text(now.duration_since(self.started));
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{text}");
            self.drawn = true;
        } else {
            let _ = writeln!(err, "{text}");
        }
        let _ = err.flush();
    }

    pub(super) fn finish(&self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

fn forget(args: ForgetArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let mut ids: Vec<String> = Vec::new();
    for id in &args.ids {
        if let Err(why) = forget::check_id(id) {
            eprintln!("error: {}", plain(&why));
            return Ok(ExitCode::from(2));
        }
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    let mut store = args.store.open(global)?;
    let mut forgotten = Vec::with_capacity(ids.len());
    for id in &ids {
        forgotten.push(forget::forget(&mut store, id)?);
    }
    let wal_emptied = if forgotten.iter().any(Forgotten::found) {
        // Index pages keep copies of some deleted keys: rebuilt, so no
        // erased id is left in the file.
        earshot_core::store::erase_keys::rebuild(&store)?;
        Some(forget::empty_wal(&mut store, EMPTY_WAL_WAIT)?)
    } else {
        None
    };
    let captures: Vec<(PathBuf, Result<CaptureErasure, String>)> = args
        .capture
        .iter()
        .map(|path| {
            let erased = capture_erase::erase(path, &ids).map_err(|error| error.to_string());
            (path.clone(), erased)
        })
        .collect();
    let in_captures = |index: usize| -> u64 {
        captures
            .iter()
            .filter_map(|(_, erased)| erased.as_ref().ok())
            .map(|erased| erased.per_id.get(index).copied().unwrap_or_default())
            .sum()
    };
    let not_found: Vec<&str> = forgotten
        .iter()
        .enumerate()
        .filter(|(index, done)| !done.found() && in_captures(*index) == 0)
        .map(|(_, done)| done.session_id.as_str())
        .collect();
    if args.json {
        println!(
            "{}",
            forget_json(&forgotten, &captures, &in_captures, wal_emptied)
        );
    } else {
        print!(
            "{}",
            forget_text(&forgotten, &captures, &in_captures, wal_emptied)
        );
    }
    let mut failed = false;
    for (path, erased) in &captures {
        if let Err(error) = erased {
            eprintln!("error: capture {}: {}", path.display(), plain(error));
            failed = true;
        }
    }
    for id in &not_found {
        eprintln!("error: nothing held about {} (not found)", plain(id));
    }
    if wal_emptied == Some(false) {
        eprintln!(
            "warning: a reader kept an older snapshot of the store open for {}, so its \
             write-ahead log ({}-wal) still holds copies of the erased pages until the next \
             checkpoint; run `sqlite3 {} 'PRAGMA wal_checkpoint(TRUNCATE)'` once readers are done",
            duration_text::of(EMPTY_WAL_WAIT),
            store.path().display(),
            store.path().display()
        );
    }
    Ok(if failed || !not_found.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `3 events, 6 event_outcomes`: what one erasure removed.
fn forgotten_list(done: &Forgotten) -> String {
    let mut parts: Vec<String> = done
        .removed
        .per_table()
        .filter(|(_, rows)| *rows > 0)
        .map(|(table, rows)| format!("{} {}", thousands(rows), table.as_str()))
        .collect();
    for (count, what) in [
        (done.incident_notes, "incident notes cleared"),
        (done.change_details, "change details erased"),
        (done.count_examples, "count examples cleared"),
    ] {
        if count > 0 {
            parts.push(format!("{} {what}", thousands(count)));
        }
    }
    parts.join(", ")
}

fn forget_text(
    forgotten: &[Forgotten],
    captures: &[(PathBuf, Result<CaptureErasure, String>)],
    in_captures: &dyn Fn(usize) -> u64,
    wal_emptied: Option<bool>,
) -> String {
    let mut out = String::new();
    for (index, done) in forgotten.iter().enumerate() {
        let id = plain(&done.session_id).into_owned();
        let entries = in_captures(index);
        let from_captures = (entries > 0).then(|| {
            format!(
                "{} capture entr{}",
                thousands(entries),
                if entries == 1 { "y" } else { "ies" }
            )
        });
        let list = forgotten_list(done);
        let removed: Vec<&str> = [
            (!list.is_empty()).then_some(list.as_str()),
            from_captures.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if removed.is_empty() {
            out.push_str(&format!("{id}: nothing held (not found)\n"));
        } else {
            out.push_str(&format!("{id}: removed {}\n", removed.join(", ")));
        }
    }
    for (path, erased) in captures {
        if let Ok(erased) = erased {
            let what = if erased.removed == 0 {
                "names none of them, left as it was".to_owned()
            } else {
                format!(
                    "rewrote it without {} entries ({} lines kept)",
                    thousands(erased.removed),
                    thousands(erased.kept)
                )
            };
            out.push_str(&format!("capture {}: {what}\n", path.display()));
        }
    }
    if wal_emptied == Some(true) {
        out.push_str(
            "the store's write-ahead log was emptied into the main file, where the erased rows \
             were overwritten with zeros\n",
        );
    }
    out
}

fn forget_json(
    forgotten: &[Forgotten],
    captures: &[(PathBuf, Result<CaptureErasure, String>)],
    in_captures: &dyn Fn(usize) -> u64,
    wal_emptied: Option<bool>,
) -> serde_json::Value {
    let ids: Vec<serde_json::Value> = forgotten
        .iter()
        .enumerate()
        .map(|(index, done)| {
            json!({
                "id": done.session_id,
                "found": done.found() || in_captures(index) > 0,
                "removed": done.removed.to_json(),
                "incident_notes_cleared": done.incident_notes,
                "change_details_erased": done.change_details,
                "count_examples_cleared": done.count_examples,
                "capture_entries_removed": in_captures(index),
            })
        })
        .collect();
    let files: Vec<serde_json::Value> = captures
        .iter()
        .map(|(path, erased)| match erased {
            Ok(erased) => json!({
                "file": path.display().to_string(),
                "removed": erased.removed,
                "kept": erased.kept,
                "error": null,
            }),
            Err(error) => json!({
                "file": path.display().to_string(),
                "removed": 0,
                "kept": null,
                "error": error,
            }),
        })
        .collect();
    json!({ "ids": ids, "captures": files, "wal_emptied": wal_emptied })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
