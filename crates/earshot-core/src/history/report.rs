//! Health per subscription from the store, counted in **events** (one
//! `event_id` for one subscription; DESIGN §10): delivered, missed,
//! recovered, pending and unknown in a window, failing since when, the
//! last success and failure, missed events by type, and failure groups by
//! diagnosis (the troubleshooting rules of [`crate::api::delivery_verdict`])
//! counted in events. The attempt counts stay beside them for the
//! drill-down. Everything is read from counts kept as records arrive
//! (`store::outcomes`, `store::health`), never recomputed per refresh.

use std::collections::BTreeMap;

use chrono::{SecondsFormat, TimeZone, Utc};
use serde::Serialize;

use super::coverage::{Coverage, coverage};
use crate::api::delivery_verdict::{Problem, diagnosis};
pub use crate::store::outcomes::EventTotals;
use crate::store::outcomes::{self, EventCount, EventState};
use crate::store::{Store, StoreError, deliveries, health};

/// One subscription's board row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubscriptionHealth {
    pub id: String,
    pub url: String,
    pub enabled: bool,
    /// Events in the window, by state.
    pub events: EventTotals,
    /// The first failure of the current unbroken run of failures (RFC
    /// 3339, UTC), or `None` when the last attempt or re-send succeeded.
    pub failing_since: Option<String>,
    /// The last 2xx: a delivered attempt or a re-sent event.
    pub last_success_at: Option<String>,
    /// Missed events by type (`""`: the type could not be told).
    pub missed_by_type: BTreeMap<String, i64>,
    /// Attempts delivered, failed and pending in the window (the drill-down).
    pub delivered: i64,
    pub failed: i64,
    pub pending: i64,
    /// Of the finished events, the share the receiver has now: (delivered
    /// + recovered) / (delivered + missed + recovered).
    pub success_rate: Option<f64>,
    /// The newest failed attempt, RFC 3339, UTC.
    pub last_failure_at: Option<String>,
    pub retries_due: i64,
    /// When the next scheduled retry is due, RFC 3339, UTC.
    pub next_retry_at: Option<String>,
    /// Failure groups in events, largest first.
    pub failures: Vec<FailureGroup>,
    /// The newest change earshot made to it (`earshot changes`), so
    /// failures starting right after one are seen for what they are.
    pub latest_change: Option<LatestChange>,
    /// The observer is silent since this time (RFC 3339, UTC): events
    /// after it are unknown, the row is never healthy.
    pub unknown_since: Option<String>,
}

/// A change as the board shows it ("rotate 14:05 by alice").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatestChange {
    pub action: String,
    /// RFC 3339, UTC.
    pub at: String,
    pub operator: String,
    pub detail: String,
    #[serde(skip)]
    pub at_ms: i64,
}

impl From<crate::store::changes::Change> for LatestChange {
    fn from(change: crate::store::changes::Change) -> Self {
        LatestChange {
            action: change.action,
            at: rfc3339(change.at_ms),
            operator: change.operator,
            detail: change.detail,
            at_ms: change.at_ms,
        }
    }
}

impl SubscriptionHealth {
    /// When the current run of failures started, in Unix milliseconds.
    pub fn failing_since_ms(&self) -> Option<i64> {
        let at = self.failing_since.as_deref()?;
        chrono::DateTime::parse_from_rfc3339(at)
            .ok()
            .map(|at| at.timestamp_millis())
    }

    /// A subscription's row with nothing counted yet.
    pub fn new(id: String, url: String, enabled: bool) -> SubscriptionHealth {
        SubscriptionHealth {
            id,
            url,
            enabled,
            events: EventTotals::default(),
            failing_since: None,
            last_success_at: None,
            missed_by_type: BTreeMap::new(),
            delivered: 0,
            failed: 0,
            pending: 0,
            success_rate: None,
            last_failure_at: None,
            retries_due: 0,
            next_retry_at: None,
            failures: Vec::new(),
            latest_change: None,
            unknown_since: None,
        }
    }

    /// Missed events by type in words: `call.ended 25`, `type unknown 2`.
    pub fn missed_by_type_words(&self) -> Vec<String> {
        self.missed_by_type
            .iter()
            .map(|(kind, count)| {
                let kind = if kind.is_empty() {
                    "type unknown"
                } else {
                    kind
                };
                format!("{kind} {count}")
            })
            .collect()
    }

