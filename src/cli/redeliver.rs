//! `earshot redeliver SUBSCRIPTION_ID`: the platform's missing resend. Every
//! event the subscription missed for good since a time is re-sent from the
//! observer's exact bytes, signed anew with the subscription's secret; one
//! line per event, a summary; exit 0 when every event was delivered, 1
//! otherwise, 2 on bad input. A second run sends nothing it already
//! delivered. A store file or a PostgreSQL store alike (`--store
//! PATH|URL`): the plan, the log and the change record on either.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::history_args::{self, SweepArgs};
use super::output::{emit, print_json, short_id};
use super::read_store::{self, ReadStoreArg};
use super::secret_arg::{self, WEBHOOK_SECRET_ENV};
use super::sessions::clock;
use super::{Connection, GlobalOptions};
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::HistoryError;
use earshot_core::history::incidents::operator;
use earshot_core::history::recover::{
    Brakes, DEFAULT_MAX_FAILURES, Plan, RecoveryLog, RunReport, Scope, Sent, not_observed_list,
    plan, plan_postgres, run as recover,
};
use earshot_core::store::changes::{self, Change};
use earshot_core::store::{AsyncStore, StoreReader};

fn parse_event_type(text: &str) -> Result<String, String> {
    event_kind(text).map(|kind| kind.as_str().to_owned())
}

/// The voice-agent event type `text` names, or the message naming them all.
pub(super) fn event_kind(text: &str) -> Result<EventKind, String> {
    EventKind::parse(text).ok_or_else(|| {
        format!(
            "unknown event type `{text}`: one of {}",
            known_event_types()
        )
    })
}

/// Every voice-agent event type, comma-separated.
pub(super) fn known_event_types() -> String {
    let known: Vec<&str> = EventKind::ALL.iter().map(|kind| kind.as_str()).collect();
    known.join(", ")
}

#[derive(Args, Debug)]
pub(crate) struct RedeliverArgs {
    /// The subscription (its id, or the 8-character short id).
    pub(crate) subscription_id: String,
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
    /// File holding the subscription's signing secret (preferred; or set
    /// EARSHOT_WEBHOOK_SECRET). Never taken on the command line.
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,
    /// List what would be sent; send nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Also send the events an earlier run was stopped while sending (the
    /// receiver may already have them; it should deduplicate by event_id).
    #[arg(long)]
    pub(crate) resend_interrupted: bool,
    /// Only these events (by event_id).
    #[arg(long = "event-id", value_name = "ID", num_args = 1..)]
    pub(crate) event_ids: Vec<String>,
    /// Only events of these types (call.ended, session.completed, …).
    #[arg(long = "type", value_name = "TYPE", num_args = 1.., value_parser = parse_event_type)]
    pub(crate) types: Vec<String>,
    /// Only events of these sessions or calls.
    #[arg(long = "session", value_name = "ID", num_args = 1..)]
    pub(crate) sessions: Vec<String>,
    /// At most N events, oldest first.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// Send from the start at full pace instead of sending the first event
    /// alone and stopping if it fails.
    #[arg(long)]
    pub(crate) no_canary: bool,
    /// Stop after N failures in a row (0: never).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_FAILURES)]
    pub(crate) max_failures: usize,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

#[derive(Serialize)]
struct RedeliverJson<'a> {
    subscription_id: &'a str,
    url: &'a str,
    dry_run: bool,
    events: Vec<EventJson<'a>>,
    delivered: usize,
    failed: usize,
    already_recovered: usize,
    interrupted: usize,
    not_observed: usize,
    /// Missed events whose bytes the observer never received.
    not_observed_events: Vec<NotObservedJson<'a>>,
    out_of_scope: usize,
    /// Why the run stopped early (canary, failures in a row), if it did.
    stopped: Option<String>,
    not_attempted: usize,
}

#[derive(Serialize)]
struct NotObservedJson<'a> {
    session_id: &'a str,
    event: Option<&'a str>,
    occurred_at: String,
}

#[derive(Serialize)]
struct EventJson<'a> {
    event_id: &'a str,
    event: &'a str,
    session_id: &'a str,
    #[serde(flatten)]
    sent: Option<&'a Sent>,
}

