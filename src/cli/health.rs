//! `earshot health [--since DURATION]`: sweep the known sessions within a
//! budget, then report per subscription from the store, in events. Exits
//! by the one rule of `history::verdict`: 3 when the observer is silent or
//! filed nothing in the window ("unknown", as monitoring plugins use it), 1
//! while an incident is unresolved or an event was missed, else 0 (pending
//! alone is not a failure); 2 on bad input.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::history_args::{StoreArg, SweepArgs};
use super::output::{Table, emit, print_json, short_id};
use super::{Connection, GlobalOptions};
use earshot_core::history::coverage::Coverage;
use earshot_core::history::report::{SubscriptionHealth, board};
use earshot_core::history::sweep::SweepReport;
use earshot_core::history::verdict;
use earshot_core::store;
use earshot_core::store::timeline::Timeline;

#[derive(Args, Debug)]
pub(crate) struct HealthArgs {
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) chart: super::health_chart::ChartArgs,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// `--json`: the sweep's figures and the board.
#[derive(Serialize)]
struct HealthJson<'a> {
    sessions_swept: usize,
    requests: usize,
    left_for_later: i64,
    sweep_stopped: Option<&'a str>,
    observer: &'a Coverage,
    subscriptions: &'a [SubscriptionHealth],
    /// With `--chart`: events per time bucket and subscription, by state.
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<&'a Timeline>,
}

pub(crate) async fn run(args: HealthArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let store = args.store.open(global)?;
    let (store, swept) = args
        .sweep
        .sweep_first(&args.connection, global, store)
        .await?;
    let now = store::now_ms();
    let report = board(&store, args.sweep.since, now)?;
    let timeline = args.chart.read(&store, args.sweep.since, now)?;
    if args.json {
        print_json(&HealthJson {
            sessions_swept: swept.sessions_swept,
            requests: swept.requests,
            left_for_later: swept.left_for_later,
            sweep_stopped: swept.stopped.as_deref(),
            observer: &report.observer,
            subscriptions: &report.subscriptions,
            timeline: timeline.as_ref(),
        })?;
    } else {
        let mut text = report.observer.explain(now);
        text.push('\n');
        emit(&text)?;
        print_board(&report.subscriptions, &swept, args.sweep.no_sweep)?;
        if let Some(timeline) = &timeline {
            emit(&args.chart.text(timeline, &report.subscriptions))?;
        }
    }
    let incidents = earshot_core::history::incidents::list(&store, args.sweep.since, false)?;
    let verdict = verdict::verdict(&report, &incidents);
    eprintln!("{}", verdict::summary(&report, &incidents));
    Ok(ExitCode::from(verdict.exit_code()))
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
    text.push_str("events per subscription (attempts: --json, or the console's drill-down)\n");
    let mut table = Table::new(&[
        "SUBSCRIPTION",
        "URL",
        "DELIVERED",
        "MISSED",
        "RECOVERED",
        "PENDING",
        "UNKNOWN",
        "FAILING SINCE",
        "LAST SUCCESS",
    ]);
    for row in board {
        table.row(vec![
            format!(
                "{}{}",
                short_id(&row.id),
                if row.enabled { "" } else { " (paused)" }
            ),
            row.url.clone(),
            row.events.delivered.to_string(),
            row.events.missed.to_string(),
            row.events.recovered.to_string(),
            row.events.pending.to_string(),
            match &row.unknown_since {
                Some(since) => format!("unknown since {since}"),
                None => row.events.unknown.to_string(),
            },
            row.failing_since.clone().unwrap_or_else(|| "-".into()),
            row.last_success_at.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    text.push_str(&table.render());
    for row in board.iter().filter(|row| !row.failures.is_empty()) {
        text.push_str(&format!("\n{} {}\n", short_id(&row.id), row.url));
        if !row.missed_by_type.is_empty() {
            text.push_str(&format!(
                "  missed: {}\n",
                row.missed_by_type_words().join(", ")
            ));
        }
        for group in &row.failures {
            text.push_str(&format!(
                "  {} events {} ({} missed, {} recovered, {} retrying; last {}, e.g. {})\n",
                group.count,
                group.diagnosis,
                group.missed,
                group.recovered,
                group.retrying,
                group.last_at,
                group.example_session_id
            ));
        }
    }
    Ok(emit(&text)?)
}
