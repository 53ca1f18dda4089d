//! `earshot store prune --older-than D --store postgres://…`: the
//! retention of a PostgreSQL store by hand ([`PgStore::prune`]): whole
//! days of events dropped, the unpartitioned tables pruned by row. The
//! summary has SQLite's shape (text and `--json`) plus the days dropped
//! and the bytes freed; what differs is said under it. Safe while
//! replicas file events; a prune already running (a replica's, or another
//! command's) is said and nothing is done (exit 1). SIGINT, SIGTERM or
//! SIGHUP stop it before the next day or batch (exit 128 + the signal).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use earshot_core::store::postgres::{PasswordSources, PgPruneReport, PgStore, PgTarget};
use earshot_core::store::retention::Period;
use serde_json::json;

use super::output::plain;
use super::store_check::size_text;
use super::store_cmd::{PruneArgs, prune_exit, prune_json, prune_text, thousands};

pub(super) async fn run(url: &str, args: &PruneArgs) -> color_eyre::Result<ExitCode> {
    let target = match PgTarget::parse(url) {
        Ok(target) => target,
        Err(error) => {
            eprintln!("earshot store prune: {}", plain(&error.to_string()));
            return Ok(ExitCode::from(2));
        }
    };
    if args.erase {
        eprintln!(
            "earshot store prune: --erase rewrites a store file; on PostgreSQL a dropped day's \
             files are removed whole, so there is nothing to rewrite ({target} was not touched)"
        );
        return Ok(ExitCode::from(2));
    }
    let store = match PgStore::connect(target, &PasswordSources::from_env()).await {
        Ok(store) => store,
        Err(error) => {
            eprintln!("earshot store prune: {}", plain(&error.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    let period = args.older_than;
    let stop = Arc::new(AtomicBool::new(false));
    let mut signals = std::pin::pin!(earshot_core::shutdown::signals()?);
    let mut task = tokio::spawn({
        let stop = stop.clone();
        async move {
            store
                .prune(period, earshot_core::store::now_ms(), None, &stop)
                .await
        }
    });
    let (pruned, stopped_by) = tokio::select! {
        joined = &mut task => (joined, None),
        signal = &mut signals => {
            stop.store(true, Ordering::Relaxed);
            (task.await, Some(signal))
        }
    };
    let report = match pruned? {
        Ok(report) => report,
        Err(error) => {
            eprintln!("earshot store prune: {}", plain(&error.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.json {
        println!("{}", postgres_json(period, &report));
    } else {
        print!("{}", postgres_text(period, &report));
    }
    Ok(prune_exit(stopped_by))
}

/// `1 day`, `3 days`.
pub(super) fn days_text(days: usize) -> String {
    if days == 1 {
        "1 day".to_owned()
    } else {
        format!("{} days", thousands(days as u64))
    }
}

/// SQLite's summary, then the days dropped and what differs.
pub(super) fn postgres_text(period: Period, report: &PgPruneReport) -> String {
    let mut out = prune_text(period, &report.report);
    if report.days.is_empty() {
        out.push_str("dropped no day of events: none had ended before the cutoff\n");
    } else {
        let days: Vec<String> = report
            .days
            .iter()
            .map(|day| {
                format!(
                    "{} ({} rows, {})",
                    day.partition,
                    thousands(day.rows),
                    size_text(day.bytes)
                )
            })
            .collect();
        out.push_str(&format!(
            "dropped {} of events whole: {}; {} freed\n",
            days_text(report.days.len()),
            days.join(", "),
            size_text(report.bytes_freed())
        ));
    }
    if report.finalized > 0 {
        out.push_str(&format!(
            "finished {} detaches an interrupted prune had left\n",
            report.finalized
        ));
    }
    out.push_str(&format!(
        "on PostgreSQL events go by whole UTC days of when they occurred: a day goes once all \
         of it is older than {period}, so up to one more day is kept\n"
    ));
    out
}

/// SQLite's object, with the backend, the days dropped and the bytes freed.
pub(super) fn postgres_json(period: Period, report: &PgPruneReport) -> serde_json::Value {
    let mut value = prune_json(period, &report.report);
    let days: Vec<serde_json::Value> = report
        .days
        .iter()
        .map(|day| json!({"partition": day.partition, "rows": day.rows, "bytes": day.bytes}))
        .collect();
    if let Some(object) = value.as_object_mut() {
        object.insert("backend".into(), "postgres".into());
        object.insert("days_dropped".into(), days.into());
        object.insert("bytes_freed".into(), report.bytes_freed().into());
        object.insert("detaches_finished".into(), report.finalized.into());
    }
    value
}
