//! Recover: the platform's missing resend. For one subscription, the
//! events it missed for good (`missed` in `store::outcomes`: none
//! delivered, none pending, no retry left, not recovered yet) since a time,
//! within a [`Scope`], are re-sent to the subscription's URL: the
//! observer's exact bytes, signed anew with the subscription's secret
//! (supplied by the operator, never stored) at the current time, with the
//! headers the platform sends. Each send is logged in the store before the
//! POST and completed with its answer, so a rerun skips what was delivered,
//! and holds back (unless asked) what a stopped run was sending: the
//! receiver may have that one already. [`Brakes`] spare a receiver that is
//! still broken: the first event goes alone (a canary), and a run stops
//! after a few failures in a row. The plan and the log read and write a
//! store file or a PostgreSQL store ([`plan`], [`plan_postgres`],
//! [`RecoveryLog`]).

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use serde::Serialize;

use crate::api::types::agents::Subscription;
use crate::receiver::check::DELIVERY_USER_AGENT;
use crate::receiver::check::send::{Answer, send};
use crate::redact::SecretString;
use crate::signature;
use crate::store::events::StoredEvent;
use crate::store::outcomes::{self, EventState, Outcome};
use crate::store::postgres::PgStore;
use crate::store::recoveries::{self, RecoveryResult};
use crate::store::{self, AsyncStore, Store, deliveries, events};

use super::HistoryError;

/// The receiver's deadline, as the platform's (spec 6 C rule 5).
const DEADLINE: Duration = Duration::from_secs(15);

/// Which of the missed events to re-send (all when empty).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scope {
    /// Only these `event_id`s.
    pub event_ids: Vec<String>,
    /// Only events of these types (`call.ended`, …).
    pub types: Vec<String>,
    /// Only events of these sessions or calls.
    pub sessions: Vec<String>,
    /// At most this many, oldest first.
    pub limit: Option<usize>,
}

impl Scope {
    fn admits(&self, outcome: &Outcome) -> bool {
        let any_or = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|value| list.iter().any(|item| item == value))
        };
        any_or(&self.event_ids, outcome.event_id.as_deref())
            && any_or(&self.types, outcome.event.as_deref())
            && any_or(&self.sessions, Some(&outcome.session_id))
    }
}

/// What a recover would send, and what it leaves out.
#[derive(Clone, Debug)]
pub struct Plan {
    pub subscription: Subscription,
    /// Oldest first.
    pub to_send: Vec<StoredEvent>,
    /// Missed, but already recovered by an earlier run.
    pub already_recovered: usize,
    /// An earlier run was stopped while sending these: the receiver may
    /// have them. Left out unless asked for, so a rerun sends nothing twice.
    pub interrupted: Vec<StoredEvent>,
    /// Missed, but the observer never received the event, so its bytes
    /// are not held: listed by session or call (and type when known).
    pub not_observed: Vec<Outcome>,
    /// Missed events in the window the scope left out.
    pub out_of_scope: usize,
}

/// Finds the subscription by id or unique prefix among the stored ones.
pub fn find_subscription(store: &Store, id: &str) -> Result<Subscription, HistoryError> {
    pick_subscription(deliveries::subscriptions(store)?, id)
}

/// The subscription `id` (or a unique start of it) names in `stored`.
fn pick_subscription(stored: Vec<Subscription>, id: &str) -> Result<Subscription, HistoryError> {
    let mut matches: Vec<Subscription> = stored
        .into_iter()
        .filter(|subscription| subscription.id.starts_with(id))
        .collect();
    match matches.len() {
        0 => Err(HistoryError::UnknownSubscription(id.to_owned())),
        1 => Ok(matches.remove(0)),
        _ => Err(HistoryError::AmbiguousSubscription(id.to_owned())),
    }
}

