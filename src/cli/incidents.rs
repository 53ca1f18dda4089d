//! `earshot incidents [--since D] [--all] [--json]`: failure groups
//! (subscription × diagnosis) with first and last seen, events missed and
//! recovered, and a state (open, acknowledged, resolved); `earshot
//! incidents ID` one of them on a time axis (`incident_chart`); `earshot
//! incidents ack ID [--note TEXT]` records who is on one, for every console
//! on the same store. Exits by the rule `earshot health` shares
//! (`history::verdict`): 3 when the observer is silent or filed nothing in
//! the window, 1 while an incident is unresolved (acknowledged too) or an
//! event was missed, else 0; 2 on bad input. With an ID: 1 while that
//! incident is unresolved or when no incident has that id, else 0.
//!
//! The list, an incident's timeline and `ack` read and write a SQLite
//! file or a PostgreSQL store alike (`--store PATH|URL`, through
//! [`StoreReader`]: the timeline from either backend's minute and hour
//! counts and change log, `incident_timeline::build_in`).

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::history_args::SweepArgs;
use super::incident_chart;
use super::output::{Table, emit, print_json, short_id};
use super::read_store::{self, ReadStoreArg};
use super::sessions::clock;
use super::{Connection, GlobalOptions};
use earshot_core::history::incident_timeline;
use earshot_core::history::incidents::{
    Acknowledged, Incident, IncidentState, Lookup, acknowledge_in, list_in, lookup_in, operator,
};
use earshot_core::history::report::{Board, board};
use earshot_core::history::report_postgres::board_postgres;
use earshot_core::history::sparkline::Glyphs;
use earshot_core::history::verdict;
use earshot_core::store::{self, StoreReader};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct IncidentsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<IncidentsCommand>,
    /// One incident (its id, or a unique start of it) on a time axis: its
    /// subscription's events from the first failure to now, with the
    /// changes made meanwhile marked.
    pub(crate) id: Option<String>,
    /// With an ID: draw the chart in plain ASCII instead of Unicode blocks.
    #[arg(long, requires = "id")]
    pub(crate) ascii: bool,
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
    /// Resolved incidents too.
    #[arg(long)]
    pub(crate) all: bool,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

#[derive(Subcommand, Debug)]
pub(crate) enum IncidentsCommand {
    /// Acknowledge an incident: your login name and the time are stored
    /// with it, for everyone on this store to see.
    Ack {
        /// The incident (its id, or a unique start of it).
        id: String,
        /// What you are doing about it.
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        store: ReadStoreArg,
    },
}

pub(crate) async fn run(
    args: IncidentsArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    if let Some(IncidentsCommand::Ack { id, note, store }) = args.command {
        return ack(&id, note.as_deref(), &store, global).await;
    }
    let reader = match args.store.open_for("incidents", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let reader = read_store::sweep_first(&args.sweep, &args.connection, global, reader).await?;
    if let Some(id) = &args.id {
        return show(&reader, id, args.ascii, args.json).await;
    }
    let incidents = list_in(&reader, args.sweep.since, args.all).await?;
    if args.json {
        print_json(&incidents)?;
    } else {
        emit(&render(&incidents, args.all))?;
    }
    let report = board_of(&reader, args.sweep.since, store::now_ms()).await?;
    // The listed ones are every unresolved one (and with `--all` the
    // resolved too): the verdict weighs the same incidents as the list.
    let unresolved: Vec<Incident> = incidents
        .into_iter()
        .filter(|incident| incident.state != IncidentState::Resolved)
        .collect();
    if let Some(line) = report.observer.silence_line() {
        eprintln!("{line}: missed events cannot be known");
    }
    eprintln!("{}", verdict::summary(&report, &unresolved));
    Ok(ExitCode::from(
        verdict::verdict(&report, &unresolved).exit_code(),
    ))
}

/// `earshot incidents ack ID [--note TEXT]`, on either backend.
async fn ack(
    id: &str,
    note: Option<&str>,
    store: &ReadStoreArg,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let reader = match store.open_for("incidents ack", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    match acknowledge_in(&reader, id, &operator(), note, store::now_ms()).await? {
        Acknowledged::Done(incident) => {
            emit(&format!(
                "acknowledged {} ({} {}) as {}\n",
                incident.id,
                short_id(&incident.subscription_id),
                incident.diagnosis,
                incident.acknowledged_by.as_deref().unwrap_or("-")
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Acknowledged::NotFound => {
            eprintln!("error: no incident {id}: `earshot incidents --all` lists them");
            Ok(ExitCode::FAILURE)
        }
        Acknowledged::Ambiguous(count) => {
            eprintln!("error: {id} matches {count} incidents: give more of the id");
            Ok(ExitCode::from(2))
        }
    }
}

/// The board the verdict weighs, from either backend.
async fn board_of(reader: &StoreReader, since_ms: i64, now_ms: i64) -> color_eyre::Result<Board> {
    Ok(match reader {
        StoreReader::Sqlite(store) => board(store, since_ms, now_ms)?,
        StoreReader::Postgres(store) => board_postgres(store, since_ms, now_ms).await?,
    })
}

/// `earshot incidents ID`: the incident and its timeline.
async fn show(
    store: &StoreReader,
    id: &str,
    ascii: bool,
    json: bool,
) -> color_eyre::Result<ExitCode> {
    let incident = match lookup_in(store, id).await? {
        Lookup::One(incident) => incident,
        Lookup::NotFound => {
            eprintln!("error: no incident {id}: `earshot incidents --all` lists them");
            return Ok(ExitCode::FAILURE);
        }
        Lookup::Ambiguous(count) => {
            eprintln!("error: {id} matches {count} incidents: give more of the id");
            return Ok(ExitCode::from(2));
        }
    };
    let chart =
        incident_timeline::build_in(store, &incident, store::now_ms(), incident_chart::COLUMNS)
            .await?;
    if json {
        print_json(&serde_json::json!({ "incident": incident, "timeline": chart }))?;
    } else {
        let glyphs = if ascii {
            Glyphs::Ascii
        } else {
            Glyphs::Unicode
        };
        emit(&incident_chart::text(&incident, &chart, glyphs))?;
    }
    Ok(if incident.state == IncidentState::Resolved {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn render(incidents: &[Incident], all: bool) -> String {
    if incidents.is_empty() {
        return if all {
            "no incidents in the window\n".into()
        } else {
            "no open incidents in the window (--all lists resolved ones)\n".into()
        };
    }
    let mut table = Table::new(&[
        "ID",
        "STATE",
        "SUBSCRIPTION",
        "MISSED",
        "RECOVERED",
        "FIRST SEEN",
        "LAST SEEN",
        "DIAGNOSIS",
    ]);
    for incident in incidents {
        table.row(vec![
            incident.id.clone(),
            match &incident.resolved_reason {
                Some(reason) => format!("resolved: {reason}"),
                None => incident.state.as_str().to_owned(),
            },
            short_id(&incident.subscription_id).to_owned(),
            incident.missed.to_string(),
            incident.recovered.to_string(),
            clock(Some(incident.first_seen_ms)),
            clock(Some(incident.last_seen_ms)),
            incident.diagnosis.clone(),
        ]);
    }
    let mut text = table.render();
    for incident in incidents {
        if let (Some(by), Some(at)) = (&incident.acknowledged_by, incident.acknowledged_ms) {
            text.push_str(&format!(
                "{}: acknowledged by {by} {}{}\n",
                incident.id,
                clock(Some(at)),
                incident
                    .note
                    .as_deref()
                    .map(|note| format!(": {note}"))
                    .unwrap_or_default()
            ));
        }
    }
    text
}
