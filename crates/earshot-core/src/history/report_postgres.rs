//! The Health board read from a PostgreSQL store (`earshot health --store
//! postgres://…`): the same facts SQLite's board is made of
//! ([`BoardFacts`], [`ObserverFacts`]), each read by its query's
//! PostgreSQL statement (beside SQLite's, in `store::outcomes`,
//! `store::health`, `store::deliveries`, `store::events`), and made into
//! the same rows and coverage by the same rules ([`BoardFacts::rows`],
//! [`coverage::judged`]): a last success is a delivered attempt or a
//! recovery, as on SQLite, and each row names its newest change.

use super::coverage::{self, Coverage, ObserverFacts};
use super::report::{Board, BoardFacts, EachSubscription};
use crate::store::postgres::{PgError, PgStore};
use crate::store::{changes, deliveries, events, health, outcomes};

/// An hour in milliseconds: the pace the observer's silence is judged by.
const HOUR_MS: i64 = 3_600_000;

/// The board since `since_ms` at `now_ms`, from a PostgreSQL store.
pub async fn board_postgres(store: &PgStore, since_ms: i64, now_ms: i64) -> Result<Board, PgError> {
    let observer = coverage_postgres(store, since_ms, now_ms).await?;
    let mut subscriptions = facts_postgres(store, since_ms, now_ms).await?.rows();
    observer.mark_unknown(&mut subscriptions);
    Ok(Board {
        observer,
        subscriptions,
    })
}

/// [`BoardFacts::read`] on a PostgreSQL store.
pub async fn facts_postgres(
    store: &PgStore,
    since_ms: i64,
    now_ms: i64,
) -> Result<BoardFacts, PgError> {
    let subscriptions = deliveries::subscriptions_postgres(store).await?;
    let mut each = Vec::with_capacity(subscriptions.len());
    for subscription in &subscriptions {
        let last_success_ms = outcomes::last_success_ms_postgres(store, &subscription.id).await?;
        each.push(EachSubscription {
            last_success_ms,
            failing_since_ms: outcomes::first_failure_after_postgres(
                store,
                &subscription.id,
                last_success_ms,
            )
            .await?,
            latest_change: changes::latest_for_postgres(store, &subscription.id).await?,
        });
    }
    Ok(BoardFacts {
        event_counts: outcomes::counts_since_postgres(store, since_ms).await?,
        attempt_counts: health::outcomes_since_postgres(store, since_ms).await?,
        retries: health::retries_due_postgres(store, now_ms).await?,
        subscriptions,
        each,
    })
}

/// [`coverage::coverage`] on a PostgreSQL store.
pub async fn coverage_postgres(
    store: &PgStore,
    since_ms: i64,
    now_ms: i64,
) -> Result<Coverage, PgError> {
    let (events_in_window, last_event_ms) =
        events::received_since_postgres(store, since_ms).await?;
    let newest_unobserved_ms = outcomes::newest_unobserved_ms_postgres(store).await?;
    let facts = match last_event_ms {
        Some(last) => ObserverFacts {
            last_event_ms,
            hour_before: events::pace_before_postgres(store, last, HOUR_MS).await?,
            own_attempt_ms: deliveries::newest_attempt_ms_postgres(
                store,
                &deliveries::observer_subscriptions_postgres(store).await?,
            )
            .await?,
            newest_unobserved_ms,
        },
        None => ObserverFacts::default(),
    };
    Ok(coverage::judged(
        events_in_window,
        facts,
        newest_unobserved_ms,
        now_ms,
    ))
}