/// Every event `subscription_id` missed for good since `since_ms` within
/// `scope`: exactly the board's `missed` when the scope is everything.
pub fn plan(
    store: &Store,
    subscription_id: &str,
    since_ms: i64,
    scope: &Scope,
) -> Result<Plan, HistoryError> {
    let subscription = find_subscription(store, subscription_id)?;
    let interrupted = recoveries::interrupted_events(store, &subscription.id)?;
    let recovered =
        outcomes::of_subscription(store, &subscription.id, EventState::Recovered, since_ms)?;
    let mut plan = Plan::new(subscription, scope, &recovered);
    let missed =
        outcomes::of_subscription(store, &plan.subscription.id, EventState::Missed, since_ms)?;
    for outcome in missed {
        if let Some((outcome, event_id)) = plan.admit(scope, outcome) {
            let event = events::get_at(store, outcome.occurred_ms, &event_id)?;
            plan.take(outcome, event, &interrupted);
        }
    }
    Ok(plan)
}

/// [`plan`] on a PostgreSQL store: the same rule over the same rows.
pub async fn plan_postgres(
    store: &PgStore,
    subscription_id: &str,
    since_ms: i64,
    scope: &Scope,
) -> Result<Plan, HistoryError> {
    let stored = deliveries::subscriptions_postgres(store).await?;
    let subscription = pick_subscription(stored, subscription_id)?;
    let interrupted = recoveries::interrupted_events_postgres(store, &subscription.id).await?;
    let state = EventState::Recovered;
    let recovered =
        outcomes::of_subscription_postgres(store, &subscription.id, state, since_ms).await?;
    let mut plan = Plan::new(subscription, scope, &recovered);
    let id = plan.subscription.id.clone();
    let missed =
        outcomes::of_subscription_postgres(store, &id, EventState::Missed, since_ms).await?;
    for outcome in missed {
        if let Some((outcome, event_id)) = plan.admit(scope, outcome) {
            let event = events::get_at_postgres(store, outcome.occurred_ms, &event_id).await?;
            plan.take(outcome, event, &interrupted);
        }
    }
    Ok(plan)
}

/// One event to one subscription, whatever its state there (the Events
/// pane's re-send): a delivered event may still be wanted by a receiver
/// that lost it. A 2xx answer marks it `recovered` only if it was missed.
pub fn plan_event(
    store: &Store,
    subscription_id: &str,
    event_id: &str,
) -> Result<Plan, HistoryError> {
    let subscription = find_subscription(store, subscription_id)?;
    Ok(Plan::one(subscription, observed_event(store, event_id)?))
}

/// [`plan_event`] on a PostgreSQL store: the same subscription rule, the
/// event's bytes from `earshot.events`.
pub async fn plan_event_postgres(
    store: &PgStore,
    subscription_id: &str,
    event_id: &str,
) -> Result<Plan, HistoryError> {
    let stored = deliveries::subscriptions_postgres(store).await?;
    let subscription = pick_subscription(stored, subscription_id)?;
    let event = observed_event_postgres(store, event_id).await?;
    Ok(Plan::one(subscription, event))
}

/// The observer's copy of `event_id` (its exact bytes), or why there is
/// none to send.
pub fn observed_event(store: &Store, event_id: &str) -> Result<StoredEvent, HistoryError> {
    events::get(store, event_id)?.ok_or_else(|| HistoryError::UnknownEvent(event_id.into()))
}

/// [`observed_event`] on a PostgreSQL store.
pub async fn observed_event_postgres(
    store: &PgStore,
    event_id: &str,
) -> Result<StoredEvent, HistoryError> {
    events::get_postgres(store, event_id)
        .await?
        .ok_or_else(|| HistoryError::UnknownEvent(event_id.into()))
}

impl Plan {
    /// A plan to send `event` alone to `subscription`.
    fn one(subscription: Subscription, event: StoredEvent) -> Plan {
        Plan {
            subscription,
            to_send: vec![event],
            already_recovered: 0,
            interrupted: Vec::new(),
            not_observed: Vec::new(),
            out_of_scope: 0,
        }
    }

    /// A plan for `subscription` with nothing to send yet; `recovered`, the
    /// rows an earlier run recovered, counted where `scope` admits them.
    fn new(subscription: Subscription, scope: &Scope, recovered: &[Outcome]) -> Plan {
        Plan {
            subscription,
            to_send: Vec::new(),
            already_recovered: recovered
                .iter()
                .filter(|outcome| scope.admits(outcome))
                .count(),
            interrupted: Vec::new(),
            not_observed: Vec::new(),
            out_of_scope: 0,
        }
    }

