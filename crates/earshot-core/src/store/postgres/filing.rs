//! Filing an observed event exactly once across replicas: one transaction
//! inserts the event with `ON CONFLICT DO NOTHING` on its key `(event_id,
//! occurred_ms)` and, when it was new, records its session as known and
//! due for a sweep. Two copies filed at the same moment by two
//! connections meet at the key: the second waits for the first's commit
//! and then inserts nothing, so there is no window a check-then-insert
//! would leave. The call returns only after the commit.
//!
//! A genuine delivery `events` cannot file goes to `unfiled_events`, keyed
//! by its `event_id` when it has one (`ON CONFLICT DO NOTHING` again). No
//! check across the two tables: the same bytes always file the same way,
//! so every copy of a delivery meets the first in the same table.

use std::time::Duration;

use deadpool_postgres::Client;
use tokio_postgres::error::SqlState;

use super::{PgError, days};
use crate::store::events::{Filing, ObservedEvent, UnfiledEvent};

const INSERT_EVENT: &str = "
INSERT INTO earshot.events
    (event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (event_id, occurred_ms) DO NOTHING";

const UPSERT_SESSION: &str = "
INSERT INTO earshot.sessions (session_id, kind, source, first_seen_ms, last_event_ms)
VALUES ($1, $2, 'observer', $3, $3)
ON CONFLICT (session_id) DO UPDATE SET
    kind = coalesce(earshot.sessions.kind, excluded.kind),
    last_event_ms = greatest(coalesce(earshot.sessions.last_event_ms, 0), excluded.last_event_ms),
    unsettled = true";

const INSERT_UNFILED: &str = "
INSERT INTO earshot.unfiled_events
    (received_ms, event_id, event, session_id, occurred_ms, delivery_id, headers, body, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (event_id) DO NOTHING";

/// Keeps `filing` where it belongs unless a copy is kept; whether it was
/// new.
pub(crate) async fn keep(client: &mut Client, filing: &Filing) -> Result<bool, PgError> {
    match filing {
        Filing::Event(event) => file(client, event).await,
        Filing::Unfiled(unfiled) => keep_unfiled(client, unfiled).await,
    }
}

/// Keeps `unfiled` unless its `event_id` is kept in `unfiled_events`
/// already (one without an id is always new, as on SQLite); one statement,
/// committed when it returns.
async fn keep_unfiled(client: &mut Client, unfiled: &UnfiledEvent) -> Result<bool, PgError> {
    let headers = serde_json::to_string(&unfiled.headers).unwrap_or_else(|_| "[]".into());
    let insert = client.prepare_cached(INSERT_UNFILED).await?;
    let inserted = client
        .execute(
            &insert,
            &[
                &unfiled.received_ms,
                &unfiled.event_id,
                &unfiled.event,
                &unfiled.session_id,
                &unfiled.occurred_ms,
                &unfiled.delivery_id,
                &headers,
                &unfiled.body,
                &unfiled.reason(),
            ],
        )
        .await?;
    Ok(inserted == 1)
}

/// How often filing looks again for a day a prune is dropping, and how
/// long between looks: about 10 s, then the error (the caller answers
/// 5xx, and the platform sends the event again later).
const DROPPING_DAY_LOOKS: u32 = 100;
const DROPPING_DAY_PAUSE: Duration = Duration::from_millis(100);

/// Files `event` unless a copy is already kept; whether it was new. Its
/// day's partition is made first when it has none; a day a prune is
/// dropping is waited for and then made anew (the next prune drops it,
/// as SQLite's keeps an old event until its next run).
pub(crate) async fn file(client: &mut Client, event: &ObservedEvent) -> Result<bool, PgError> {
    let mut looks = 0;
    loop {
        match file_once(client, event).await {
            Err(PgError::Query(error)) if no_partition(&error) && looks < DROPPING_DAY_LOOKS => {
                looks += 1;
                if !days::ensure_day(client, event.occurred_ms).await? {
                    tokio::time::sleep(DROPPING_DAY_PAUSE).await;
                }
            }
            filed => return filed,
        }
    }
}

async fn file_once(client: &mut Client, event: &ObservedEvent) -> Result<bool, PgError> {
    let headers = serde_json::to_string(&event.headers).unwrap_or_else(|_| "[]".into());
    let tx = client.transaction().await?;
    let insert = tx.prepare_cached(INSERT_EVENT).await?;
    let inserted = tx
        .execute(
            &insert,
            &[
                &event.event_id,
                &event.event,
                &event.session_id,
                &event.occurred_ms,
                &event.received_ms,
                &event.delivery_id,
                &headers,
                &event.body,
            ],
        )
        .await?
        == 1;
    if inserted {
        let upsert = tx.prepare_cached(UPSERT_SESSION).await?;
        tx.execute(
            &upsert,
            &[&event.session_id, &event.kind, &event.received_ms],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(inserted)
}

/// PostgreSQL's "no partition of relation … found for row": `events`
/// has no check constraint of its own, so its code says it in any
/// language the server speaks.
fn no_partition(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::CHECK_VIOLATION)
}
