//! `earshot changes [--since D] [--json]`: what earshot changed on the
//! platform (create, update, pause, resume, rotate, delete, recover runs),
//! newest first: when, who, which subscription, what. Never a secret.
//! From a SQLite file or a PostgreSQL store (`--store PATH|URL`).

use std::process::ExitCode;

use clap::Args;

use super::GlobalOptions;
use super::history_args::parse_since;
use super::output::{Table, emit, print_json, short_id};
use super::read_store::ReadStoreArg;
use super::sessions::clock;
use earshot_core::store::changes;

#[derive(Args, Debug)]
pub(crate) struct ChangesArgs {
    /// The window: a duration back from now (90s, 30m, 2h, 7d) or an RFC 3339 time.
    #[arg(long, default_value = "7d", value_parser = parse_since, value_name = "DURATION")]
    pub(crate) since: i64,
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
}

pub(crate) async fn run(args: ChangesArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let store = match args.store.open_for("changes", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let listed = changes::since_in(&store, args.since).await?;
    if args.json {
        print_json(&listed)?;
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        emit("no changes recorded in the window\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = Table::new(&["TIME", "WHO", "SUBSCRIPTION", "ACTION", "WHAT"]);
    for change in &listed {
        table.row(vec![
            clock(Some(change.at_ms)),
            change.operator.clone(),
            change
                .subscription_id
                .as_deref()
                .map_or("-", short_id)
                .to_owned(),
            change.action.clone(),
            change.detail.clone(),
        ]);
    }
    emit(&table.render())?;
    Ok(ExitCode::SUCCESS)
}
