//! Webhook delivery signatures (spec part 5 C): `X-SVC-Signature:
//! t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<t>." + raw body)>`.
//!
//! This module owns signing ([`sign`]), header parsing ([`parse_header`]),
//! verification against one or more candidate secrets ([`verify`]), the
//! operator-facing explanation of a failure ([`diagnose`](fn@diagnose)) and fresh secrets
//! ([`generate_secret`]). It is pure: no I/O, no clock (callers pass `now`),
//! and the only outside resource is the OS random generator behind
//! [`generate_secret`]. It knows nothing of HTTP, the emulator or the TUI.

use std::fmt;
use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::duration_text;

mod checklist;
mod diagnose;
mod header;
mod json_forms;
mod keyed;
mod mistakes;
mod secret;

pub use checklist::{Check, ChecklistInput, TriedSecret, age, checklist};
pub use diagnose::{Diagnosis, Finding, Severity, diagnose};
pub use header::{HeaderError, ParsedHeader, V1Signature, parse_header};
pub use keyed::{KeyedSecret, Verifier};
pub use mistakes::Mistake;
pub use secret::generate_secret;

/// How far `t` may be from the receiver's clock, either way (spec part 8 C).
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

/// The header that carries the signature on every delivery.
pub const HEADER_NAME: &str = "X-SVC-Signature";

/// Length of a `v1` value: 32 bytes of HMAC-SHA256 as hex.
pub const DIGEST_HEX_LEN: usize = 64;

/// The longest `X-SVC-Signature` value read, in bytes. The platform sends
/// `t=<unix seconds>,v1=<64 hex>` (at most 88 bytes); a dozen `v1` values
/// with the header's name in front still fit. A longer value is
/// [`HeaderError::TooLong`] without being parsed, so checking a pasted
/// blob costs the same as checking a header.
pub const MAX_HEADER_LEN: usize = 1024;

type HmacSha256 = Hmac<Sha256>;

// ---------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------

/// HMAC-SHA256 keyed with `secret` over the concatenation of `parts`.
fn hmac_parts(secret: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length (long keys are hashed first), so this
    // never fails whatever the caller passes.
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The raw 32-byte `v1` digest: HMAC-SHA256(secret, `"<t>."` + body).
pub fn digest(secret: &[u8], timestamp: i64, body: &[u8]) -> [u8; 32] {
    KeyedSecret::new(secret).digest(timestamp, body)
}

/// The `v1` value as the platform sends it: lowercase hex of [`digest`].
pub fn digest_hex(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    to_hex(&digest(secret, timestamp, body))
}

/// The full `X-SVC-Signature` header value: `t=<timestamp>,v1=<digest_hex>`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", digest_hex(secret, timestamp, body))
}

fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Hex digit values by byte; `0xff` for a byte that is not a hex digit.
const HEX_VALUES: [u8; 256] = {
    let mut table = [0xff_u8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes a 64-character hex digest (either case) to its 32 bytes; `None`
/// when the text is not exactly that. Front ends use it to check a
/// receiver's digest before calling [`diagnose`](fn@diagnose).
pub fn parse_digest_hex(text: &str) -> Option<[u8; 32]> {
    let raw = text.as_bytes();
    if raw.len() != DIGEST_HEX_LEN {
        return None;
    }
    let mut out = [0u8; 32];
    // OR the digits together and check once at the end: no branch per digit.
    let mut bad = 0u8;
    for (slot, pair) in out.iter_mut().zip(raw.chunks_exact(2)) {
        let (high, low) = (
            HEX_VALUES[usize::from(pair[0])],
            HEX_VALUES[usize::from(pair[1])],
        );
        bad |= high | low;
        *slot = (high << 4) | (low & 0x0f);
    }
    (bad & 0xf0 == 0).then_some(out)
}

// ---------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------

/// A secret to try, with the name it is reported under ("current",
/// "previous"). `Debug` never shows the secret.
#[derive(Clone, Copy)]
pub struct Candidate<'a> {
    pub label: &'a str,
    pub secret: &'a [u8],
}

impl<'a> Candidate<'a> {
    /// One candidate per labelled secret, in order (current first).
    pub fn all<L: AsRef<str>>(
        secrets: &'a [(L, crate::redact::SecretString)],
    ) -> Vec<Candidate<'a>> {
        secrets
            .iter()
            .map(|(label, secret)| Candidate {
                label: label.as_ref(),
                secret: secret.expose().as_bytes(),
            })
            .collect()
    }
}

impl fmt::Debug for Candidate<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("label", &self.label)
            .field("secret", &format_args!("…({} bytes)", self.secret.len()))
            .finish()
    }
}

