//! Webhook delivery signatures (spec part 5 C): `X-SVC-Signature:
//! t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<t>." + raw body)>`.
//!
//! This module owns signing ([`sign`]), header parsing ([`parse_header`]),
//! verification against one or more candidate secrets ([`verify`]), the
//! operator-facing explanation of a failure ([`diagnose`]) and fresh secrets
//! ([`generate_secret`]). It is pure: no I/O, no clock (callers pass `now`),
//! and the only outside resource is the OS random generator behind
//! [`generate_secret`]. It knows nothing of HTTP, the emulator or the TUI.

use std::borrow::Cow;
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

/// How far `t` may be from the receiver's clock, either way (spec part 8 C).
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

/// The header that carries the signature on every delivery.
pub const HEADER_NAME: &str = "X-SVC-Signature";

/// Length of a `v1` value: 32 bytes of HMAC-SHA256 as hex.
pub const DIGEST_HEX_LEN: usize = 64;

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
    let prefix = format!("{timestamp}.");
    hmac_parts(secret, &[prefix.as_bytes(), body])
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

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes a 64-character hex digest (either case) to its 32 bytes; `None`
/// when the text is not exactly that. Front ends use it to check a
/// receiver's digest before calling [`diagnose`].
pub fn parse_digest_hex(text: &str) -> Option<[u8; 32]> {
    let raw = text.as_bytes();
    if raw.len() != DIGEST_HEX_LEN {
        return None;
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(raw.chunks_exact(2)) {
        *slot = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Which part of an `X-SVC-Signature` value is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("the header is empty; expected `t=<unix seconds>,v1=<64 hex characters>`")]
    Empty,
    #[error("part {position} is empty (two commas in a row, or a comma at the start or end)")]
    EmptyPart { position: usize },
    #[error("part {position} `{part}` is not of the form `key=value`")]
    PartWithoutEquals { position: usize, part: String },
    #[error("there is no `t=` part; the header must carry the signing time as `t=<unix seconds>`")]
    MissingTimestamp,
    #[error("`t=` appears more than once; a header carries exactly one timestamp")]
    DuplicateTimestamp,
    #[error("`t={value}` is not an integer number of Unix seconds")]
    TimestampNotInteger { value: String },
    #[error("there is no `v1=` signature{}", found_schemes(.other_schemes))]
    MissingV1 { other_schemes: Vec<String> },
    #[error("`v1` value #{index} is {len} characters long; it must be exactly 64 hex characters")]
    V1WrongLength { index: usize, len: usize },
    #[error("`v1` value #{index} contains {found:?}, which is not a hex digit")]
    V1NotHex { index: usize, found: char },
}

fn found_schemes(schemes: &[String]) -> String {
    if schemes.is_empty() {
        String::new()
    } else {
        format!(" (found only: {})", schemes.join(", "))
    }
}

/// One `v1=` value: the text as received (so upper case can be noticed) and
/// its decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Signature {
    pub hex: String,
    pub bytes: [u8; 32],
}

impl V1Signature {
    /// Whether the text uses upper-case hex digits (the platform sends lower case).
    pub fn has_upper_case(&self) -> bool {
        self.hex.bytes().any(|b| b.is_ascii_uppercase())
    }
}

/// A well-formed header: one timestamp, one or more `v1` values, and the
/// names of any other schemes (ignored for verification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedHeader {
    pub timestamp: i64,
    pub signatures: Vec<V1Signature>,
    pub ignored_schemes: Vec<String>,
}

/// Parses an `X-SVC-Signature` value. Whitespace around parts is tolerated,
/// unknown schemes (`v0=` …) are ignored, and a leading `X-SVC-Signature:`
/// (as pasted from a log) is accepted.
pub fn parse_header(header: &str) -> Result<ParsedHeader, HeaderError> {
    let value = strip_header_name(header.trim()).trim();
    if value.is_empty() {
        return Err(HeaderError::Empty);
    }
    let mut timestamp = None;
    let mut signatures = Vec::new();
    let mut ignored_schemes = Vec::new();
    for (i, part) in value.split(',').enumerate() {
        let position = i + 1;
        let part = part.trim();
        if part.is_empty() {
            return Err(HeaderError::EmptyPart { position });
        }
        let Some((key, val)) = part.split_once('=') else {
            return Err(HeaderError::PartWithoutEquals {
                position,
                part: part.to_owned(),
            });
        };
        let (key, val) = (key.trim(), val.trim());
        match key {
            "t" => {
                if timestamp.is_some() {
                    return Err(HeaderError::DuplicateTimestamp);
                }
                timestamp = Some(parse_timestamp(val)?);
            }
            "v1" => {
                let index = signatures.len() + 1;
                signatures.push(parse_v1(val, index)?);
            }
            other => ignored_schemes.push(other.to_owned()),
        }
    }
    let timestamp = timestamp.ok_or(HeaderError::MissingTimestamp)?;
    if signatures.is_empty() {
        return Err(HeaderError::MissingV1 {
            other_schemes: ignored_schemes,
        });
    }
    Ok(ParsedHeader {
        timestamp,
        signatures,
        ignored_schemes,
    })
}

