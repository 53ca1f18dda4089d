//! The two batteries case by case: what each case sends, what it expects,
//! and the mistake each way of failing points at. Independent cases run
//! concurrently; the two-delivery cases (duplicate, out-of-order) send in
//! sequence and stop at the first delivery that fails.

use chrono::{Duration as Span, Utc};
use futures_util::future::join_all;
use reqwest::RequestBuilder;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use std::time::Duration;

use super::judge::{Expect, Hints, Rules};
use super::payloads::{self, EventBody};
use super::send::{Answer, Attempt, send};
use super::{CaseReport, CheckConfig, CheckError, Outcome};
use crate::api::types::agents::EventKind;
use crate::duration_text;
use crate::redact::SecretString;
use earshot_protocol::delivery::cases::{self, AHEAD_BY, AgentCase, CaseEvents, STALE_BY};
use earshot_protocol::delivery::{self, EventBytes, Outgoing};

/// The `User-Agent` of the platform's deliveries (the emulator's too).
pub const DELIVERY_USER_AGENT: &str = delivery::USER_AGENT;

const VALID: Hints = Hints {
    rejected: "re-serialised body, missing `<t>.` prefix, or a different secret: verify \
               HMAC-SHA256 over `<t>.` + the raw body bytes",
    accepted: "",
    payload: true,
};
const BAD_SIGNATURE: Hints = Hints {
    rejected: "",
    accepted: "signature not verified: recompute v1 over `<t>.` + the raw body and compare in \
               constant time",
    payload: false,
};
const STALE: Hints = Hints {
    rejected: "",
    accepted: "timestamp not checked against the 5 min tolerance (or the receiver's clock is \
               off: check NTP)",
    payload: false,
};
const DUPLICATE: Hints = Hints {
    rejected: "a repeated event_id must get 2xx: deduplicate by event_id and acknowledge the \
               repeat (X-SVC-Delivery-Id changes on every attempt)",
    accepted: "",
    payload: false,
};
const OUT_OF_ORDER: Hints = Hints {
    rejected: "ordering is not guaranteed: acknowledge call.connected after call.ended \
               (reconcile by timestamp) instead of rejecting it",
    accepted: "",
    payload: false,
};
const PREVIOUS: Hints = Hints {
    rejected: "the previous secret is refused: during a rotation verify against both secrets \
               until deliveries in flight drain",
    accepted: "",
    payload: true,
};
const TRANSCRIPT: Hints = Hints {
    rejected: "a correct call was refused: the receiver must accept `{transcript_id, status}` \
               with the auth header it was given",
    accepted: "",
    payload: true,
};
const TRANSCRIPT_NO_AUTH: Hints = Hints {
    rejected: "a correct call was refused: if the receiver requires an auth header, give it \
               with --auth-header NAME:VALUE",
    accepted: "",
    payload: true,
};
const MISSING_AUTH: Hints = Hints {
    rejected: "",
    accepted: "the auth header is not checked: reject a call without it (401)",
    payload: false,
};
const WRONG_AUTH: Hints = Hints {
    rejected: "",
    accepted: "the auth header's value is not compared: reject a wrong value (401), comparing \
               in constant time",
    payload: false,
};
const TRANSCRIPT_DUPLICATE: Hints = Hints {
    rejected: "a repeated call must get 2xx: the platform repeats calls it counted failed; \
               deduplicate by transcript_id",
    accepted: "",
    payload: false,
};

/// One request of a case, with what it expects.
struct Step {
    expect: Expect,
    hints: Hints,
    request: RequestBuilder,
}

/// The battery's shared state: the config, one client, the rules.
pub(crate) struct Battery<'a> {
    pub config: &'a CheckConfig,
    pub client: reqwest::Client,
    pub rules: Rules,
}

