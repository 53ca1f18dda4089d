//! The two batteries case by case: what each case sends, what it expects,
//! and the mistake each way of failing points at. Independent cases run
//! concurrently; the two-delivery cases (duplicate, out-of-order) send in
//! sequence and stop at the first delivery that fails.

use chrono::{Duration as Span, Utc};
use futures_util::future::join_all;
use reqwest::RequestBuilder;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};

use super::judge::{Expect, Hints, Rules};
use super::payloads::{self, EventBody};
use super::send::{Answer, Attempt, send};
use super::{CaseReport, CheckConfig, CheckError, Outcome};
use crate::api::types::agents::EventKind;
use crate::duration_text;
use crate::redact::SecretString;
use crate::signature;

/// The `User-Agent` of the platform's deliveries (the emulator's too).
pub const DELIVERY_USER_AGENT: &str = "SVC-Webhooks/1.0";
/// How far the stale case moves `t` back: one second past the 300 s
/// tolerance of spec part 8 C. Transit only makes it staler.
const STALE_SECS: i64 = signature::DEFAULT_TOLERANCE_SECS as i64 + 1;
/// How far the future case moves `t` ahead: one more second, because the
/// receiver reads its clock later, and in whole seconds (sent at 10.9 s
/// with `t` = 10 + 301 and read at 11.0 s is only 300 s ahead).
const FUTURE_SECS: i64 = STALE_SECS + 1;

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
    /// must be refused, a duplicate, an out-of-order pair and a rotation.
    pub async fn agents(&self, secret: &SecretString) -> Result<Vec<CaseReport>, CheckError> {
        let now = Utc::now();
        let secret = secret.expose().as_bytes();
        let valid: Vec<EventBody> = EventKind::ALL
            .into_iter()
            .map(|kind| payloads::event(kind, now))
            .collect::<Result<_, _>>()?;
        let wrong_secret = format!("whsec_not_yours_{}", uuid::Uuid::new_v4().simple());
        let forged = payloads::event(EventKind::SessionStarted, now)?;
        let stale = payloads::event(EventKind::SessionStarted, now - Span::seconds(STALE_SECS))?;
        let future = payloads::event(EventKind::SessionStarted, now + Span::seconds(FUTURE_SECS))?;
        let repeated = payloads::event(EventKind::CallEnded, now)?;
        let (ended, connected) = payloads::ended_then_connected(now)?;
        let rotated = payloads::event(EventKind::SessionCompleted, now)?;

        let valid_cases = join_all(valid.iter().map(|body| {
            self.case(
                body.kind.as_str(),
                format!("{}, signed with the secret", body.kind.as_str()),
                vec![self.step(Expect::Accept, VALID, body, secret, 0)],
            )
        }));
        let forged_case = self.case(
            "bad-signature",
            "session.started, signed with another secret (well-formed header)".to_owned(),
            vec![self.step(
                Expect::Reject,
                BAD_SIGNATURE,
                &forged,
                wrong_secret.as_bytes(),
                0,
            )],
        );
        let stale_case = self.case(
            "stale-timestamp",
            format!(
                "session.started, correctly signed, t {} in the past",
                duration_text::of_secs(STALE_SECS.unsigned_abs())
            ),
            vec![self.step(Expect::Reject, STALE, &stale, secret, -STALE_SECS)],
        );
        let future_case = self.case(
            "future-timestamp",
            format!(
                "session.started, correctly signed, t {} in the future",
                duration_text::of_secs(FUTURE_SECS.unsigned_abs())
            ),
            vec![self.step(Expect::Reject, STALE, &future, secret, FUTURE_SECS)],
        );
        let duplicate_case = self.case(
            "duplicate",
            format!(
                "call.ended twice: same body and event_id ({}), new X-SVC-Delivery-Id",
                repeated.event_id
            ),
            vec![
                self.step(Expect::Accept, VALID, &repeated, secret, 0),
                self.step(Expect::Accept, DUPLICATE, &repeated, secret, 0),
            ],
        );
        let order_case = self.case(
            "out-of-order",
            "call.ended, then call.connected for the same call".to_owned(),
            vec![
                self.step(Expect::Accept, VALID, &ended, secret, 0),
                self.step(Expect::Accept, OUT_OF_ORDER, &connected, secret, 0),
            ],
        );
        let previous_case = async {
            const NAME: &str = "previous-secret";
            match &self.config.previous_secret {
                None => skipped(
                    NAME,
                    "session.completed, signed with the previous secret",
                    self.rules.expected(Expect::Accept, 1),
                    "no previous secret given (--previous-secret): rotation not checked",
                ),
                Some(previous) => {
                    self.case(
                        NAME,
                        "session.completed, signed with the previous secret".to_owned(),
                        vec![self.step(
                            Expect::Accept,
                            PREVIOUS,
                            &rotated,
                            previous.expose().as_bytes(),
                            0,
                        )],
                    )
                    .await
                }
            }
        };
        let (valid_cases, forged, stale, future, duplicate, order, previous) = tokio::join!(
            valid_cases,
            forged_case,
            stale_case,
            future_case,
            duplicate_case,
            order_case,
            previous_case
        );
        let mut cases = valid_cases;
        cases.extend([forged, stale, future, duplicate, order, previous]);
        Ok(cases)
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

    /// A voice-agent delivery of `body`, signed with `secret` at now +
    /// `skew_secs`, with the headers of spec part 6 C rule 4.
    fn step(
        &self,
        expect: Expect,
        hints: Hints,
        body: &EventBody,
        secret: &[u8],
        skew_secs: i64,
    ) -> Step {
        let timestamp = Utc::now().timestamp() + skew_secs;
        let request = self
            .post(body.bytes.clone())
            .header(
                signature::HEADER_NAME,
                signature::sign(secret, timestamp, &body.bytes),
            )
            .header("X-SVC-Event", body.kind.as_str())
            .header("X-SVC-Delivery-Id", uuid::Uuid::new_v4().to_string());
        Step {
            expect,
            hints,
            request,
        }
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