    /// A missed row, before its bytes are read: counted out of scope (or
    /// past the limit) or not observed, else handed back with its event id
    /// to look up.
    fn admit(&mut self, scope: &Scope, outcome: Outcome) -> Option<(Outcome, String)> {
        let within_limit = scope
            .limit
            .is_none_or(|limit| self.to_send.len() + self.interrupted.len() < limit);
        if !scope.admits(&outcome) || !within_limit {
            self.out_of_scope += 1;
            return None;
        }
        match outcome.event_id.clone() {
            Some(event_id) => Some((outcome, event_id)),
            None => {
                self.not_observed.push(outcome);
                None
            }
        }
    }

    /// An admitted row with its event as read: to send, held back as
    /// interrupted, or not observed when its bytes are not held.
    fn take(
        &mut self,
        outcome: Outcome,
        event: Option<StoredEvent>,
        interrupted: &HashSet<String>,
    ) {
        match event {
            None => self.not_observed.push(outcome),
            Some(event) if interrupted.contains(&event.event_id) => self.interrupted.push(event),
            Some(event) => self.to_send.push(event),
        }
    }

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
        if !self.not_observed.is_empty() {
            text.push_str(&format!(
                "; {} missed events were never received by the observer and cannot be re-sent \
                 ({})",
                self.not_observed.len(),
                not_observed_list(&self.not_observed)
            ));
        }
        if self.out_of_scope > 0 {
            text.push_str(&format!(
                "; {} missed events outside the scope",
                self.out_of_scope
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

/// What a plan would do, as the console shows it before the operator
/// confirms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preview {
    pub to_send: usize,
    /// Events to send by type, most first.
    pub by_type: Vec<(String, usize)>,
    /// The oldest and the newest event to send (Unix milliseconds).
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    /// What is left out, as `; …` clauses ([`Plan::left_out`]): already
    /// recovered, held back, never observed (listed), out of scope.
    pub left_out: String,
}

impl Plan {
    pub fn preview(&self) -> Preview {
        let mut by_type: Vec<(String, usize)> = Vec::new();
        for event in &self.to_send {
            match by_type.iter_mut().find(|(name, _)| *name == event.event) {
                Some((_, count)) => *count += 1,
                None => by_type.push((event.event.clone(), 1)),
            }
        }
        by_type.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Preview {
            to_send: self.to_send.len(),
            by_type,
            first_ms: self.to_send.iter().map(|event| event.occurred_ms).min(),
            last_ms: self.to_send.iter().map(|event| event.occurred_ms).max(),
            left_out: self.left_out(),
        }
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

impl Sent {
    /// One line on what the send to `url` (its query left out: it may hold
    /// a token) got: `delivered to URL: HTTP 200 in 12 ms`, or why not.
    pub fn summary(&self, url: &str) -> String {
        let url = url.split('?').next().unwrap_or(url);
        match (&self.error, self.http_status) {
            (None, Some(status)) => format!(
                "delivered to {url}: HTTP {status} in {}",
                crate::duration_text::of_millis(self.latency_ms as f64)
            ),
            (Some(error), _) => format!("not delivered to {url}: {error}"),
            (None, None) => format!("not delivered to {url}"),
        }
    }
}

/// Missed events a report lists by session or call, since their bytes are
/// not held: `call_ab12 (call.ended), ses_9f…`.
pub fn not_observed_list(outcomes: &[Outcome]) -> String {
    const SHOWN: usize = 10;
    let mut items: Vec<String> = outcomes
        .iter()
        .take(SHOWN)
        .map(|outcome| match &outcome.event {
            Some(event) => format!("{} ({event})", outcome.session_id),
            None => outcome.session_id.clone(),
        })
        .collect();
    if outcomes.len() > SHOWN {
        items.push(format!("and {} more", outcomes.len() - SHOWN));
    }
    items.join(", ")
}

/// Failures in a row that stop a run when the caller does not say.
pub const DEFAULT_MAX_FAILURES: usize = 3;

/// How a run protects a receiver that is still broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Brakes {
    /// The first event goes alone, and the run stops there if it fails.
    pub canary: bool,
    /// Stop after this many failures in a row (0: never).
    pub max_failures: usize,
}

impl Default for Brakes {
    fn default() -> Self {
        Brakes {
            canary: true,
            max_failures: DEFAULT_MAX_FAILURES,
        }
    }
}

/// Why a run stopped before its last event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The first event failed.
    Canary,
    /// This many failed in a row.
    Failures(usize),
    /// The caller asked to stop.
    Cancelled,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    pub sent: Vec<Sent>,
    pub stopped: Option<Stopped>,
    /// Events of the plan not sent because the run stopped.
    pub not_attempted: usize,
}

impl RunReport {
    pub fn delivered(&self) -> usize {
        self.sent.iter().filter(|sent| sent.delivered).count()
    }

    pub fn failed(&self) -> usize {
        self.sent.len() - self.delivered()
    }

    /// Why the run stopped and what is left, or `None` when it ran to the end.
    pub fn stop_reason(&self) -> Option<String> {
        let first_error = || {
            self.sent
                .iter()
                .rev()
                .find_map(|sent| sent.error.clone())
                .unwrap_or_default()
        };
        let why = match self.stopped? {
            Stopped::Canary => format!(
                "stopped after the first event (the canary) failed ({}): the receiver still \
                 refuses; fix it and run again",
                first_error()
            ),
            Stopped::Failures(count) => format!(
                "stopped after {count} failures in a row ({}): the receiver is failing again",
                first_error()
            ),
            Stopped::Cancelled => "cancelled".to_owned(),
        };
        Some(format!("{why}; {} not attempted", self.not_attempted))
    }
}

/// Sends the events of `plan`, one at a time (in order, as the receiver
/// would have seen them), calling `each` after each send (it may stop the
/// run), and stopping as `brakes` say. The log is written through `store`
/// before each POST and completed after it.
pub async fn run(
    store: RecoveryLog<'_>,
    plan: &Plan,
    secret: &SecretString,
    brakes: Brakes,
    mut each: impl FnMut(&Sent) -> ControlFlow<()>,
) -> Result<RunReport, HistoryError> {
    let http = sender()?;
    let mut report = RunReport::default();
    let mut failures_in_a_row = 0;
    for (index, event) in plan.to_send.iter().enumerate() {
        let (subscription_id, event_id, session_id) = (
            plan.subscription.id.clone(),
            event.event_id.clone(),
            event.session_id.clone(),
        );
        let row = store.start(subscription_id, event_id, session_id).await?;
        let sent = send_event(&http, &plan.subscription.url, secret, event).await;
        let result = RecoveryResult {
            http_status_code: sent.http_status,
            error: sent.error.clone(),
            latency_ms: sent.latency_ms,
            delivered: sent.delivered,
        };
        store.finish(row, result).await?;
        failures_in_a_row = if sent.delivered {
            0
        } else {
            failures_in_a_row + 1
        };
        let flow = each(&sent);
        report.sent.push(sent);
        report.stopped = if flow.is_break() {
            Some(Stopped::Cancelled)
        } else if index == 0 && brakes.canary && failures_in_a_row == 1 {
            Some(Stopped::Canary)
        } else if brakes.max_failures > 0 && failures_in_a_row >= brakes.max_failures {
            Some(Stopped::Failures(failures_in_a_row))
        } else {
            None
        };
        if report.stopped.is_some() {
            report.not_attempted = plan.to_send.len() - index - 1;
            break;
        }
    }
    Ok(report)
}

/// Where recover's log is written, before each POST and after it.
#[derive(Clone, Copy, Debug)]
pub enum RecoveryLog<'a> {
    /// A store file.
    File(&'a AsyncStore),
    /// A PostgreSQL store (each entry committed before the POST goes).
    Postgres(&'a PgStore),
}

impl RecoveryLog<'_> {
    /// Logs the send of `event_id` to `subscription_id` as started: its row.
    async fn start(
        self,
        subscription_id: String,
        event_id: String,
        session_id: String,
    ) -> Result<i64, HistoryError> {
        let now_ms = store::now_ms();
        match self {
            RecoveryLog::File(store) => {
                store
                    .run(move |store| {
                        recoveries::start(store, &subscription_id, &event_id, &session_id, now_ms)
                            .map_err(HistoryError::from)
                    })
                    .await
            }
            RecoveryLog::Postgres(store) => Ok(recoveries::start_postgres(
                store,
                &subscription_id,
                &event_id,
                &session_id,
                now_ms,
            )
            .await?),
        }
    }

    /// Completes row `row` with the answer.
    async fn finish(self, row: i64, result: RecoveryResult) -> Result<(), HistoryError> {
        let now_ms = store::now_ms();
        match self {
            RecoveryLog::File(store) => {
                store
                    .run(move |store| {
                        recoveries::finish(store, row, &result, now_ms).map_err(HistoryError::from)
                    })
                    .await
            }
            RecoveryLog::Postgres(store) => {
                Ok(recoveries::finish_postgres(store, row, &result, now_ms).await?)
            }
        }
    }
}

/// The client re-sends go through: no redirects (the platform follows
/// none), the platform's deadline per send.
pub fn sender() -> Result<reqwest::Client, HistoryError> {
    earshot_http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(HistoryError::Client)
}

/// One POST with the platform's headers, signed now.
pub async fn send_event(
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
        unanswered => unanswered.unanswered(DEADLINE).unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, event: &str, occurred_ms: i64) -> StoredEvent {
        StoredEvent {
            event_id: id.into(),
            event: event.into(),
            session_id: format!("call_{id}"),
            occurred_ms,
            body: Vec::new(),
        }
    }

    fn plan(url: &str, to_send: Vec<StoredEvent>) -> Plan {
        Plan {
            subscription: Subscription {
                id: "db318dee".into(),
                url: url.into(),
                events: Vec::new(),
                agent_id: None,
                enabled: true,
                secret_version: 1,
                extra: Default::default(),
            },
            to_send,
            already_recovered: 0,
            interrupted: Vec::new(),
            not_observed: Vec::new(),
            out_of_scope: 0,
        }
    }

    /// A receiver answering 200 to every request; how many it answered.
    fn receiver() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("address"));
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&count);
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer);
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        (url, count)
    }

    #[tokio::test]
    async fn a_run_asked_to_stop_stops_after_the_event_being_sent() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = AsyncStore::open(dir.path().join("earshot.db"))
            .await
            .expect("store");
        let (url, answered) = receiver();
        let events = (1..=3).map(|n| event(&format!("e{n}"), "call.ended", n * 1_000));
        let plan = plan(&url, events.collect());
        let secret = SecretString::new("whsec_test");
        let report = run(
            RecoveryLog::File(&store),
            &plan,
            &secret,
            Brakes::default(),
            |_| ControlFlow::Break(()),
        )
        .await
        .expect("runs");
        assert_eq!(report.stopped, Some(Stopped::Cancelled));
        assert_eq!((report.sent.len(), report.not_attempted), (1, 2));
        assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), 1);
        let reason = report.stop_reason().unwrap_or_default();
        assert!(reason.contains("cancelled; 2 not attempted"), "{reason}");
    }

    #[test]
    fn a_preview_counts_by_type_and_spans_the_events_to_send() {
        let mut plan = plan(
            "https://hooks.example/call",
            vec![
                event("a", "call.ended", 3_000),
                event("b", "call.connected", 1_000),
                event("c", "call.ended", 2_000),
            ],
        );
        plan.already_recovered = 2;
        let preview = plan.preview();
        assert_eq!(preview.to_send, 3);
        assert_eq!(
            preview.by_type,
            [
                ("call.ended".to_owned(), 2),
                ("call.connected".to_owned(), 1)
            ]
        );
        assert_eq!(
            (preview.first_ms, preview.last_ms),
            (Some(1_000), Some(3_000))
        );
        assert_eq!(preview.left_out, "; 2 already recovered earlier");
    }
}
