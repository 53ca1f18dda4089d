//! Whether a replica can write its PostgreSQL store, for `GET /healthz`
//! and `earshot_store_writable`: every [`PROBE_EVERY`] the replica writes
//! and commits its row of `earshot.probes` ([`PgStore::probe`]), at most
//! [`PROBE_WITHIN`] (the server is told the same bound, so it gives up
//! too), and notes the outcome in the [`StoreHealth`] `/healthz` reads.
//! So a scrape never waits on the database, what it says is at most
//! [`PROBE_EVERY`] + [`PROBE_WITHIN`] old, quiet periods included, and it
//! comes back by itself once the store can be written again. Each event's
//! filing counts too, as on SQLite ([`StoreHealth::note_write`]).

use std::sync::Arc;
use std::time::Duration;

use super::health::StoreHealth;
use crate::store::postgres::PgStore;

/// How often the store is probed.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How long a probe may take, connecting included.
pub const PROBE_WITHIN: Duration = Duration::from_secs(2);

/// One probe of `store` as `holder`, within [`PROBE_WITHIN`]; the error
/// in words (the server's own, or that it did not answer in time).
pub async fn probe_once(store: &PgStore, holder: &str) -> Result<(), String> {
    match tokio::time::timeout(PROBE_WITHIN, store.probe(holder, PROBE_WITHIN)).await {
        Ok(result) => result.map_err(|error| error.to_string()),
        Err(_) => Err(format!(
            "the PostgreSQL store did not take a write within {}",
            crate::duration_text::of(PROBE_WITHIN)
        )),
    }
}

/// Probes `store` every [`PROBE_EVERY`] into `health` until the task is
/// dropped; the first probe runs at once.
pub async fn probe_forever(store: PgStore, holder: String, health: Arc<StoreHealth>) {
    let mut ticks = tokio::time::interval(PROBE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        health.note_probe(probe_once(&store, &holder).await);
    }
}
