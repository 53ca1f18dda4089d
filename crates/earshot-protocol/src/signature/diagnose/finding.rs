//! What a diagnosis is made of: each [`Finding`], its [`Severity`], stable
//! code and the sentences an operator reads (what happened, what to do).

use std::fmt;

use crate::duration_text;
use crate::signature::{HeaderError, Mistake, describe_skew};

/// How a finding weighs: a cause of failure, something to watch, or a
/// check that came out fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Problem,
    Warning,
    Ok,
}

/// One thing [`diagnose`](super::diagnose) established. `Display` gives the sentence an
/// operator reads: what happened, then what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The header cannot be parsed; nothing else can be checked.
    MalformedHeader(HeaderError),
    /// No secret was given to check against.
    NoCandidates,
    /// `skew_secs` is `now - t` (positive: the signature is in the past).
    TimestampOutsideTolerance {
        timestamp: i64,
        skew_secs: i64,
        tolerance_secs: u64,
    },
    /// Within tolerance but past half of it: intermittent failures ahead.
    TimestampNearLimit { skew_secs: i64, tolerance_secs: u64 },
    /// The digest matched a secret other than the first (a rotation).
    MatchedPreviousSecret { matched: String, first: String },
    /// No secret reproduces the header over the body as given, but `label`
    /// does after `mistake`: the header was computed over something else.
    HeaderComputedOver {
        mistake: Mistake,
        same_as: Vec<Mistake>,
        label: String,
    },
    /// Nothing explains the header: most likely another secret signed it.
    WrongSecret,
    /// …or the body is not the one that was signed.
    BodyChanged,
    /// A `v1` in the header uses upper-case hex.
    HeaderDigestUpperCase,
    /// The receiver's digest given is not 64 hex characters.
    ReceiverDigestMalformed { len: usize },
    /// The receiver's digest cannot be checked without a parsable `t`.
    ReceiverDigestNotChecked,
    /// The receiver computes exactly the right digest with `label`.
    ReceiverDigestCorrect { label: String },
    /// The receiver's digest is what `mistake` produces with `label`.
    ReceiverMistake {
        mistake: Mistake,
        same_as: Vec<Mistake>,
        label: String,
    },
    /// The receiver's digest is upper-case hex (string comparison fails).
    ReceiverDigestUpperCase,
    /// No given secret, with or without a known mistake, gives the
    /// receiver's digest: the receiver has another secret.
    ReceiverUsesOtherSecret,
}

