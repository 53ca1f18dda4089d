//! Judging one answer: what the platform would do with it (spec part 6 C
//! rules 5–6 for voice-agent events, 6 D for pre-recorded calls), whether
//! that is what the case expects, and the likely receiver mistake when not.

use std::time::Duration;

use super::Kind;
use super::send::{Answer, Attempt};
use crate::duration_text;

/// Spec part 8 C: a voice-agent receiver answers within 15 s.
pub const AGENTS_DEADLINE: Duration = Duration::from_secs(15);
/// Spec part 8 D: a pre-recorded receiver answers within 10 s.
pub const PRERECORDED_DEADLINE: Duration = Duration::from_secs(10);

/// What a case wants from the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// 2xx in time: the platform counts it delivered.
    Accept,
    /// A 4xx the platform does not retry (401 ideally).
    Reject,
}

/// What the platform does with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fate {
    Delivered,
    /// Failed for good: not retried.
    Rejected,
    /// A redirect: not followed, counted as a failure.
    Redirected,
    /// Retried later; the text says why.
    Retried(String),
}

/// What the case's receiver mistake is, per way of getting it wrong.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hints {
    /// An accept case answered with a 4xx rejection (401, 403, 409…).
    pub rejected: &'static str,
    /// A reject case answered 2xx.
    pub accepted: &'static str,
    /// Whether a 400/415/422 most likely means the payload was refused.
    pub payload: bool,
}

/// The platform's rules for one kind of delivery, with the deadline the
/// battery holds the receiver to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    pub kind: Kind,
    pub deadline: Duration,
}

impl Rules {
    /// The platform's deadline, or `timeout` when shorter (a quicker check).
    pub fn new(kind: Kind, timeout: Duration) -> Rules {
        let limit = match kind {
            Kind::Agents => AGENTS_DEADLINE,
            Kind::Prerecorded => PRERECORDED_DEADLINE,
        };
        Rules {
            kind,
            deadline: timeout.min(limit),
        }
    }

    pub fn fate(&self, attempt: &Attempt) -> Fate {
        let deadline = duration_text::of(self.deadline);
        let code = match &attempt.answer {
            Answer::Timeout => return Fate::Retried(format!("no answer within {deadline}")),
            Answer::Refused | Answer::ConnectionError(_) => {
                return Fate::Retried("connection error".to_owned());
            }
            Answer::Status { code, .. } => *code,
        };
        if attempt.latency > self.deadline {
            return Fate::Retried(format!("answered after the {deadline} deadline"));
        }
        match (self.kind, code) {
            (_, 200..=299) => Fate::Delivered,
            (Kind::Agents, 300..=399) => Fate::Redirected,
            (Kind::Agents, 408 | 425 | 429 | 500..=599) => Fate::Retried(format!("HTTP {code}")),
            (Kind::Agents, _) => Fate::Rejected,
            (Kind::Prerecorded, 400..=499) => Fate::Rejected,
            (Kind::Prerecorded, 300..=399) => {
                Fate::Retried(format!("HTTP {code}: redirect not followed"))
            }
            (Kind::Prerecorded, _) => Fate::Retried(format!("HTTP {code}")),
        }
    }

    pub fn passes(&self, expect: Expect, attempt: &Attempt) -> bool {
        matches!(
            (expect, self.fate(attempt)),
            (Expect::Accept, Fate::Delivered) | (Expect::Reject, Fate::Rejected)
        )
    }

    /// What the platform would do, in words.
    pub fn platform_would(&self, attempt: &Attempt) -> String {
        match (self.fate(attempt), self.kind) {
            (Fate::Delivered, _) => "delivered".to_owned(),
            (Fate::Rejected, _) => "fail it for good, no retry".to_owned(),
            (Fate::Redirected, _) => "fail it: redirect not followed".to_owned(),
            (Fate::Retried(why), Kind::Agents) => format!("retry it ({why})"),
            (Fate::Retried(why), Kind::Prerecorded) => {
                format!("retry it ({why}; 10 attempts in all, 10 s apart)")
            }
        }
    }

    /// The behaviour a case expects, in words.
    pub fn expected(&self, expect: Expect, times: usize) -> String {
        let within = duration_text::of(self.deadline);
        match (expect, self.kind, times) {
            (Expect::Accept, _, 1) => format!("2xx within {within}"),
            (Expect::Accept, _, _) => format!("2xx within {within}, both times"),
            (Expect::Reject, Kind::Agents, _) => "401 (any 4xx but 408/425/429)".to_owned(),
            (Expect::Reject, Kind::Prerecorded, _) => "4xx (401 or 403)".to_owned(),
        }
    }