fn strip_header_name(value: &str) -> &str {
    let name_len = HEADER_NAME.len();
    match value.get(..name_len) {
        Some(head) if head.eq_ignore_ascii_case(HEADER_NAME) => {
            let rest = value[name_len..].trim_start();
            rest.strip_prefix(':').unwrap_or(value)
        }
        _ => value,
    }
}

fn parse_timestamp(value: &str) -> Result<i64, HeaderError> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let not_integer = || HeaderError::TimestampNotInteger {
        value: value.to_owned(),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_integer());
    }
    value.parse::<i64>().map_err(|_| not_integer())
}

fn parse_v1(value: &str, index: usize) -> Result<V1Signature, HeaderError> {
    if let Some(found) = value.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(HeaderError::V1NotHex { index, found });
    }
    let bytes = parse_digest_hex(value).ok_or(HeaderError::V1WrongLength {
        index,
        len: value.len(),
    })?;
    Ok(V1Signature {
        hex: value.to_owned(),
        bytes,
    })
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
        digest_matched: Option<String>,
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
                "timestamp outside tolerance: {} (tolerance {tolerance_secs} s)",
                describe_skew(*skew_secs)
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
        matched: String,
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
    match parse_header(header) {
        Ok(parsed) => verify_parsed(&parsed, body, candidates, now, tolerance_secs),
        Err(error) => Verdict::Invalid(InvalidReason::MalformedHeader(error)),
    }
}

fn verify_parsed(
    parsed: &ParsedHeader,
    body: &[u8],
    candidates: &[Candidate],
    now: i64,
    tolerance_secs: u64,
) -> Verdict {
    let matched = matching_candidate(parsed, body, candidates).map(|i| candidates[i].label);
    let timestamp = parsed.timestamp;
    let skew_secs = now.saturating_sub(timestamp);
    if skew_secs.unsigned_abs() > tolerance_secs {
        return Verdict::Invalid(InvalidReason::TimestampOutsideTolerance {
            timestamp,
            skew_secs,
            tolerance_secs,
            digest_matched: matched.map(str::to_owned),
        });
    }
    match matched {
        Some(label) => Verdict::Valid {
            matched: label.to_owned(),
            timestamp,
            skew_secs,
        },
        None => Verdict::Invalid(InvalidReason::NoMatchingSignature {
            timestamp,
            skew_secs,
        }),
    }
}

/// Index of the first candidate whose digest equals some `v1`. Every
/// candidate is tried against every `v1` and each comparison is constant
/// time, so timing reveals neither which byte nor which value differed.
fn matching_candidate(
    parsed: &ParsedHeader,
    body: &[u8],
    candidates: &[Candidate],
) -> Option<usize> {
    let mut found = None;
    for (i, candidate) in candidates.iter().enumerate() {
        let expected = digest(candidate.secret, parsed.timestamp, body);
        let hit = any_equal(&expected, &parsed.signatures);
        if found.is_none() && bool::from(hit) {
            found = Some(i);
        }
    }
    found
}

fn any_equal(expected: &[u8; 32], signatures: &[V1Signature]) -> Choice {
    signatures
        .iter()
        .fold(Choice::from(0), |acc, sig| acc | expected.ct_eq(&sig.bytes))
}

fn describe_skew(skew_secs: i64) -> String {
    let magnitude = skew_secs.unsigned_abs();
    match skew_secs {
        0 => "signed this second".to_owned(),
        s if s > 0 => format!("signature is {magnitude} s old"),
        _ => format!("signature is {magnitude} s in the future"),
    }
}

// ---------------------------------------------------------------------------
// Diagnosis: the common mistakes
// ---------------------------------------------------------------------------

