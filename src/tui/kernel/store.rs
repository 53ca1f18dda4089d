//! The incident-history store as the panes' tasks reach it: where it is
//! ([`StorePath`]: a file, or a PostgreSQL store's pool), opening a file
//! ([`open`], [`with_store`]) as an [`AsyncStore`] (every call on the
//! blocking pool, never on the render path), the live event list on
//! either backend ([`live_events`]), recording a change the console made
//! ([`note_change`]), the sweep's budget, and when the platform gives up
//! ([`give_up_text`]). Each task opens a file for its own work (SQLite
//! connections are cheap; WAL lets them run beside a `listen` that
//! writes). What a PostgreSQL store does not hold yet (the sweep's
//! outcomes, incidents, changes, attempts) fails in one line,
//! [`NOT_ON_POSTGRES`], which the pane shows.

use std::path::PathBuf;

use super::Failure;
use earshot_core::history::event_list::{self, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::incidents;
use earshot_core::store::live_list::{LiveCursor, LiveRead};
use earshot_core::store::mark::StoreMark;
use earshot_core::store::postgres::PgStore;
use earshot_core::store::{AsyncStore, Store, StoreError, changes};

/// What a pane shows where it reads what only a store file holds so far.
pub(crate) const NOT_ON_POSTGRES: &str = "the sweep's history (health, outcomes, incidents, \
     changes, attempts) is not read from PostgreSQL by the console yet; `earshot health --store \
     URL` shows the board, the Events pane (8) lists the events live";

/// Where the console's store is.
#[derive(Clone, Debug)]
pub(crate) enum StoreAt {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL store, connected (and migrated) at the console's start.
    Postgres(PgStore),
}

impl From<PathBuf> for StoreAt {
    fn from(path: PathBuf) -> Self {
        StoreAt::File(path)
    }
}

impl StoreAt {
    /// The file's write mark (`None` for PostgreSQL, which has no file:
    /// every live read there asks the server).
    pub(crate) fn file_mark(&self) -> Option<StoreMark> {
        match self {
            StoreAt::File(path) => Some(StoreMark::of(path)),
            StoreAt::Postgres(_) => None,
        }
    }

    /// Whether `other` is the same store (the same file, or the same
    /// database URL).
    pub(crate) fn same_as(&self, other: &StoreAt) -> bool {
        match (self, other) {
            (StoreAt::File(a), StoreAt::File(b)) => a == b,
            (StoreAt::Postgres(a), StoreAt::Postgres(b)) => a.target() == b.target(),
            _ => false,
        }
    }
}

impl std::fmt::Display for StoreAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreAt::File(path) => write!(f, "{}", path.display()),
            StoreAt::Postgres(store) => write!(f, "{}", store.target()),
        }
    }
}

/// Requests one console sweep may send (it runs every 5 s while the
/// Health pane is on screen: at most 600 a minute, one a sweep when
/// nothing is due).
pub(crate) const CONSOLE_SWEEP_BUDGET: usize = 50;

/// Where the console's store is, or why there is none.
pub(crate) type StorePath = Result<StoreAt, String>;

/// A store error, as a pane shows it.
pub(crate) fn failure(error: impl std::fmt::Display) -> Failure {
    Failure::new(error.to_string())
}

/// Opens the store and runs `work` with it ([`AsyncStore::run`]).
pub(crate) async fn with_store<T: Send + 'static>(
    path: StorePath,
    work: impl FnOnce(&mut Store) -> Result<T, String> + Send + 'static,
) -> Result<T, Failure> {
    let store = open(path).await?;
    store
        .run(move |store| Ok::<_, StoreError>(work(store)))
        .await
        .map_err(failure)?
        .map_err(Failure::new)
}

/// Opens the store file (on the blocking pool, as every call on it); a
/// PostgreSQL store is [`NOT_ON_POSTGRES`].
pub(crate) async fn open(path: StorePath) -> Result<AsyncStore, Failure> {
    match path.map_err(Failure::new)? {
        StoreAt::File(path) => AsyncStore::open(path).await.map_err(failure),
        StoreAt::Postgres(_) => Err(Failure::new(NOT_ON_POSTGRES)),
    }
}

/// The live read of `query`'s event list from either backend
/// (`history::event_list::live_from`): the whole list without `known`,
/// else only what was filed since (none twice), or nothing when nothing
/// changed. A file is read on the blocking pool.
pub(crate) async fn live_events(
    store: StorePath,
    query: EventQuery,
    since_ms: i64,
    limit: usize,
    known: Option<LiveCursor>,
) -> Result<(LiveRead<EventRow>, Option<LiveCursor>), Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(Ok(StoreAt::File(path)), move |store| {
                event_list::live_sqlite(store, &query, since_ms, limit, known.as_ref())
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            event_list::live_postgres(&store, &query, since_ms, limit, known.as_ref())
                .await
                .map_err(failure)
        }
    }
}

/// When the platform gave up retrying on this account, as the store's
/// history shows it, in words (`store::give_up`); "unknown" with why when
/// the store cannot be read.
pub(crate) async fn give_up_text(path: StorePath) -> String {
    give_up_words(
        with_store(path, |store| {
            earshot_core::store::give_up::observed(store).map_err(|error| error.to_string())
        })
        .await,
    )
}

/// [`give_up_text`]'s words for what the store's history showed.
pub(crate) fn give_up_words(
    observed: Result<Option<earshot_core::store::give_up::GiveUp>, Failure>,
) -> String {
    observed.map_or_else(
        |failure| format!("when the platform gives up: unknown ({})", failure.message),
        earshot_core::store::give_up::GiveUp::describe,
    )
}

/// Records a change the console made on the platform (never a secret), so
/// `earshot changes` and the Health board show it; tried twice, as the
/// command line does ([`changes::record_with_retry`]); a store that cannot
/// be written is logged, and the change stands.
pub(crate) async fn note_change(
    path: StorePath,
    subscription_id: &str,
    action: &str,
    detail: String,
) {
    let change = changes::Change::now(incidents::operator(), subscription_id, action, detail);
    let recorded = tokio::task::spawn_blocking(move || match path? {
        StoreAt::File(path) => changes::record_with_retry(|| Store::open(&path), &change),
        StoreAt::Postgres(_) => Err(NOT_ON_POSTGRES.to_owned()),
    })
    .await;
    match recorded {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "the change was not recorded"),
        Err(error) => tracing::warn!(%error, "the change was not recorded"),
    }
}
