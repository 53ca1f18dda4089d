//! The webhook delivery engine for voice-agent events, read top to bottom:
//!
//! [`dispatch`] picks the subscriptions an event goes to and spawns one
//! [`deliver`] task each; `deliver` runs attempts until one settles it;
//! [`attempt`] prepares (secret read now, record created `pending`), makes
//! the HTTP call ([`post`]), and records the outcome ([`classify`] says
//! which outcomes are retried). The schedule is [`retry_delay`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use chrono::{DateTime, Utc};

use super::stats::DeliveryInProgress;
use super::{SharedState, TimeScale};
use earshot_http::answer::{self as http_answer, ANSWER_LIMIT, AnswerError};
use earshot_protocol::delivery::{DELIVERY_ID_HEADER, Delivery, EventBytes, Outgoing};
use earshot_protocol::types::agents::{DeliveryRecord, DeliveryStatus, EventKind};

/// The receiver's deadline (spec part 6 C rule 5), before scaling.
pub const DEADLINE: Duration = Duration::from_secs(15);
/// Attempts per event per subscription, the first included.
pub(crate) const MAX_ATTEMPTS: u32 = 6;
/// The `User-Agent` of deliveries: a delivery agent with version 1.0.
pub(crate) const DELIVERY_USER_AGENT: &str = earshot_protocol::delivery::USER_AGENT;

/// Wait before attempt `attempt + 1`, or `None` after the last attempt:
/// 5 s, 30 s, 2 min, 10 min, 30 min (DESIGN.md §5), before scaling.
pub(crate) fn retry_delay(attempt: u32) -> Option<Duration> {
    const SCHEDULE: [u64; 5] = [5, 30, 120, 600, 1800];
    let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
    SCHEDULE.get(index).map(|secs| Duration::from_secs(*secs))
}

/// The HTTP side of the engine: one client, no redirects followed.
pub(crate) struct Engine {
    http: reqwest::Client,
    pub(crate) scale: TimeScale,
}

impl Engine {
    pub fn new(scale: TimeScale) -> Result<Engine, reqwest::Error> {
        let http = earshot_http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(DELIVERY_USER_AGENT)
            .pool_max_idle_per_host(64)
            .build()?;
        Ok(Engine { http, scale })
    }
}

/// An event as sent: the same bytes (and `event_id`) on every attempt.
/// Kept with its session or call, for the deliveries a test asks for.
pub(crate) struct Event {
    pub event_id: String,
    pub kind: EventKind,
    pub session_id: String,
    pub agent_id: String,
    pub body: Bytes,
}

impl Event {
    /// Its name and bytes, as a [`Delivery`] signs and sends them.
    pub fn bytes(&self) -> EventBytes<'_> {
        EventBytes {
            name: self.kind.as_str(),
            body: &self.body,
        }
    }
}

/// Sends `event` to every enabled subscription that asked for it; how
/// many.
pub(crate) fn dispatch(state: &SharedState, event: Arc<Event>) -> usize {
    let targets: Vec<String> = state
        .lock()
        .subscriptions
        .iter()
        .filter(|stored| {
            let record = &stored.record;
            record.enabled
                && record.events.iter().any(|name| name == event.kind.as_str())
                && record
                    .agent_id
                    .as_ref()
                    .is_none_or(|agent| *agent == event.agent_id)
        })
        .map(|stored| stored.record.id.clone())
        .collect();
    let count = targets.len();
    for subscription_id in targets {
        let in_progress = DeliveryInProgress::start(state);
        let delivery = deliver(state.clone(), subscription_id, event.clone());
        tokio::spawn(async move {
            delivery.await;
            drop(in_progress);
        });
    }
    count
}

/// Attempts until delivered, rejected, out of attempts, or the subscription
/// is deleted or paused.
async fn deliver(state: SharedState, subscription_id: String, event: Arc<Event>) {
    for attempt_number in 1..=MAX_ATTEMPTS {
        let Some(record_id) = attempt(&state, &subscription_id, &event, attempt_number).await
        else {
            return;
        };
        let delay = match state.lock().delivery_mut(&event.session_id, &record_id) {
            Some(record) if record.next_retry_at.is_some() => retry_delay(attempt_number),
            _ => None,
        };
        let Some(delay) = delay else { return };
        state.clock.sleep(delay).await;
        let mut store = state.lock();
        let enabled = store
            .subscription(&subscription_id)
            .map(|stored| stored.record.enabled);
        if enabled != Some(true) {
            // Paused or deleted while waiting: the retry will not happen.
            if let Some(record) = store.delivery_mut(&event.session_id, &record_id) {
                record.next_retry_at = None;
            }
            return;
        }
    }
}

/// How one attempt ended, and whether the platform tries again.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Delivered {
        status: u16,
    },
    /// Failed for good: a 4xx rejection or a redirect.
    Rejected {
        status: u16,
        message: String,
    },
    /// Failed, retried while attempts remain.
    Retryable {
        status: Option<u16>,
        message: String,
    },
}

/// Spec part 6 C rules 5–6: 2xx delivered; 408, 425, 429 and 5xx retried;
/// other 4xx rejected; redirects not followed and not retried.
pub(crate) fn classify(status: u16, message: String) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered { status },
        408 | 425 | 429 | 500..=599 => Outcome::Retryable {
            status: Some(status),
            message,
        },
        _ => Outcome::Rejected { status, message },
    }
}

