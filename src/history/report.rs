//! Health per subscription from the store: attempts delivered, failed and
//! pending in a window, the success rate, the last failure, failures
//! grouped by diagnosis (the troubleshooting rules of
//! [`crate::api::delivery_verdict`]), and the retries still to come.

use std::collections::BTreeMap;

use chrono::{SecondsFormat, TimeZone, Utc};
use serde::Serialize;

use crate::api::delivery_verdict::{Problem, diagnosis};
use crate::store::{Store, StoreError, deliveries, health};

/// One subscription's board row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubscriptionHealth {
    pub id: String,
    pub url: String,
    pub enabled: bool,
    pub delivered: i64,
    pub failed: i64,
    pub pending: i64,
    /// Delivered out of delivered + failed, when any finished.
    pub success_rate: Option<f64>,
    /// RFC 3339, UTC.
    pub last_failure_at: Option<String>,
    pub retries_due: i64,
    /// When the next scheduled retry is due, RFC 3339, UTC.
    pub next_retry_at: Option<String>,
    /// Largest group first.
    pub failures: Vec<FailureGroup>,
}

/// Failed attempts with one diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureGroup {
    /// "401 invalid signature: …", "timeout: …".
    pub diagnosis: String,
    pub http_status: Option<u16>,
    pub count: i64,
    /// The newest failure of the group, RFC 3339, UTC.
    pub last_at: String,
    pub example_session_id: String,
}

/// Every stored subscription's health since `since_ms`, failing ones first.
pub fn health(
    store: &Store,
    since_ms: i64,
    now_ms: i64,
) -> Result<Vec<SubscriptionHealth>, StoreError> {
    let mut rows: BTreeMap<String, SubscriptionHealth> = deliveries::subscriptions(store)?
        .into_iter()
        .map(|subscription| {
            let row = SubscriptionHealth {
                id: subscription.id.clone(),
                url: subscription.url,
                enabled: subscription.enabled,
                delivered: 0,
                failed: 0,
                pending: 0,
                success_rate: None,
                last_failure_at: None,
                retries_due: 0,
                next_retry_at: None,
                failures: Vec::new(),
            };
            (subscription.id, row)
        })
        .collect();
    let mut last_failure: BTreeMap<String, i64> = BTreeMap::new();
    for outcome in health::outcomes_since(store, since_ms)? {
        let Some(row) = rows.get_mut(&outcome.subscription_id) else {
            continue; // deleted on the platform since
        };
        match outcome.status.as_str() {
            "delivered" => row.delivered += outcome.count,
            "pending" => row.pending += outcome.count,
            _ => {
                row.failed += outcome.count;
                let last = last_failure.entry(row.id.clone()).or_insert(i64::MIN);
                *last = (*last).max(outcome.last_ms);
                add_failure(row, &outcome);
            }
        }
    }
    for due in health::retries_due(store, now_ms)? {
        if let Some(row) = rows.get_mut(&due.subscription_id) {
            row.retries_due = due.count;
            row.next_retry_at = Some(rfc3339(due.next_ms));
        }
    }
    let mut rows: Vec<SubscriptionHealth> = rows.into_values().collect();
    for row in &mut rows {
        let finished = row.delivered + row.failed;
        row.success_rate = (finished > 0).then(|| row.delivered as f64 / finished as f64);
        row.last_failure_at = last_failure.get(&row.id).map(|ms| rfc3339(*ms));
        row.failures
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.diagnosis.cmp(&b.diagnosis)));
    }
    rows.sort_by(|a, b| b.failed.cmp(&a.failed).then(a.id.cmp(&b.id)));
    Ok(rows)
}

/// Folds one failed outcome into the group of its diagnosis.
fn add_failure(row: &mut SubscriptionHealth, outcome: &health::OutcomeCount) {
    let problem = Problem::from_parts(outcome.http_status_code, &outcome.error_class);
    let label = match outcome.http_status_code {
        Some(code) => format!("{code} {}", diagnosis(problem)),
        None => diagnosis(problem).to_owned(),
    };
    let last_at = rfc3339(outcome.last_ms);
    match row
        .failures
        .iter_mut()
        .find(|group| group.diagnosis == label)
    {
        Some(group) => {
            group.count += outcome.count;
            if last_at > group.last_at {
                group.last_at = last_at;
                group.example_session_id = outcome.example_session_id.clone();
            }
        }
        None => row.failures.push(FailureGroup {
            diagnosis: label,
            http_status: outcome.http_status_code,
            count: outcome.count,
            last_at,
            example_session_id: outcome.example_session_id.clone(),
        }),
    }
}

fn rfc3339(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default()
}
