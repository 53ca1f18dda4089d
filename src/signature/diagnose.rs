//! Explaining a delivery to an operator: [`diagnose`] gives the verdict and
//! every [`Finding`], each with its [`Severity`] and next step.

use std::fmt;

use subtle::ConstantTimeEq;

use super::mistakes::{Variant, variants};
use super::{
    Candidate, HeaderError, InvalidReason, Mistake, ParsedHeader, V1Signature, Verdict, any_equal,
    describe_skew, digest, parse_digest_hex, parse_header, verify_parsed,
};

/// How a finding weighs: a cause of failure, something to watch, or a
/// check that came out fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Problem,
    Warning,
    Ok,
}

/// One thing [`diagnose`] established. `Display` gives the sentence an
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
                    "{} — {cause}; that is {over} s beyond the {tolerance_secs} s \
                     tolerance{millis}",
                    describe_skew(*skew_secs)
                )
            }
            Self::TimestampNearLimit {
                skew_secs,
                tolerance_secs,
            } => format!(
                "{}, within the {tolerance_secs} s tolerance but past half of it",
                describe_skew(*skew_secs)
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

/// The verdict and the findings that explain it, most likely cause first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
}

impl Diagnosis {
    pub fn is_valid(&self) -> bool {
        self.verdict.is_valid()
    }

    /// The findings that are causes of failure.
    pub fn problems(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity() == Severity::Problem)
    }

    pub fn has(&self, code: &str) -> bool {
        self.findings.iter().any(|f| f.code() == code)
    }
}

/// Explains a delivery the way an operator needs it: [`verify`](super::verify)'s verdict,
/// then every finding, problems first (in order of likelihood), then
/// warnings, then checks that came out fine. When nothing matches, every
/// [`Mistake`] is tried with every candidate to find what the header was
/// computed over; with `receiver_digest` (the hex a receiver computed) it
/// also names the mistake that makes the receiver compute that.
pub fn diagnose(
    header: &str,
    body: &[u8],
    candidates: &[Candidate],
    now: i64,
    tolerance_secs: u64,
    receiver_digest: Option<&str>,
) -> Diagnosis {
    let parsed = match parse_header(header) {
        Ok(parsed) => parsed,
        Err(error) => {
            let mut findings = vec![Finding::MalformedHeader(error.clone())];
            if let Some(text) = receiver_digest {
                findings.push(match parse_digest_hex(text.trim()) {
                    Some(_) => Finding::ReceiverDigestNotChecked,
                    None => Finding::ReceiverDigestMalformed {
                        len: text.trim().chars().count(),
                    },
                });
            }
            findings.sort_by_key(Finding::severity);
            return Diagnosis {
                verdict: Verdict::Invalid(InvalidReason::MalformedHeader(error)),
                findings,
            };
        }
    };
    let verdict = verify_parsed(&parsed, body, candidates, now, tolerance_secs);
    let timestamp = parsed.timestamp;
    let skew_secs = now.saturating_sub(timestamp);
    // Computed lazily: only a failure or a receiver digest needs them.
    let mut mistakes: Option<Vec<Variant>> = None;
    let mut findings = Vec::new();

    if candidates.is_empty() {
        findings.push(Finding::NoCandidates);
    }
    if skew_secs.unsigned_abs() > tolerance_secs {
        findings.push(Finding::TimestampOutsideTolerance {
            timestamp,
            skew_secs,
            tolerance_secs,
        });
    } else if skew_secs.unsigned_abs().saturating_mul(2) > tolerance_secs {
        findings.push(Finding::TimestampNearLimit {
            skew_secs,
            tolerance_secs,
        });
    }

    match verdict.matched() {
        Some(matched) => {
            if let Some(first) = candidates.first().filter(|c| c.label != matched) {
                findings.push(Finding::MatchedPreviousSecret {
                    matched: matched.to_owned(),
                    first: first.label.to_owned(),
                });
            }
        }
        None if !candidates.is_empty() => {
            // When nothing explains the header, WrongSecret and BodyChanged
            // are added after the receiver's findings, below.
            let tried = mistakes.get_or_insert_with(|| variants(body));
            findings.extend(explain_header(&parsed, candidates, tried));
        }
        None => {}
    }

    if let Some(text) = receiver_digest {
        let tried = mistakes.get_or_insert_with(|| variants(body));
        findings.extend(explain_receiver(text, timestamp, body, candidates, tried));
    }

    let unexplained = !candidates.is_empty()
        && verdict.matched().is_none()
        && !findings
            .iter()
            .any(|f| matches!(f, Finding::HeaderComputedOver { .. }));
    if unexplained {
        findings.push(Finding::WrongSecret);
        findings.push(Finding::BodyChanged);
    }
    if parsed.signatures.iter().any(V1Signature::has_upper_case) {
        findings.push(Finding::HeaderDigestUpperCase);
    }
    findings.sort_by_key(Finding::severity);
    Diagnosis { verdict, findings }
}