/// A way of getting the signed bytes or the key wrong. [`diagnose`] tries
/// each, in this order (most common first), on both sides: "the header was
/// computed over the body after this change" and "the receiver's digest is
/// what this mistake produces".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mistake {
    /// JSON re-serialised without whitespace, original key order.
    BodyCompacted,
    /// JSON re-serialised with a 2-space indent, original key order.
    BodyPrettyPrinted,
    /// JSON re-serialised compact with object keys sorted.
    BodyKeysSorted,
    /// JSON re-serialised with a 2-space indent and keys sorted.
    BodyKeysSortedPretty,
    /// JSON re-serialised with `", "` and `": "` separators (Python's
    /// `json.dumps` default), original key order.
    BodySpacedSeparators,
    /// As [`Mistake::BodySpacedSeparators`] with keys sorted.
    BodySpacedSeparatorsKeysSorted,
    /// HMAC over the body alone, without `"<t>."`.
    PrefixOmitted,
    /// A `\n` appended to the body.
    TrailingNewlineAdded,
    /// Trailing `\r`/`\n` removed from the body.
    TrailingNewlineStripped,
    /// `\r\n` turned into `\n`.
    CrlfToLf,
    /// Lone `\n` turned into `\r\n`.
    LfToCrlf,
    /// The secret used with a `\n` appended (read from a file untrimmed).
    SecretTrailingNewline,
    /// The secret used with surrounding whitespace removed.
    SecretTrimmed,
}

impl Mistake {
    /// Every mistake, most common first; the order findings are reported in.
    pub const ALL: [Mistake; 13] = [
        Mistake::BodyCompacted,
        Mistake::BodyPrettyPrinted,
        Mistake::BodyKeysSorted,
        Mistake::BodyKeysSortedPretty,
        Mistake::BodySpacedSeparators,
        Mistake::BodySpacedSeparatorsKeysSorted,
        Mistake::PrefixOmitted,
        Mistake::TrailingNewlineAdded,
        Mistake::TrailingNewlineStripped,
        Mistake::CrlfToLf,
        Mistake::LfToCrlf,
        Mistake::SecretTrailingNewline,
        Mistake::SecretTrimmed,
    ];