/// Why a delivery does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidReason {
    MalformedHeader(HeaderError),
    /// `skew_secs` is `now - t`: positive when the signature is in the past,
    /// negative when it is in the future. `digest_matched` names the
    /// candidate whose digest matched anyway, if one did.
    TimestampOutsideTolerance {
        timestamp: i64,
        skew_secs: i64,
        tolerance_secs: u64,
        digest_matched: Option<Arc<str>>,
    },
    /// The timestamp is fine but no candidate reproduces any `v1`.
    NoMatchingSignature {
        timestamp: i64,
        skew_secs: i64,
    },
}

impl InvalidReason {
    /// A stable machine-readable name.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MalformedHeader(_) => "malformed_header",
            Self::TimestampOutsideTolerance { .. } => "timestamp_outside_tolerance",
            Self::NoMatchingSignature { .. } => "no_matching_signature",
        }
    }
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MalformedHeader(error) => write!(f, "malformed header: {error}"),
            Self::TimestampOutsideTolerance {
                skew_secs,
                tolerance_secs,
                ..
            } => write!(
                f,
                "timestamp outside tolerance: {} (tolerance {})",
                describe_skew(*skew_secs),
                duration_text::of_secs(*tolerance_secs)
            ),
            Self::NoMatchingSignature { .. } => {
                f.write_str("no candidate secret reproduces any v1 signature")
            }
        }
    }
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `matched` is the label of the candidate whose digest matched;
    /// `skew_secs` is `now - t`.
    Valid {
        matched: Arc<str>,
        timestamp: i64,
        skew_secs: i64,
    },
    Invalid(InvalidReason),
}

impl Verdict {
    pub fn is_valid(&self) -> bool {
        matches!(self, Self::Valid { .. })
    }

    /// The label of the candidate whose digest matched, even when the
    /// timestamp is outside tolerance.
    pub fn matched(&self) -> Option<&str> {
        match self {
            Self::Valid { matched, .. } => Some(matched),
            Self::Invalid(InvalidReason::TimestampOutsideTolerance { digest_matched, .. }) => {
                digest_matched.as_deref()
            }
            Self::Invalid(_) => None,
        }
    }

    /// `now - t` when the header could be parsed.
    pub fn skew_secs(&self) -> Option<i64> {
        match self {
            Self::Valid { skew_secs, .. }
            | Self::Invalid(InvalidReason::TimestampOutsideTolerance { skew_secs, .. })
            | Self::Invalid(InvalidReason::NoMatchingSignature { skew_secs, .. }) => {
                Some(*skew_secs)
            }
            Self::Invalid(InvalidReason::MalformedHeader(_)) => None,
        }
    }

    pub fn reason(&self) -> Option<&InvalidReason> {
        match self {
            Self::Valid { .. } => None,
            Self::Invalid(reason) => Some(reason),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Valid {
                matched, skew_secs, ..
            } => write!(
                f,
                "valid: signed with the {matched} secret, {}",
                describe_skew(*skew_secs)
            ),
            Self::Invalid(reason) => write!(f, "invalid: {reason}"),
        }
    }
}

/// Checks a delivery: parses `header`, recomputes the digest of `body` for
/// every candidate and compares it in constant time with every `v1` value,
/// then checks that `|now - t| <= tolerance_secs`. The digest is checked
/// before the clock so that a late delivery still says whether it was
/// genuine.
pub fn verify(
    header: &str,
    body: &[u8],
    candidates: &[Candidate],
    now: i64,
    tolerance_secs: u64,
) -> Verdict {
    verify_with(
        header,
        now,
        tolerance_secs,
        candidates.len(),
        |i| Arc::from(candidates[i].label),
        |i, timestamp| digest(candidates[i].secret, timestamp, body),
    )
}

/// [`verify`] over `count` candidates named by `label` whose digest of the
/// body at a timestamp is `digest`. A well-formed header is read without
/// allocating ([`header::scan`]); anything else goes through
/// [`parse_header`], which names what is wrong.
fn verify_with(
    header: &str,
    now: i64,
    tolerance_secs: u64,
    count: usize,
    label: impl Fn(usize) -> Arc<str>,
    digest: impl Fn(usize, i64) -> [u8; 32],
) -> Verdict {
    let (timestamp, matched) = match header::scan(header) {
        Some(scanned) => (
            scanned.timestamp,
            first_match(count, |i| {
                any_equal(&digest(i, scanned.timestamp), scanned.signatures())
            }),
        ),
        None => match parse_header(header) {
            Ok(parsed) => (parsed.timestamp, parsed_match(&parsed, count, digest)),
            Err(error) => return Verdict::Invalid(InvalidReason::MalformedHeader(error)),
        },
    };
    judge(timestamp, matched.map(label), now, tolerance_secs)
}

