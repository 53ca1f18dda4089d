//! What the receiver checks read from the console's store, on either
//! backend, each one `match` on [`StoreAt`]: the Signatures pane's refused
//! delivery (the observer's copy of its event, [`stored_event`],
//! [`refused_event`]) and its receiver check (the subscription as the
//! sweep listed it, [`listed_subscription`], and what earshot knows of it,
//! [`refused_known`]); the rotation dialog's check ([`rotation_probe`])
//! and the watch after a rotation ([`watch_rotation`]). A file is read on
//! one of the console's kept connections, PostgreSQL from its pool.

use std::time::Duration;

use super::{StoreAt, StorePath, failure, with_store};
use crate::tui::kernel::Failure;
use earshot_core::api::Client;
use earshot_core::api::types::agents::Subscription;
use earshot_core::history::held_secret::Known;
use earshot_core::history::refused_delivery::{self, Located, RecordFrom};
use earshot_core::history::rotation::{self, ProbeEvent, WatchReport};
use earshot_core::store::AsyncStore;
use earshot_core::store::events::{self, StoredEvent};

/// The observer's copy of event `event_id` (`events::get` or
/// `get_postgres`), or `None` when the store does not hold it.
pub(crate) async fn stored_event(
    store: StorePath,
    event_id: String,
) -> Result<Option<StoredEvent>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                events::get(store, &event_id).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => events::get_postgres(&store, &event_id)
            .await
            .map_err(failure),
    }
}

/// The event `subscription_id`'s attempt `delivery_id` (else its newest
/// refused with 401) in `session_id` was for (`refused_delivery::locate`
/// or `locate_postgres`).
pub(crate) async fn refused_event(
    store: StorePath,
    subscription_id: String,
    session_id: String,
    delivery_id: Option<String>,
) -> Result<Located, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                refused_delivery::locate(
                    store,
                    &subscription_id,
                    &session_id,
                    delivery_id.as_deref(),
                )
                .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => refused_delivery::locate_postgres(
            &store,
            &subscription_id,
            &session_id,
            delivery_id.as_deref(),
        )
        .await
        .map_err(failure),
    }
}

/// Subscription `id` as the sweep last listed it, if it did
/// (`refused_delivery::stored` or `stored_postgres`).
pub(crate) async fn listed_subscription(
    store: StorePath,
    id: String,
) -> Result<Option<(Subscription, RecordFrom)>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                refused_delivery::stored(store, &id).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => refused_delivery::stored_postgres(&store, &id)
            .await
            .map_err(failure),
    }
}

/// What the receiver check says of `record` besides its answers: its
/// secret version, where the record came from, its latest rotation
/// (`refused_delivery::known` or `known_postgres`).
pub(crate) async fn refused_known(
    store: StorePath,
    record: Subscription,
    from: RecordFrom,
    now_ms: i64,
) -> Result<Known, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                refused_delivery::known(store, &record, from, now_ms)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => refused_delivery::known_postgres(&store, &record, from, now_ms)
            .await
            .map_err(failure),
    }
}

/// What the rotation dialog's check sends: the newest event delivered to
/// `subscription_id` whose bytes the observer holds
/// (`rotation::probe_event` or `probe_event_postgres`, never synthetic).
pub(crate) async fn rotation_probe(
    store: StorePath,
    subscription_id: String,
) -> Result<Option<ProbeEvent>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                rotation::probe_event(store, &subscription_id, false)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => rotation::probe_event_postgres(&store, &subscription_id, false)
            .await
            .map_err(failure),
    }
}

/// Follows `subscription_id` for `duration` after its rotation at
/// `rotated_ms` (`rotation::watch`), sweeping into either backend: a file
/// through a connection of its own, held for the watch; PostgreSQL's
/// sweep by hand, not fenced by the replicas' lease (as the console's).
pub(crate) async fn watch_rotation(
    store: StorePath,
    client: &Client,
    subscription_id: &str,
    rotated_ms: i64,
    duration: Duration,
    each: impl FnMut(&WatchReport),
) -> Result<WatchReport, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            let store = AsyncStore::open(path).await.map_err(failure)?;
            rotation::watch(
                client,
                (&store).into(),
                subscription_id,
                rotated_ms,
                duration,
                each,
            )
            .await
        }
        StoreAt::Postgres(store) => {
            rotation::watch(
                client,
                (&store).into(),
                subscription_id,
                rotated_ms,
                duration,
                each,
            )
            .await
        }
    }
    .map_err(failure)
}
