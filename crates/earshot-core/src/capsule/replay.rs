//! A capsule re-enacted: each event to each of its subscriptions' receiver
//! (one local URL, or each subscription's recorded URL when that is on
//! this machine), in the recorded order at the event's recorded time from
//! the first event's, divided by the speed; while the receiver refuses it,
//! an event is tried again as long after its first attempt as the platform
//! did, and no more often. Each attempt is the capsule's bytes signed now with the
//! replay's secret (`recover::send_event`: the platform's headers).
//! Deliveries run side by side, so a slow answer delays no other event.

use std::time::Duration;

use tokio::time::Instant;

use super::CapsuleError;
use super::format::{Capsule, NO_SUBSCRIPTION, ReplayedAttempt, ReplayedDelivery};
use crate::history::recover::{send_event, sender};
use crate::redact::SecretString;
use crate::store::events::StoredEvent;

/// Where the replay sends.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Every event to this URL.
    To(url::Url),
    /// Each subscription's events to its recorded URL (loopback only).
    AsRecorded,
}

impl Target {
    /// What the results' header says: the URL without its query.
    pub fn shown(&self) -> String {
        match self {
            Target::To(url) => url
                .as_str()
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned(),
            Target::AsRecorded => "as-recorded".to_owned(),
        }
    }
}

/// One event to one subscription's receiver, planned.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub event: StoredEvent,
    pub subscription_id: String,
    pub url: String,
    /// When each attempt goes, in ms from the replay's start, at speed 1.
    pub attempts_ms: Vec<i64>,
}

/// The deliveries of `capsule` to `target`, in the capsule's order: an
/// event's recorded attempts for each subscription, or one attempt at the
/// event's time when none was recorded.
pub fn plan(capsule: &Capsule, target: &Target) -> Result<Vec<Planned>, CapsuleError> {
    let mut planned = Vec::new();
    for event in &capsule.events {
        let stored = StoredEvent {
            event_id: event.event_id.clone(),
            event: event.event.clone(),
            session_id: event.session_id.clone(),
            occurred_ms: event.occurred_ms,
            body: event.body_bytes(),
        };
        for delivery in &event.deliveries_or_unknown() {
            let url = match target {
                Target::To(url) => url.to_string(),
                // No subscription, no recorded URL: not replayed.
                Target::AsRecorded if delivery.subscription_id == NO_SUBSCRIPTION => continue,
                Target::AsRecorded => recorded_url(capsule, &delivery.subscription_id)?,
            };
            // The first at the event's time (the events' order is the
            // recorded one), each retry as long after it as recorded.
            let first = delivery.attempts.first().map_or(0, |a| a.at_ms);
            let attempts_ms: Vec<i64> = match delivery.attempts.len() {
                0 => vec![event.occurred_ms],
                _ => delivery
                    .attempts
                    .iter()
                    .map(|a| event.occurred_ms + (a.at_ms - first).max(0))
                    .collect(),
            };
            planned.push(Planned {
                event: stored.clone(),
                subscription_id: delivery.subscription_id.clone(),
                url,
                attempts_ms,
            });
        }
    }
    let start = planned
        .iter()
        .flat_map(|p| p.attempts_ms.iter().copied())
        .min()
        .unwrap_or_default();
    for delivery in &mut planned {
        for at in &mut delivery.attempts_ms {
            *at -= start;
        }
    }
    Ok(planned)
}

/// The recorded URL of `subscription_id`, if it is on this machine.
fn recorded_url(capsule: &Capsule, subscription_id: &str) -> Result<String, CapsuleError> {
    let url = capsule
        .subscriptions
        .iter()
        .find(|subscription| subscription.id == subscription_id)
        .map(|subscription| subscription.url.clone())
        .unwrap_or_default();
    let local = url::Url::parse(&url).is_ok_and(|parsed| match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    });
    if local {
        Ok(url)
    } else {
        Err(CapsuleError::NotLocal {
            id: subscription_id.to_owned(),
            url,
        })
    }
}