fn verify_parsed(
    parsed: &ParsedHeader,
    body: &[u8],
    candidates: &[Candidate],
    now: i64,
    tolerance_secs: u64,
) -> Verdict {
    let matched = parsed_match(parsed, candidates.len(), |i, timestamp| {
        digest(candidates[i].secret, timestamp, body)
    });
    judge(
        parsed.timestamp,
        matched.map(|i| Arc::from(candidates[i].label)),
        now,
        tolerance_secs,
    )
}

/// The first of `count` candidates whose digest at the header's timestamp
/// is one of its `v1` values.
fn parsed_match(
    parsed: &ParsedHeader,
    count: usize,
    digest: impl Fn(usize, i64) -> [u8; 32],
) -> Option<usize> {
    first_match(count, |i| {
        any_equal(
            &digest(i, parsed.timestamp),
            parsed.signatures.iter().map(|s| &s.bytes),
        )
    })
}

/// The verdict once the digest has been checked: `matched` names the
/// candidate that reproduced a `v1`, if any.
fn judge(timestamp: i64, matched: Option<Arc<str>>, now: i64, tolerance_secs: u64) -> Verdict {
    let skew_secs = now.saturating_sub(timestamp);
    if skew_secs.unsigned_abs() > tolerance_secs {
        return Verdict::Invalid(InvalidReason::TimestampOutsideTolerance {
            timestamp,
            skew_secs,
            tolerance_secs,
            digest_matched: matched,
        });
    }
    match matched {
        Some(matched) => Verdict::Valid {
            matched,
            timestamp,
            skew_secs,
        },
        None => Verdict::Invalid(InvalidReason::NoMatchingSignature {
            timestamp,
            skew_secs,
        }),
    }
}

/// Index of the first of `count` candidates for which `hit` holds. Every
/// candidate is tried and each comparison is constant time, so timing
/// reveals neither which byte nor which value differed.
fn first_match(count: usize, hit: impl Fn(usize) -> Choice) -> Option<usize> {
    let mut found = None;
    for i in 0..count {
        let hit = hit(i);
        if found.is_none() && bool::from(hit) {
            found = Some(i);
        }
    }
    found
}

fn any_equal<'s>(
    expected: &[u8; 32],
    signatures: impl IntoIterator<Item = &'s [u8; 32]>,
) -> Choice {
    signatures.into_iter().fold(Choice::from(0), |acc, sig| {
        acc | digests_equal(expected, sig)
    })
}

/// Constant-time equality of two digests: the differences are ORed
/// together without a branch and only the total is turned into a
/// [`Choice`] (one step instead of `subtle`'s one per byte).
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> Choice {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference).ct_eq(&0)
}

fn describe_skew(skew_secs: i64) -> String {
    let magnitude = skew_secs.unsigned_abs();
    match skew_secs {
        0 => "signed this second".to_owned(),
        s if s > 0 => format!("signature is {} old", duration_text::of_secs(magnitude)),
        _ => format!(
            "signature is {} in the future",
            duration_text::of_secs(magnitude)
        ),
    }
}