impl Battery<'_> {
    /// Spec parts 2 C, 5 C, 6 C: five valid events, three signatures that
    /// must be refused, a duplicate, an out-of-order pair and a rotation:
    /// the cases of [`AgentCase::ALL`], sent as their [`delivery::Delivery`] values
    /// say (the emulator's `deliver` sends the same), over fresh events.
    pub async fn agents(&self, secret: &SecretString) -> Result<Vec<CaseReport>, CheckError> {
        let now = Utc::now();
        let valid: Vec<EventBody> = EventKind::ALL
            .into_iter()
            .map(|kind| payloads::event(kind, now))
            .collect::<Result<_, _>>()?;
        let forged = payloads::event(EventKind::SessionStarted, now)?;
        let stale = payloads::event(EventKind::SessionStarted, now - span(STALE_BY))?;
        let future = payloads::event(EventKind::SessionStarted, now + span(AHEAD_BY))?;
        let repeated = payloads::event(EventKind::CallEnded, now)?;
        let (ended, connected) = payloads::ended_then_connected(now)?;
        let rotated = payloads::event(EventKind::SessionCompleted, now)?;
        let events = CaseEvents {
            valid: valid
                .iter()
                .map(|body| (body.kind.as_str(), body.event_id.clone()))
                .collect(),
            forged: forged.event_id.clone(),
            stale: stale.event_id.clone(),
            future: future.event_id.clone(),
            repeated: repeated.event_id.clone(),
            connected: connected.event_id.clone(),
            ended: ended.event_id.clone(),
            rotated: rotated.event_id.clone(),
            wrong_secret: cases::wrong_secret(),
            previous_secret: self.config.previous_secret.clone(),
        };
        let bodies: Vec<&EventBody> = valid
            .iter()
            .chain([
                &forged, &stale, &future, &repeated, &ended, &connected, &rotated,
            ])
            .collect();
        let lookup = |event_id: &str| {
            bodies
                .iter()
                .find(|body| body.event_id == event_id)
                .map(|body| EventBytes {
                    name: body.kind.as_str(),
                    body: &body.bytes,
                })
        };
        let reports =
            join_all(AgentCase::ALL.map(|case| self.agent_case(case, &events, &lookup, secret)))
                .await;
        reports.into_iter().collect()
    }

    /// One voice-agent case: its deliveries' requests in order, judged
    /// against what the case expects.
    async fn agent_case<'a>(
        &self,
        case: AgentCase,
        events: &CaseEvents,
        lookup: &impl Fn(&str) -> Option<EventBytes<'a>>,
        secret: &SecretString,
    ) -> Result<CaseReport, CheckError> {
        let expect = if case.accepted() {
            Expect::Accept
        } else {
            Expect::Reject
        };
        let sent = sent_text(case, events);
        let Some(deliveries) = case.deliveries(events) else {
            return Ok(skipped(
                case.name(),
                &sent,
                self.rules.expected(expect, 1),
                "no previous secret given (--previous-secret): rotation not checked",
            ));
        };
        let (first_hints, then_hints) = agent_hints(case);
        let mut steps = Vec::new();
        for delivery in deliveries {
            for outgoing in delivery.requests(lookup, secret, Utc::now().timestamp())? {
                let hints = if steps.is_empty() {
                    first_hints
                } else {
                    then_hints
                };
                steps.push(Step {
                    expect,
                    hints,
                    request: self.outgoing(outgoing),
                });
            }
        }
        Ok(self.case(case.name(), sent, steps).await)
    }

    /// Spec parts 5 D, 6 D: both statuses, the auth header's absence and a
    /// wrong value, and a repeated call.
    pub async fn prerecorded(&self) -> Result<Vec<CaseReport>, CheckError> {
        let completed = payloads::transcript("completed")?;
        let errored = payloads::transcript("error")?;
        let repeated = payloads::transcript("completed")?;
        let auth = self.config.auth_header.as_ref();
        let (with, valid_hints) = match auth {
            Some(header) => (format!(" with {}", header.name), TRANSCRIPT),
            None => (String::new(), TRANSCRIPT_NO_AUTH),
        };
        let completed_case = self.case(
            "completed",
            format!("{{transcript_id, status: \"completed\"}}{with}"),
            vec![self.call(Expect::Accept, valid_hints, &completed, Auth::Right)],
        );
        let error_case = self.case(
            "error",
            format!("{{transcript_id, status: \"error\"}}{with}"),
            vec![self.call(Expect::Accept, valid_hints, &errored, Auth::Right)],
        );
        let missing_case = self.auth_case(
            "missing-auth-header",
            "{transcript_id, status: \"completed\"} without the auth header",
            MISSING_AUTH,
            &completed,
            Auth::Missing,
        );
        let wrong_case = self.auth_case(
            "wrong-auth-header",
            "{transcript_id, status: \"completed\"} with the auth header set to a wrong value",
            WRONG_AUTH,
            &completed,
            Auth::Wrong,
        );
        let duplicate_case = self.case(
            "duplicate",
            format!("the same {{transcript_id, status: \"completed\"}} twice{with}"),
            vec![
                self.call(Expect::Accept, valid_hints, &repeated, Auth::Right),
                self.call(Expect::Accept, TRANSCRIPT_DUPLICATE, &repeated, Auth::Right),
            ],
        );
        let (completed, errored, missing, wrong, duplicate) = tokio::join!(
            completed_case,
            error_case,
            missing_case,
            wrong_case,
            duplicate_case
        );
        Ok(vec![completed, errored, missing, wrong, duplicate])
    }

    /// A case that needs `--auth-header`; skipped without it.
    async fn auth_case(
        &self,
        name: &'static str,
        sent: &str,
        hints: Hints,
        body: &[u8],
        auth: Auth,
    ) -> CaseReport {
        if self.config.auth_header.is_none() {
            return skipped(
                name,
                sent,
                self.rules.expected(Expect::Reject, 1),
                "no auth header given (--auth-header NAME:VALUE): authentication not checked",
            );
        }
        self.case(
            name,
            sent.to_owned(),
            vec![self.call(Expect::Reject, hints, body, auth)],
        )
        .await
    }

    /// A voice-agent delivery as [`delivery::Delivery::requests`] prepared it.
    fn outgoing(&self, outgoing: Outgoing) -> RequestBuilder {
        let mut request = self
            .client
            .post(self.config.url.clone())
            .body(outgoing.body);
        for (name, value) in outgoing.headers {
            request = request.header(name, value);
        }
        request
    }

    /// A pre-recorded webhook call of `body` with the auth header as `auth`.
    fn call(&self, expect: Expect, hints: Hints, body: &[u8], auth: Auth) -> Step {
        let mut request = self.post(body.to_vec());
        if let Some(header) = &self.config.auth_header {
            match auth {
                Auth::Right => request = request.header(header.name.clone(), header.value.clone()),
                Auth::Wrong => request = request.header(header.name.clone(), wrong_value()),
                Auth::Missing => {}
            }
        }
        Step {
            expect,
            hints,
            request,
        }
    }

    fn post(&self, body: Vec<u8>) -> RequestBuilder {
        self.client
            .post(self.config.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, DELIVERY_USER_AGENT)
            .body(body)
    }

    /// Sends the steps in order, stopping at the first that fails, and
    /// reports the case on the step that decided it.
    async fn case(&self, name: &'static str, sent: String, steps: Vec<Step>) -> CaseReport {
        let planned = steps.len();
        let expect = steps.first().map_or(Expect::Accept, |step| step.expect);
        let mut answers = Vec::new();
        let mut decided: Option<(usize, Hints, Expect, Attempt, bool)> = None;
        for (index, step) in steps.into_iter().enumerate() {
            let attempt = send(step.request, self.config.timeout).await;
            answers.push(describe(&attempt.answer));
            let passed = self.rules.passes(step.expect, &attempt);
            decided = Some((index, step.hints, step.expect, attempt, passed));
            if !passed {
                break;
            }
        }
        let expected = self.rules.expected(expect, planned);
        let Some((index, hints, expect, attempt, passed)) = decided else {
            return skipped(name, &sent, expected, "nothing to send");
        };
        let hint = (!passed).then(|| {
            let hint = self
                .rules
                .hint(expect, &attempt, &hints, self.config.url.as_str());
            // Refused is about the receiver, not this delivery.
            let refused = attempt.answer == Answer::Refused;
            match (planned, index) {
                (1, _) => hint,
                _ if refused => hint,
                (_, 0) => format!("first delivery: {hint}"),
                _ => format!("second delivery: {hint}"),
            }
        });
        CaseReport {
            name,
            sent,
            status: attempt.status(),
            latency_ms: Some(u64::try_from(attempt.latency.as_millis()).unwrap_or(u64::MAX)),
            answer: answers.join(", then "),
            expected,
            outcome: if passed { Outcome::Pass } else { Outcome::Fail },
            platform_would: Some(self.rules.platform_would(&attempt)),
            hint,
        }
    }
}