pub(crate) async fn run(
    args: RedeliverArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let secret = if args.dry_run {
        None
    } else {
        // Never from argv: the file, else the environment.
        match secret_arg::resolve(None, args.secret_file.as_deref(), WEBHOOK_SECRET_ENV) {
            Ok(Some(secret)) => Some(secret),
            Ok(None) => {
                eprintln!(
                    "error: give the subscription's signing secret with --secret-file FILE or \
                     {WEBHOOK_SECRET_ENV}"
                );
                return Ok(ExitCode::from(2));
            }
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        }
    };
    let reader = match args.store.open_for("redeliver", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    // Swept first, as `health` sweeps each backend.
    let reader = read_store::sweep_first(&args.sweep, &args.connection, global, reader).await?;
    let scope = Scope {
        event_ids: args.event_ids.clone(),
        types: args.types.clone(),
        sessions: args.sessions.clone(),
        limit: args.limit,
    };
    let brakes = Brakes {
        canary: !args.no_canary,
        max_failures: args.max_failures,
    };
    let (id, since) = (&args.subscription_id, args.sweep.since);
    let planned = match &reader {
        StoreReader::Sqlite(store) => plan(store, id, since, &scope),
        StoreReader::Postgres(store) => plan_postgres(store, id, since, &scope).await,
    };
    let plan = match planned {
        Ok(plan) if args.resend_interrupted => plan.with_interrupted(),
        Ok(plan) => plan,
        Err(
            error @ (HistoryError::UnknownSubscription(_) | HistoryError::AmbiguousSubscription(_)),
        ) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    let json = args.json;
    let each = |sent: &Sent| {
        if !json {
            let _ = emit(&line(sent));
        }
        std::ops::ControlFlow::Continue(())
    };
    let (reader, report) = match (&secret, reader) {
        (None, reader) => (reader, RunReport::default()),
        (Some(secret), StoreReader::Sqlite(store)) => {
            let shared = AsyncStore::new(store);
            let report = recover(RecoveryLog::File(&shared), &plan, secret, brakes, each).await?;
            (history_args::plain(shared)?.into(), report)
        }
        (Some(secret), StoreReader::Postgres(store)) => {
            let log = RecoveryLog::Postgres(&store);
            let report = recover(log, &plan, secret, brakes, each).await?;
            (store.into(), report)
        }
    };
    let sent = &report.sent;
    let (delivered, failed) = (report.delivered(), report.failed());
    if !report.sent.is_empty() {
        let detail = changes::recover_detail(report.sent.len(), delivered);
        let change = Change::now(operator(), &plan.subscription.id, "recover", detail);
        if let Err(error) = changes::record_in(&reader, &change).await {
            eprintln!("warning: the change was not recorded: {error}");
        }
    }
    if args.json {
        print_json(&RedeliverJson {
            subscription_id: &plan.subscription.id,
            url: &plan.subscription.url,
            dry_run: args.dry_run,
            events: plan
                .to_send
                .iter()
                .map(|event| EventJson {
                    event_id: &event.event_id,
                    event: &event.event,
                    session_id: &event.session_id,
                    sent: sent.iter().find(|sent| sent.event_id == event.event_id),
                })
                .collect(),
            delivered,
            failed,
            already_recovered: plan.already_recovered,
            interrupted: plan.interrupted.len(),
            not_observed: plan.not_observed.len(),
            not_observed_events: plan
                .not_observed
                .iter()
                .map(|outcome| NotObservedJson {
                    session_id: &outcome.session_id,
                    event: outcome.event.as_deref(),
                    occurred_at: earshot_core::history::report::rfc3339(outcome.occurred_ms),
                })
                .collect(),
            out_of_scope: plan.out_of_scope,
            stopped: report.stop_reason(),
            not_attempted: report.not_attempted,
        })?;
    } else {
        if args.dry_run {
            print_plan(&plan)?;
        }
        emit(&summary(&plan, &report, args.dry_run))?;
    }
    Ok(if failed == 0 && report.stopped.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn line(sent: &Sent) -> String {
    let outcome = match (&sent.error, sent.http_status) {
        (None, Some(code)) => format!("delivered {code}"),
        (None, None) => "delivered".into(),
        (Some(error), _) => format!("FAILED {error}"),
    };
    format!(
        "{}  {:<17}  {}  {}  {}\n",
        sent.event_id,
        sent.event,
        sent.session_id,
        outcome,
        earshot_core::duration_text::of_millis(sent.latency_ms as f64)
    )
}

fn print_plan(plan: &Plan) -> std::io::Result<()> {
    let mut text = String::new();
    for event in &plan.to_send {
        text.push_str(&format!(
            "would send {}  {:<17}  {}  (fired {})\n",
            event.event_id,
            event.event,
            event.session_id,
            clock(Some(event.occurred_ms))
        ));
    }
    if !plan.not_observed.is_empty() {
        text.push_str(&format!(
            "cannot send (the observer never received them): {}\n",
            not_observed_list(&plan.not_observed)
        ));
    }
    emit(&text)
}

fn summary(plan: &Plan, report: &RunReport, dry_run: bool) -> String {
    let (delivered, failed) = (report.delivered(), report.failed());
    let target = format!(
        "{} {}",
        short_id(&plan.subscription.id),
        plan.subscription.url
    );
    let mut text = if dry_run {
        format!("{} events would be re-sent to {target}", plan.to_send.len())
    } else {
        format!("{delivered} delivered, {failed} failed, re-sent to {target}")
    };
    if let Some(why) = report.stop_reason() {
        text.push_str(&format!("; {why}"));
    }
    text.push_str(&plan.left_out());
    text.push('\n');
    text
}
