//! `earshot events [QUERY…]`: every event the observer received, newest
//! first, with its outcome per subscription, filtered with the console's
//! `/` language (`type:call.ended status:missed sub:db318dee
//! session:call_… since:1h` and free text). Exit 0, or 2 on a bad query.
//! The store may be a file or PostgreSQL ([`read_store`]); on PostgreSQL
//! the sweep does not run yet, the outcomes per subscription are not
//! held (each row's list is empty) and `status:`/`sub:` are refused
//! (exit 2).
//! `earshot events resend QUERY… --to URL` sends what it finds
//! ([`events_resend`]).

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::events_resend::{self, ResendArgs};
use super::history_args::SweepArgs;
use super::output::{Table, emit, print_json};
use super::read_store::{self, ReadStoreArg};
use super::sessions::clock;
use super::{Connection, GlobalOptions};
use earshot_core::history::event_list::{self, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::store;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct EventsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<EventsAction>,
    /// Filter terms: type:T status:S sub:ID session:ID since:D, and free text.
    pub(crate) query: Vec<String>,
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
    /// How many events to list at most.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub(crate) limit: usize,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// What else `earshot events` does with the events it finds.
#[derive(Subcommand, Debug)]
pub(crate) enum EventsAction {
    /// Send the observer's exact bytes of the events a query finds to a URL
    /// (your receiver under development), oldest first, signed now.
    Resend(ResendArgs),
}

pub(crate) async fn run(args: EventsArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    if let Some(EventsAction::Resend(resend)) = args.action {
        return events_resend::run(resend, global).await;
    }
    let query = match EventQuery::parse(&args.query.join(" "), store::now_ms()) {
        Ok(query) => query,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let reader = match args.store.open_for("events", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let reader = read_store::sweep_first(&args.sweep, &args.connection, global, reader).await?;
    let rows = event_list::list_from(&reader, &query, args.sweep.since, args.limit).await?;
    let now = earshot_core::store::now_ms();
    if let Some(line) = read_store::silence_line(&reader, args.sweep.since, now)? {
        // stderr: stdout stays parseable.
        eprintln!("{line}: events after it are not in the store");
    }
    if args.json {
        print_json(&json_rows(&rows)?)?;
    } else {
        emit(&render(&rows, args.limit))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows as JSON, `"subscriptions": null` where a row's outcomes are
/// unknown (on PostgreSQL, an event whose session was not swept since).
fn json_rows(rows: &[EventRow]) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(rows)?;
    if let Some(listed) = value.as_array_mut() {
        for (row, json) in rows.iter().zip(listed.iter_mut()) {
            if let Some(json) = json.as_object_mut().filter(|_| !row.outcomes_known) {
                json.insert("subscriptions".into(), serde_json::Value::Null);
            }
        }
    }
    Ok(value)
}

fn render(rows: &[EventRow], limit: usize) -> String {
    if rows.is_empty() {
        return "no events match (the observer, `earshot listen --store`, stores them)\n".into();
    }
    let mut table = Table::new(&["TIME", "TYPE", "SESSION", "EVENT", "SUBSCRIPTIONS"]);
    for row in rows {
        // The `sub:` filter's first, the observer's own last as `obs ✓`.
        let outcomes: Vec<String> = row
            .subscriptions
            .iter()
            .map(|outcome| outcome.short_text())
            .collect();
        table.row(vec![
            clock(Some(row.occurred_ms)),
            row.event.clone(),
            row.session_id.clone(),
            row.event_id.clone(),
            if !row.outcomes_known {
                "unknown".into()
            } else if outcomes.is_empty() {
                "-".into()
            } else {
                outcomes.join(", ")
            },
        ]);
    }
    let mut text = table.render();
    if rows.len() == limit {
        text.push_str(&format!(
            "(the newest {limit}: raise --limit or narrow the query)\n"
        ));
    }
    text
}
