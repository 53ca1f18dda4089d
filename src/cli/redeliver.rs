//! `earshot redeliver SUBSCRIPTION_ID`: the platform's missing resend. Every
//! event the subscription missed for good since a time is re-sent from the
//! observer's exact bytes, signed anew with the subscription's secret; one
//! line per event, a summary; exit 0 when every event was delivered, 1
//! otherwise, 2 on bad input. A second run sends nothing it already
//! delivered.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::history_args::{StoreArg, SweepArgs};
use super::output::{emit, print_json, short_id};
use super::secret_arg::{self, WEBHOOK_SECRET_ENV};
use super::sessions::clock;
use super::{Connection, GlobalOptions};
use crate::history::HistoryError;
use crate::history::recover::{Plan, Sent, plan, run as recover};

#[derive(Args, Debug)]
pub struct RedeliverArgs {
    /// The subscription (its id, or the 8-character short id).
    pub subscription_id: String,
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// File holding the subscription's signing secret (preferred; or set
    /// EARSHOT_WEBHOOK_SECRET). Never taken on the command line.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// List what would be sent; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also send the events an earlier run was stopped while sending (the
    /// receiver may already have them; it should deduplicate by event_id).
    #[arg(long)]
    pub resend_interrupted: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub connection: Connection,
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
}

#[derive(Serialize)]
struct EventJson<'a> {
    event_id: &'a str,
    event: &'a str,
    session_id: &'a str,
    #[serde(flatten)]
    sent: Option<&'a Sent>,
}

pub async fn run(args: RedeliverArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
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
    let mut store = args.store.open(global)?;
    args.sweep
        .sweep_first(&args.connection, global, &mut store)
        .await?;
    let plan = match plan(&store, &args.subscription_id, args.sweep.since) {
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
    let sent = match &secret {
        None => Vec::new(),
        Some(secret) => {
            let json = args.json;
            recover(&mut store, &plan, secret, |sent| {
                if !json {
                    let _ = emit(&line(sent));
                }
            })
            .await?
        }
    };
    let delivered = sent.iter().filter(|sent| sent.delivered).count();
    let failed = sent.len() - delivered;
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
            not_observed: plan.not_observed,
        })?;
    } else {
        if args.dry_run {
            print_plan(&plan)?;
        }
        emit(&summary(&plan, delivered, failed, args.dry_run))?;
    }
    Ok(if failed == 0 {
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
        "{}  {:<17}  {}  {}  {} ms\n",
        sent.event_id, sent.event, sent.session_id, outcome, sent.latency_ms
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
    emit(&text)
}

fn summary(plan: &Plan, delivered: usize, failed: usize, dry_run: bool) -> String {
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
    text.push_str(&plan.left_out());
    text.push('\n');
    text
}
