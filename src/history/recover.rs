//! Recover: the platform's missing resend. For one subscription, every
//! event whose attempts all failed for good (none delivered, none pending,
//! no retry left) since a time is re-sent to the subscription's URL: the
//! observer's exact bytes, signed anew with the subscription's secret
//! (supplied by the operator, never stored) at the current time, with the
//! headers the platform sends. Each send is logged in the store before the
//! POST and completed with its answer, so a rerun skips what was delivered,
//! and holds back (unless asked) what a stopped run was sending: the
//! receiver may have that one already.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use serde::Serialize;

use crate::api::types::agents::Subscription;
use crate::receiver::check::DELIVERY_USER_AGENT;
use crate::receiver::check::send::{Answer, send};
use crate::redact::SecretString;
use crate::signature;
use crate::store::events::StoredEvent;
use crate::store::recoveries::{self, RecoveryResult};
use crate::store::{self, Store, deliveries, events};

use super::HistoryError;
use super::chains::{Fate, match_events};

/// The receiver's deadline, as the platform's (spec 6 C rule 5).
const DEADLINE: Duration = Duration::from_secs(15);

/// What a recover would send, and what it leaves out.
#[derive(Clone, Debug)]
pub struct Plan {
    pub subscription: Subscription,
    /// Oldest first.
    pub to_send: Vec<StoredEvent>,
    /// Failed for good, but already recovered by an earlier run.
    pub already_recovered: usize,
    /// An earlier run was stopped while sending these: the receiver may
    /// have them. Left out unless asked for, so a rerun sends nothing twice.
    pub interrupted: Vec<StoredEvent>,
    /// Failed for good, but the observer never received the event, so its
    /// bytes are not held.
    pub not_observed: usize,
}

/// Finds the subscription by id or unique prefix among the stored ones.
pub fn find_subscription(store: &Store, id: &str) -> Result<Subscription, HistoryError> {
    let mut matches: Vec<Subscription> = deliveries::subscriptions(store)?
        .into_iter()
        .filter(|subscription| subscription.id.starts_with(id))
        .collect();
    match matches.len() {
        0 => Err(HistoryError::UnknownSubscription(id.to_owned())),
        1 => Ok(matches.remove(0)),
        _ => Err(HistoryError::AmbiguousSubscription(id.to_owned())),
    }
}

/// Every event `subscription_id` missed for good since `since_ms`.
pub fn plan(store: &Store, subscription_id: &str, since_ms: i64) -> Result<Plan, HistoryError> {
    let subscription = find_subscription(store, subscription_id)?;
    let recovered = recoveries::delivered_events(store, &subscription.id)?;
    let mut plan = Plan {
        subscription,
        to_send: Vec::new(),
        already_recovered: 0,
        interrupted: Vec::new(),
        not_observed: 0,
    };
    let interrupted = recoveries::interrupted_events(store, &plan.subscription.id)?;
    let mut seen: HashSet<String> = HashSet::new();
    for session_id in deliveries::sessions_with_failures(store, &plan.subscription.id, since_ms)? {
        let records: Vec<_> = deliveries::for_session(store, &session_id)?
            .into_iter()
            .filter(|record| record.subscription_id == plan.subscription.id)
            .collect();
        let observed: Vec<StoredEvent> = events::for_session(store, &session_id)?
            .into_iter()
            .filter(|event| plan.subscription.events.contains(&event.event))
            .collect();
        for matched in match_events(&records, &observed) {
            if matched.fate != Fate::FailedForGood {
                continue;
            }
            let Some(event) = matched.event else {
                plan.not_observed += 1;
                continue;
            };
            if event.occurred_ms < since_ms || !seen.insert(event.event_id.clone()) {
                continue;
            }
            if recovered.contains(&event.event_id) {
                plan.already_recovered += 1;
            } else if interrupted.contains(&event.event_id) {
                plan.interrupted.push(event.clone());
            } else {
                plan.to_send.push(event.clone());
            }
        }
    }
    plan.to_send.sort_by_key(|event| event.occurred_ms);
    Ok(plan)
}

