//! Where a relay ([`super::relay`]) reads the events it passes on and
//! keeps its place, per backend: a SQLite file, by row id
//! ([`crate::store::relay`]), or a PostgreSQL store, by filing
//! transaction, under the forwarding lease
//! ([`crate::store::postgres::relay`]). The relay itself holds no backend's
//! detail.

use crate::store::postgres::relay::XidPlace;
use crate::store::postgres::{Fence, PgError, PgStore};
use crate::store::relay::{self, Pending};
use crate::store::{Store, now_ms};

/// A store the relay reads, with its place in it.
pub(super) enum Source {
    /// A file, and the last row id the app is done with.
    Sqlite {
        store: Store,
        key: String,
        cursor: i64,
    },
    /// A database shared by replicas, read by the holder of `fence`.
    Postgres(PgSource),
}

/// The relay's place in a PostgreSQL store.
pub(super) struct PgSource {
    pub(super) store: PgStore,
    pub(super) key: String,
    pub(super) fence: Fence,
    pub(super) place: XidPlace,
    /// How far the place may move once the last batch read is passed on.
    pub(super) horizon: Option<i64>,
    /// Whether keys were kept since the place last moved (moving it then
    /// drops them; with none, it need not move).
    pub(super) kept_since: bool,
}

/// Why the place was not kept.
pub(super) enum NotKept {
    /// The store failed: said, and the relay goes on.
    Failed(String),
    /// Another replica holds the forwarding lease now: this relay stops
    /// passing events on.
    LeaseLost,
}

impl From<PgError> for NotKept {
    fn from(error: PgError) -> Self {
        match error {
            PgError::LeaseLost { .. } => NotKept::LeaseLost,
            other => NotKept::Failed(other.to_string()),
        }
    }
}

impl Source {
    /// How many events wait after the place.
    pub(super) async fn waiting(&mut self) -> Result<i64, String> {
        match self {
            Source::Sqlite { store, cursor, .. } => {
                relay::waiting(store, *cursor).map_err(|error| error.to_string())
            }
            Source::Postgres(pg) => pg
                .store
                .relay_waiting(&pg.key, pg.place)
                .await
                .map_err(|error| error.to_string()),
        }
    }

    /// The next events after the place, oldest first (the last batch read
    /// must have been passed on whole).
    pub(super) async fn next(&mut self, limit: usize) -> Result<Vec<Pending>, NotKept> {
        match self {
            Source::Sqlite { store, cursor, .. } => relay::after(store, *cursor, limit)
                .map_err(|error| NotKept::Failed(error.to_string())),
            Source::Postgres(pg) => {
                if let Some(horizon) = pg.horizon.take()
                    && pg.kept_since
                    && horizon > pg.place.from_xid
                {
                    pg.place = pg
                        .store
                        .relay_advance(&pg.fence, &pg.key, horizon, now_ms())
                        .await?;
                    pg.kept_since = false;
                }
                let batch = pg.store.relay_after(&pg.key, pg.place, limit).await?;
                pg.horizon = Some(batch.horizon);
                Ok(batch.events)
            }
        }
    }

    /// Keeps that the app is done with `event`.
    pub(super) async fn keep(&mut self, event: &Pending) -> Result<(), NotKept> {
        match self {
            Source::Sqlite { store, key, cursor } => {
                let Some(seq) = event.seq else {
                    return Ok(());
                };
                *cursor = seq;
                relay::advance(store, key, seq, now_ms())
                    .map_err(|error| NotKept::Failed(error.to_string()))
            }
            Source::Postgres(pg) => {
                pg.store
                    .relay_sent(&pg.fence, &pg.key, event, now_ms())
                    .await?;
                pg.kept_since = true;
                Ok(())
            }
        }
    }
}
