//! `earshot listen --store postgres://USER@HOST:PORT/DB`: the observer
//! filing into a PostgreSQL store that other replicas share
//! (`docs/postgres.md`). It connects (migrating under the lock, so
//! replicas starting at once migrate once) and hands the store to the
//! receiver, which answers 2xx only after an event's commit (the
//! retention runs on the replica holding the maintenance lease:
//! `listen_lease`, and so does the sweep, `listen_pg_sweep`). `/healthz`
//! and `/metrics` probe and read the store as on a file
//! (`observer_args`). Forwarding from the store runs on the replica
//! holding the forwarding lease (`listen_pg_relay`).

use std::path::PathBuf;

use earshot_core::store::postgres::{PasswordSources, PgError, PgStore, PgTarget};
use earshot_core::store::retention::Period;

/// Why the PostgreSQL store could not be used.
pub(super) enum Refused {
    /// Bad input (exit 2): the message says what to give.
    Usage(String),
    /// The store could not be reached or migrated (exit 1).
    Store(PgError),
}

/// `--store`'s value: a store file, or a PostgreSQL URL for `listen`
/// alone so far; an empty value is refused, as clap's path parser does.
pub(crate) fn store_file_or_url(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err("give the path of a store file or a postgres:// URL".to_owned());
    }
    Ok(PathBuf::from(text))
}

/// Connects to the store at `url` for `listen`; `retention` is the
/// period asked for, if any (run by the maintenance replica).
pub(super) async fn open(url: &str, retention: Option<Period>) -> Result<PgStore, Refused> {
    let target = PgTarget::parse(url).map_err(|error| Refused::Usage(error.to_string()))?;
    let store = PgStore::connect(target, &PasswordSources::from_env())
        .await
        .map_err(Refused::Store)?;
    eprintln!("storing events in {} (PostgreSQL)", store.target());
    if let Some(period) = retention {
        eprintln!(
            "keeping {period}: the replica holding the maintenance lease drops the days of \
             events older than that, soon after it takes the lease and then every {}",
            earshot_core::duration_text::of(earshot_core::store::pruner::interval(period))
        );
    }
    Ok(store)
}