/// One attempt: prepare, call, record. The record's id, or `None` when the
/// subscription, or the session or call, no longer exists.
async fn attempt(
    state: &SharedState,
    subscription_id: &str,
    event: &Event,
    attempt_number: u32,
) -> Option<String> {
    let (url, outgoing, record_id) = {
        let mut store = state.lock();
        let stored = store.subscription(subscription_id)?;
        // Signed now: a retry after a rotation uses the new secret, an
        // attempt already in flight keeps the old one. The headers and
        // signature are those of every delivery (`Delivery::requests`).
        let outgoing = Delivery::of(event.event_id.as_str())
            .requests(
                |_| Some(event.bytes()),
                &stored.secret,
                Utc::now().timestamp(),
            )
            .ok()?
            .pop()?;
        let url = stored.record.url.clone();
        let record_id = outgoing.header(DELIVERY_ID_HEADER)?.to_owned();
        // A session forgotten since (`keep_conversations`) gets no more
        // attempts: none would be listed.
        let recorded = store.add_delivery(DeliveryRecord {
            id: record_id.clone(),
            subscription_id: subscription_id.to_owned(),
            session_id: event.session_id.clone(),
            status: DeliveryStatus::Pending,
            attempt_count: attempt_number,
            http_status_code: None,
            error: None,
            delivered_at: None,
            next_retry_at: None,
            created_at: Utc::now().fixed_offset(),
            extra: Default::default(),
        });
        recorded.then_some((url, outgoing, record_id))?
    };
    let outcome = post(&state.deliveries, &url, &outgoing).await;
    let finished = Utc::now();
    let will_retry =
        matches!(outcome, Outcome::Retryable { .. }) && retry_delay(attempt_number).is_some();
    let next_retry_at = will_retry
        .then(|| retry_delay(attempt_number))
        .flatten()
        .map(|delay| retry_time(finished, state.clock.span(delay)));
    tracing::debug!(
        subscription = subscription_id,
        event = event.kind.as_str(),
        session = event.session_id,
        attempt = attempt_number,
        ?outcome,
        "delivery attempt"
    );
    let mut store = state.lock();
    let record = store.delivery_mut(&event.session_id, &record_id)?;
    match outcome {
        Outcome::Delivered { status } => {
            record.status = DeliveryStatus::Delivered;
            record.http_status_code = Some(status);
            record.delivered_at = Some(finished.fixed_offset());
        }
        Outcome::Rejected { status, message } => {
            record.status = DeliveryStatus::Failed;
            record.http_status_code = Some(status);
            record.error = Some(format!("HTTP {status}: {message}"));
        }
        Outcome::Retryable { status, message } => {
            record.status = DeliveryStatus::Failed;
            record.http_status_code = status;
            record.error = Some(match status {
                Some(status) => format!("HTTP {status}: {message}"),
                None => message,
            });
            record.next_retry_at = next_retry_at.map(|at| at.fixed_offset());
        }
    }
    Some(record_id)
}

fn retry_time(from: DateTime<Utc>, delay: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(delay)
        .ok()
        .and_then(|delay| from.checked_add_signed(delay))
        .unwrap_or(from)
}

/// The HTTP call of `outgoing` (its headers and body, as prepared),
/// bounded by the (scaled) 15 s deadline; at most [`ANSWER_LIMIT`] bytes
/// of the answer are read.
pub(crate) async fn post(engine: &Engine, url: &str, outgoing: &Outgoing) -> Outcome {
    let deadline = tokio::time::Instant::now() + engine.scale.scale(DEADLINE);
    let call = async {
        let mut request = engine.http.post(url).body(outgoing.body.clone());
        for (name, value) in &outgoing.headers {
            request = request.header(*name, value.as_str());
        }
        let response = request.send().await?;
        http_answer::read(response, ANSWER_LIMIT, deadline).await
    };
    match tokio::time::timeout_at(deadline, call).await {
        Err(_) | Ok(Err(AnswerError::TimedOut)) => Outcome::Retryable {
            status: None,
            message: format!("timeout: no answer within {} s", DEADLINE.as_secs()),
        },
        Ok(Err(AnswerError::Read(error))) => Outcome::Retryable {
            status: None,
            message: format!(
                "connection error: {}",
                earshot_protocol::error_text::root_cause(&error)
            ),
        },
        Ok(Ok(answer)) => {
            let message = match (answer.status, &answer.location) {
                (300..=399, Some(location)) => format!("redirect to {location} not followed"),
                (300..=399, None) => "redirect not followed".to_owned(),
                _ => answer.message(),
            };
            classify(answer.status, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_five_retries_then_none() {
        let delays: Vec<u64> = (1..=MAX_ATTEMPTS)
            .map_while(retry_delay)
            .map(|delay| delay.as_secs())
            .collect();
        assert_eq!(delays, [5, 30, 120, 600, 1800]);
        assert_eq!(retry_delay(MAX_ATTEMPTS), None);
        assert_eq!(retry_delay(0), None);
    }

    #[test]
    fn classification_follows_part_6_rules() {
        let message = || "m".to_owned();
        assert!(matches!(
            classify(204, message()),
            Outcome::Delivered { .. }
        ));
        for retried in [408, 425, 429, 500, 502, 503, 504] {
            assert!(
                matches!(classify(retried, message()), Outcome::Retryable { .. }),
                "{retried}"
            );
        }
        for rejected in [301, 302, 400, 401, 403, 404, 410, 422] {
            assert!(
                matches!(classify(rejected, message()), Outcome::Rejected { .. }),
                "{rejected}"
            );
        }
    }
}