/// Keys, clock and helpers shared by the unit tests of every file here.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub(crate) const SECRET: &[u8] = b"whsec-test-0123456789abcdefghijklmnopqrstuv";
    pub(crate) const OLD_SECRET: &[u8] = b"whsec-old-0123456789abcdefghijklmnopqrstuvw";
    pub(crate) const T: i64 = 1_795_300_000;

    pub(crate) fn current_and_previous() -> [Candidate<'static>; 2] {
        [
            Candidate {
                label: "current",
                secret: SECRET,
            },
            Candidate {
                label: "previous",
                secret: OLD_SECRET,
            },
        ]
    }

    pub(crate) fn only_current() -> [Candidate<'static>; 1] {
        [Candidate {
            label: "current",
            secret: SECRET,
        }]
    }

    pub(crate) fn hex_of(key: &[u8], parts: &[&[u8]]) -> String {
        // Independent of `hmac_parts`: the RustCrypto API used directly.
        let mut mac = HmacSha256::new_from_slice(key).unwrap();
        for part in parts {
            mac.update(part);
        }
        to_hex(&mac.finalize().into_bytes())
    }

    pub(crate) fn v1(digest_hex: &str) -> String {
        format!("t={T},v1={digest_hex}")
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{
        OLD_SECRET, SECRET, T, current_and_previous, hex_of, only_current, v1,
    };
    use super::*;

    #[test]
    fn sign_reproduces_the_python_vector() {
        // valid-4 from shared/vectors/signatures.json.
        let secret = b"~!@#$%^&*()_+{}|:<>?`-=[]\\;',./0123456789AB";
        assert_eq!(
            sign(secret, 1_795_300_004, b"{\"a\":1}\r\n"),
            "t=1795300004,v1=9a928240ac8edcb8b8409e2ed771db207345e5dd606f1fed3cc53b42048f8b64"
        );
    }

    #[test]
    fn digest_hex_is_lowercase_hmac_over_timestamp_dot_body() {
        let expected = hex_of(SECRET, &[b"1795300000.", b"body"]);
        assert_eq!(digest_hex(SECRET, T, b"body"), expected);
        assert!(!expected.bytes().any(|b| b.is_ascii_uppercase()));
    }

    #[test]
    fn parse_digest_hex_accepts_both_cases_and_rejects_other_lengths() {
        let lower = digest_hex(SECRET, T, b"x");
        let upper = lower.to_ascii_uppercase();
        assert_eq!(parse_digest_hex(&lower), parse_digest_hex(&upper));
        assert!(parse_digest_hex(&lower).is_some());
        assert!(parse_digest_hex(&lower[..63]).is_none());
        assert!(parse_digest_hex(&format!("{lower}0")).is_none());
        assert!(parse_digest_hex(&format!("{}g", &lower[..63])).is_none());
        assert!(parse_digest_hex("é").is_none());
    }

    #[test]
    fn verify_accepts_a_fresh_signature_and_names_the_secret() {
        let header = sign(SECRET, T, b"{}");
        let verdict = verify(&header, b"{}", &current_and_previous(), T + 3, 300);
        assert_eq!(
            verdict,
            Verdict::Valid {
                matched: "current".into(),
                timestamp: T,
                skew_secs: 3
            }
        );
        assert!(verdict.is_valid());
    }

    #[test]
    fn verify_names_the_previous_secret_when_only_it_matches() {
        let header = sign(OLD_SECRET, T, b"{}");
        let verdict = verify(&header, b"{}", &current_and_previous(), T, 300);
        assert_eq!(verdict.matched(), Some("previous"));
        assert!(verdict.is_valid());
    }

    #[test]
    fn verify_tolerance_is_inclusive_both_ways() {
        let header = sign(SECRET, T, b"x");
        let check = |now| verify(&header, b"x", &only_current(), now, 300);
        assert!(check(T + 300).is_valid());
        assert!(check(T - 300).is_valid());
        for now in [T + 301, T - 301] {
            let verdict = check(now);
            assert_eq!(
                verdict,
                Verdict::Invalid(InvalidReason::TimestampOutsideTolerance {
                    timestamp: T,
                    skew_secs: now - T,
                    tolerance_secs: 300,
                    digest_matched: Some("current".into()),
                })
            );
        }
    }

    #[test]
    fn verify_reports_a_late_forgery_as_late_without_a_match() {
        let header = sign(b"someone else", T, b"x");
        let verdict = verify(&header, b"x", &only_current(), T + 1000, 300);
        assert_eq!(verdict.matched(), None);
        assert_eq!(
            verdict.reason().unwrap().code(),
            "timestamp_outside_tolerance"
        );
    }

    #[test]
    fn verify_rejects_a_changed_body_and_no_candidates() {
        let header = sign(SECRET, T, b"x");
        assert_eq!(
            verify(&header, b"y", &only_current(), T, 300),
            Verdict::Invalid(InvalidReason::NoMatchingSignature {
                timestamp: T,
                skew_secs: 0
            })
        );
        assert!(!verify(&header, b"x", &[], T, 300).is_valid());
    }

    #[test]
    fn verify_accepts_an_upper_case_v1() {
        let header = v1(&digest_hex(SECRET, T, b"x").to_ascii_uppercase());
        assert!(verify(&header, b"x", &only_current(), T, 300).is_valid());
    }

    #[test]
    fn verify_survives_extreme_clocks() {
        let header = sign(SECRET, i64::MIN, b"x");
        let verdict = verify(&header, b"x", &only_current(), i64::MAX, u64::MAX);
        assert!(verdict.is_valid(), "{verdict:?}");
        assert!(!verify(&header, b"x", &only_current(), i64::MAX, 300).is_valid());
    }

    #[test]
    fn candidate_debug_hides_the_secret() {
        let shown = format!("{:?}", only_current()[0]);
        assert!(!shown.contains("whsec"), "{shown}");
        assert!(shown.contains("current"), "{shown}");
    }
}
