//! `earshot sessions add ID…|--ids-file F` and `earshot sessions list`:
//! the sessions and calls the store knows, which the sweep fetches;
//! `earshot sessions get` is in [`super::session_get`]. Both take a file
//! or a PostgreSQL store ([`read_store`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use color_eyre::eyre::eyre;

use super::GlobalOptions;
use super::output::{Table, emit, print_json};
use super::read_store::ReadStoreArg;
use earshot_core::store::{self, sessions};

#[derive(Args, Debug)]
pub(crate) struct SessionsArgs {
    #[command(subcommand)]
    pub(crate) command: SessionsCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SessionsCommand {
    /// Add session or call ids for the sweep to follow.
    Add {
        /// Session ids, or call ids (calls are sessions here).
        #[arg(required_unless_present = "ids_file")]
        ids: Vec<String>,
        /// A file with one id per line (blank lines and `#` comments skipped).
        #[arg(long, value_name = "FILE", conflicts_with = "ids")]
        ids_file: Option<PathBuf>,
        #[command(flatten)]
        store: ReadStoreArg,
    },
    /// The known sessions, most recently active first.
    List {
        /// How many to show at most.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: ReadStoreArg,
    },
    /// One session or call: record, event times, artifacts and their
    /// links' expiry, deliveries; --download fetches the recording and
    /// transcript.
    Get(super::session_get::GetArgs),
}

pub(crate) fn run(args: SessionsArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    match args.command {
        SessionsCommand::Add {
            ids,
            ids_file,
            store,
        } => {
            let ids = match ids_file {
                Some(path) => match read_ids(&path) {
                    Ok(ids) => ids,
                    Err(message) => {
                        eprintln!("error: {message}");
                        return Ok(ExitCode::from(2));
                    }
                },
                None => ids,
            };
            if let Some(bad) = ids.iter().find(|id| !plausible_id(id)) {
                eprintln!(
                    "error: `{bad}` is not a session or call id (letters, digits, `_` and `-` only)"
                );
                return Ok(ExitCode::from(2));
            }
            super::runtime()?.block_on(add(&store, &ids, global))
        }
        SessionsCommand::List { limit, json, store } => {
            super::runtime()?.block_on(list(&store, limit, json, global))
        }
        SessionsCommand::Get(get) => {
            super::runtime()?.block_on(super::session_get::run(get, global))
        }
    }
}

/// `earshot sessions add` into a file or a PostgreSQL store.
async fn add(
    store: &ReadStoreArg,
    ids: &[String],
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let mut writer = match store.open_for("sessions add", global).await? {
        Ok(writer) => writer,
        Err(code) => return Ok(code),
    };
    let added = writer
        .add_sessions(ids, sessions::Source::Added, store::now_ms())
        .await?;
    emit(&format!(
        "{added} added, {} already known; `earshot health` sweeps them\n",
        ids.len() - added
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `earshot sessions list` from a file or a PostgreSQL store (there the
/// attempts are unknown: `null` in JSON, `unknown` in the table).
async fn list(
    store: &ReadStoreArg,
    limit: usize,
    json: bool,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let reader = match store.open_for("sessions list", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let known = reader.sessions(limit).await?;
    if json {
        print_json(&known)?;
    } else if known.is_empty() {
        emit(
            "no sessions known yet: run `earshot listen --store` as the observer, or `earshot sessions add ID`\n",
        )?;
    } else {
        print_table(&known)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn plausible_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn read_ids(path: &Path) -> Result<Vec<String>, String> {
    let text =
        earshot_core::bounded_file::read_to_string(path, earshot_core::bounded_file::IDS_FILE)
            .map_err(|error| error.to_string())?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

fn print_table(known: &[sessions::KnownSession]) -> color_eyre::Result<()> {
    let mut table = Table::new(&[
        "SESSION",
        "KIND",
        "SOURCE",
        "LAST EVENT",
        "EVENTS",
        "ATTEMPTS",
        "FAILED",
        "SWEPT",
    ]);
    for session in known {
        table.row(vec![
            session.session_id.clone(),
            session.kind.clone().unwrap_or_else(|| "-".into()),
            session.source.clone(),
            clock(session.last_event_ms),
            session.events.to_string(),
            unknown_or(session.attempts),
            unknown_or(session.failed_attempts),
            match (session.last_swept_ms, session.unsettled) {
                (None, _) => "not yet".into(),
                (Some(at), true) => format!("{} (pending)", clock(Some(at))),
                (Some(at), false) => clock(Some(at)),
            },
        ]);
    }
    emit(&table.render()).map_err(|error| eyre!(error))
}

/// A count, or `unknown` where the store cannot know it.
fn unknown_or(count: Option<i64>) -> String {
    count.map_or_else(|| "unknown".into(), |count| count.to_string())
}

/// `2026-11-23 14:02:11Z`, or `-`.
pub(super) fn clock(ms: Option<i64>) -> String {
    ms.map_or_else(|| "-".into(), earshot_core::clock_text::utc_datetime)
}