    /// Something was missed for good in the window, or the receiver is
    /// failing now.
    pub fn is_failing(&self) -> bool {
        self.events.missed > 0 || self.failing_since.is_some()
    }
}

/// Events whose last failed attempt had one diagnosis, and that no
/// platform retry delivered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureGroup {
    /// "401 invalid signature: …", "timeout: …".
    pub diagnosis: String,
    pub http_status: Option<u16>,
    /// Events in the group: missed + recovered + retrying.
    pub count: i64,
    pub missed: i64,
    pub recovered: i64,
    /// Failed, a retry still to come.
    pub retrying: i64,
    /// The group's newest event, RFC 3339, UTC.
    pub last_at: String,
    pub example_session_id: String,
}

/// The whole board: what the observer covers, and every subscription.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Board {
    pub observer: Coverage,
    pub subscriptions: Vec<SubscriptionHealth>,
}

/// The board since `since_ms`.
pub fn board(store: &Store, since_ms: i64, now_ms: i64) -> Result<Board, StoreError> {
    let observer = coverage(store, since_ms, now_ms)?;
    let mut subscriptions = health(store, since_ms, now_ms)?;
    observer.mark_unknown(&mut subscriptions);
    Ok(Board {
        observer,
        subscriptions,
    })
}

/// What the board is made of, as a store holds it: read from SQLite by
/// [`BoardFacts::read`], from PostgreSQL by
/// `history::report_postgres`, and made into rows by one rule
/// ([`BoardFacts::rows`]).
#[derive(Clone, Debug, Default)]
pub struct BoardFacts {
    /// The stored subscriptions, as last listed.
    pub subscriptions: Vec<crate::api::types::agents::Subscription>,
    /// Events counted in the window.
    pub event_counts: Vec<EventCount>,
    /// Attempts counted in the window.
    pub attempt_counts: Vec<health::OutcomeCount>,
    /// Retries scheduled after now.
    pub retries: Vec<health::RetriesDue>,
    /// Per subscription (in `subscriptions`' order): its last 2xx, the
    /// first failure after it, and the newest change earshot made to it.
    pub each: Vec<EachSubscription>,
}

/// The board's facts of one subscription.
#[derive(Clone, Debug, Default)]
pub struct EachSubscription {
    pub last_success_ms: Option<i64>,
    pub failing_since_ms: Option<i64>,
    pub latest_change: Option<crate::store::changes::Change>,
}

impl BoardFacts {
    /// The facts SQLite holds for the window since `since_ms`.
    pub fn read(store: &Store, since_ms: i64, now_ms: i64) -> Result<BoardFacts, StoreError> {
        let subscriptions = deliveries::subscriptions(store)?;
        let mut each = Vec::with_capacity(subscriptions.len());
        for subscription in &subscriptions {
            let last_success_ms = outcomes::last_success_ms(store, &subscription.id)?;
            each.push(EachSubscription {
                last_success_ms,
                failing_since_ms: outcomes::first_failure_after(
                    store,
                    &subscription.id,
                    last_success_ms,
                )?,
                latest_change: crate::store::changes::latest_for(store, &subscription.id)?,
            });
        }
        Ok(BoardFacts {
            event_counts: outcomes::counts_since(store, since_ms)?,
            attempt_counts: health::outcomes_since(store, since_ms)?,
            retries: health::retries_due(store, now_ms)?,
            subscriptions,
            each,
        })
    }

