//! Rotating a secret without losing an event. The platform keeps no
//! overlap window (spec 5 C.4–C.5): from the `PATCH` on, deliveries carry
//! the new secret only, and a receiver that answers 401 gets no retry. So
//! the receiver must accept both secrets *before* the `PATCH`:
//!
//! - [`probe_event`] picks what to send: the observer's exact bytes of an
//!   event this subscription was already delivered (a duplicate `event_id`,
//!   which a receiver following spec 6 C.2 deduplicates), or, when asked, a
//!   synthetic event;
//! - [`check`] sends it signed with the new secret, then the current one
//!   (when given: earshot stores no secret), then a wrong one (the sends
//!   are [`receiver_probe`]'s), and expects not-401, not-401, 401;
//! - [`watch`] follows the subscription after the `PATCH`: what was
//!   delivered since, any 401 (stop and act), and when no attempt signed
//!   with the old secret is still pending, so the old one can go.

use std::time::Duration;

use serde::Serialize;

use super::HistoryError;
use super::receiver_probe::{self, ProbeAnswer};
use super::sweep::sweep;
use crate::api::Client;
use crate::redact::SecretString;
use crate::store::events::{self, StoredEvent};
use crate::store::outcomes::{self, EventState};
use crate::store::postgres::PgStore;
use crate::store::sweep_store::SweepStore;
use crate::store::{Store, deliveries};

/// What the check sends.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeEvent {
    pub event: StoredEvent,
    /// Made up for the check (no delivered event was in the store).
    pub synthetic: bool,
}

/// The newest event delivered to `subscription_id` whose bytes the
/// observer holds; else, with `synthetic`, a made-up `session.started`.
pub fn probe_event(
    store: &Store,
    subscription_id: &str,
    synthetic: bool,
) -> Result<Option<ProbeEvent>, HistoryError> {
    let delivered = outcomes::of_subscription(store, subscription_id, EventState::Delivered, 0)?;
    for outcome in delivered.iter().rev() {
        let Some(event_id) = &outcome.event_id else {
            continue;
        };
        if let Some(event) = events::get_at(store, outcome.occurred_ms, event_id)? {
            return Ok(Some(ProbeEvent {
                event,
                synthetic: false,
            }));
        }
    }
    Ok(synthetic.then(synthetic_event))
}

/// [`probe_event`] from a PostgreSQL store.
pub async fn probe_event_postgres(
    store: &PgStore,
    subscription_id: &str,
    synthetic: bool,
) -> Result<Option<ProbeEvent>, HistoryError> {
    let delivered =
        outcomes::of_subscription_postgres(store, subscription_id, EventState::Delivered, 0)
            .await?;
    for outcome in delivered.iter().rev() {
        let Some(event_id) = &outcome.event_id else {
            continue;
        };
        if let Some(event) = events::get_at_postgres(store, outcome.occurred_ms, event_id).await? {
            return Ok(Some(ProbeEvent {
                event,
                synthetic: false,
            }));
        }
    }
    Ok(synthetic.then(synthetic_event))
}

fn synthetic_event() -> ProbeEvent {
    let event_id = uuid::Uuid::new_v4().to_string();
    let session_id = format!("ses_earshot_probe_{}", uuid::Uuid::new_v4().simple());
    let now = chrono::Utc::now();
    let body = serde_json::json!({
        "event": "session.started",
        "event_id": event_id,
        "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "session": { "session_id": session_id },
    });
    ProbeEvent {
        event: StoredEvent {
            event_id,
            event: "session.started".into(),
            session_id,
            occurred_ms: now.timestamp_millis(),
            body: body.to_string().into_bytes(),
        },
        synthetic: true,
    }
}

/// One send of the check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckAnswer {
    /// `the new secret`, `the current secret`, `a wrong secret`: reads
    /// after "signed with".
    pub signed_with: &'static str,
    /// Whether a receiver doing its job accepts it.
    pub should_accept: bool,
    pub http_status: Option<u16>,
    /// `timeout`, `connection refused`, … when there was no answer.
    pub error: Option<String>,
    pub ok: bool,
    /// What the answer means, in words.
    pub verdict: String,
}

/// The check's three sends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    pub event_id: String,
    pub synthetic: bool,
    pub answers: Vec<CheckAnswer>,
    pub passed: bool,
}

