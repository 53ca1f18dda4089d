//! The incident-history store (DESIGN §9): one SQLite file, WAL mode, so a
//! long-running `earshot listen` writes while consoles and commands read.
//!
//! No other module touches SQL. Writers: the observer ([`events`]), the
//! sweep ([`deliveries`], [`sessions`]), recover ([`recoveries`]); each
//! write keeps the event rows ([`outcomes`]) and [`incidents`] current. Readers:
//! the console, `health`, `sessions`, `redeliver`, the observer's metrics
//! ([`totals`]); the observer's health asks [`probe`]. What is removed, and
//! when: [`retention`] (by age, [`pruner`] on the observer's schedule) and
//! [`forget`] (a data subject's erasure). The schema is versioned
//! with `PRAGMA user_version` and migrated on open ([`schema`]); a file that
//! is not an earshot store, is damaged, or was written by a newer earshot is
//! refused with an error that says so, and is never modified. The tables are
//! documented for `sqlite3` users in `docs/store.md`.

pub mod async_store;
mod cells;
pub mod chains;
pub mod changes;
pub mod check;
pub mod checker;
mod checkpointer;
pub mod deliveries;
pub mod erase_keys;
mod event_key;
pub mod event_list;
mod event_list_pg;
pub mod event_words;
pub mod events;
pub mod forget;
pub mod give_up;
pub mod handle;
pub mod health;
pub mod incidents;
pub mod kept;
pub mod live_list;
pub mod mark;
pub mod memory;
mod numbered_events;
mod outcome_rebuild;
mod outcome_rule;
pub mod outcomes;
pub mod postgres;
pub mod private;
pub mod probe;
pub mod pruner;
pub mod reader;
pub(crate) mod recoveries;
pub mod relay;
pub mod retention;
mod schema;
mod session_number;
pub use schema::say_slow_migrations_with;
pub mod sessions;
pub mod sweep_store;
pub mod timeline;
pub mod totals;
pub mod word_filler;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

pub use async_store::AsyncStore;
pub use handle::StoreHandle;
pub use private::Tightened;
pub use reader::StoreReader;
pub use schema::SCHEMA_VERSION;
pub use sweep_store::SweepStore;

/// The file name of the store in the state directory.
pub const DEFAULT_FILE_NAME: &str = "earshot.db";

/// How long a statement waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "the store {} is not a regular file ({kind}): give the path of a store file \
         (created if missing), not a device, pipe or directory",
        path.display()
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error(
        "{} is not an earshot store, or it is damaged ({detail}); it was left untouched: \
         move it aside or pass --store with another path",
        path.display()
    )]
    NotAStore { path: PathBuf, detail: String },
    #[error(
        "the store is damaged where this command read it ({detail}); nothing was counted \
         from the damaged part. Run `earshot store check` (with the same --store) to see \
         the whole file, then restore a backup or move the file aside (earshot starts a new \
         store there)"
    )]
    DamagedRead { detail: String },
    #[error(
        "{} was written by a newer earshot (schema version {found}; this build knows up to \
         {supported}); it was left untouched: upgrade earshot or pass --store with another path",
        path.display()
    )]
    NewerVersion {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "the store {} was left untouched: upgrading it to schema {version} rewrites its events \
         once and needs about {needed_mb} MB free on its disk, which has {free_mb} MB; free \
         space there (or copy the store to a larger disk and pass --store with that path), \
         then run the command again",
        path.display()
    )]
    NoRoomToUpgrade {
        path: PathBuf,
        version: i64,
        needed_mb: u64,
        free_mb: u64,
    },
    #[error("cannot create the store {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store query failed: {0}")]
    Sql(rusqlite::Error),
    #[error("the store's writer has stopped")]
    WriterGone,
    #[error("the store could not commit: {0}")]
    Commit(String),
    #[error("an earlier copy of this event was not stored: {0}")]
    FirstCopyFailed(String),
    #[error("cannot start the store's writer thread: {0}")]
    Thread(std::io::Error),
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    #[error("a store call did not finish: {0}")]
    Task(String),
    #[error(transparent)]
    Postgres(#[from] postgres::PgError),
    /// What a PostgreSQL store cannot answer yet (the message says why).
    #[error("{0}")]
    NotOnPostgres(String),
}

/// An open store: one connection, used from one thread at a time.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    tightened: Vec<Tightened>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// `<state dir>/earshot.db`.
pub fn default_path(state_dir: &Path) -> PathBuf {
    state_dir.join(DEFAULT_FILE_NAME)
}