    /// Every subscription's row, those missing the most events first.
    pub fn rows(self) -> Vec<SubscriptionHealth> {
        let BoardFacts {
            subscriptions,
            event_counts,
            attempt_counts,
            retries,
            each,
        } = self;
        let each: BTreeMap<String, EachSubscription> = subscriptions
            .iter()
            .map(|subscription| subscription.id.clone())
            .zip(each)
            .collect();
        let mut rows: BTreeMap<String, SubscriptionHealth> = subscriptions
            .into_iter()
            .map(|subscription| {
                let row = SubscriptionHealth::new(
                    subscription.id.clone(),
                    subscription.url,
                    subscription.enabled,
                );
                (subscription.id, row)
            })
            .collect();
        for count in event_counts {
            let Some(row) = rows.get_mut(&count.subscription_id) else {
                continue; // deleted on the platform since
            };
            row.events.add(count.state, count.count);
            if count.state == EventState::Missed {
                *row.missed_by_type.entry(count.event.clone()).or_default() += count.count;
            }
            if failed_group(&count) {
                add_failure(row, &count);
            }
        }
        let mut last_failure: BTreeMap<String, i64> = BTreeMap::new();
        for outcome in attempt_counts {
            let Some(row) = rows.get_mut(&outcome.subscription_id) else {
                continue;
            };
            match outcome.status.as_str() {
                "delivered" => row.delivered += outcome.count,
                "pending" => row.pending += outcome.count,
                _ => {
                    row.failed += outcome.count;
                    let last = last_failure.entry(row.id.clone()).or_insert(i64::MIN);
                    *last = (*last).max(outcome.last_ms);
                }
            }
        }
        for due in retries {
            if let Some(row) = rows.get_mut(&due.subscription_id) {
                row.retries_due = due.count;
                row.next_retry_at = Some(rfc3339(due.next_ms));
            }
        }
        let mut rows: Vec<SubscriptionHealth> = rows.into_values().collect();
        let mut each = each;
        for row in &mut rows {
            let facts = each.remove(&row.id).unwrap_or_default();
            row.last_success_at = facts.last_success_ms.map(rfc3339);
            row.failing_since = facts.failing_since_ms.map(rfc3339);
            let finished = row.events.delivered + row.events.missed + row.events.recovered;
            row.success_rate = (finished > 0)
                .then(|| (row.events.delivered + row.events.recovered) as f64 / finished as f64);
            row.last_failure_at = last_failure.get(&row.id).map(|ms| rfc3339(*ms));
            row.failures
                .sort_by(|a, b| b.count.cmp(&a.count).then(a.diagnosis.cmp(&b.diagnosis)));
            row.latest_change = facts.latest_change.map(Into::into);
        }
        rows.sort_by(|a, b| {
            (b.events.missed, b.is_failing(), b.failed)
                .cmp(&(a.events.missed, a.is_failing(), a.failed))
                .then(a.id.cmp(&b.id))
        });
        rows
    }
}

/// Every stored subscription's health since `since_ms`, those missing
/// the most events first.
pub fn health(
    store: &Store,
    since_ms: i64,
    now_ms: i64,
) -> Result<Vec<SubscriptionHealth>, StoreError> {
    Ok(BoardFacts::read(store, since_ms, now_ms)?.rows())
}

/// Whether counted events belong to a failure group: they failed and no
/// platform retry delivered them.
fn failed_group(count: &EventCount) -> bool {
    matches!(
        count.state,
        EventState::Missed | EventState::Recovered | EventState::Pending
    ) && (count.http_status_code.is_some() || !count.error_class.is_empty())
}

/// The diagnosis label of a failure: `401 invalid signature: …`.
pub fn failure_label(http_status_code: Option<u16>, error_class: &str) -> String {
    let problem = Problem::from_parts(http_status_code, error_class);
    match http_status_code {
        Some(code) => format!("{code} {}", diagnosis(problem)),
        None => diagnosis(problem).to_owned(),
    }
}

/// Folds counted events into the group of their diagnosis.
fn add_failure(row: &mut SubscriptionHealth, count: &EventCount) {
    let label = failure_label(count.http_status_code, &count.error_class);
    let last_at = rfc3339(count.last_ms);
    let index = match row
        .failures
        .iter()
        .position(|group| group.diagnosis == label)
    {
        Some(index) => index,
        None => {
            row.failures.push(FailureGroup {
                diagnosis: label,
                http_status: count.http_status_code,
                count: 0,
                missed: 0,
                recovered: 0,
                retrying: 0,
                last_at: String::new(),
                example_session_id: String::new(),
            });
            row.failures.len() - 1
        }
    };
    let group = &mut row.failures[index];
    group.count += count.count;
    match count.state {
        EventState::Missed => group.missed += count.count,
        EventState::Recovered => group.recovered += count.count,
        _ => group.retrying += count.count,
    }
    if last_at > group.last_at {
        group.last_at = last_at;
        group.example_session_id = count.example_session_id.clone();
    }
}

pub fn rfc3339(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default()
}
