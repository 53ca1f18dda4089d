//! A delivery a receiver refused with 401, checked honestly. earshot holds
//! the exact bytes of the event (the observer's copy) but not the header
//! the platform sent that receiver: the observer's copy carries the
//! observer subscription's signature, which no other secret verifies. So
//! the receiver is asked instead ([`receiver_probe::ask`]): the event
//! signed with the secret the operator gives (and a second one), then a
//! wrong one; [`held_secret`] reads the answers.
//!
//! Owns finding the event of a refused attempt ([`locate`]), what earshot
//! knows of its subscription ([`known`]: the record's `secret_version`,
//! the latest rotation in the change log) and the check ([`check`]); the
//! reads from a PostgreSQL store are beside SQLite's ([`locate_postgres`],
//! [`stored_postgres`], [`known_postgres`]).
//!
//! [`receiver_probe::ask`]: super::receiver_probe::ask

use serde::Serialize;

use super::HistoryError;
use super::held_secret::{self, GIVEN, Held, Known, SECOND};
use super::receiver_probe::{self, ProbeAnswer};
use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};
use crate::redact::SecretString;
use crate::store::chains::match_events;
use crate::store::changes::{self, Change};
use crate::store::events::{self, StoredEvent};
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError, deliveries};

/// The event of a refused attempt, as far as the store knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Located {
    /// The observer's exact bytes of it.
    Event(StoredEvent),
    /// The attempt is stored, but the observer never filed its event.
    NotFiled,
    /// No stored attempt of the subscription in the session was refused
    /// with 401 (or none is the one named): the sweep has not seen it.
    NoRefusal,
}

/// The event `subscription_id`'s attempt `delivery_id` in `session_id` was
/// for; without an attempt, its newest event there refused with 401. The
/// attempts are matched to the session's observed events as the outcomes
/// are ([`match_events`]).
pub fn locate(
    store: &Store,
    subscription_id: &str,
    session_id: &str,
    delivery_id: Option<&str>,
) -> Result<Located, StoreError> {
    let records = deliveries::for_session(store, session_id)?;
    let listens = deliveries::listed(store, subscription_id)?.map(|(record, _)| record.events);
    let observed = events::for_session(store, session_id)?;
    Ok(refused_in(
        records,
        listens,
        observed,
        subscription_id,
        delivery_id,
    ))
}

/// [`locate`] from a PostgreSQL store: the same three reads
/// (`deliveries::for_session_postgres`, `listed_postgres`,
/// `events::for_session_postgres`), the same match.
pub async fn locate_postgres(
    store: &PgStore,
    subscription_id: &str,
    session_id: &str,
    delivery_id: Option<&str>,
) -> Result<Located, StoreError> {
    let records = deliveries::for_session_postgres(store, session_id).await?;
    let listens = deliveries::listed_postgres(store, subscription_id)
        .await?
        .map(|(record, _)| record.events);
    let observed = events::for_session_postgres(store, session_id).await?;
    Ok(refused_in(
        records,
        listens,
        observed,
        subscription_id,
        delivery_id,
    ))
}

/// [`locate`]'s match, on what either backend read of the session: its
/// attempts, the event types `subscription_id` listens to (when listed)
/// and the events the observer filed.
fn refused_in(
    records: Vec<DeliveryRecord>,
    listens: Option<Vec<String>>,
    observed: Vec<StoredEvent>,
    subscription_id: &str,
    delivery_id: Option<&str>,
) -> Located {
    let records: Vec<_> = records
        .into_iter()
        .filter(|record| record.subscription_id == subscription_id)
        .collect();
    let wanted: Vec<StoredEvent> = observed
        .into_iter()
        .filter(|event| {
            listens
                .as_ref()
                .is_none_or(|types| types.contains(&event.event))
        })
        .collect();
    let refused = match_events(&records, &wanted)
        .into_iter()
        .rev()
        .find(|chain| {
            chain.attempts.iter().any(|attempt| {
                attempt.status == DeliveryStatus::Failed
                    && attempt.http_status_code == Some(401)
                    && delivery_id.is_none_or(|id| attempt.id == id)
            })
        });
    match refused {
        None => Located::NoRefusal,
        Some(chain) => match chain.event {
            Some(event) => Located::Event(event.clone()),
            None => Located::NotFiled,
        },
    }
}

/// Where the subscription record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordFrom {
    /// A GET just now.
    Platform,
    /// The store, as the sweep listed it at this time (Unix ms).
    Store { listed_ms: i64 },
}

/// The subscription as the store last listed it, if it does.
pub fn stored(store: &Store, id: &str) -> Result<Option<(Subscription, RecordFrom)>, StoreError> {
    Ok(deliveries::listed(store, id)?
        .map(|(record, listed_ms)| (record, RecordFrom::Store { listed_ms })))
}

/// [`stored`] from a PostgreSQL store.
pub async fn stored_postgres(
    store: &PgStore,
    id: &str,
) -> Result<Option<(Subscription, RecordFrom)>, StoreError> {
    Ok(deliveries::listed_postgres(store, id)
        .await?
        .map(|(record, listed_ms)| (record, RecordFrom::Store { listed_ms })))
}

/// What the check says of `record` besides the answers: its secret
/// version, where that comes from, and its latest rotation by earshot.
pub fn known(
    store: &Store,
    record: &Subscription,
    from: RecordFrom,
    now_ms: i64,
) -> Result<Known, StoreError> {
    let rotation = changes::latest_of(store, &record.id, "rotate")?;
    Ok(known_with(record, from, now_ms, rotation))
}

