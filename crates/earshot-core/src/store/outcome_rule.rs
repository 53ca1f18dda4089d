//! The one rule that decides what each event became for each
//! subscription (DESIGN §10), whichever backend holds the store: a
//! session's attempts strung into chains and matched to its observed
//! events ([`super::chains`]), each chain in one [`EventState`], and an
//! observed event no attempt was found for `unknown` while it may still
//! settle. Pure: the SQLite and PostgreSQL rebuilds
//! (`outcome_rebuild::rebuild_sessions`, `rebuild_sessions_postgres`)
//! read a session's [`SessionFacts`] each from their tables and hand them
//! here, and both map an attempt's columns with [`attempt`].

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, FixedOffset, TimeZone, Utc};

use super::chains::{Fate, match_events};
use super::events::StoredEvent;
use super::outcomes::{EventState, Outcome, error_class};
use super::sessions::SETTLE_MS;
use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, EventKind};

/// What the rebuild needs of a stored subscription.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Listening {
    pub(crate) events: Vec<String>,
    pub(crate) enabled: bool,
}

impl Listening {
    /// From the stored columns: `events` is the JSON array the sweep
    /// keeps (unreadable: none).
    pub(crate) fn from_columns(events: &str, enabled: bool) -> Listening {
        Listening {
            events: serde_json::from_str(events).unwrap_or_default(),
            enabled,
        }
    }
}

/// What the store holds of one session: its attempts (any order), its
/// observed events (oldest first, ties by id in byte order) with when
/// each was received, in the same order, and the (subscription, event)
/// pairs earshot re-sent with a 2xx answer, and when.
#[derive(Clone, Debug, Default)]
pub(crate) struct SessionFacts {
    pub(crate) attempts: Vec<DeliveryRecord>,
    pub(crate) events: Vec<StoredEvent>,
    pub(crate) received: Vec<i64>,
    pub(crate) recovered: HashMap<(String, String), i64>,
}

/// One attempt from its stored columns (the JSON record is not needed,
/// and a hand-edited one does not stop the rebuild).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attempt(
    id: String,
    subscription_id: String,
    session_id: &str,
    status: String,
    attempt_count: u32,
    http_status_code: Option<u16>,
    error: Option<String>,
    created_ms: i64,
    next_retry_ms: Option<i64>,
    delivered_ms: Option<i64>,
) -> DeliveryRecord {
    DeliveryRecord {
        id,
        subscription_id,
        session_id: session_id.to_owned(),
        status: match status.as_str() {
            "pending" => DeliveryStatus::Pending,
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            _ => DeliveryStatus::Other(status),
        },
        attempt_count,
        http_status_code,
        error,
        created_at: at(created_ms),
        next_retry_at: next_retry_ms.map(at),
        delivered_at: delivered_ms.map(at),
        extra: Default::default(),
    }
}

fn at(ms: i64) -> DateTime<FixedOffset> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .fixed_offset()
}

