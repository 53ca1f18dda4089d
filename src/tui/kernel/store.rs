//! The incident-history store as the panes' tasks reach it: where it is
//! ([`StorePath`]), opening it ([`open`], [`with_store`]) as an
//! [`AsyncStore`] (every call on the blocking pool, never on the render
//! path), recording a change the console made ([`note_change`]), the
//! sweep's budget, and when the platform gives up ([`give_up_text`]). Each
//! task opens the store at the configured path for its own work (SQLite
//! connections are cheap; WAL lets them run beside a `listen` that
//! writes).

use std::path::PathBuf;

use super::Failure;
use earshot_core::history::incidents;
use earshot_core::store::{AsyncStore, Store, StoreError, changes};

/// Requests one console sweep may send (it runs every 5 s while the
/// Health pane is on screen: at most 600 a minute, one a sweep when
/// nothing is due).
pub(crate) const CONSOLE_SWEEP_BUDGET: usize = 50;

/// Where the console's store is, or why there is none.
pub(crate) type StorePath = Result<PathBuf, String>;

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

/// Opens the store (on the blocking pool, as every call on it).
pub(crate) async fn open(path: StorePath) -> Result<AsyncStore, Failure> {
    let path = path.map_err(Failure::new)?;
    AsyncStore::open(path).await.map_err(failure)
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
    let recorded = tokio::task::spawn_blocking(move || {
        let path = path?;
        changes::record_with_retry(|| Store::open(&path), &change)
    })
    .await;
    match recorded {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "the change was not recorded"),
        Err(error) => tracing::warn!(%error, "the change was not recorded"),
    }
}