/// Which mistake, with which candidate, reproduces a `v1` of the header.
fn explain_header(
    parsed: &ParsedHeader,
    candidates: &[Candidate],
    tried: &[Variant],
) -> Vec<Finding> {
    let mut found = Vec::new();
    for variant in tried {
        for candidate in candidates {
            let Some(digest) = variant.digest(candidate.secret, parsed.timestamp) else {
                continue;
            };
            if bool::from(any_equal(
                &digest,
                parsed.signatures.iter().map(|s| &s.bytes),
            )) {
                found.push(Finding::HeaderComputedOver {
                    mistake: variant.mistake,
                    same_as: variant.same_as.clone(),
                    label: candidate.label.to_owned(),
                });
                break;
            }
        }
    }
    found
}

/// What the receiver's digest says about the receiver's computation.
fn explain_receiver(
    text: &str,
    timestamp: i64,
    body: &[u8],
    candidates: &[Candidate],
    tried: &[Variant],
) -> Vec<Finding> {
    let text = text.trim();
    let Some(theirs) = parse_digest_hex(text) else {
        return vec![Finding::ReceiverDigestMalformed {
            len: text.chars().count(),
        }];
    };
    let mut found = Vec::new();
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        found.push(Finding::ReceiverDigestUpperCase);
    }
    let correct = candidates
        .iter()
        .find(|c| bool::from(digest(c.secret, timestamp, body).ct_eq(&theirs)));
    if let Some(candidate) = correct {
        found.push(Finding::ReceiverDigestCorrect {
            label: candidate.label.to_owned(),
        });
        return found;
    }
    for variant in tried {
        for candidate in candidates {
            if variant.digest(candidate.secret, timestamp) == Some(theirs) {
                found.insert(
                    0,
                    Finding::ReceiverMistake {
                        mistake: variant.mistake,
                        same_as: variant.same_as.clone(),
                        label: candidate.label.to_owned(),
                    },
                );
                return found;
            }
        }
    }
    found.push(Finding::ReceiverUsesOtherSecret);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::json_forms::JsonForms;
    use crate::signature::test_support::{
        OLD_SECRET, SECRET, T, current_and_previous, hex_of, only_current, v1,
    };
    use crate::signature::{digest_hex, sign};

    #[test]
    fn diagnose_a_malformed_header_names_the_part_and_stops() {
        let d = diagnose("t=abc,v1=00", b"", &only_current(), T, 300, None);
        assert_eq!(
            d.findings,
            [Finding::MalformedHeader(HeaderError::TimestampNotInteger {
                value: "abc".into()
            })]
        );
        assert!(d.findings[0].to_string().contains("`t=abc`"));
        let d = diagnose("t=abc", b"", &only_current(), T, 300, Some(&"0".repeat(64)));
        assert_eq!(d.findings[1], Finding::ReceiverDigestNotChecked);
    }

    #[test]
    fn diagnose_an_old_signature_says_how_old_and_blames_the_clock_or_a_replay() {
        let header = sign(SECRET, T, b"x");
        let d = diagnose(&header, b"x", &only_current(), T + 412, 300, None);
        assert_eq!(d.verdict.matched(), Some("current"));
        assert_eq!(
            d.findings,
            [Finding::TimestampOutsideTolerance {
                timestamp: T,
                skew_secs: 412,
                tolerance_secs: 300
            }]
        );
        let text = d.findings[0].to_string();
        assert!(text.contains("412 s old"), "{text}");
        assert!(text.contains("receiver clock is ahead"), "{text}");
        assert!(text.contains("replay"), "{text}");
        assert!(text.contains("112 s beyond"), "{text}");
    }

    #[test]
    fn diagnose_a_future_signature_says_the_receiver_clock_is_behind() {
        let header = sign(SECRET, T, b"x");
        let d = diagnose(&header, b"x", &only_current(), T - 301, 300, None);
        let text = d.findings[0].to_string();
        assert!(text.contains("301 s in the future"), "{text}");
        assert!(text.contains("receiver clock is behind"), "{text}");
    }

    #[test]
    fn diagnose_a_millisecond_timestamp_says_so() {
        let t_ms = T * 1000;
        let header = sign(SECRET, t_ms, b"x");
        let d = diagnose(&header, b"x", &only_current(), T, 300, None);
        assert!(d.findings[0].to_string().contains("milliseconds"));
    }

    #[test]
    fn diagnose_warns_when_the_clock_is_past_half_the_tolerance() {
        let header = sign(SECRET, T, b"x");
        let d = diagnose(&header, b"x", &only_current(), T + 200, 300, None);
        assert!(d.is_valid());
        assert_eq!(
            d.findings,
            [Finding::TimestampNearLimit {
                skew_secs: 200,
                tolerance_secs: 300
            }]
        );
        let d = diagnose(&header, b"x", &only_current(), T + 150, 300, None);
        assert!(d.findings.is_empty(), "{:?}", d.findings);
    }

    #[test]
    fn diagnose_a_rotation_tells_the_receiver_to_accept_both_secrets() {
        let header = sign(OLD_SECRET, T, b"x");
        let d = diagnose(&header, b"x", &current_and_previous(), T, 300, None);
        assert!(d.is_valid());
        assert_eq!(
            d.findings,
            [Finding::MatchedPreviousSecret {
                matched: "previous".into(),
                first: "current".into()
            }]
        );
        let text = d.findings[0].to_string();
        assert!(text.contains("accept both"), "{text}");
        assert!(text.contains("drain"), "{text}");
    }

    #[test]
    fn diagnose_a_clean_delivery_has_no_findings() {
        let header = sign(SECRET, T, b"{\"a\":1}");
        let d = diagnose(&header, b"{\"a\":1}", &current_and_previous(), T, 300, None);
        assert!(d.is_valid());
        assert!(d.findings.is_empty(), "{:?}", d.findings);
    }

    #[test]
    fn diagnose_an_unexplained_mismatch_blames_the_secret_first_then_the_body() {
        let header = sign(b"a secret nobody gave", T, b"{\"a\":1}");
        let d = diagnose(&header, b"{\"a\":1}", &current_and_previous(), T, 300, None);
        assert_eq!(d.findings, [Finding::WrongSecret, Finding::BodyChanged]);
        assert!(
            d.findings[0]
                .to_string()
                .contains("secret you did not give")
        );
    }

    #[test]
    fn diagnose_without_secrets_says_so() {
        let header = sign(SECRET, T, b"x");
        let d = diagnose(&header, b"x", &[], T, 300, None);
        assert_eq!(d.findings, [Finding::NoCandidates]);
    }

    #[test]
    fn diagnose_notes_an_upper_case_v1_in_the_header() {
        let header = v1(&digest_hex(SECRET, T, b"x").to_ascii_uppercase());
        let d = diagnose(&header, b"x", &only_current(), T, 300, None);
        assert!(d.is_valid());
        assert_eq!(d.findings, [Finding::HeaderDigestUpperCase]);
    }

    /// One row per mistake: the body as received, the bytes the mistake
    /// hashes instead, whether the `<t>.` prefix is kept, and the key used.
    struct Case {
        mistake: Mistake,
        body: &'static [u8],
        hashed: &'static [u8],
        prefix: bool,
        key: &'static [u8],
        given_secret: &'static [u8],
    }

    const PADDED: &[u8] = b"  whsec-padded-0123456789abcdefghijklmnopq \n";
    const PADDED_TRIMMED: &[u8] = b"whsec-padded-0123456789abcdefghijklmnopq";
    const WITH_NEWLINE: &[u8] = b"whsec-test-0123456789abcdefghijklmnopqrstuv\n";

    fn case(mistake: Mistake, body: &'static [u8], hashed: &'static [u8]) -> Case {
        Case {
            mistake,
            body,
            hashed,
            prefix: true,
            key: SECRET,
            given_secret: SECRET,
        }
    }

    fn cases() -> Vec<Case> {
        vec![
            case(
                Mistake::BodyCompacted,
                b"{\n  \"b\": 1,\n  \"a\": [1, 2]\n}\n",
                b"{\"b\":1,\"a\":[1,2]}",
            ),
            case(
                Mistake::BodyPrettyPrinted,
                b"{\"b\":1,\"a\":[1,2],\"e\":{},\"f\":[]}",
                b"{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {},\n  \"f\": []\n}",
            ),
            case(
                Mistake::BodyKeysSorted,
                b"{\"b\":1,\"a\":{\"d\":\"x, y\",\"c\":2}}",
                b"{\"a\":{\"c\":2,\"d\":\"x, y\"},\"b\":1}",
            ),
            case(
                Mistake::BodyKeysSortedPretty,
                b"{\"b\":1,\"a\":2}",
                b"{\n  \"a\": 2,\n  \"b\": 1\n}",
            ),
            case(
                Mistake::BodySpacedSeparators,
                b"{\"b\":1,\"a\":[1,2]}",
                b"{\"b\": 1, \"a\": [1, 2]}",
            ),
            case(
                Mistake::BodySpacedSeparatorsKeysSorted,
                b"{\"b\":1,\"a\":2}",
                b"{\"a\": 2, \"b\": 1}",
            ),
            Case {
                prefix: false,
                ..case(Mistake::PrefixOmitted, b"{\"a\":1}", b"{\"a\":1}")
            },
            case(Mistake::TrailingNewlineAdded, b"hello", b"hello\n"),
            case(Mistake::TrailingNewlineStripped, b"hello\r\n", b"hello"),
            case(Mistake::CrlfToLf, b"a\r\nb\r\n", b"a\nb\n"),
            case(Mistake::LfToCrlf, b"a\nb\r\n", b"a\r\nb\r\n"),
            Case {
                key: WITH_NEWLINE,
                ..case(Mistake::SecretTrailingNewline, b"x", b"x")
            },
            Case {
                key: PADDED_TRIMMED,
                given_secret: PADDED,
                ..case(Mistake::SecretTrimmed, b"x", b"x")
            },
        ]
    }

    fn mistaken_hex(c: &Case) -> String {
        let prefix = format!("{T}.");
        if c.prefix {
            hex_of(c.key, &[prefix.as_bytes(), c.hashed])
        } else {
            hex_of(c.key, &[c.hashed])
        }
    }

    #[test]
    fn the_case_table_covers_every_mistake() {
        let covered: Vec<Mistake> = cases().iter().map(|c| c.mistake).collect();
        assert_eq!(covered, Mistake::ALL);
    }

    #[test]
    fn diagnose_finds_what_the_header_was_computed_over_for_every_mistake() {
        for c in cases() {
            let header = v1(&mistaken_hex(&c));
            let candidates = [
                Candidate {
                    label: "previous-ish",
                    secret: OLD_SECRET,
                },
                Candidate {
                    label: "current",
                    secret: c.given_secret,
                },
            ];
            let d = diagnose(&header, c.body, &candidates, T, 300, None);
            assert!(!d.is_valid(), "{:?}", c.mistake);
            assert_eq!(
                d.findings,
                [Finding::HeaderComputedOver {
                    mistake: c.mistake,
                    same_as: vec![],
                    label: "current".into()
                }],
                "{:?}",
                c.mistake
            );
            let text = d.findings[0].to_string();
            assert!(text.contains(c.mistake.describe()), "{text}");
        }
    }

    #[test]
    fn diagnose_names_the_receiver_mistake_for_every_mistake() {
        for c in cases() {
            let candidates = [Candidate {
                label: "current",
                secret: c.given_secret,
            }];
            let header = sign(c.given_secret, T, c.body);
            let theirs = mistaken_hex(&c);
            let d = diagnose(&header, c.body, &candidates, T, 300, Some(&theirs));
            assert!(d.is_valid(), "{:?}", c.mistake);
            assert_eq!(
                d.findings,
                [Finding::ReceiverMistake {
                    mistake: c.mistake,
                    same_as: vec![],
                    label: "current".into()
                }],
                "{:?}",
                c.mistake
            );
        }
    }

    #[test]
    fn diagnose_reports_mistakes_that_compute_the_same_bytes_together() {
        // Compacting `{"a":1}\n`, sorting its one key and stripping its
        // newline all hash the same bytes.
        let header = sign(SECRET, T, b"{\"a\":1}");
        let d = diagnose(&header, b"{\"a\":1}\n", &only_current(), T, 300, None);
        assert_eq!(
            d.findings,
            [Finding::HeaderComputedOver {
                mistake: Mistake::BodyCompacted,
                same_as: vec![Mistake::BodyKeysSorted, Mistake::TrailingNewlineStripped],
                label: "current".into()
            }]
        );
        assert!(d.findings[0].to_string().contains("the same bytes as"));
    }

    #[test]
    fn diagnose_skips_mistakes_that_change_nothing() {
        // A compact body: re-serialising compact is the correct computation,
        // so it must not be reported as a mistake the receiver made.
        let body = b"{\"a\":1,\"b\":2}";
        let header = sign(SECRET, T, body);
        let theirs = digest_hex(SECRET, T, body);
        let d = diagnose(&header, body, &only_current(), T, 300, Some(&theirs));
        assert_eq!(
            d.findings,
            [Finding::ReceiverDigestCorrect {
                label: "current".into()
            }]
        );
    }

    #[test]
    fn diagnose_a_correct_upper_case_receiver_digest_blames_the_comparison() {
        let header = sign(SECRET, T, b"x");
        let theirs = digest_hex(SECRET, T, b"x").to_ascii_uppercase();
        let d = diagnose(&header, b"x", &only_current(), T, 300, Some(&theirs));
        assert_eq!(
            d.findings,
            [
                Finding::ReceiverDigestUpperCase,
                Finding::ReceiverDigestCorrect {
                    label: "current".into()
                }
            ]
        );
    }

    #[test]
    fn diagnose_an_upper_case_receiver_mistake_names_both() {
        let header = sign(SECRET, T, b"x");
        let theirs = hex_of(SECRET, &[b"x"]).to_ascii_uppercase();
        let d = diagnose(&header, b"x", &only_current(), T, 300, Some(&theirs));
        assert_eq!(d.findings.len(), 2, "{:?}", d.findings);
        assert_eq!(d.findings[0].mistake(), Some(Mistake::PrefixOmitted));
        assert_eq!(d.findings[1], Finding::ReceiverDigestUpperCase);
    }

    #[test]
    fn diagnose_an_unknown_receiver_digest_blames_the_receiver_secret() {
        let header = sign(SECRET, T, b"x");
        let theirs = digest_hex(b"the receiver's own secret", T, b"x");
        let d = diagnose(&header, b"x", &only_current(), T, 300, Some(&theirs));
        assert_eq!(d.findings, [Finding::ReceiverUsesOtherSecret]);
        assert!(
            d.findings[0]
                .to_string()
                .contains("receiver uses another secret")
        );
    }

    #[test]
    fn diagnose_a_malformed_receiver_digest_says_its_length() {
        let header = sign(SECRET, T, b"x");
        let d = diagnose(&header, b"x", &only_current(), T, 300, Some("abc"));
        assert_eq!(d.findings, [Finding::ReceiverDigestMalformed { len: 3 }]);
    }

    #[test]
    fn diagnose_orders_problems_before_warnings_before_passed_checks() {
        // Late, signed with the previous secret, receiver correct, and a
        // receiver-side upper-case digest: one of each severity.
        let header = sign(OLD_SECRET, T, b"x");
        let theirs = digest_hex(OLD_SECRET, T, b"x").to_ascii_uppercase();
        let d = diagnose(
            &header,
            b"x",
            &current_and_previous(),
            T + 400,
            300,
            Some(&theirs),
        );
        let codes: Vec<&str> = d.findings.iter().map(Finding::code).collect();
        assert_eq!(
            codes,
            [
                "timestamp_outside_tolerance",
                "receiver_digest_upper_case",
                "matched_previous_secret",
                "receiver_digest_correct"
            ]
        );
    }

    #[test]
    fn diagnose_the_same_input_gives_the_same_findings() {
        let header = sign(b"other", T, b"{\"b\":1,\"a\":2}");
        let theirs = digest_hex(b"other2", T, b"{}");
        let run = || {
            diagnose(
                &header,
                b"{\"b\":1,\"a\":2}",
                &current_and_previous(),
                T + 999,
                300,
                Some(&theirs),
            )
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn diagnose_does_not_reserialise_invalid_or_too_deep_json() {
        assert!(JsonForms::of(b"{\"a\":1").is_none());
        assert!(JsonForms::of(b"{\"a\":1} x").is_none());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(JsonForms::of(deep.as_bytes()).is_none());
        let header = sign(SECRET, T, deep.as_bytes());
        let d = diagnose(&header, deep.as_bytes(), &only_current(), T, 300, None);
        assert!(d.is_valid());
    }
}
