//! `earshot health [--since DURATION]`: sweep the known sessions within a
//! budget, then report per subscription from the store. Exit 0 when nothing
//! failed in the window, 1 when something did (for cron and CI), 2 on bad
//! input.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::history_args::{StoreArg, SweepArgs};
use super::output::{Table, emit, print_json, short_id};
use super::{Connection, GlobalOptions};
use crate::history::report::{SubscriptionHealth, health};
use crate::history::sweep::SweepReport;
use crate::store;

#[derive(Args, Debug)]
pub struct HealthArgs {
    #[command(flatten)]
    pub sweep: SweepArgs,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub connection: Connection,
}

/// `--json`: the sweep's figures and the board.
#[derive(Serialize)]
struct HealthJson<'a> {
    sessions_swept: usize,
    requests: usize,
    left_for_later: i64,
    sweep_stopped: Option<&'a str>,
    subscriptions: &'a [SubscriptionHealth],
}

pub async fn run(args: HealthArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let mut store = args.store.open(global)?;
    let swept = args
        .sweep
        .sweep_first(&args.connection, global, &mut store)
        .await?;
    let board = health(&store, args.sweep.since, store::now_ms())?;
    if args.json {
        print_json(&HealthJson {
            sessions_swept: swept.sessions_swept,
            requests: swept.requests,
            left_for_later: swept.left_for_later,
            sweep_stopped: swept.stopped.as_deref(),
            subscriptions: &board,
        })?;
    } else {
        print_board(&board, &swept, args.sweep.no_sweep)?;
    }
    let failing = board.iter().any(|row| row.failed > 0);
    Ok(if failing {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_board(
    board: &[SubscriptionHealth],
    swept: &SweepReport,
    no_sweep: bool,
) -> color_eyre::Result<()> {
    let mut text = String::new();
    if !no_sweep {
        text.push_str(&format!(
            "swept {} sessions with {} requests{}\n\n",
            swept.sessions_swept,
            swept.requests,
            if swept.left_for_later > 0 {
                format!(
                    " ({} still due: raise --budget or run again)",
                    swept.left_for_later
                )
            } else {
                String::new()
            }
        ));
    }
    if board.is_empty() {
        text.push_str("no subscriptions in the store yet: run without --no-sweep, with --url/--api-key or a profile\n");
        return Ok(emit(&text)?);
    }
    let mut table = Table::new(&[
        "SUBSCRIPTION",
        "URL",
        "DELIVERED",
        "FAILED",
        "PENDING",
        "SUCCESS",
        "LAST FAILURE",
        "RETRIES",
    ]);
    for row in board {
        table.row(vec![
            format!(
                "{}{}",
                short_id(&row.id),
                if row.enabled { "" } else { " (paused)" }
            ),
            row.url.clone(),
            row.delivered.to_string(),
            row.failed.to_string(),
            row.pending.to_string(),
            row.success_rate
                .map_or_else(|| "-".into(), |rate| format!("{:.0}%", rate * 100.0)),
            row.last_failure_at.clone().unwrap_or_else(|| "-".into()),
            match (&row.next_retry_at, row.retries_due) {
                (Some(next), count) => format!("{count}, next {next}"),
                (None, _) => "-".into(),
            },
        ]);
    }
    text.push_str(&table.render());
    for row in board.iter().filter(|row| !row.failures.is_empty()) {
        text.push_str(&format!("\n{} {}\n", short_id(&row.id), row.url));
        for group in &row.failures {
            text.push_str(&format!(
                "  ×{} {} (last {}, e.g. {})\n",
                group.count, group.diagnosis, group.last_at, group.example_session_id
            ));
        }
    }
    Ok(emit(&text)?)
}
