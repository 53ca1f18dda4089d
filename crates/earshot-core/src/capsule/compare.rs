//! What happened in the incident beside what happened in its replay: per
//! event and subscription, the recorded outcome (with its diagnosis) and
//! the replay's, and per subscription the counts of each
//! (`recorded: 52 missed (401 invalid signature) — replay: 52 delivered`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::format::{Capsule, Results};
use crate::history::report::failure_label;
use crate::store::outcomes::error_class;

/// One side of an event's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    /// Recorded: `delivered`, `missed`, `recovered`, `pending`, `unknown`;
    /// replay: `delivered`, `missed`, or `not replayed`.
    pub state: String,
    /// Why it failed (recorded: the diagnosis; replay: the last error).
    pub why: Option<String>,
    pub attempts: usize,
}

impl Side {
    /// `missed (401 invalid signature)`, `delivered`: the diagnosis's
    /// name, its explanation left to `why`.
    pub fn label(&self) -> String {
        match (&self.why, self.state.as_str()) {
            (Some(why), "missed" | "pending") => {
                let name = why.split(':').next().unwrap_or(why);
                format!("{} ({name})", self.state)
            }
            _ => self.state.clone(),
        }
    }
}

/// One event to one subscription, recorded and replayed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compared {
    pub event_id: String,
    pub event: String,
    pub session_id: String,
    pub subscription_id: String,
    pub recorded: Side,
    pub replay: Side,
}

impl Compared {
    /// `evt_1 call.ended sub_1: recorded missed (401 …) — replay delivered`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {}: recorded {} — replay {}",
            self.event_id,
            self.event,
            self.subscription_id,
            self.recorded.label(),
            self.replay.label()
        )
    }
}

/// One subscription's counts, recorded and replayed, by label.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub subscription_id: String,
    pub recorded: BTreeMap<String, usize>,
    pub replay: BTreeMap<String, usize>,
}

impl Summary {
    /// `sub_1: recorded: 52 missed (401 invalid signature) — replay: 52
    /// delivered`.
    pub fn line(&self) -> String {
        let counts = |by: &BTreeMap<String, usize>| {
            by.iter()
                .map(|(label, count)| format!("{count} {label}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "{}: recorded: {} — replay: {}",
            self.subscription_id,
            counts(&self.recorded),
            counts(&self.replay)
        )
    }
}

/// Every delivery of `capsule` beside its replay in `results` (capsule
/// order), and the summary per subscription.
pub fn compare(capsule: &Capsule, results: &Results) -> (Vec<Compared>, Vec<Summary>) {
    let replayed: BTreeMap<(&str, &str), _> = results
        .deliveries
        .iter()
        .map(|d| ((d.event_id.as_str(), d.subscription_id.as_str()), d))
        .collect();
    let mut lines = Vec::new();
    let mut summaries: BTreeMap<String, Summary> = BTreeMap::new();
    for event in &capsule.events {
        for delivery in &event.deliveries_or_unknown() {
            let recorded = Side {
                state: delivery.state.clone(),
                why: delivery.diagnosis.clone(),
                attempts: delivery.attempts.len(),
            };
            let key = (event.event_id.as_str(), delivery.subscription_id.as_str());
            let replay = match replayed.get(&key) {
                Some(replay) => Side {
                    state: replay.state.clone(),
                    why: replay.attempts.last().and_then(|attempt| {
                        attempt.error.as_deref().map(|error| {
                            let class = error_class(attempt.http_status, Some(error));
                            failure_label(attempt.http_status, &class)
                        })
                    }),
                    attempts: replay.attempts.len(),
                },
                None => Side {
                    state: "not replayed".to_owned(),
                    why: None,
                    attempts: 0,
                },
            };
            let summary = summaries
                .entry(delivery.subscription_id.clone())
                .or_insert_with(|| Summary {
                    subscription_id: delivery.subscription_id.clone(),
                    ..Summary::default()
                });
            *summary.recorded.entry(recorded.label()).or_default() += 1;
            *summary.replay.entry(replay.label()).or_default() += 1;
            lines.push(Compared {
                event_id: event.event_id.clone(),
                event: event.event.clone(),
                session_id: event.session_id.clone(),
                subscription_id: delivery.subscription_id.clone(),
                recorded,
                replay,
            });
        }
    }
    (lines, summaries.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capsule::format::{
        DeliveryLine, EventLine, ReplayHeader, ReplayedAttempt, ReplayedDelivery, VERSION,
        test_header,
    };

    fn event(id: &str, state: &str) -> EventLine {
        EventLine {
            event_id: id.into(),
            event: "call.ended".into(),
            session_id: "call_1".into(),
            occurred: String::new(),
            occurred_ms: 0,
            received_ms: 0,
            headers: vec![],
            body: Some("{}".into()),
            body_base64: None,
            body_masked: false,
            deliveries: vec![DeliveryLine {
                subscription_id: "sub_1".into(),
                state: state.into(),
                diagnosis: Some("401 invalid signature".into()),
                attempts: vec![],
            }],
        }
    }

    fn replayed(id: &str, status: u16) -> ReplayedDelivery {
        let delivered = status == 200;
        ReplayedDelivery {
            event_id: id.into(),
            event: "call.ended".into(),
            subscription_id: "sub_1".into(),
            state: if delivered { "delivered" } else { "missed" }.into(),
            attempts: vec![ReplayedAttempt {
                planned_ms: 0,
                sent_ms: 1,
                http_status: Some(status),
                error: (!delivered).then(|| format!("HTTP {status}")),
                latency_ms: 2,
            }],
        }
    }

    #[test]
    fn each_event_and_the_counts_say_both_sides() {
        let capsule = Capsule {
            header: test_header(3),
            subscriptions: vec![],
            events: vec![
                event("evt_1", "missed"),
                event("evt_2", "missed"),
                event("evt_3", "missed"),
            ],
        };
        let results = Results {
            header: ReplayHeader {
                format: "earshot-capsule-replay".into(),
                version: VERSION,
                speed: 1.0,
                target: "http://127.0.0.1:9/".into(),
                deliveries: 2,
                capsule_sha256: None,
            },
            deliveries: vec![replayed("evt_1", 200), replayed("evt_2", 500)],
        };
        let (lines, summaries) = compare(&capsule, &results);
        assert_eq!(
            lines[0].line(),
            "evt_1 call.ended sub_1: recorded missed (401 invalid signature) — replay delivered"
        );
        assert_eq!(lines[1].replay.label(), "missed (500 receiver error)");
        assert_eq!(lines[2].replay.label(), "not replayed");
        assert_eq!(
            summaries[0].line(),
            "sub_1: recorded: 3 missed (401 invalid signature) — replay: 1 delivered, \
             1 missed (500 receiver error), 1 not replayed"
        );
    }
}