    /// A stable machine-readable name.
    pub fn code(self) -> &'static str {
        match self {
            Self::BodyCompacted => "body_compacted",
            Self::BodyPrettyPrinted => "body_pretty_printed",
            Self::BodyKeysSorted => "body_keys_sorted",
            Self::BodyKeysSortedPretty => "body_keys_sorted_pretty",
            Self::BodySpacedSeparators => "body_spaced_separators",
            Self::BodySpacedSeparatorsKeysSorted => "body_spaced_separators_keys_sorted",
            Self::PrefixOmitted => "prefix_omitted",
            Self::TrailingNewlineAdded => "trailing_newline_added",
            Self::TrailingNewlineStripped => "trailing_newline_stripped",
            Self::CrlfToLf => "crlf_to_lf",
            Self::LfToCrlf => "lf_to_crlf",
            Self::SecretTrailingNewline => "secret_trailing_newline",
            Self::SecretTrimmed => "secret_trimmed",
        }
    }

    /// What the change does, as a phrase: "the body re-serialised …".
    pub fn describe(self) -> &'static str {
        match self {
            Self::BodyCompacted => {
                "the body re-serialised compact (whitespace removed, key order kept)"
            }
            Self::BodyPrettyPrinted => "the body pretty-printed (2-space indent, key order kept)",
            Self::BodyKeysSorted => "the body re-serialised compact with its keys sorted",
            Self::BodyKeysSortedPretty => "the body pretty-printed with its keys sorted",
            Self::BodySpacedSeparators => {
                "the body re-serialised with `, ` and `: ` separators (Python json.dumps default)"
            }
            Self::BodySpacedSeparatorsKeysSorted => {
                "the body re-serialised with `, ` and `: ` separators and sorted keys"
            }
            Self::PrefixOmitted => "the body alone, without the `<t>.` prefix",
            Self::TrailingNewlineAdded => "the body with a trailing newline added",
            Self::TrailingNewlineStripped => "the body with its trailing newline stripped",
            Self::CrlfToLf => "the body with CRLF line endings turned into LF",
            Self::LfToCrlf => "the body with LF line endings turned into CRLF",
            Self::SecretTrailingNewline => "the secret with a trailing newline",
            Self::SecretTrimmed => "the secret with its surrounding whitespace removed",
        }
    }

    fn sender_advice(self) -> &'static str {
        match self {
            Self::BodyCompacted => {
                "the compact original was signed and the body you have was pretty-printed or \
                 re-formatted after signing; verify the raw request bytes exactly as received"
            }
            Self::BodyPrettyPrinted
            | Self::BodyKeysSorted
            | Self::BodyKeysSortedPretty
            | Self::BodySpacedSeparators
            | Self::BodySpacedSeparatorsKeysSorted => {
                "the body you have was re-serialised after signing; verify the raw request bytes \
                 exactly as received, before any JSON parsing"
            }
            Self::PrefixOmitted => {
                "whoever produced this header signed it wrongly (the platform signs `<t>.` \
                 followed by the body); to build a test header use `earshot sign`"
            }
            Self::TrailingNewlineAdded => {
                "your copy of the body lost a trailing newline (an editor, `$(…)` or a trim); \
                 capture the body byte for byte"
            }
            Self::TrailingNewlineStripped => {
                "your copy of the body has a trailing newline the signed body did not have \
                 (editors and `echo` add one); save it with `printf '%s'` or from the raw capture"
            }
            Self::CrlfToLf => {
                "your copy of the body has CRLF line endings where the signed body had LF \
                 (a Windows editor, git autocrlf or copy-paste)"
            }
            Self::LfToCrlf => {
                "your copy of the body has LF line endings where the signed body had CRLF \
                 (a text-mode read or git autocrlf)"
            }
            Self::SecretTrailingNewline => {
                "the signer's secret ends with a newline (read from a file untrimmed); \
                 platform secrets contain no whitespace, so fix the signer's secret"
            }
            Self::SecretTrimmed => {
                "the secret you gave has surrounding whitespace that the signer's does not; \
                 remove it"
            }
        }
    }

    fn receiver_advice(self) -> &'static str {
        match self {
            Self::BodyCompacted
            | Self::BodyPrettyPrinted
            | Self::BodyKeysSorted
            | Self::BodyKeysSortedPretty
            | Self::BodySpacedSeparators
            | Self::BodySpacedSeparatorsKeysSorted => {
                "the receiver parses the JSON and hashes its own re-serialisation; it must hash \
                 the raw request bytes before any parsing"
            }
            Self::PrefixOmitted => {
                "the receiver must hash `<t>.` (the t from the header and a dot) followed by the \
                 raw body"
            }
            Self::TrailingNewlineAdded => {
                "the receiver appends a newline before hashing; hash the raw bytes unchanged"
            }
            Self::TrailingNewlineStripped => {
                "the receiver strips the trailing newline (strip/trim) before hashing; hash the \
                 raw bytes unchanged"
            }
            Self::CrlfToLf | Self::LfToCrlf => {
                "the receiver converts line endings (a text-mode read); read the body as bytes"
            }
            Self::SecretTrailingNewline => {
                "the receiver's secret ends with a newline (read from a file or env var \
                 untrimmed); strip it"
            }
            Self::SecretTrimmed => {
                "the receiver uses the secret without the whitespace around the one you gave; \
                 check which one the subscription has"
            }
        }
    }

    fn is_body_reserialisation(self) -> bool {
        matches!(
            self,
            Self::BodyCompacted
                | Self::BodyPrettyPrinted
                | Self::BodyKeysSorted
                | Self::BodyKeysSortedPretty
                | Self::BodySpacedSeparators
                | Self::BodySpacedSeparatorsKeysSorted
        )
    }
}

impl fmt::Display for Mistake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SecretTweak {
    AsGiven,
    AppendNewline,
    Trim,
}

/// One way of computing a wrong digest: the bytes hashed after the prefix,
/// whether the prefix is included, and what happens to the secret. Also the
/// other mistakes that lead to exactly the same computation.
struct Variant<'b> {
    mistake: Mistake,
    same_as: Vec<Mistake>,
    with_prefix: bool,
    body: Cow<'b, [u8]>,
    secret: SecretTweak,
}