impl Finding {
    /// A stable machine-readable name.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MalformedHeader(_) => "malformed_header",
            Self::NoCandidates => "no_candidates",
            Self::TimestampOutsideTolerance { .. } => "timestamp_outside_tolerance",
            Self::TimestampNearLimit { .. } => "timestamp_near_limit",
            Self::MatchedPreviousSecret { .. } => "matched_previous_secret",
            Self::HeaderComputedOver { .. } => "header_computed_over",
            Self::WrongSecret => "wrong_secret",
            Self::BodyChanged => "body_changed",
            Self::HeaderDigestUpperCase => "header_digest_upper_case",
            Self::ReceiverDigestMalformed { .. } => "receiver_digest_malformed",
            Self::ReceiverDigestNotChecked => "receiver_digest_not_checked",
            Self::ReceiverDigestCorrect { .. } => "receiver_digest_correct",
            Self::ReceiverMistake { .. } => "receiver_mistake",
            Self::ReceiverDigestUpperCase => "receiver_digest_upper_case",
            Self::ReceiverUsesOtherSecret => "receiver_uses_other_secret",
        }
    }

    pub fn severity(&self) -> Severity {
        match self {
            Self::TimestampNearLimit { .. }
            | Self::MatchedPreviousSecret { .. }
            | Self::HeaderDigestUpperCase
            | Self::ReceiverDigestNotChecked => Severity::Warning,
            Self::ReceiverDigestCorrect { .. } => Severity::Ok,
            _ => Severity::Problem,
        }
    }

    /// The mistake this finding names, if any (either side).
    pub fn mistake(&self) -> Option<Mistake> {
        match self {
            Self::HeaderComputedOver { mistake, .. } | Self::ReceiverMistake { mistake, .. } => {
                Some(*mistake)
            }
            _ => None,
        }
    }

    /// What happened, as one sentence without the advice.
    pub fn what(&self) -> String {
        match self {
            Self::MalformedHeader(error) => format!("malformed X-SVC-Signature header: {error}"),
            Self::NoCandidates => "no secret was given to check the signature against".to_owned(),
            Self::TimestampOutsideTolerance {
                skew_secs,
                tolerance_secs,
                timestamp,
            } => {
                let over = skew_secs.unsigned_abs().saturating_sub(*tolerance_secs);
                let cause = if *skew_secs > 0 {
                    "receiver clock is ahead, or this is a replay or an old capture"
                } else {
                    "receiver clock is behind"
                };
                let millis = if timestamp.unsigned_abs() >= 100_000_000_000 {
                    " (t looks like milliseconds; it must be seconds)"
                } else {
                    ""
                };
                format!(
                    "{} — {cause}; that is {} beyond the {} tolerance{millis}",
                    describe_skew(*skew_secs),
                    duration_text::of_secs(over),
                    duration_text::of_secs(*tolerance_secs)
                )
            }
            Self::TimestampNearLimit {
                skew_secs,
                tolerance_secs,
            } => format!(
                "{}, within the {} tolerance but past half of it",
                describe_skew(*skew_secs),
                duration_text::of_secs(*tolerance_secs)
            ),
            Self::MatchedPreviousSecret { matched, first } => format!(
                "the signature matches the {matched} secret, not the {first} one: this delivery \
                 was signed before the rotation and was still in flight"
            ),
            Self::HeaderComputedOver {
                mistake,
                same_as,
                label,
            } => format!(
                "the header's v1 was computed with the {label} secret over {}{}",
                mistake.describe(),
                also(same_as)
            ),
            Self::WrongSecret => "no secret you gave reproduces any v1, even allowing for the \
                                  common mistakes: the delivery was signed with a secret you did \
                                  not give"
                .to_owned(),
            Self::BodyChanged => "if the secret is right, the body differs from what was signed \
                                  (changed in transit, or the body of another delivery)"
                .to_owned(),
            Self::HeaderDigestUpperCase => {
                "a v1 in the header uses upper-case hex; the platform sends lower case".to_owned()
            }
            Self::ReceiverDigestMalformed { len } => {
                format!("the receiver's digest is {len} characters; expected 64 hex characters")
            }
            Self::ReceiverDigestNotChecked => {
                "the receiver's digest was not checked: without a valid t there is nothing to \
                 compare it with"
                    .to_owned()
            }
            Self::ReceiverDigestCorrect { label } => {
                format!("the receiver computes the correct digest with the {label} secret")
            }
            Self::ReceiverMistake {
                mistake,
                same_as,
                label,
            } => format!(
                "the receiver's digest is HMAC with the {label} secret over {}{}",
                mistake.describe(),
                also(same_as)
            ),
            Self::ReceiverDigestUpperCase => "the receiver produces upper-case hex, but v1 is \
                                              lower case: a string comparison never matches"
                .to_owned(),
            Self::ReceiverUsesOtherSecret => "no secret you gave, with or without a common \
                                              mistake, produces the receiver's digest: the \
                                              receiver uses another secret"
                .to_owned(),
        }
    }

    /// What to do about it, when there is something to do.
    pub fn next_step(&self) -> Option<String> {
        let text = match self {
            Self::MalformedHeader(_) => {
                "pass the header value exactly as received: `t=<unix seconds>,v1=<64 hex>`"
            }
            Self::NoCandidates => {
                "give the subscription's secret (and the previous one during a rotation)"
            }
            Self::TimestampOutsideTolerance { skew_secs, .. } if *skew_secs > 0 => {
                "sync the receiver clock (NTP) and make sure it is not replaying old deliveries; \
                 to check an old capture, pass its receive time as now (`--now`)"
            }
            Self::TimestampOutsideTolerance { .. } => {
                "sync the receiver clock (NTP); it is behind the platform's"
            }
            Self::TimestampNearLimit { .. } => {
                "sync the receiver clock (NTP) before it drifts past the tolerance and fails \
                 intermittently"
            }
            Self::MatchedPreviousSecret { .. } => {
                "during a rotation the receiver must accept both secrets until in-flight \
                 deliveries drain; only then drop the old one"
            }
            Self::HeaderComputedOver { mistake, .. } => mistake.sender_advice(),
            Self::WrongSecret => {
                "check which secret the subscription has now (a rotation replaces it) and give \
                 it, and the previous one too while a rotation drains"
            }
            Self::BodyChanged => {
                "verify the raw bytes of this very delivery, before any proxy, middleware or \
                 logger touches them"
            }
            Self::HeaderDigestUpperCase => {
                "compare decoded bytes (or lower-case both sides) rather than the text"
            }
            Self::ReceiverDigestMalformed { .. } => "pass the hex digest the receiver computed",
            Self::ReceiverDigestNotChecked => return None,
            Self::ReceiverDigestCorrect { .. } => {
                "the receiver's hashing is right; if it still rejects, check its comparison \
                 (against each v1 value, not the whole header), its clock, and that it accepts \
                 both secrets during a rotation"
            }
            Self::ReceiverMistake { mistake, .. } => mistake.receiver_advice(),
            Self::ReceiverDigestUpperCase => {
                "lower-case the receiver's hex, or better compare the decoded bytes in constant \
                 time"
            }
            Self::ReceiverUsesOtherSecret => {
                "give the receiver the subscription's current secret (and the previous one \
                 during a rotation)"
            }
        };
        Some(text.to_owned())
    }
}

fn also(same_as: &[Mistake]) -> String {
    if same_as.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = same_as.iter().map(|m| m.describe()).collect();
    format!(" (the same bytes as {})", names.join(", or "))
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what())?;
        if let Some(step) = self.next_step() {
            write!(f, " — {step}")?;
        }
        Ok(())
    }
}