    /// Why a failing answer fails, as the receiver's likely mistake.
    pub fn hint(&self, expect: Expect, attempt: &Attempt, hints: &Hints, url: &str) -> String {
        let deadline = duration_text::of(self.deadline);
        let code = match &attempt.answer {
            Answer::Timeout => {
                return format!(
                    "slower than {deadline}: the platform counts it as a timeout and retries; \
                     answer first, process in the background"
                );
            }
            Answer::Refused => {
                return format!("connection refused: is the receiver running at {url}?");
            }
            Answer::ConnectionError(cause) => return format!("connection error: {cause}"),
            Answer::Status { code, location } if (300..=399).contains(code) => {
                let to = location
                    .as_deref()
                    .map(|to| format!(" (Location: {to})"))
                    .unwrap_or_default();
                return format!(
                    "redirects are not followed; a {code} counts as a failure — point the \
                     subscription at the final URL{to}"
                );
            }
            Answer::Status { code, .. } => *code,
        };
        if attempt.latency > self.deadline {
            return format!(
                "answered after {}, beyond the {deadline} deadline: the platform counts it as a \
                 timeout and retries; answer first, process in the background",
                duration_text::of(attempt.latency)
            );
        }
        match (expect, code) {
            (Expect::Reject, 200..=299) => hints.accepted.to_owned(),
            (Expect::Reject, _) => format!(
                "a delivery that will never verify should get 401 (a 4xx); a {code} makes the \
                 platform retry it"
            ),
            (Expect::Accept, 429) => {
                "rate limited (429): the platform retries; do not rate-limit its deliveries"
                    .to_owned()
            }
            (Expect::Accept, 408 | 425 | 500..=599) => format!(
                "the receiver failed ({code}) and the platform retries: check its logs; work \
                 that can fail (downloads, databases) belongs after the 2xx"
            ),
            (Expect::Accept, 404 | 405 | 410) => format!(
                "{code}: wrong path or method — the platform POSTs to the subscription URL \
                 exactly as given"
            ),
            (Expect::Accept, 400 | 415 | 422) if hints.payload => format!(
                "{code}: the payload was refused — accept every documented field (nulls \
                 included) and ignore unknown ones"
            ),
            (Expect::Accept, _) => hints.rejected.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(code: u16, millis: u64) -> Attempt {
        Attempt {
            answer: Answer::Status {
                code,
                location: None,
            },
            latency: Duration::from_millis(millis),
        }
    }

    fn agents() -> Rules {
        Rules::new(Kind::Agents, Duration::from_secs(15))
    }

    #[test]
    fn agents_fates_follow_part_6_c() {
        let rules = agents();
        assert_eq!(rules.fate(&answered(204, 10)), Fate::Delivered);
        for code in [400, 401, 403, 404, 409, 422] {
            assert_eq!(rules.fate(&answered(code, 10)), Fate::Rejected, "{code}");
        }
        for code in [408, 425, 429, 500, 503] {
            assert!(matches!(rules.fate(&answered(code, 10)), Fate::Retried(_)));
        }
        for code in [301, 302, 307, 308] {
            assert_eq!(rules.fate(&answered(code, 10)), Fate::Redirected, "{code}");
        }
        assert!(matches!(
            rules.fate(&answered(200, 15_001)),
            Fate::Retried(_)
        ));
        let timeout = Attempt {
            answer: Answer::Timeout,
            latency: Duration::from_secs(15),
        };
        assert!(matches!(rules.fate(&timeout), Fate::Retried(_)));
    }

    #[test]
    fn prerecorded_fates_follow_part_6_d() {
        let rules = Rules::new(Kind::Prerecorded, Duration::from_secs(15));
        assert_eq!(rules.deadline, PRERECORDED_DEADLINE);
        assert_eq!(rules.fate(&answered(200, 9_000)), Fate::Delivered);
        assert!(matches!(
            rules.fate(&answered(200, 10_500)),
            Fate::Retried(_)
        ));
        for code in [400, 401, 408, 429] {
            assert_eq!(rules.fate(&answered(code, 10)), Fate::Rejected, "{code}");
        }
        for code in [301, 500, 503] {
            assert!(matches!(rules.fate(&answered(code, 10)), Fate::Retried(_)));
        }
    }

    #[test]
    fn a_rejection_that_would_be_retried_does_not_pass() {
        let rules = agents();
        assert!(rules.passes(Expect::Reject, &answered(401, 5)));
        assert!(rules.passes(Expect::Reject, &answered(403, 5)));
        assert!(!rules.passes(Expect::Reject, &answered(429, 5)));
        assert!(!rules.passes(Expect::Reject, &answered(500, 5)));
        assert!(!rules.passes(Expect::Reject, &answered(200, 5)));
        assert!(!rules.passes(Expect::Accept, &answered(301, 5)));
    }
}
