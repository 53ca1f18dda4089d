//! `earshot health [--since DURATION]`: sweep the known sessions within a
//! budget, then report per subscription from the store, in events, on a
//! SQLite file or a PostgreSQL store (there also naming the holder of the
//! maintenance lease, which runs the replicas' sweep and retention). Exits
//! by the one rule of `history::verdict`: 3 when the observer is silent or
//! filed nothing in the window ("unknown", as monitoring plugins use it), 1
//! while an incident is unresolved or an event was missed, else 0 (pending
//! alone is not a failure); 2 on bad input.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::history_args::SweepArgs;
use super::output::{Table, emit, print_json, short_id};
use super::read_store::ReadStoreArg;
use super::{Connection, GlobalOptions};
use earshot_core::history::coverage::Coverage;
use earshot_core::history::incidents::Incident;
use earshot_core::history::report::{Board, SubscriptionHealth, board};
use earshot_core::history::report_postgres::board_postgres;
use earshot_core::history::sweep::{SweepReport, sweep};
use earshot_core::history::verdict;
use earshot_core::store::postgres::PgStore;
use earshot_core::store::postgres::leases::{LeaseState, MAINTENANCE};
use earshot_core::store::timeline::Timeline;
use earshot_core::store::{self, StoreReader};

#[derive(Args, Debug)]
pub(crate) struct HealthArgs {
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) chart: super::health_chart::ChartArgs,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
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
    /// On PostgreSQL: `postgres` (SQLite's JSON has no such key).
    #[serde(skip_serializing_if = "Option::is_none")]
    backend: Option<&'static str>,
    /// On PostgreSQL: the maintenance lease (`null` when no replica ever
    /// took it).
    #[serde(skip_serializing_if = "Option::is_none")]
    maintenance_lease: Option<Option<LeaseJson>>,
}

/// The maintenance lease as `health --json` shows it.
#[derive(Serialize)]
struct LeaseJson {
    holder: String,
    /// Since when this holder has held it (RFC 3339, UTC).
    since: String,
    /// Milliseconds until it expires (negative: expired, free to take).
    expires_in_ms: i64,
}

/// What one backend gave: the sweep's figures, the board, the chart, the
/// incidents the verdict weighs and, on PostgreSQL, the lease.
struct Read {
    swept: SweepReport,
    board: Board,
    timeline: Option<Timeline>,
    incidents: Vec<Incident>,
    postgres: Option<Option<LeaseState>>,
}

pub(crate) async fn run(args: HealthArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let reader = match args.store.open_for("health", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let now = store::now_ms();
    let read = match reader {
        StoreReader::Sqlite(store) => {
            let (store, swept) = args
                .sweep
                .sweep_first(&args.connection, global, store)
                .await?;
            Read {
                board: board(&store, args.sweep.since, now)?,
                timeline: args.chart.read(&store, args.sweep.since, now)?,
                incidents: earshot_core::history::incidents::list(&store, args.sweep.since, false)?,
                swept,
                postgres: None,
            }
        }
        StoreReader::Postgres(store) => {
            let swept = sweep_postgres(&args.sweep, &args.connection, global, &store).await?;
            Read {
                board: board_postgres(&store, args.sweep.since, now).await?,
                timeline: args
                    .chart
                    .read_postgres(&store, args.sweep.since, now)
                    .await?,
                incidents: earshot_core::history::incidents::list_postgres(
                    &store,
                    args.sweep.since,
                    false,
                )
                .await?,
                swept,
                postgres: Some(store.lease(MAINTENANCE).await?),
            }
        }
    };
    let Read {
        swept,
        board: report,
        timeline,
        incidents,
        postgres,
    } = read;
    if args.json {
        print_json(&HealthJson {
            sessions_swept: swept.sessions_swept,
            requests: swept.requests,
            left_for_later: swept.left_for_later,
            sweep_stopped: swept.stopped.as_deref(),
            observer: &report.observer,
            subscriptions: &report.subscriptions,
            timeline: timeline.as_ref(),
            backend: postgres.is_some().then_some("postgres"),
            maintenance_lease: postgres
                .as_ref()
                .map(|lease| lease.as_ref().map(lease_json)),
        })?;
    } else {
        let mut text = report.observer.explain(now);
        text.push('\n');
        if let Some(lease) = &postgres {
            text.push_str(&lease_line(lease.as_ref()));
            text.push('\n');
        }
        emit(&text)?;
        print_board(&report.subscriptions, &swept, args.sweep.no_sweep)?;
        if let Some(timeline) = &timeline {
            emit(&args.chart.text(timeline, &report.subscriptions))?;
        }
    }
    let verdict = verdict::verdict(&report, &incidents);
    eprintln!("{}", verdict::summary(&report, &incidents));
    Ok(ExitCode::from(verdict.exit_code()))
}

/// The sweep `health` and `incidents` run first on a PostgreSQL store, as
/// on SQLite (unless `--no-sweep`): by hand, so not fenced by the
/// replicas' lease.
pub(crate) async fn sweep_postgres(
    args: &SweepArgs,
    connection: &Connection,
    global: &GlobalOptions,
    store: &PgStore,
) -> color_eyre::Result<SweepReport> {
    if args.no_sweep {
        return Ok(SweepReport::default());
    }
    let client = connection.client(global)?;
    let report = sweep(&client, store, args.budget).await?;
    if let Some(why) = &report.stopped {
        eprintln!("warning: the sweep stopped early ({why}); using what the store holds");
    }
    Ok(report)
}

fn lease_json(lease: &LeaseState) -> LeaseJson {
    LeaseJson {
        holder: lease.holder.clone(),
        since: earshot_core::history::report::rfc3339(lease.since_ms),
        expires_in_ms: lease.expires_in_ms,
    }
}

/// The lease in words: who holds it, since when, and when it expires.
fn lease_line(lease: Option<&LeaseState>) -> String {
    let Some(lease) = lease else {
        return "maintenance lease (sweep, retention): no replica has taken it".to_owned();
    };
    let since = earshot_core::history::report::rfc3339(lease.since_ms);
    let seconds = lease.expires_in_ms.unsigned_abs() as f64 / 1000.0;
    if lease.expires_in_ms > 0 {
        format!(
            "maintenance lease (sweep, retention): held by {} since {since}, expires in \
             {seconds:.1} s unless renewed",
            lease.holder
        )
    } else {
        format!(
            "maintenance lease (sweep, retention): free; {} held it since {since}, expired \
             {seconds:.1} s ago",
            lease.holder
        )
    }
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