impl Store {
    /// Opens (creating it and its directory if needed) and migrates. A path
    /// that is not a regular file is refused before SQLite opens it, and an
    /// existing file is checked read-only ([`check`]) before anything
    /// writes to it. The file, its side files and a directory made for it
    /// are private ([`private`]); wider modes found are narrowed after the
    /// check ([`Store::tightened`]).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let create = |source| StoreError::Create {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            private::create_dir(parent).map_err(create)?;
        }
        if check::regular_or_missing(path)?.is_some() {
            check::existing(path)?;
        } else {
            private::create_file(path).map_err(create)?;
        }
        let mut tightened = private::tighten_files(path);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
            path: path.to_owned(),
            source,
        })?;
        let mut store = Store {
            conn,
            path: path.to_owned(),
            tightened: Vec::new(),
        };
        store.configure().map_err(|error| store.classify(error))?;
        schema::migrate(&mut store.conn, &store.path)?;
        // SQLite gives a new -wal and -shm the file's mode; one it kept
        // from before is narrowed here.
        tightened.extend(private::tighten_files(path));
        store.tightened = tightened;
        Ok(store)
    }

    /// The files whose modes this open narrowed (or could not): for the
    /// caller to say, once each.
    pub fn tightened(&self) -> &[Tightened] {
        &self.tightened
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        event_words::register_fold(&self.conn)?;
        // Reading the schema first makes a damaged or foreign file fail here,
        // before anything is written to it.
        self.conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "the store could not switch to WAL mode");
        }
        // WAL + NORMAL: a commit survives the process being killed; only a
        // power loss can take the last transactions.
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    fn classify(&self, error: rusqlite::Error) -> StoreError {
        classify(&self.path, error)
    }

    /// How long a statement waits for another connection's write lock
    /// (10 s unless set); a write that waited that long fails.
    pub fn set_busy_timeout(&mut self, timeout: Duration) -> Result<(), StoreError> {
        self.conn.busy_timeout(timeout)?;
        Ok(())
    }

    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// A file system error about the store at `path`.
fn io_error(path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Open {
        path: path.to_owned(),
        source: rusqlite::Error::ToSqlConversionFailure(Box::new(error)),
    }
}

/// A page SQLite finds damaged while a command reads it is said as such,
/// with the check to run, never as a bare query failure.
impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        if is_damage(&error) {
            StoreError::DamagedRead {
                detail: error.to_string(),
            }
        } else {
            StoreError::Sql(error)
        }
    }
}

impl StoreError {
    /// [`StoreError::DamagedRead`] when `cause` is SQLite reporting a
    /// damaged page (for an error that reached the top another way).
    pub fn damaged_read(cause: &(dyn std::error::Error + 'static)) -> Option<StoreError> {
        let error = cause.downcast_ref::<rusqlite::Error>()?;
        is_damage(error).then(|| StoreError::DamagedRead {
            detail: error.to_string(),
        })
    }
}

/// SQLite's word for a page it cannot read as it should be.
fn is_damage(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// A damaged or foreign file reads as "not a store", anything else as is.
fn classify(path: &Path, error: rusqlite::Error) -> StoreError {
    if is_damage(&error) {
        StoreError::NotAStore {
            path: path.to_owned(),
            detail: error.to_string(),
        }
    } else {
        StoreError::Open {
            path: path.to_owned(),
            source: error,
        }
    }
}

/// Rows skipped by [`readable`] in this process.
static SKIPPED_ROWS: AtomicU64 = AtomicU64::new(0);

/// The rows of a query, less those that cannot be read (a hand-edited
/// value of the wrong type, a NULL where a key belongs): each is skipped
/// and counted ([`skipped_rows`]) rather than failing the whole command.
pub(crate) fn readable<T, C: Default + Extend<T>>(
    rows: impl Iterator<Item = rusqlite::Result<T>>,
) -> rusqlite::Result<C> {
    let mut kept = C::default();
    for row in rows {
        match row {
            Ok(row) => kept.extend([row]),
            Err(
                error @ (rusqlite::Error::FromSqlConversionFailure(..)
                | rusqlite::Error::InvalidColumnType(..)
                | rusqlite::Error::IntegralValueOutOfRange(..)
                | rusqlite::Error::Utf8Error(..)),
            ) => skip_row(&error.to_string()),
            Err(error) => return Err(error),
        }
    }
    Ok(kept)
}

/// A `total(count)` of a counts table as a count: a sum no account can
/// reach (a hand-edited counter near `i64::MAX`, which `sum()` would have
/// stopped the whole query on as an integer overflow) makes its row
/// unreadable, so [`readable`] skips and counts it.
pub(crate) fn summed_count(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<i64> {
    /// More than a million events a second for a year.
    const MOST: f64 = 3.2e13;
    let total: f64 = row.get(index)?;
    if (0.0..=MOST).contains(&total) {
        Ok(total as i64)
    } else {
        Err(rusqlite::Error::IntegralValueOutOfRange(
            index,
            total as i64,
        ))
    }
}

/// Counts one row skipped as unreadable, and why.
pub(crate) fn skip_row(why: &str) {
    SKIPPED_ROWS.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(why, "skipped a store row that cannot be read");
}

/// How many store rows this process skipped as unreadable.
pub fn skipped_rows() -> u64 {
    SKIPPED_ROWS.load(Ordering::Relaxed)
}

/// Milliseconds since the Unix epoch, the store's time unit.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod ending_tests;
#[cfg(test)]
mod event_list_pg_tests;
#[cfg(test)]
mod event_words_tests;
#[cfg(test)]
mod outcome_tests;
#[cfg(test)]
mod tests;