/// Which auth header a pre-recorded call carries.
#[derive(Clone, Copy)]
enum Auth {
    Right,
    Wrong,
    Missing,
}

fn wrong_value() -> String {
    format!("earshot-wrong-value-{}", uuid::Uuid::new_v4().simple())
}

fn skipped(name: &'static str, sent: &str, expected: String, why: &str) -> CaseReport {
    CaseReport {
        name,
        sent: sent.to_owned(),
        status: None,
        latency_ms: None,
        answer: "-".to_owned(),
        expected,
        outcome: Outcome::Skipped,
        platform_would: None,
        hint: Some(why.to_owned()),
    }
}

/// The answer as a table cell: the status code, or what happened instead.
fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Status { code, .. } => code.to_string(),
        Answer::Timeout => "timeout".to_owned(),
        Answer::Refused => "refused".to_owned(),
        Answer::ConnectionError(_) => "error".to_owned(),
    }
}

/// A whole-second offset for an event's own timestamp.
fn span(duration: Duration) -> Span {
    Span::seconds(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX))
}

/// What a voice-agent case sends, as the report's `sent` column says it.
fn sent_text(case: AgentCase, events: &CaseEvents) -> String {
    match case {
        AgentCase::BadSignature => {
            "session.started, signed with another secret (well-formed header)".to_owned()
        }
        AgentCase::StaleTimestamp => format!(
            "session.started, correctly signed, t {} in the past",
            duration_text::of(STALE_BY)
        ),
        AgentCase::FutureTimestamp => format!(
            "session.started, correctly signed, t {} in the future",
            duration_text::of(AHEAD_BY)
        ),
        AgentCase::Duplicate => format!(
            "call.ended twice: same body and event_id ({}), new X-SVC-Delivery-Id",
            events.repeated
        ),
        AgentCase::OutOfOrder => "call.ended, then call.connected for the same call".to_owned(),
        AgentCase::PreviousSecret => {
            "session.completed, signed with the previous secret".to_owned()
        }
        valid => format!("{}, signed with the secret", valid.name()),
    }
}

/// The mistakes a case's failure points at: for its first delivery, and
/// for the ones after (the repeat, the late event).
fn agent_hints(case: AgentCase) -> (Hints, Hints) {
    match case {
        AgentCase::BadSignature => (BAD_SIGNATURE, BAD_SIGNATURE),
        AgentCase::StaleTimestamp | AgentCase::FutureTimestamp => (STALE, STALE),
        AgentCase::Duplicate => (VALID, DUPLICATE),
        AgentCase::OutOfOrder => (VALID, OUT_OF_ORDER),
        AgentCase::PreviousSecret => (PREVIOUS, PREVIOUS),
        _ => (VALID, VALID),
    }
}