impl Variant<'_> {
    fn same_computation(&self, with_prefix: bool, body: &[u8], secret: SecretTweak) -> bool {
        self.with_prefix == with_prefix && self.secret == secret && *self.body == *body
    }

    /// The digest this mistake produces with `secret`, or `None` when the
    /// mistake changes nothing for this secret.
    fn digest(&self, secret: &[u8], timestamp: i64) -> Option<[u8; 32]> {
        let key: Cow<[u8]> = match self.secret {
            SecretTweak::AsGiven => Cow::Borrowed(secret),
            SecretTweak::AppendNewline => {
                let mut key = secret.to_vec();
                key.push(b'\n');
                Cow::Owned(key)
            }
            SecretTweak::Trim => {
                let trimmed = secret.trim_ascii();
                if trimmed.len() == secret.len() {
                    return None;
                }
                Cow::Borrowed(trimmed)
            }
        };
        if self.with_prefix {
            Some(digest(&key, timestamp, &self.body))
        } else {
            Some(hmac_parts(&key, &[&self.body]))
        }
    }
}

/// Every mistake that changes the computation for this body, each with the
/// later mistakes that would compute exactly the same thing.
fn variants(body: &[u8]) -> Vec<Variant<'_>> {
    let json = JsonForms::of(body);
    let mut out: Vec<Variant> = Vec::new();
    for mistake in Mistake::ALL {
        let (with_prefix, changed, secret): (bool, Option<Cow<[u8]>>, SecretTweak) = match mistake {
            Mistake::PrefixOmitted => (false, Some(Cow::Borrowed(body)), SecretTweak::AsGiven),
            Mistake::SecretTrailingNewline => {
                (true, Some(Cow::Borrowed(body)), SecretTweak::AppendNewline)
            }
            Mistake::SecretTrimmed => (true, Some(Cow::Borrowed(body)), SecretTweak::Trim),
            m if m.is_body_reserialisation() => (
                true,
                json.as_ref().map(|j| Cow::Owned(j.render(m))),
                SecretTweak::AsGiven,
            ),
            Mistake::TrailingNewlineAdded => {
                let mut changed = body.to_vec();
                changed.push(b'\n');
                (true, Some(Cow::Owned(changed)), SecretTweak::AsGiven)
            }
            Mistake::TrailingNewlineStripped => {
                let end = body
                    .iter()
                    .rposition(|&b| b != b'\n' && b != b'\r')
                    .map_or(0, |i| i + 1);
                (
                    true,
                    Some(Cow::Borrowed(&body[..end])),
                    SecretTweak::AsGiven,
                )
            }
            Mistake::CrlfToLf => (
                true,
                Some(Cow::Owned(crlf_to_lf(body))),
                SecretTweak::AsGiven,
            ),
            Mistake::LfToCrlf => (
                true,
                Some(Cow::Owned(lf_to_crlf(body))),
                SecretTweak::AsGiven,
            ),
            _ => (true, None, SecretTweak::AsGiven),
        };
        let Some(changed) = changed else { continue };
        if with_prefix && secret == SecretTweak::AsGiven && *changed == *body {
            continue; // the mistake changes nothing for this body
        }
        if let Some(earlier) = out
            .iter_mut()
            .find(|v| v.same_computation(with_prefix, &changed, secret))
        {
            earlier.same_as.push(mistake);
            continue;
        }
        out.push(Variant {
            mistake,
            same_as: Vec::new(),
            with_prefix,
            body: changed,
            secret,
        });
    }
    out
}

fn crlf_to_lf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