/// One session's rows at `now_ms`, in key order (subscription, then event
/// key, bytewise): what `event_outcomes` should hold for it.
pub(crate) fn session_outcomes(
    session_id: &str,
    facts: &SessionFacts,
    subscriptions: &HashMap<String, Listening>,
    now_ms: i64,
) -> Vec<Outcome> {
    let SessionFacts {
        attempts,
        events,
        received,
        recovered,
    } = facts;
    let is_call = events
        .first()
        .and_then(|event| EventKind::parse(&event.event))
        .map_or(session_id.starts_with("call_"), EventKind::is_call);

    let mut by_subscription: BTreeMap<&str, Vec<DeliveryRecord>> = BTreeMap::new();
    for attempt in attempts {
        by_subscription
            .entry(attempt.subscription_id.as_str())
            .or_default()
            .push(attempt.clone());
    }
    let mut rows = Vec::new();
    let mut matched: HashSet<(String, String)> = HashSet::new();
    for (subscription_id, records) in &by_subscription {
        let listens = subscriptions.get(*subscription_id);
        let wanted: Vec<StoredEvent> = events
            .iter()
            .filter(|event| listens.is_none_or(|s| s.events.contains(&event.event)))
            .cloned()
            .collect();
        let chains = match_events(records, &wanted);
        let observed_types: HashSet<&str> = chains
            .iter()
            .filter_map(|chain| chain.event.map(|event| event.event.as_str()))
            .collect();
        // The type an unobserved chain must have, when the subscription's
        // types for this kind of session leave exactly one.
        let inferred = listens.and_then(|s| {
            let mut left = s.events.iter().filter(|name| {
                EventKind::parse(name).is_some_and(|kind| kind.is_call() == is_call)
                    && !observed_types.contains(name.as_str())
            });
            match (left.next(), left.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        });
        for chain in chains {
            let last_failure = chain
                .attempts
                .iter()
                .rev()
                .find(|attempt| attempt.status == DeliveryStatus::Failed);
            let failures = chain
                .attempts
                .iter()
                .filter(|attempt| attempt.status == DeliveryStatus::Failed)
                .map(|attempt| attempt.created_at.timestamp_millis());
            let first_failure_ms = failures.clone().min();
            let last_failure_ms = failures.max();
            let delivered_ms = chain
                .attempts
                .iter()
                .find(|attempt| attempt.status == DeliveryStatus::Delivered)
                .map(|attempt| {
                    attempt
                        .delivered_at
                        .unwrap_or(attempt.created_at)
                        .timestamp_millis()
                });
            let event_id = chain.event.map(|event| event.event_id.clone());
            let recovery = event_id
                .as_ref()
                .and_then(|id| recovered.get(&(subscription_id.to_string(), id.clone())));
            let (state, settled_ms) = match (chain.fate, recovery) {
                (Fate::Delivered, _) => (EventState::Delivered, delivered_ms),
                (Fate::Pending, _) => (EventState::Pending, None),
                (Fate::FailedForGood, Some(at)) => (EventState::Recovered, Some(*at)),
                (Fate::FailedForGood, None) => (EventState::Missed, None),
            };
            if let Some(event) = chain.event {
                matched.insert((subscription_id.to_string(), event.event_id.clone()));
            }
            let first = chain.attempts[0];
            rows.push(Outcome {
                subscription_id: subscription_id.to_string(),
                event_key: event_id
                    .clone()
                    .unwrap_or_else(|| format!("delivery:{}", first.id)),
                event: chain
                    .event
                    .map(|event| event.event.clone())
                    .or_else(|| inferred.clone()),
                session_id: session_id.to_owned(),
                occurred_ms: chain
                    .event
                    .map_or(first.created_at.timestamp_millis(), |event| {
                        event.occurred_ms
                    }),
                state,
                attempts: i64::try_from(chain.attempts.len()).unwrap_or(i64::MAX),
                http_status_code: last_failure
                    .and_then(|attempt| attempt.http_status_code)
                    .unwrap_or(0),
                error_class: last_failure.map_or_else(String::new, |attempt| {
                    error_class(attempt.http_status_code, attempt.error.as_deref())
                }),
                first_failure_ms,
                last_failure_ms,
                settled_ms,
                event_id,
            });
        }
    }
    // Observed events no attempt was found for yet: unknown while the
    // session may still be settling, else not sent to that subscription.
    for (index, event) in events.iter().enumerate() {
        if now_ms >= received[index] + SETTLE_MS {
            continue;
        }
        for (subscription_id, listens) in subscriptions {
            if listens.enabled
                && listens.events.contains(&event.event)
                && !matched.contains(&(subscription_id.clone(), event.event_id.clone()))
            {
                rows.push(Outcome {
                    subscription_id: subscription_id.clone(),
                    event_key: event.event_id.clone(),
                    event_id: Some(event.event_id.clone()),
                    event: Some(event.event.clone()),
                    session_id: session_id.to_owned(),
                    occurred_ms: event.occurred_ms,
                    state: EventState::Unknown,
                    attempts: 0,
                    http_status_code: 0,
                    error_class: String::new(),
                    first_failure_ms: None,
                    last_failure_ms: None,
                    settled_ms: None,
                });
            }
        }
    }
    rows.sort_by(|a, b| {
        (&a.subscription_id, &a.event_key).cmp(&(&b.subscription_id, &b.event_key))
    });
    rows
}
