//! The sweep: fetch `/v1/sessions/{id}/webhook-deliveries` for the sessions
//! the store says are due (new ones, those with attempts pending or retries
//! scheduled, and those with a recent event), in the store's order
//! (`store::sessions::due_for_sweep`: something new first, then re-checks),
//! spending at most a budget of requests, and store every record. The
//! subscription list is fetched first (paused ones included) so reports can
//! name URLs and recover knows where to send. The store is reached through
//! a [`SweepStore`], either backend: SQLite's calls run on the blocking
//! pool between the requests, PostgreSQL's are one transaction each
//! (fenced by the sweep's lease when a replica sweeps).

use serde::Serialize;

use crate::api::types::agents::{DeliveryRecord, Subscription};
use crate::api::{ApiError, Client};
use crate::store::SweepStore;

use super::HistoryError;

/// Requests one sweep may send when the caller does not say. The agents
/// API's rate limit is not in the spec; this stays far below any sane one
/// and covers 500 sessions of one page each.
pub const DEFAULT_BUDGET: usize = 500;

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SweepReport {
    pub sessions_swept: usize,
    pub requests: usize,
    /// Sessions the platform answered 404 for (an id it does not know, or
    /// whose history went with a deleted subscription).
    pub unknown_sessions: usize,
    /// Sessions still due after this sweep: the budget ran out before them,
    /// or their attempts are still pending (they are fetched again).
    pub left_for_later: i64,
    /// Why the sweep stopped early, if it did (the platform unreachable,
    /// the key refused…): what was fetched before is stored.
    pub stopped: Option<String>,
}

/// One sweep within `budget` requests, into `store` (an [`AsyncStore`]
/// or a [`SweepStore`]).
///
/// [`AsyncStore`]: crate::store::AsyncStore
pub async fn sweep<'a>(
    client: &Client,
    store: impl Into<SweepStore<'a>>,
    budget: usize,
) -> Result<SweepReport, HistoryError> {
    let store: SweepStore<'a> = store.into();
    let mut report = SweepReport::default();
    let mut listed = Vec::new();
    loop {
        let after = listed.last().map(|last: &Subscription| last.id.clone());
        let page = client.subscriptions_page(true, after.as_deref()).await?;
        report.requests += 1;
        let more = page.has_more && !page.subscriptions.is_empty();
        listed.extend(page.subscriptions);
        if !more {
            break;
        }
    }
    let left = budget.saturating_sub(report.requests);
    let stored = store.subscription_ids().await?;
    if let Some(why) = foreign_listing(&stored, &listed) {
        report.stopped = Some(why);
        report.left_for_later = store.count_due().await?;
        return Ok(report);
    }
    store.replace_subscriptions(listed).await?;
    let due = store.due(left).await?;
    for session_id in due {
        match fetch_session(client, &session_id, budget, &mut report.requests).await {
            Fetched::All(records) => {
                store.record_sweep(session_id, records).await?;
                report.sessions_swept += 1;
            }
            Fetched::Unknown => {
                store.record_unknown(session_id).await?;
                report.sessions_swept += 1;
                report.unknown_sessions += 1;
            }
            Fetched::BudgetSpent => break,
            Fetched::Failed(error) => {
                report.stopped = Some(error.to_string());
                break;
            }
        }
    }
    report.left_for_later = store.count_due().await?;
    Ok(report)
}

/// Why a listing must not replace the stored subscriptions: it holds none
/// of them (and the store holds some), so the key is another account's or
/// another region's, and taking it would delete every stored subscription
/// and resolve its incidents as `subscription deleted` (seen: a console
/// pointed at an emulator with a team's store). Nothing is written then;
/// the board says why the sweep stopped. A store whose every subscription
/// was deleted on the platform by another tool stops here too, until one
/// of them is listed again: said, not guessed.
fn foreign_listing(stored: &[String], listed: &[Subscription]) -> Option<String> {
    let shared = listed
        .iter()
        .any(|subscription| stored.contains(&subscription.id));
    if stored.is_empty() || shared {
        return None;
    }
    Some(format!(
        "this key lists none of the store's {} subscriptions (another account or region?): \
         nothing was swept or changed; use the profile that fills this store, or another --store",
        stored.len()
    ))
}

enum Fetched {
    All(Vec<DeliveryRecord>),
    Unknown,
    BudgetSpent,
    Failed(ApiError),
}

/// Every page of one session, unless the budget runs out first.
async fn fetch_session(
    client: &Client,
    session_id: &str,
    budget: usize,
    requests: &mut usize,
) -> Fetched {
    let mut records: Vec<DeliveryRecord> = Vec::new();
    loop {
        if *requests >= budget {
            return Fetched::BudgetSpent;
        }
        let after = records.last().map(|last| last.id.clone());
        *requests += 1;
        match client.deliveries_page(session_id, after.as_deref()).await {
            Ok(page) => {
                let more = page.has_more && !page.deliveries.is_empty();
                records.extend(page.deliveries);
                if !more {
                    return Fetched::All(records);
                }
            }
            Err(error) if error.status() == Some(404) => return Fetched::Unknown,
            // An id no request can name (`..`, `a/b`) is no session the
            // platform knows: one such row must not stop every sweep.
            Err(ApiError::InvalidId(_)) => return Fetched::Unknown,
            Err(error) => return Fetched::Failed(error),
        }
    }
}
