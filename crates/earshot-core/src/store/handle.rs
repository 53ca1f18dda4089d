//! The one handle the observer files through, whichever backend holds the
//! store (`docs/postgres.md`, "One store interface, two backends"): an enum
//! with a variant per backend and a `match` in each method, so no
//! operation can forget a backend and no future is boxed. It carries what
//! `listen --store` needs today, filing a genuine delivery (an event, or a
//! delivery `events` cannot file); the readers join it as they learn
//! PostgreSQL.

use super::StoreError;
use super::events::Filing;
use super::postgres::PgStore;
use super::writer::Writer;

/// Where the observer files deliveries. Clones share the backend's writer
/// thread or pool.
#[derive(Clone, Debug)]
pub enum StoreHandle {
    /// A SQLite file, written by its writer thread (group commit).
    Sqlite(Writer),
    /// A PostgreSQL database shared with other replicas.
    Postgres(PgStore),
}

impl From<Writer> for StoreHandle {
    fn from(writer: Writer) -> Self {
        StoreHandle::Sqlite(writer)
    }
}

impl From<PgStore> for StoreHandle {
    fn from(store: PgStore) -> Self {
        StoreHandle::Postgres(store)
    }
}

impl StoreHandle {
    /// Keeps `filing` unless a copy is kept already (by this process or,
    /// on PostgreSQL, any replica) and returns after the commit, or after
    /// an earlier copy's commit; whether it was new.
    pub async fn file(&self, filing: impl Into<Filing>) -> Result<bool, StoreError> {
        match self {
            StoreHandle::Sqlite(writer) => writer.write(filing).await,
            StoreHandle::Postgres(store) => Ok(store.keep(&filing.into()).await?),
        }
    }

    /// The backend's name, as `health --json` and `store migrate` say it.
    pub fn backend(&self) -> &'static str {
        match self {
            StoreHandle::Sqlite(_) => "sqlite",
            StoreHandle::Postgres(_) => "postgres",
        }
    }
}
