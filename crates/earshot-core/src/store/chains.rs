//! Which event each delivery attempt was for, and how each event ended for
//! one subscription.
//!
//! A delivery record (spec 2 C) names its subscription and session but not
//! its event, and a session has up to two events (`session.started` and
//! `session.completed`, or `call.connected` and `call.ended`). The records
//! still say enough: a first attempt (`attempt_count` 1) starts a chain and
//! is created when its event fires; attempt `n + 1` follows attempt `n` of
//! the same chain at that attempt's `next_retry_at`. So attempts are strung
//! into chains by count and retry time, and each chain is matched to the
//! observed event that fired last before the chain's first attempt (a few
//! seconds of skew allowed). The rule is recorded in docs/decisions.md.

use crate::api::types::agents::{DeliveryRecord, DeliveryStatus};
use crate::store::events::StoredEvent;

/// How far a first attempt may be recorded before its event's timestamp
/// (the two clocks are the platform's, but not the same reading).
const SKEW_MS: i64 = 5_000;
/// How long after its event a first attempt may start at most; an older
/// event is another one, and the chain's own event was not observed.
const MAX_LAG_MS: i64 = 15 * 60 * 1_000;

/// How one event ended for one subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Delivered,
    /// An attempt in flight or a retry scheduled.
    Pending,
    /// No attempt delivered and none is coming.
    FailedForGood,
}

/// One event's attempts for one subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct EventAttempts<'a> {
    /// The observed event, or `None` when the observer never received an
    /// event that fits (its bytes are not held).
    pub event: Option<&'a StoredEvent>,
    pub attempts: Vec<&'a DeliveryRecord>,
    pub fate: Fate,
}

/// Strings `records` (one subscription, one session, any order) into
/// chains, and matches each to one of `events` (the session's observed
/// events, filtered by the caller to those the subscription asked for).
pub fn match_events<'a>(
    records: &'a [DeliveryRecord],
    events: &'a [StoredEvent],
) -> Vec<EventAttempts<'a>> {
    let chains = chains(records);
    let mut events: Vec<&StoredEvent> = events.iter().collect();
    events.sort_by_key(|event| event.occurred_ms);
    let mut taken = vec![false; events.len()];
    chains
        .into_iter()
        .map(|attempts| {
            let start = attempts[0].created_at.timestamp_millis();
            let fits = |index: &usize| {
                let occurred = events[*index].occurred_ms;
                !taken[*index] && occurred <= start + SKEW_MS && start - occurred <= MAX_LAG_MS
            };
            let chosen = (0..events.len()).rev().find(fits);
            if let Some(index) = chosen {
                taken[index] = true;
            }
            EventAttempts {
                event: chosen.map(|index| events[index]),
                fate: fate(&attempts),
                attempts,
            }
        })
        .collect()
}

/// Chains of attempts, each oldest first, in the order their first attempts
/// were made.
fn chains(records: &[DeliveryRecord]) -> Vec<Vec<&DeliveryRecord>> {
    let mut sorted: Vec<&DeliveryRecord> = records.iter().collect();
    sorted.sort_by_key(|record| (record.attempt_count, record.created_at, record.id.clone()));
    let mut chains: Vec<Vec<&DeliveryRecord>> = Vec::new();
    for record in sorted {
        let created = record.created_at.timestamp_millis();
        let follows = chains
            .iter()
            .enumerate()
            .filter_map(|(index, chain)| {
                let last = chain.last()?;
                let due = last.next_retry_at?.timestamp_millis();
                (last.attempt_count + 1 == record.attempt_count && due <= created + SKEW_MS)
                    .then_some((index, (created - due).abs()))
            })
            .min_by_key(|(_, distance)| *distance)
            .map(|(index, _)| index);
        match follows {
            Some(index) => chains[index].push(record),
            // A first attempt, or one whose predecessor was not fetched.
            None => chains.push(vec![record]),
        }
    }
    chains.sort_by_key(|chain| chain[0].created_at);
    chains
}

fn fate(attempts: &[&DeliveryRecord]) -> Fate {
    if attempts
        .iter()
        .any(|attempt| attempt.status == DeliveryStatus::Delivered)
    {
        return Fate::Delivered;
    }
    match attempts.last() {
        Some(last) if last.status == DeliveryStatus::Pending || last.next_retry_at.is_some() => {
            Fate::Pending
        }
        _ => Fate::FailedForGood,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn at(ms: i64) -> chrono::DateTime<chrono::FixedOffset> {
        Utc.timestamp_millis_opt(ms).unwrap().fixed_offset()
    }

    fn attempt(
        id: &str,
        count: u32,
        created: i64,
        status: DeliveryStatus,
        retry: Option<i64>,
    ) -> DeliveryRecord {
        DeliveryRecord {
            id: id.into(),
            subscription_id: "sub".into(),
            session_id: "ses".into(),
            status,
            attempt_count: count,
            http_status_code: None,
            error: None,
            delivered_at: None,
            next_retry_at: retry.map(at),
            created_at: at(created),
            extra: Default::default(),
        }
    }

    fn event(id: &str, occurred: i64) -> StoredEvent {
        StoredEvent {
            event_id: id.into(),
            event: "session.started".into(),
            session_id: "ses".into(),
            occurred_ms: occurred,
            body: Vec::new(),
        }
    }

    #[test]
    fn interleaved_retries_are_strung_to_the_right_event() {
        use DeliveryStatus::*;
        // started at 0 s: fails, retried at 5 s (fails, retry at 35 s: delivered).
        // completed at 10 s: fails, retried at 15 s, fails for good.
        let records = vec![
            attempt("a1", 1, 100, Failed, Some(5_100)),
            attempt("a2", 2, 5_100, Failed, Some(35_100)),
            attempt("b1", 1, 10_100, Failed, Some(15_100)),
            attempt("b2", 2, 15_100, Failed, None),
            attempt("a3", 3, 35_100, Delivered, None),
        ];
        let events = vec![event("completed", 10_000), event("started", 0)];
        let matched = match_events(&records, &events);
        let summary: Vec<(&str, Vec<&str>, Fate)> = matched
            .iter()
            .map(|m| {
                (
                    m.event.map(|e| e.event_id.as_str()).unwrap_or("-"),
                    m.attempts.iter().map(|a| a.id.as_str()).collect(),
                    m.fate,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("started", vec!["a1", "a2", "a3"], Fate::Delivered),
                ("completed", vec!["b1", "b2"], Fate::FailedForGood),
            ]
        );
    }

    #[test]
    fn a_scheduled_retry_or_an_attempt_in_flight_is_pending() {
        let retrying = vec![attempt("a1", 1, 0, DeliveryStatus::Failed, Some(5_000))];
        let in_flight = vec![attempt("a1", 1, 0, DeliveryStatus::Pending, None)];
        let events = vec![event("e", 0)];
        assert_eq!(match_events(&retrying, &events)[0].fate, Fate::Pending);
        assert_eq!(match_events(&in_flight, &events)[0].fate, Fate::Pending);
    }

    #[test]
    fn a_chain_with_no_observed_event_says_so() {
        let records = vec![
            attempt("a1", 1, 0, DeliveryStatus::Failed, None),
            attempt("b1", 1, 50_000, DeliveryStatus::Failed, None),
        ];
        let events = vec![event("only", 49_000)];
        let matched = match_events(&records, &events);
        assert_eq!(
            matched[0].event, None,
            "the first chain fired before any observed event"
        );
        assert_eq!(matched[1].event.map(|e| e.event_id.as_str()), Some("only"));
    }
}
