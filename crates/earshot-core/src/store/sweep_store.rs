//! The store the sweep writes through, whichever backend holds it
//! (`docs/postgres.md`, "The sweep on PostgreSQL"): an enum with a
//! variant per backend and a `match` in each method, as
//! [`super::StoreHandle`] is for filing. SQLite's calls run on the
//! blocking pool ([`AsyncStore`]); PostgreSQL's write in one transaction
//! each, fenced by the sweep's lease when a replica of `listen` sweeps
//! ([`Fence`]: a replica that lost the lease writes nothing). The SQL
//! of each call lives in its query's module (`deliveries`, `sessions`,
//! `outcome_rebuild`), both backends side by side.
//!
//! On PostgreSQL each write transaction first takes a transaction-scoped
//! advisory lock ([`take_turn`]), so sweeps that run at once (the
//! replica's under its lease, `health`'s and every console's by hand)
//! write one transaction at a time: two writing the same minute's count
//! rows (kept by triggers) in different orders would otherwise deadlock,
//! and PostgreSQL would cancel one (seen with two consoles and a replica
//! sweeping one store every 5 s). The transactions are one session's
//! each, so the wait is short.

use tokio_postgres::Transaction;

use super::postgres::schema::{LOCK_CLASS, lock};
use super::postgres::{Fence, PgError, PgStore};
use super::{AsyncStore, StoreError, deliveries, now_ms, sessions};
use crate::api::types::agents::{DeliveryRecord, Subscription};

/// Where a sweep stores what it fetched.
#[derive(Clone, Copy, Debug)]
pub enum SweepStore<'a> {
    /// A SQLite file, through its own connection.
    Sqlite(&'a AsyncStore),
    /// A PostgreSQL database; `fence` names the lease each write checks.
    Postgres {
        store: &'a PgStore,
        fence: Option<&'a Fence>,
    },
}

impl<'a> From<&'a AsyncStore> for SweepStore<'a> {
    fn from(store: &'a AsyncStore) -> Self {
        SweepStore::Sqlite(store)
    }
}

impl<'a> From<&'a PgStore> for SweepStore<'a> {
    fn from(store: &'a PgStore) -> Self {
        SweepStore::Postgres { store, fence: None }
    }
}

impl SweepStore<'_> {
    /// Replaces the stored subscriptions with the platform's whole list.
    pub async fn replace_subscriptions(&self, list: Vec<Subscription>) -> Result<(), StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(move |store| {
                        Ok::<_, StoreError>(deliveries::replace_subscriptions(
                            store,
                            &list,
                            now_ms(),
                        )?)
                    })
                    .await
            }
            SweepStore::Postgres { store, fence } => Ok(store
                .write_fenced(*fence, move |tx| {
                    Box::pin(async move {
                        take_turn(tx).await?;
                        deliveries::replace_subscriptions_postgres(tx, &list, now_ms()).await
                    })
                })
                .await?),
        }
    }

    /// The ids of the stored subscriptions, as last listed.
    pub async fn subscription_ids(&self) -> Result<Vec<String>, StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(|store| Ok::<_, StoreError>(deliveries::subscription_ids(store)?))
                    .await
            }
            SweepStore::Postgres { store, .. } => {
                Ok(deliveries::subscription_ids_postgres(store).await?)
            }
        }
    }

    /// The sessions to fetch, in the sweep's order, at most `limit`.
    pub async fn due(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(move |store| Ok::<_, StoreError>(sessions::due_for_sweep(store, limit)?))
                    .await
            }
            SweepStore::Postgres { store, .. } => {
                Ok(sessions::due_for_sweep_postgres(store, limit).await?)
            }
        }
    }

    /// Stores one session's records (one transaction): whether it is still
    /// unsettled.
    pub async fn record_sweep(
        &self,
        session_id: String,
        records: Vec<DeliveryRecord>,
    ) -> Result<bool, StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(move |store| {
                        Ok::<_, StoreError>(deliveries::record_sweep(
                            store,
                            &session_id,
                            &records,
                            now_ms(),
                        )?)
                    })
                    .await
            }
            SweepStore::Postgres { store, fence } => {
                let unsettled = store
                    .write_fenced(*fence, move |tx| {
                        Box::pin(async move {
                            take_turn(tx).await?;
                            let swept = [(session_id.as_str(), records.as_slice())];
                            deliveries::record_sweeps_postgres(tx, &swept, now_ms()).await
                        })
                    })
                    .await?;
                Ok(unsettled.first().copied().unwrap_or(false))
            }
        }
    }

    /// Marks a session the platform does not know: swept, settled.
    pub async fn record_unknown(&self, session_id: String) -> Result<(), StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(move |store| {
                        Ok::<_, StoreError>(deliveries::record_unknown(
                            store,
                            &session_id,
                            now_ms(),
                        )?)
                    })
                    .await
            }
            SweepStore::Postgres { store, fence } => Ok(store
                .write_fenced(*fence, move |tx| {
                    Box::pin(async move {
                        take_turn(tx).await?;
                        deliveries::record_unknown_postgres(tx, &session_id, now_ms()).await
                    })
                })
                .await?),
        }
    }

    /// How many sessions are still due.
    pub async fn count_due(&self) -> Result<i64, StoreError> {
        match self {
            SweepStore::Sqlite(store) => {
                store
                    .run(|store| Ok::<_, StoreError>(sessions::count_due(store)?))
                    .await
            }
            SweepStore::Postgres { store, .. } => Ok(sessions::count_due_postgres(store).await?),
        }
    }
}

/// Waits for this sweep's turn to write, held until `tx` ends; the copy's
/// batches of sweep tables take it too.
pub(crate) async fn take_turn(tx: &Transaction<'_>) -> Result<(), PgError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&LOCK_CLASS, &lock::SWEEP],
    )
    .await?;
    Ok(())
}
