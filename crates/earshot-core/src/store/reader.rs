//! The handle the read commands (`earshot events`, `earshot sessions
//! list`) read through, whichever backend holds the store: an enum with a
//! variant per backend and a `match` in each method, as
//! [`super::StoreHandle`] is for filing (`docs/postgres.md`, "One store
//! interface, two backends"). Each method's SQL lives in its query's
//! module, both backends side by side.

use super::event_list::{self, Filter, ListedEvent};
use super::postgres::PgStore;
use super::sessions::{self, KnownSession};
use super::{Store, StoreError};

/// A store opened for reading.
#[derive(Debug)]
pub enum StoreReader {
    /// A SQLite file (its connection; reads are synchronous).
    Sqlite(Store),
    /// A PostgreSQL database (a pool).
    Postgres(PgStore),
}

impl From<Store> for StoreReader {
    fn from(store: Store) -> Self {
        StoreReader::Sqlite(store)
    }
}

impl From<PgStore> for StoreReader {
    fn from(store: PgStore) -> Self {
        StoreReader::Postgres(store)
    }
}

impl StoreReader {
    /// The newest events that pass `filter`, at most `limit` (see
    /// [`event_list::list`]); on PostgreSQL a filter it cannot answer yet
    /// is [`StoreError::NotOnPostgres`].
    pub async fn events(
        &self,
        filter: &Filter<'_>,
        limit: usize,
    ) -> Result<Vec<ListedEvent>, StoreError> {
        match self {
            StoreReader::Sqlite(store) => Ok(event_list::list(store, filter, limit)?),
            StoreReader::Postgres(store) => event_list::list_postgres(store, filter, limit).await,
        }
    }

    /// Known sessions, most recently active first, at most `limit`.
    pub async fn sessions(&self, limit: usize) -> Result<Vec<KnownSession>, StoreError> {
        match self {
            StoreReader::Sqlite(store) => Ok(sessions::list(store, limit)?),
            StoreReader::Postgres(store) => Ok(sessions::list_postgres(store, limit).await?),
        }
    }

    /// The backend's name, as `health --json` and `store migrate` say it.
    pub fn backend(&self) -> &'static str {
        match self {
            StoreReader::Sqlite(_) => "sqlite",
            StoreReader::Postgres(_) => "postgres",
        }
    }
}
