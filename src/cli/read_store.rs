//! `--store PATH|URL` for the commands that take a PostgreSQL store as
//! well as a file (`earshot events`, `earshot sessions list`, and
//! `earshot sessions add`, which writes through the same
//! [`StoreReader`]): where
//! the store is (the flag, `EARSHOT_STORE`, else the profile's `store`,
//! else the state directory's file), opened as a
//! [`StoreReader`], and what those commands do first on each backend (the
//! sweep, the observer's coverage) chosen here, so the commands hold no
//! `if postgres`. A bad URL is refused (exit 2) before anything is done;
//! an unreachable store exits 1 naming it (never a password).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::history_args::{SweepArgs, open_store};
use super::listen_postgres::store_file_or_url;
use super::output::plain;
use super::{Connection, GlobalOptions};
use earshot_core::config::StoreSetting;
use earshot_core::store::StoreReader;
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget, is_postgres_url};

/// `--store PATH|URL` (`EARSHOT_STORE`), else the profile's `store`,
/// else `earshot.db` in the state dir.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ReadStoreArg {
    /// The store: a file [default: the profile's `store`, else earshot.db
    /// in the state directory] or postgres://USER@HOST:PORT/DATABASE (the
    /// password from EARSHOT_STORE_PASSWORD_FILE, PGPASSWORD or ~/.pgpass).
    #[arg(long = "store", env = "EARSHOT_STORE", value_name = "PATH|URL", value_parser = store_file_or_url)]
    pub(crate) path: Option<PathBuf>,
}

/// Where a store is, before it is opened.
#[derive(Debug)]
pub(crate) enum Place {
    /// A file, or `None` for the profile's or the state directory's.
    File(Option<PathBuf>),
    Postgres(PgTarget),
}

/// Why a read command stops before reading: its exit code and one line.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Refusal {
    /// Says it on stderr as `earshot COMMAND: …`; the exit code.
    pub(crate) fn say(&self, command: &str) -> ExitCode {
        eprintln!("earshot {command}: {}", plain(&self.message));
        ExitCode::from(self.code)
    }
}

impl ReadStoreArg {
    /// The store opened for `command`, or its exit code once the refusal
    /// was said (`earshot COMMAND: …`): a malformed URL (exit 2), an
    /// unreachable database (exit 1).
    pub(crate) async fn open_for(
        &self,
        command: &str,
        global: &GlobalOptions,
    ) -> color_eyre::Result<Result<StoreReader, ExitCode>> {
        self.open_checked(command, global, |_| None).await
    }

    /// [`ReadStoreArg::open_for`], refusing first what `check` refuses on
    /// the store's backend, before anything is opened or done.
    pub(crate) async fn open_checked(
        &self,
        command: &str,
        global: &GlobalOptions,
        check: impl FnOnce(&Place) -> Option<Refusal>,
    ) -> color_eyre::Result<Result<StoreReader, ExitCode>> {
        let place = match self.place(global)? {
            Ok(place) => place,
            Err(refusal) => return Ok(Err(refusal.say(command))),
        };
        if let Some(refusal) = check(&place) {
            return Ok(Err(refusal.say(command)));
        }
        Ok(open(place, global)
            .await?
            .map_err(|refusal| refusal.say(command)))
    }

    /// Where the store is; a malformed PostgreSQL URL is refused (exit 2).
    pub(crate) fn place(
        &self,
        global: &GlobalOptions,
    ) -> color_eyre::Result<Result<Place, Refusal>> {
        let given = match &self.path {
            Some(path) => Some(path.to_string_lossy().into_owned()),
            None => match earshot_core::config::profile_store_setting(
                global.config.as_deref(),
                global.profile.as_deref(),
            )? {
                Some(StoreSetting::Postgres(url)) => Some(url),
                Some(StoreSetting::File(path)) => return Ok(Ok(Place::File(Some(path)))),
                None => None,
            },
        };
        Ok(match given {
            Some(url) if is_postgres_url(&url) => match PgTarget::parse(&url) {
                Ok(target) => Ok(Place::Postgres(target)),
                Err(error) => Err(Refusal {
                    code: 2,
                    message: error.to_string(),
                }),
            },
            given => Ok(Place::File(given.map(PathBuf::from))),
        })
    }
}

/// Opens the store at `place`: a file as every command does (created if
/// missing, modes narrowed), a database connected and migrated (exit 1
/// when it cannot be reached).
async fn open(
    place: Place,
    global: &GlobalOptions,
) -> color_eyre::Result<Result<StoreReader, Refusal>> {
    Ok(match place {
        Place::File(path) => Ok(open_store(path.as_deref(), global)?.into()),
        Place::Postgres(target) => {
            match PgStore::connect(target, &PasswordSources::from_env()).await {
                Ok(store) => Ok(store.into()),
                Err(error) => Err(Refusal {
                    code: 1,
                    message: error.to_string(),
                }),
            }
        }
    })
}

/// The sweep a history command runs first, on either backend (as
/// [`SweepArgs::sweep_first`] on a file, [`super::health::sweep_postgres`]
/// on a database), unless `--no-sweep`; a sweep that stopped early is said
/// on stderr and what it fetched kept.
pub(crate) async fn sweep_first(
    sweep: &SweepArgs,
    connection: &Connection,
    global: &GlobalOptions,
    reader: StoreReader,
) -> color_eyre::Result<StoreReader> {
    Ok(match reader {
        StoreReader::Sqlite(store) => sweep.sweep_first(connection, global, store).await?.0.into(),
        StoreReader::Postgres(store) => {
            super::health::sweep_postgres(sweep, connection, global, &store).await?;
            store.into()
        }
    })
}

/// The observer's silence in the window, as SQLite's coverage says it
/// (`observer silent since …`); `None` on PostgreSQL, which holds none of
/// the attempts it is judged by yet.
pub(crate) fn silence_line(
    reader: &StoreReader,
    since_ms: i64,
    now_ms: i64,
) -> color_eyre::Result<Option<String>> {
    Ok(match reader {
        StoreReader::Sqlite(store) => {
            earshot_core::history::coverage::coverage(store, since_ms, now_ms)?.silence_line()
        }
        StoreReader::Postgres(_) => None,
    })
}