impl Plan {
    /// What the plan leaves out, as `; …` clauses to append to a summary
    /// (empty when nothing is left out).
    pub fn left_out(&self) -> String {
        let mut text = String::new();
        if self.already_recovered > 0 {
            text.push_str(&format!(
                "; {} already recovered earlier",
                self.already_recovered
            ));
        }
        if !self.interrupted.is_empty() {
            text.push_str(&format!(
                "; {} held back: an earlier run was stopped while sending them (the receiver \
                 may have them; `earshot redeliver --resend-interrupted` sends them again)",
                self.interrupted.len()
            ));
        }
        if self.not_observed > 0 {
            text.push_str(&format!(
                "; {} missed events were never received by the observer and cannot be re-sent",
                self.not_observed
            ));
        }
        text
    }

    /// Also sends the events an earlier run was stopped while sending.
    pub fn with_interrupted(mut self) -> Plan {
        self.to_send.append(&mut self.interrupted);
        self.to_send.sort_by_key(|event| event.occurred_ms);
        self
    }
}

/// One re-sent event and its answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sent {
    pub event_id: String,
    pub event: String,
    pub session_id: String,
    pub http_status: Option<u16>,
    pub latency_ms: i64,
    pub delivered: bool,
    /// `HTTP <status>`, `timeout`, `connection refused`, … when not delivered.
    pub error: Option<String>,
}

/// Sends every event of `plan`, one at a time (in order, as the receiver
/// would have seen them), calling `each` after each send. (`&mut`: the
/// store is not shared across threads while a send is awaited.)
pub async fn run(
    store: &mut Store,
    plan: &Plan,
    secret: &SecretString,
    mut each: impl FnMut(&Sent),
) -> Result<Vec<Sent>, HistoryError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(HistoryError::Client)?;
    let mut results = Vec::with_capacity(plan.to_send.len());
    for event in &plan.to_send {
        let row = recoveries::start(
            &*store,
            &plan.subscription.id,
            &event.event_id,
            &event.session_id,
            store::now_ms(),
        )?;
        let sent = send_event(&http, &plan.subscription.url, secret, event).await;
        let result = RecoveryResult {
            http_status_code: sent.http_status,
            error: sent.error.clone(),
            latency_ms: sent.latency_ms,
            delivered: sent.delivered,
        };
        recoveries::finish(&*store, row, &result, store::now_ms())?;
        each(&sent);
        results.push(sent);
    }
    Ok(results)
}

/// One POST with the platform's headers, signed now.
async fn send_event(
    http: &reqwest::Client,
    url: &str,
    secret: &SecretString,
    event: &StoredEvent,
) -> Sent {
    let timestamp = chrono::Utc::now().timestamp();
    let header = signature::sign(secret.expose().as_bytes(), timestamp, &event.body);
    let request = http
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .header(USER_AGENT, DELIVERY_USER_AGENT)
        .header("X-SVC-Signature", header)
        .header("X-SVC-Event", event.event.as_str())
        .header("X-SVC-Delivery-Id", uuid::Uuid::new_v4().to_string())
        .body(event.body.clone());
    let attempt = send(request, DEADLINE).await;
    let http_status = attempt.status();
    let delivered = http_status.is_some_and(|code| (200..300).contains(&code));
    let error = (!delivered).then(|| match &attempt.answer {
        Answer::Status { code, .. } => format!("HTTP {code}"),
        Answer::Timeout => format!("timeout: no answer within {} s", DEADLINE.as_secs()),
        Answer::Refused => "connection refused".to_owned(),
        Answer::ConnectionError(cause) => format!("connection error: {cause}"),
    });
    Sent {
        event_id: event.event_id.clone(),
        event: event.event.clone(),
        session_id: event.session_id.clone(),
        http_status,
        latency_ms: i64::try_from(attempt.latency.as_millis()).unwrap_or(i64::MAX),
        delivered,
        error,
    }
}