fn lf_to_crlf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 16);
    for (i, &b) in body.iter().enumerate() {
        if b == b'\n' && (i == 0 || body[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

// ---------------------------------------------------------------------------
// JSON re-serialisation that keeps every token as written
// ---------------------------------------------------------------------------

/// A JSON value whose strings and numbers are the original bytes, so that a
/// re-serialisation changes only whitespace and (when asked) key order,
/// exactly like a parse-and-dump that preserves insertion order.
enum Json<'a> {
    Scalar(&'a [u8]),
    Array(Vec<Json<'a>>),
    Object(Vec<Member<'a>>),
}

/// An object member: the key token as written, and the value.
type Member<'a> = (&'a [u8], Json<'a>);

struct JsonForms<'a> {
    root: Json<'a>,
}

#[derive(Clone, Copy)]
enum Layout {
    Compact,
    Pretty,
    Spaced,
}

/// Nesting beyond this is not re-serialised (serde_json refuses it anyway).
const MAX_JSON_DEPTH: usize = 128;

impl<'a> JsonForms<'a> {
    fn of(body: &'a [u8]) -> Option<Self> {
        // serde_json decides validity (strings, escapes, numbers); the small
        // parser below only has to find the token boundaries.
        serde_json::from_slice::<serde::de::IgnoredAny>(body).ok()?;
        let mut parser = JsonParser { src: body, pos: 0 };
        let root = parser.value(0)?;
        parser.skip_ws();
        (parser.pos == body.len()).then_some(Self { root })
    }

    fn render(&self, mistake: Mistake) -> Vec<u8> {
        let (layout, sorted) = match mistake {
            Mistake::BodyPrettyPrinted => (Layout::Pretty, false),
            Mistake::BodyKeysSorted => (Layout::Compact, true),
            Mistake::BodyKeysSortedPretty => (Layout::Pretty, true),
            Mistake::BodySpacedSeparators => (Layout::Spaced, false),
            Mistake::BodySpacedSeparatorsKeysSorted => (Layout::Spaced, true),
            _ => (Layout::Compact, false),
        };
        let mut out = Vec::new();
        write_json(&self.root, layout, sorted, 0, &mut out);
        out
    }
}

fn write_json(value: &Json, layout: Layout, sorted: bool, depth: usize, out: &mut Vec<u8>) {
    match value {
        Json::Scalar(raw) => out.extend_from_slice(raw),
        Json::Array(items) => write_container(
            b'[',
            b']',
            items.iter().map(|v| (None, v)),
            layout,
            sorted,
            depth,
            out,
        ),
        Json::Object(members) => {
            if sorted {
                let mut keyed: Vec<(Cow<[u8]>, &Member)> =
                    members.iter().map(|m| (decoded_key(m.0), m)).collect();
                keyed.sort_by(|a, b| a.0.cmp(&b.0));
                let ordered = keyed.into_iter().map(|(_, (k, v))| (Some(*k), v));
                write_container(b'{', b'}', ordered, layout, sorted, depth, out)
            } else {
                let ordered = members.iter().map(|(k, v)| (Some(*k), v));
                write_container(b'{', b'}', ordered, layout, sorted, depth, out)
            }
        }
    }
}

fn write_container<'v, 'a: 'v>(
    open: u8,
    close: u8,
    entries: impl ExactSizeIterator<Item = (Option<&'a [u8]>, &'v Json<'a>)>,
    layout: Layout,
    sorted: bool,
    depth: usize,
    out: &mut Vec<u8>,
) {
    out.push(open);
    let empty = entries.len() == 0;
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.extend_from_slice(match layout {
                Layout::Compact | Layout::Pretty => b",",
                Layout::Spaced => b", ",
            });
        }
        if let Layout::Pretty = layout {
            newline_indent(depth + 1, out);
        }
        if let Some(key) = key {
            out.extend_from_slice(key);
            out.extend_from_slice(match layout {
                Layout::Compact => b":",
                Layout::Pretty | Layout::Spaced => b": ",
            });
        }
        write_json(value, layout, sorted, depth + 1, out);
    }
    if let (Layout::Pretty, false) = (layout, empty) {
        newline_indent(depth, out);
    }
    out.push(close);
}

fn newline_indent(depth: usize, out: &mut Vec<u8>) {
    out.push(b'\n');
    out.extend(std::iter::repeat_n(b' ', depth * 2));
}

/// The key as text for sorting (escapes decoded); the raw bytes if that fails.
fn decoded_key(raw: &[u8]) -> Cow<'_, [u8]> {
    match serde_json::from_slice::<String>(raw) {
        Ok(text) => Cow::Owned(text.into_bytes()),
        Err(_) => Cow::Borrowed(raw),
    }
}

struct JsonParser<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> JsonParser<'a> {
    fn skip_ws(&mut self) {
        while matches!(self.src.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        if self.src.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_JSON_DEPTH {
            return None;
        }
        self.skip_ws();
        match *self.src.get(self.pos)? {
            b'{' => {
                self.pos += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Object(members));
                }
                loop {
                    self.skip_ws();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    members.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Json::Object(members));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Json::Array(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::Scalar),
            _ => {
                let start = self.pos;
                while let Some(b) = self.src.get(self.pos) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                (self.pos > start).then(|| Json::Scalar(&self.src[start..self.pos]))
            }
        }
    }

    /// A string token including its quotes, as written.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        if self.src.get(self.pos) != Some(&b'"') {
            return None;
        }
        self.pos += 1;
        loop {
            match *self.src.get(self.pos)? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return self.src.get(start..self.pos);
                }
                _ => self.pos += 1,
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Diagnosis: findings
// ---------------------------------------------------------------------------

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