/// [`known`] from a PostgreSQL store (`changes::latest_of_postgres`).
pub async fn known_postgres(
    store: &PgStore,
    record: &Subscription,
    from: RecordFrom,
    now_ms: i64,
) -> Result<Known, StoreError> {
    let rotation = changes::latest_of_postgres(store, &record.id, "rotate").await?;
    Ok(known_with(record, from, now_ms, rotation))
}

/// [`known`] once the latest rotation is read.
fn known_with(
    record: &Subscription,
    from: RecordFrom,
    now_ms: i64,
    rotation: Option<Change>,
) -> Known {
    let record_from = match from {
        RecordFrom::Platform => "the platform's record, read now".to_owned(),
        RecordFrom::Store { listed_ms } => format!(
            "the record the sweep listed {} ago",
            crate::duration_text::of_secs(u64::try_from((now_ms - listed_ms) / 1000).unwrap_or(0))
        ),
    };
    Known {
        short_id: record.id.chars().take(8).collect(),
        secret_version: Some(record.secret_version),
        record_from,
        rotation,
    }
}

/// Whether the observer's secret is the one to ask `record`'s receiver
/// with: only where `record`'s URL is the observer's own, by evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObserverEvidence {
    /// `record`'s URL is that of `observer_subscription`, whose attempts
    /// the observer filed, and the secret verifies the signature the
    /// observer received with `event_id` (one of those attempts).
    Fits {
        observer_subscription: String,
        event_id: String,
    },
    /// No swept attempt is one the observer filed: which subscription is
    /// the observer's is not known.
    NoObserverSubscription,
    /// `record`'s URL is not the URL of the observer's subscription.
    NotObserverUrl,
    /// The secret does not verify the signature the observer received
    /// with `event_id`.
    SecretDoesNotFit { event_id: String },
}

/// How far back a filed signature is checked (its age is no evidence
/// against the secret).
const ANY_AGE_SECS: u64 = 100 * 365 * 24 * 3600;

/// Whether `secret` is the observer's and `record`'s URL its own (see
/// [`ObserverEvidence`]).
pub fn observer_evidence(
    store: &Store,
    record: &Subscription,
    secret: &SecretString,
) -> Result<ObserverEvidence, StoreError> {
    let observer = deliveries::observer_subscriptions(store)?;
    if observer.is_empty() {
        return Ok(ObserverEvidence::NoObserverSubscription);
    }
    let mut own = None;
    for id in observer {
        if deliveries::listed(store, &id)?.is_some_and(|(listed, _)| listed.url == record.url) {
            own = Some(id);
            break;
        }
    }
    let Some(observer_subscription) = own else {
        return Ok(ObserverEvidence::NotObserverUrl);
    };
    let Some(event_id) = deliveries::observer_event(store, &observer_subscription)? else {
        return Ok(ObserverEvidence::NoObserverSubscription);
    };
    let (headers, body) =
        crate::store::event_list::headers_and_body(store, &event_id)?.unwrap_or_default();
    let header = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(crate::signature::HEADER_NAME))
        .map(|(_, value)| value.as_str())
        .unwrap_or_default();
    let signed_at = crate::signature::parse_header(header).map_or(0, |parsed| parsed.timestamp);
    let candidates = [crate::signature::Candidate {
        label: "observer",
        secret: secret.expose().as_bytes(),
    }];
    let verdict = crate::signature::verify(header, &body, &candidates, signed_at, ANY_AGE_SECS);
    Ok(if verdict.is_valid() {
        ObserverEvidence::Fits {
            observer_subscription,
            event_id,
        }
    } else {
        ObserverEvidence::SecretDoesNotFit { event_id }
    })
}

/// The check's answers and verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checked {
    pub event_id: String,
    pub subscription_id: String,
    /// Where the probes went: the subscription's URL.
    pub url: String,
    pub answers: Vec<ProbeAnswer>,
    pub held: Held,
    pub verdict: String,
    pub next: Option<String>,
    pub secret_version: Option<u32>,
    pub rotation: Option<Change>,
}

impl Checked {
    /// The receiver accepts a secret the operator gave (and refuses a
    /// wrong one).
    pub fn accepts_given(&self) -> bool {
        self.held.accepts_given()
    }
}

/// Asks `record`'s receiver about `event`: signed with `given`, then
/// `second` when given, then a wrong secret; `(now_ms, clock)` say the
/// times of the verdict.
pub async fn check(
    record: &Subscription,
    known: &Known,
    event: &StoredEvent,
    (given, second): (&SecretString, Option<&SecretString>),
    (now_ms, clock): (i64, fn(i64) -> String),
    policy: crate::api::validate::UrlPolicy,
) -> Result<Checked, HistoryError> {
    let mut signed = vec![(GIVEN, given)];
    if let Some(second) = second {
        signed.push((SECOND, second));
    }
    let answers = receiver_probe::ask(&record.url, event, &signed, policy).await?;
    let verdict = held_secret::verdict(&answers, known, now_ms, clock);
    Ok(Checked {
        event_id: event.event_id.clone(),
        subscription_id: record.id.clone(),
        url: record.url.clone(),
        answers,
        held: verdict.held,
        verdict: verdict.text,
        next: verdict.next,
        secret_version: known.secret_version,
        rotation: known.rotation.clone(),
    })
}

#[cfg(test)]
mod tests;
