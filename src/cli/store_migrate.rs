//! `earshot store migrate [--store PATH|URL] [--json]`: brings a store's
//! schema to this build's, on purpose (every command also migrates at its
//! start). For a PostgreSQL store (`postgres://USER@HOST:PORT/DB`, the
//! password from `EARSHOT_STORE_PASSWORD_FILE`, `PGPASSWORD` or
//! `~/.pgpass`) it runs under the advisory lock, so replicas starting
//! meanwhile wait and migrate nothing twice ([`earshot_core::store::postgres`]);
//! a store file is migrated as opening it does. Exit 0 migrated or
//! current, 1 the store cannot be reached or is newer, 2 a bad URL.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::GlobalOptions;
use super::history_args::open_store;
use super::output::plain;
use earshot_core::store::SCHEMA_VERSION;
use earshot_core::store::postgres::text_index::TextIndex;
use earshot_core::store::postgres::type_index::TypeIndex;
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget, is_postgres_url};

#[derive(Args, Debug)]
pub(crate) struct MigrateArgs {
    /// The store: a file [default: the profile's `store`, else earshot.db
    /// in the state directory] or postgres://USER@HOST:PORT/DATABASE
    /// (never with a password in it).
    #[arg(long = "store", env = "EARSHOT_STORE", value_name = "PATH|URL")]
    pub(crate) store: Option<String>,
    /// The result as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) async fn run(args: MigrateArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    match args.store.as_deref() {
        Some(url) if is_postgres_url(url) => postgres(url, args.json).await,
        given => {
            let store = open_store(given.map(Path::new), global)?;
            let shown = store.path().display().to_string();
            if args.json {
                println!(
                    "{}",
                    json!({"store": shown, "backend": "sqlite", "to": SCHEMA_VERSION})
                );
            } else {
                println!("the store {} is at schema {SCHEMA_VERSION}", plain(&shown));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn postgres(url: &str, json: bool) -> color_eyre::Result<ExitCode> {
    let target = match PgTarget::parse(url) {
        Ok(target) => target,
        Err(error) => {
            eprintln!("earshot store migrate: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let shown = target.to_string();
    let migrated = match PgStore::open(target, &PasswordSources::from_env(), 1).await {
        Ok(store) => store.migrate().await,
        Err(error) => Err(error),
    };
    let migrated = match migrated {
        Ok(migrated) => migrated,
        Err(error) => {
            eprintln!("earshot store migrate: {}", plain(&error.to_string()));
            return Ok(ExitCode::from(1));
        }
    };
    let type_index = match migrated.type_index {
        TypeIndex::Built => "built",
        TypeIndex::Building => "building",
    };
    let text_index = match migrated.text_index {
        TextIndex::Built => "built",
        TextIndex::Building => "building",
        TextIndex::Unavailable => "unavailable",
    };
    if json {
        println!(
            "{}",
            json!({"store": shown, "backend": "postgres", "from": migrated.from, "to": migrated.to,
                   "type_index": type_index, "text_index": text_index})
        );
    } else {
        if migrated.from == migrated.to {
            println!("{shown} is at schema {} already", migrated.to);
        } else {
            println!(
                "migrated {shown} from schema {} to {}",
                migrated.from, migrated.to
            );
        }
        println!("{}", type_index_line(migrated.type_index));
        println!("{}", text_index_line(migrated.text_index));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `type:` reads along on the store, in one line.
fn type_index_line(index: TypeIndex) -> &'static str {
    match index {
        TypeIndex::Built => "type index (events_by_type): built; type: reads along it",
        TypeIndex::Building => {
            "type index (events_by_type): being built by another process, partition by \
             partition; type: tests the window's rows until it is done"
        }
    }
}

/// What free text reads along on the store, in one line.
fn text_index_line(index: TextIndex) -> &'static str {
    match index {
        TextIndex::Built => "text index (events_by_text, pg_trgm): built; free text reads along it",
        TextIndex::Building => {
            "text index (events_by_text, pg_trgm): being built by another process, partition by \
             partition; free text tests the window's rows until it is done"
        }
        TextIndex::Unavailable => {
            "text index: none, pg_trgm is not installed and could not be (not on the server, or \
             not permitted to this role); free text tests the window's rows"
        }
    }
}