/// Sends `probe` to `url` signed with `new`, then `current` (when given),
/// then a wrong secret ([`receiver_probe::ask`]), and expects not-401,
/// not-401, 401.
pub async fn check(
    url: &str,
    probe: &ProbeEvent,
    new: &SecretString,
    current: Option<&SecretString>,
    policy: crate::api::validate::UrlPolicy,
) -> Result<CheckReport, HistoryError> {
    let mut signed: Vec<(&'static str, &SecretString)> = vec![("the new secret", new)];
    if let Some(current) = current {
        signed.push(("the current secret", current));
    }
    let answers = receiver_probe::ask(url, &probe.event, &signed, policy)
        .await?
        .into_iter()
        .map(expect)
        .collect::<Vec<_>>();
    Ok(CheckReport {
        event_id: probe.event.event_id.clone(),
        synthetic: probe.synthetic,
        passed: answers.iter().all(|answer| answer.ok),
        answers,
    })
}

/// One answer against what a receiver ready for the rotation does: accept
/// every secret given, refuse a wrong one.
fn expect(answer: ProbeAnswer) -> CheckAnswer {
    let signed_with = answer.signed_with;
    let should_accept = signed_with != receiver_probe::WRONG;
    let refused = answer.refused();
    let ok = answer.http_status.is_some() && refused != should_accept;
    let verdict = match (should_accept, answer.http_status) {
        (_, None) => format!(
            "no answer ({}): the receiver must be reachable to check",
            answer.error.clone().unwrap_or_default()
        ),
        (true, Some(401)) => format!(
            "refused: the receiver does not accept {signed_with} yet; add it next to the \
             one it has (both must verify until the rotation drains)"
        ),
        (true, Some(code)) => format!("accepted ({code})"),
        (false, Some(401)) => "refused, as it should be: the receiver checks signatures".into(),
        (false, Some(code)) => format!(
            "accepted ({code}) although the signature is wrong: the receiver does not verify \
             signatures, so this check proves nothing; fix its verification first"
        ),
    };
    CheckAnswer {
        signed_with,
        should_accept,
        http_status: answer.http_status,
        error: answer.error,
        ok,
        verdict,
    }
}

/// What a watch saw since the rotation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WatchReport {
    pub delivered_since: i64,
    /// Sessions with an attempt refused with 401 since the rotation.
    pub refused_sessions: Vec<String>,
    /// Events from before the rotation still in flight or retrying.
    pub old_pending: i64,
    /// Whether the watch ran to its end (rather than stopping at a 401).
    pub completed: bool,
}

impl WatchReport {
    pub fn safe_to_drop_old_secret(&self) -> bool {
        self.old_pending == 0
    }
}

/// How often the watch sweeps.
const WATCH_EVERY: Duration = Duration::from_secs(5);
/// Requests one watch sweep may send.
const WATCH_BUDGET: usize = 50;

/// Follows `subscription_id` for `duration` after a rotation at
/// `rotated_ms`, sweeping every few seconds and calling `each` with what
/// it sees; stops at the first 401.
pub async fn watch(
    client: &Client,
    store: SweepStore<'_>,
    subscription_id: &str,
    rotated_ms: i64,
    duration: Duration,
    mut each: impl FnMut(&WatchReport),
) -> Result<WatchReport, HistoryError> {
    let deadline = tokio::time::Instant::now() + duration;
    loop {
        let swept = sweep(client, store, WATCH_BUDGET).await?;
        if let Some(why) = swept.stopped {
            tracing::warn!(why, "a watch sweep stopped early");
        }
        let since = match store {
            SweepStore::Sqlite(file) => {
                let id = subscription_id.to_owned();
                file.run(move |store| {
                    deliveries::since(store, &id, rotated_ms).map_err(HistoryError::from)
                })
                .await?
            }
            SweepStore::Postgres { store, .. } => {
                deliveries::since_postgres(store, subscription_id, rotated_ms).await?
            }
        };
        let mut report = WatchReport {
            delivered_since: since.delivered,
            refused_sessions: since.refused_sessions,
            old_pending: since.old_pending,
            completed: false,
        };
        each(&report);
        if !report.refused_sessions.is_empty() {
            return Ok(report);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            report.completed = true;
            return Ok(report);
        }
        tokio::time::sleep(WATCH_EVERY.min(deadline - now)).await;
    }
}
