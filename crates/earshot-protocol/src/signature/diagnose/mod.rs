//! Explaining a delivery to an operator: [`diagnose`] gives the verdict and
//! every [`Finding`], each with its [`Severity`] and next step.

mod finding;
#[cfg(test)]
mod tests;

use subtle::ConstantTimeEq;

use super::mistakes::{Variant, variants};
use super::{
    Candidate, InvalidReason, ParsedHeader, V1Signature, Verdict, any_equal, digest,
    parse_digest_hex, parse_header, verify_parsed,
};
pub use finding::{Finding, Severity};

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
/// [`Mistake`](super::Mistake) is tried with every candidate to find what the header was
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
