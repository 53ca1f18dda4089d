//! The handle the read commands (`earshot events`, `earshot sessions
//! list` and `get`) read through, whichever backend holds the store: an enum with a
//! variant per backend and a `match` in each method, as
//! [`super::StoreHandle`] is for filing (`docs/postgres.md`, "One store
//! interface, two backends"). Each method's SQL lives in its query's
//! module, both backends side by side.

use super::deliveries;
use super::event_list::{self, Filter, ListedEvent};
use super::events::{self, StoredEvent};
use super::live_list::{self, LiveCursor, LiveRead};
use super::postgres::PgStore;
use super::sessions::{self, KnownSession};
use super::{Store, StoreError};
use crate::api::types::agents::DeliveryRecord;

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
    /// [`event_list::list`]); on PostgreSQL a filter by SQLite's row
    /// number (`after_seq`) is [`StoreError::NotOnPostgres`].
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

    /// The live read of the list `filter` passes: with `known` (the
    /// cursor of the last read of the same filter), only the events filed
    /// since, none of them returned before; else the whole list, at most
    /// `limit` ([`live_list`]). The cursor for the next read.
    pub async fn live_events(
        &self,
        filter: &Filter<'_>,
        limit: usize,
        known: Option<&LiveCursor>,
    ) -> Result<(LiveRead<ListedEvent>, Option<LiveCursor>), StoreError> {
        match self {
            StoreReader::Sqlite(store) => live_list::read_sqlite(store, filter, limit, known),
            StoreReader::Postgres(store) => {
                live_list::read_postgres(store, filter, limit, known).await
            }
        }
    }

    /// Known sessions, most recently active first, at most `limit`.
    pub async fn sessions(&self, limit: usize) -> Result<Vec<KnownSession>, StoreError> {
        match self {
            StoreReader::Sqlite(store) => Ok(sessions::list(store, limit)?),
            StoreReader::Postgres(store) => Ok(sessions::list_postgres(store, limit).await?),
        }
    }

    /// Adds session or call ids not yet known (`earshot sessions add`),
    /// in one transaction; how many were new.
    pub async fn add_sessions(
        &mut self,
        ids: &[String],
        source: sessions::Source,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        match self {
            StoreReader::Sqlite(store) => Ok(sessions::add(store, ids, source, now_ms)?),
            StoreReader::Postgres(store) => {
                Ok(sessions::add_postgres(store, ids, source, now_ms).await?)
            }
        }
    }

    /// What the store holds of one session for `earshot sessions get`:
    /// its observed events (oldest first) and its attempts. `fetched` are
    /// the attempts the platform just listed, if it could be asked: on
    /// SQLite they are stored as a sweep stores them and read back with
    /// any kept before; a PostgreSQL store holds no attempts yet, so there
    /// they are the attempts shown, in the order SQLite reads them back
    /// (none when the platform could not be asked).
    pub async fn session(
        &mut self,
        session_id: &str,
        fetched: Option<&[DeliveryRecord]>,
        now_ms: i64,
    ) -> Result<(Vec<StoredEvent>, Vec<DeliveryRecord>), StoreError> {
        match self {
            StoreReader::Sqlite(store) => {
                if let Some(records) = fetched {
                    deliveries::record_sweep(store, session_id, records, now_ms)?;
                }
                Ok((
                    events::for_session(store, session_id)?,
                    deliveries::for_session(store, session_id)?,
                ))
            }
            StoreReader::Postgres(store) => {
                let mut records = fetched.map(<[_]>::to_vec).unwrap_or_default();
                records.sort_by(|a, b| {
                    (
                        a.created_at.timestamp_millis(),
                        a.attempt_count,
                        a.id.as_bytes(),
                    )
                        .cmp(&(
                            b.created_at.timestamp_millis(),
                            b.attempt_count,
                            b.id.as_bytes(),
                        ))
                });
                Ok((
                    events::for_session_postgres(store, session_id).await?,
                    records,
                ))
            }
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
