//! Deliveries a test asks for ([`Emulator::deliver`]): an event the
//! platform sent, sent again to one subscription as a [`Delivery`] says
//! (a duplicate, an out-of-order pair, another secret, a moved `t`, late).
//! The requests are prepared by `earshot-protocol`'s
//! [`Delivery::requests`], as `earshot check-receiver` prepares its
//! battery's, and sent by the delivery engine's HTTP call.

use chrono::Utc;

use super::delivery::{self, Outcome};
use super::stats::DeliveryInProgress;
use super::{ControlError, Emulator};
use earshot_protocol::delivery::{DELIVERY_ID_HEADER, Delivery};

/// How the receiver answered one request of a delivery sent on demand.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeliveryAnswer {
    /// The event the request carried.
    pub event_id: String,
    /// Its `X-SVC-Delivery-Id`.
    pub delivery_id: String,
    /// The HTTP status; `None` when no answer came (a timeout past the
    /// scaled 15 s deadline, a refused or broken connection).
    pub status: Option<u16>,
    /// What went wrong, when it did (`HTTP 401: ...`, `timeout: ...`).
    pub error: Option<String>,
}

impl Emulator {
    /// Sends `delivery` to subscription `subscription_id` now, request by
    /// request (each after the answer to the one before), and returns the
    /// receiver's answers in order. The events are ones the platform sent
    /// (their `event_id`, read from a delivery the receiver got); each
    /// request is signed with the subscription's current secret unless
    /// [`Delivery::signed_with`] chose another.
    ///
    /// One attempt each: no retry, no delivery record listed by the
    /// platform's API. Counted as a delivery in progress, so
    /// [`settled`](Emulator::settled) waits for it.
    pub async fn deliver(
        &self,
        subscription_id: &str,
        delivery: Delivery,
    ) -> Result<Vec<DeliveryAnswer>, ControlError> {
        let (url, requests) = {
            let store = self.state.lock();
            let stored = store.subscription(subscription_id).ok_or_else(|| {
                ControlError::NotFound(format!("no subscription {subscription_id}"))
            })?;
            let events: Vec<_> = delivery
                .event_ids()
                .iter()
                .filter_map(|event_id| store.event(event_id))
                .collect();
            let lookup = |event_id: &str| {
                events
                    .iter()
                    .find(|event| event.event_id == event_id)
                    .map(|event| event.bytes())
            };
            let requests = delivery
                .requests(lookup, &stored.secret, Utc::now().timestamp())
                .map_err(|unknown| ControlError::NotFound(unknown.to_string()))?;
            (stored.record.url.clone(), requests)
        };
        let _in_progress = DeliveryInProgress::start(&self.state);
        let mut answers = Vec::with_capacity(requests.len());
        for outgoing in requests {
            if !outgoing.delay.is_zero() {
                tokio::time::sleep(outgoing.delay).await;
            }
            let outcome = delivery::post(&self.state.deliveries, &url, &outgoing).await;
            let (status, error) = match outcome {
                Outcome::Delivered { status } => (Some(status), None),
                Outcome::Rejected { status, message } => {
                    (Some(status), Some(format!("HTTP {status}: {message}")))
                }
                Outcome::Retryable {
                    status: Some(status),
                    message,
                } => (Some(status), Some(format!("HTTP {status}: {message}"))),
                Outcome::Retryable {
                    status: None,
                    message,
                } => (None, Some(message)),
            };
            answers.push(DeliveryAnswer {
                delivery_id: outgoing
                    .header(DELIVERY_ID_HEADER)
                    .unwrap_or_default()
                    .to_owned(),
                event_id: outgoing.event_id,
                status,
                error,
            });
        }
        Ok(answers)
    }
}
