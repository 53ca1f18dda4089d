//! `earshot deliveries SESSION_ID [--latest]`: every attempt, or the latest
//! per subscription, with failures and pending retries easy to spot.

use std::process::ExitCode;

use clap::Args;

use super::history_args::StoreArg;
use super::output::{Table, print_json, short_id, time};
use super::{Connection, GlobalOptions, report};
use earshot_core::api::delivery_verdict::{final_at_once, retry_line};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::duration_text;
use earshot_core::store::{Store, give_up};

#[derive(Args, Debug)]
pub(crate) struct DeliveriesArgs {
    /// Session id, or a call id (calls are sessions here).
    pub(crate) session_id: String,
    /// Only the most recent attempt per subscription.
    #[arg(long)]
    pub(crate) latest: bool,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connection: Connection,
    /// The store whose history says when the platform gives up retrying.
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

pub(crate) async fn run(
    args: DeliveriesArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let result = async {
        let client = args.connection.client(global)?;
        let records = if args.latest {
            client.latest_deliveries(&args.session_id).await?
        } else {
            client.list_deliveries(&args.session_id).await?
        };
        if args.json {
            print_json(&records)?;
        } else if records.is_empty() {
            println!(
                "no delivery attempts for {} yet: check that an enabled subscription asks for this event and agent",
                args.session_id
            );
        } else {
            print_table(&records)?;
            print_retries(&records, || give_up_text(&args.store, global));
        }
        Ok(ExitCode::SUCCESS)
    }
    .await;
    result.or_else(report)
}

fn print_table(records: &[DeliveryRecord]) -> std::io::Result<()> {
    let mut table = Table::new(&[
        "ATTEMPT",
        "SUBSCRIPTION",
        "#",
        "STATUS",
        "HTTP",
        "CREATED",
        "NEXT",
        "ERROR",
    ]);
    let now = chrono::Utc::now();
    for record in records {
        let status = match (&record.status, final_at_once(record)) {
            (status @ DeliveryStatus::Delivered, _) => status.to_string(),
            (_, Some(why)) => format!("FAILED ({why})"),
            (status, None) => status_word(status, record),
        };
        let next = match (&record.delivered_at, &record.next_retry_at) {
            (Some(delivered), _) => format!("delivered {}", time(Some(delivered))),
            (None, Some(retry)) => format!(
                "retry {} ({})",
                time(Some(retry)),
                duration_text::due((retry.with_timezone(&chrono::Utc) - now).num_seconds())
            ),
            (None, None) => "-".to_owned(),
        };
        table.row(vec![
            short_id(&record.id).to_owned(),
            short_id(&record.subscription_id).to_owned(),
            record.attempt_count.to_string(),
            status,
            record
                .http_status_code
                .map_or_else(|| "-".to_owned(), |code| code.to_string()),
            time(Some(&record.created_at)),
            next,
            record.error.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    table.print()
}

/// The status word of an attempt not final at once: failed for good when
/// no retry is scheduled.
fn status_word(status: &DeliveryStatus, record: &DeliveryRecord) -> String {
    match status {
        DeliveryStatus::Failed if record.next_retry_at.is_none() => "FAILED".to_owned(),
        DeliveryStatus::Failed => "failed, will retry".to_owned(),
        other => other.to_string(),
    }
}

/// Each retrying attempt's end, below the table: its attempt number, when
/// the retry comes, and when the platform gave up on this account before
/// (the spec does not say how many retries remain); a final one says why.
fn print_retries(records: &[DeliveryRecord], give_up: impl FnOnce() -> String) {
    let now = chrono::Utc::now();
    // Read once, and only when an attempt retries.
    let mut give_up = Some(give_up);
    let mut seen: Option<String> = None;
    for record in records {
        if record.status == DeliveryStatus::Delivered {
            continue;
        }
        let history = if record.next_retry_at.is_some() && final_at_once(record).is_none() {
            seen.get_or_insert_with(|| give_up.take().map_or_else(String::new, |read| read()))
                .as_str()
        } else {
            ""
        };
        if let Some(line) = retry_line(record, now, history) {
            println!("{}: {line}", short_id(&record.id));
        }
    }
}

/// What the store's history says about when the platform gives up; the
/// store is read only when it exists (this command creates none).
fn give_up_text(store: &StoreArg, global: &GlobalOptions) -> String {
    let path = match store.path(global) {
        Ok(path) if path.exists() => path,
        Ok(path) => {
            return format!(
                "when the platform gives up: unknown (no store at {})",
                path.display()
            );
        }
        Err(error) => return format!("when the platform gives up: unknown ({error})"),
    };
    match Store::open(&path)
        .map_err(|error| error.to_string())
        .and_then(|store| give_up::observed(&store).map_err(|error| error.to_string()))
    {
        Ok(observed) => give_up::GiveUp::describe(observed),
        Err(error) => format!("when the platform gives up: unknown (store: {error})"),
    }
}