/// Explains a delivery the way an operator needs it: [`verify`]'s verdict,
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
            if bool::from(any_equal(&digest, &parsed.signatures)) {
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

// ---------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------

/// A fresh subscription secret: `whsec_` followed by the URL-safe base64
/// (no padding) of 32 bytes from the OS CSPRNG — 256 bits of entropy,
/// 49 printable ASCII characters, no whitespace.
pub fn generate_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    let mut secret = String::from("whsec_");
    base64url_into(&bytes, &mut secret);
    Ok(secret)
}

fn base64url_into(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec-test-0123456789abcdefghijklmnopqrstuv";
    const OLD_SECRET: &[u8] = b"whsec-old-0123456789abcdefghijklmnopqrstuvw";
    const T: i64 = 1_795_300_000;

    fn current_and_previous() -> [Candidate<'static>; 2] {
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

    fn only_current() -> [Candidate<'static>; 1] {
        [Candidate {
            label: "current",
            secret: SECRET,
        }]
    }

    fn hex_of(key: &[u8], parts: &[&[u8]]) -> String {
        // Independent of `hmac_parts`: the RustCrypto API used directly.
        let mut mac = HmacSha256::new_from_slice(key).unwrap();
        for part in parts {
            mac.update(part);
        }
        to_hex(&mac.finalize().into_bytes())
    }

    fn v1(digest_hex: &str) -> String {
        format!("t={T},v1={digest_hex}")
    }

    // --- signing -----------------------------------------------------------

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

    // --- parsing -----------------------------------------------------------

    #[test]
    fn parse_tolerates_whitespace_around_parts_and_keys() {
        let d = digest_hex(SECRET, T, b"");
        let parsed = parse_header(&format!("  t = {T} ,\tv1= {d}  ")).unwrap();
        assert_eq!(parsed.timestamp, T);
        assert_eq!(parsed.signatures.len(), 1);
        assert_eq!(parsed.signatures[0].hex, d);
    }

    #[test]
    fn parse_keeps_every_v1_and_ignores_unknown_schemes() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let parsed = parse_header(&format!("v0=abc==,t={T},v1={a},v2=zzz,v1={b}")).unwrap();
        assert_eq!(parsed.signatures.len(), 2);
        assert_eq!(parsed.ignored_schemes, ["v0", "v2"]);
        assert!(!parsed.signatures[0].has_upper_case());
        assert!(parsed.signatures[1].has_upper_case());
        assert_eq!(parsed.signatures[1].hex, b, "raw text is kept");
        assert_eq!(parsed.signatures[1].bytes, [0xbb; 32]);
    }

    #[test]
    fn parse_accepts_a_pasted_header_name() {
        let value = sign(SECRET, T, b"{}");
        let parsed = parse_header(&format!("x-svc-signature: {value}")).unwrap();
        assert_eq!(parsed.timestamp, T);
        let parsed = parse_header(&format!("X-SVC-Signature:{value}")).unwrap();
        assert_eq!(parsed.timestamp, T);
    }

    #[test]
    fn parse_rejects_empty_and_blank_headers() {
        assert_eq!(parse_header(""), Err(HeaderError::Empty));
        assert_eq!(parse_header("  \t "), Err(HeaderError::Empty));
        assert_eq!(parse_header("X-SVC-Signature: "), Err(HeaderError::Empty));
    }

    #[test]
    fn parse_names_an_empty_part_by_position() {
        let d = "0".repeat(64);
        assert_eq!(
            parse_header(&format!("t={T},v1={d},")),
            Err(HeaderError::EmptyPart { position: 3 })
        );
        assert_eq!(
            parse_header(&format!("t={T},,v1={d}")),
            Err(HeaderError::EmptyPart { position: 2 })
        );
    }

    #[test]
    fn parse_names_a_part_without_equals() {
        assert_eq!(
            parse_header(&format!("t={T},deadbeef")),
            Err(HeaderError::PartWithoutEquals {
                position: 2,
                part: "deadbeef".into()
            })
        );
    }

    #[test]
    fn parse_requires_exactly_one_integer_timestamp() {
        let d = "0".repeat(64);
        assert_eq!(
            parse_header(&format!("v1={d}")),
            Err(HeaderError::MissingTimestamp)
        );
        assert_eq!(
            parse_header(&format!("t=1,t=2,v1={d}")),
            Err(HeaderError::DuplicateTimestamp)
        );
        for bad in [
            "",
            "12a",
            "1.5",
            "+5",
            "1e9",
            "-",
            " ",
            "99999999999999999999",
        ] {
            let result = parse_header(&format!("t={bad},v1={d}"));
            assert_eq!(
                result,
                Err(HeaderError::TimestampNotInteger {
                    value: bad.trim().into()
                }),
                "t={bad:?}"
            );
        }
        assert_eq!(parse_header(&format!("t=-5,v1={d}")).unwrap().timestamp, -5);
    }

    #[test]
    fn parse_requires_a_v1_and_lists_the_schemes_it_found() {
        let error = parse_header(&format!("t={T},v0={}", "0".repeat(64))).unwrap_err();
        assert_eq!(
            error,
            HeaderError::MissingV1 {
                other_schemes: vec!["v0".into()]
            }
        );
        assert!(error.to_string().contains("found only: v0"), "{error}");
        assert_eq!(
            parse_header(&format!("t={T}")),
            Err(HeaderError::MissingV1 {
                other_schemes: vec![]
            })
        );
    }

    #[test]
    fn parse_rejects_a_v1_of_the_wrong_length_or_alphabet() {
        assert_eq!(
            parse_header(&format!("t={T},v1={}", "a".repeat(63))),
            Err(HeaderError::V1WrongLength { index: 1, len: 63 })
        );
        assert_eq!(
            parse_header(&format!("t={T},v1={},v1=", "a".repeat(64))),
            Err(HeaderError::V1WrongLength { index: 2, len: 0 })
        );
        assert_eq!(
            parse_header(&format!("t={T},v1={}x", "a".repeat(63))),
            Err(HeaderError::V1NotHex {
                index: 1,
                found: 'x'
            })
        );
    }

    #[test]
    fn signed_timestamps_round_trip_through_the_parser_at_the_extremes() {
        for t in [i64::MIN, -1, 0, i64::MAX] {
            assert_eq!(parse_header(&sign(SECRET, t, b"")).unwrap().timestamp, t);
        }
    }

    // --- verification ------------------------------------------------------

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

    // --- diagnosis ---------------------------------------------------------

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

    // --- JSON re-serialisation ---------------------------------------------

    #[test]
    fn pretty_and_sorted_forms_match_serde_json_for_sorted_input() {
        // serde_json's Value keeps keys sorted, so on input whose keys are
        // already sorted both must produce the same text.
        let body = br#" { "a" : [ 1 , { } , [ ] , "x\"y" ] , "b" : { "c" : null , "d" : -1.5 } } "#;
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyPrettyPrinted),
            serde_json::to_vec_pretty(&value).unwrap()
        );
        assert_eq!(
            forms.render(Mistake::BodyCompacted),
            serde_json::to_vec(&value).unwrap()
        );
    }

    #[test]
    fn sorted_forms_sort_by_decoded_key_and_keep_duplicates_in_order() {
        let body = br#"{"b":1,"\u0061":2,"a":3,"A":4}"#;
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyKeysSorted),
            br#"{"A":4,"\u0061":2,"a":3,"b":1}"#
        );
    }

    #[test]
    fn compact_form_keeps_whitespace_inside_strings() {
        let body = b"{ \"k y\" : \"a , b : c\\\" \" }";
        let forms = JsonForms::of(body).unwrap();
        assert_eq!(
            forms.render(Mistake::BodyCompacted),
            b"{\"k y\":\"a , b : c\\\" \"}"
        );
    }

    #[test]
    fn line_ending_conversions_touch_only_line_endings() {
        assert_eq!(crlf_to_lf(b"a\r\nb\rc\n\r\n"), b"a\nb\rc\n\n");
        assert_eq!(lf_to_crlf(b"\na\r\nb\n"), b"\r\na\r\nb\r\n");
    }

    // --- secrets -----------------------------------------------------------

    #[test]
    fn base64url_matches_rfc_4648_vectors() {
        for (input, expected) in [
            (&b""[..], ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foobar", "Zm9vYmFy"),
            (&[0xfb, 0xff, 0xbf], "-_-_"),
        ] {
            let mut out = String::new();
            base64url_into(input, &mut out);
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn generated_secrets_follow_the_subscription_rules_and_differ() {
        let a = generate_secret().unwrap();
        let b = generate_secret().unwrap();
        assert_ne!(a, b);
        for s in [&a, &b] {
            assert!((32..=256).contains(&s.len()), "{}", s.len());
            assert!(s.bytes().all(|c| (0x21..=0x7e).contains(&c)));
            // 43 base64 symbols carry 258 bits, of which the 256 random ones.
            assert_eq!(s.len(), "whsec_".len() + 43);
        }
    }
}