/// Runs `planned` at `speed` (2: twice as fast), signing with `secret`;
/// `each` hears of each delivery as it ends, with its index in `planned`.
/// Ends when every delivery has (drop it to stop sooner).
pub async fn run(
    planned: Vec<Planned>,
    speed: f64,
    secret: &SecretString,
    mut each: impl FnMut(usize, ReplayedDelivery),
) -> Result<(), CapsuleError> {
    let http = sender().map_err(|error| CapsuleError::Client(error.to_string()))?;
    let secret = secret.clone();
    let start = Instant::now();
    let (tell, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let mut order: Vec<(usize, Planned)> = planned.into_iter().enumerate().collect();
    order.sort_by_key(|(index, delivery)| (delivery.attempts_ms.first().copied(), *index));
    // One dispatcher starts the deliveries in order, each at its first
    // attempt's time; each delivery then runs on its own.
    let dispatch = tokio::spawn(async move {
        for (index, delivery) in order {
            let first = delivery.attempts_ms.first().copied().unwrap_or_default();
            tokio::time::sleep_until(start + offset(first, speed)).await;
            let (http, secret, tell) = (http.clone(), secret.clone(), tell.clone());
            tokio::spawn(async move {
                let replayed = deliver(&http, &secret, delivery, start, speed).await;
                let _ = tell.send((index, replayed));
            });
        }
    });
    // Dropped with this future: no delivery starts after a stop.
    let _dispatch = AbortOnDrop(dispatch);
    while let Some((index, replayed)) = ended.recv().await {
        each(index, replayed);
    }
    Ok(())
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One delivery's attempts, each at its time, until one gets a 2xx.
async fn deliver(
    http: &reqwest::Client,
    secret: &SecretString,
    delivery: Planned,
    start: Instant,
    speed: f64,
) -> ReplayedDelivery {
    let mut attempts = Vec::new();
    let mut delivered = false;
    for at_ms in &delivery.attempts_ms {
        let planned = offset(*at_ms, speed);
        tokio::time::sleep_until(start + planned).await;
        let sent_ms = start.elapsed().as_millis() as i64;
        let sent = send_event(http, &delivery.url, secret, &delivery.event).await;
        attempts.push(ReplayedAttempt {
            planned_ms: planned.as_millis() as i64,
            sent_ms,
            http_status: sent.http_status,
            error: sent.error,
            latency_ms: sent.latency_ms,
        });
        if sent.delivered {
            delivered = true;
            break;
        }
    }
    ReplayedDelivery {
        event_id: delivery.event.event_id,
        event: delivery.event.event,
        subscription_id: delivery.subscription_id,
        state: if delivered { "delivered" } else { "missed" }.to_owned(),
        attempts,
    }
}

/// How long after the start an attempt planned at `at_ms` (speed 1) goes.
fn offset(at_ms: i64, speed: f64) -> Duration {
    Duration::from_secs_f64(at_ms.max(0) as f64 / 1_000.0 / speed)
}

/// The largest gap between an attempt's planned and actual time, in ms.
pub fn worst_lateness_ms(deliveries: &[ReplayedDelivery]) -> i64 {
    deliveries
        .iter()
        .flat_map(|delivery| &delivery.attempts)
        .map(|attempt| (attempt.sent_ms - attempt.planned_ms).abs())
        .max()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capsule::format::{
        AttemptLine, DeliveryLine, EventLine, SubscriptionLine, test_header,
    };

    fn attempt(at_ms: i64) -> AttemptLine {
        AttemptLine {
            attempt: 1,
            at_ms,
            status: "failed".into(),
            http_status_code: Some(401),
            error: None,
            next_retry_ms: None,
        }
    }

    fn capsule(url: &str) -> Capsule {
        let event = |id: &str, at: i64, attempts: Vec<AttemptLine>| EventLine {
            event_id: id.into(),
            event: "call.ended".into(),
            session_id: "call_1".into(),
            occurred: String::new(),
            occurred_ms: at,
            received_ms: at,
            headers: vec![],
            body: Some("{}".into()),
            body_base64: None,
            body_masked: false,
            deliveries: vec![DeliveryLine {
                subscription_id: "sub_1".into(),
                state: "missed".into(),
                diagnosis: None,
                attempts,
            }],
        };
        Capsule {
            header: test_header(2),
            subscriptions: vec![SubscriptionLine {
                id: "sub_1".into(),
                url: url.into(),
                events: vec![],
            }],
            events: vec![
                event("evt_1", 10_000, vec![attempt(10_050), attempt(12_050)]),
                event("evt_2", 11_000, vec![]),
            ],
        }
    }

    #[test]
    fn events_keep_their_order_and_retries_their_recorded_gaps() {
        let url = url::Url::parse("http://127.0.0.1:9/app").unwrap();
        let planned = plan(&capsule("https://prod.example/hook"), &Target::To(url)).unwrap();
        assert_eq!(planned[0].attempts_ms, [0, 2_000]);
        // No attempt recorded: once, at the event's time.
        assert_eq!(planned[1].attempts_ms, [1_000]);
        assert_eq!(planned[1].url, "http://127.0.0.1:9/app");
    }

    #[test]
    fn an_event_no_subscription_names_goes_to_the_url_only() {
        let mut lone = capsule("http://localhost:4000/hook");
        lone.events[1].deliveries.clear();
        let url = url::Url::parse("http://127.0.0.1:9/app").unwrap();
        let planned = plan(&lone, &Target::To(url)).unwrap();
        assert_eq!(planned.len(), 2);
        assert_eq!(planned[1].subscription_id, NO_SUBSCRIPTION);
        let recorded = plan(&lone, &Target::AsRecorded).unwrap();
        assert_eq!(recorded.len(), 1);
    }

    #[test]
    fn as_recorded_sends_only_to_a_receiver_on_this_machine() {
        let far = plan(&capsule("https://prod.example/hook"), &Target::AsRecorded);
        assert!(matches!(far, Err(CapsuleError::NotLocal { .. })));
        let near = plan(&capsule("http://localhost:4000/hook"), &Target::AsRecorded).unwrap();
        assert_eq!(near[0].url, "http://localhost:4000/hook");
    }
}
