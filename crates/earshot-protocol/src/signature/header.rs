//! Parsing an `X-SVC-Signature` value: [`parse_header`], the [`HeaderError`]
//! that names the malformed part, and the parsed [`V1Signature`]s.

use super::{HEADER_NAME, MAX_HEADER_LEN, parse_digest_hex};

/// Which part of an `X-SVC-Signature` value is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("the header is empty; expected `t=<unix seconds>,v1=<64 hex characters>`")]
    Empty,
    #[error(
        "the header is {len} bytes long, longer than any valid one (at most {max}); \
         expected `t=<unix seconds>,v1=<64 hex characters>`"
    )]
    TooLong { len: usize, max: usize },
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
/// (as pasted from a log) is accepted. A value over [`MAX_HEADER_LEN`]
/// bytes is [`HeaderError::TooLong`] without being read.
pub fn parse_header(header: &str) -> Result<ParsedHeader, HeaderError> {
    if header.len() > MAX_HEADER_LEN {
        return Err(HeaderError::TooLong {
            len: header.len(),
            max: MAX_HEADER_LEN,
        });
    }
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

/// Most `v1` values [`scan`] keeps; a header with more takes the
/// [`parse_header`] path.
const SCAN_MAX_V1: usize = 4;

/// A well-formed header read without allocating: what [`verify`] needs.
///
/// [`verify`]: super::verify
pub(super) struct Scanned {
    pub(super) timestamp: i64,
    signatures: [[u8; 32]; SCAN_MAX_V1],
    count: usize,
}

impl Scanned {
    pub(super) fn signatures(&self) -> &[[u8; 32]] {
        &self.signatures[..self.count]
    }
}

/// The fast path of [`parse_header`]: `Some` only for a header that
/// [`parse_header`] accepts, with the same timestamp and `v1` bytes, and
/// without touching the heap. `None` for anything else (malformed, or more
/// than [`SCAN_MAX_V1`] `v1` values): the caller then asks [`parse_header`].
pub(super) fn scan(header: &str) -> Option<Scanned> {
    if header.len() > MAX_HEADER_LEN {
        return None;
    }
    let value = strip_header_name(header.trim()).trim();
    let mut timestamp = None;
    let mut scanned = Scanned {
        timestamp: 0,
        signatures: [[0; 32]; SCAN_MAX_V1],
        count: 0,
    };
    for part in value.split(',') {
        let (key, val) = part.split_once('=')?;
        let (key, val) = (key.trim(), val.trim());
        match key {
            "t" if timestamp.is_none() => timestamp = Some(timestamp_value(val)?),
            "t" => return None,
            "v1" => {
                let slot = scanned.signatures.get_mut(scanned.count)?;
                *slot = parse_digest_hex(val)?;
                scanned.count += 1;
            }
            _ => {}
        }
    }
    scanned.timestamp = timestamp?;
    (scanned.count > 0).then_some(scanned)
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
    timestamp_value(value).ok_or_else(|| HeaderError::TimestampNotInteger {
        value: value.to_owned(),
    })
}

/// An optional `-` and decimal digits that fit an `i64`; nothing else.
fn timestamp_value(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<i64>().ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::digest_hex;
    use crate::signature::sign;
    use crate::signature::test_support::{SECRET, T};

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
    fn parse_refuses_a_header_over_the_limit_without_reading_it() {
        let value = sign(SECRET, T, b"{}");
        let padded = format!("{value:<width$}", width = MAX_HEADER_LEN);
        assert_eq!(parse_header(&padded).unwrap().timestamp, T);
        let long = format!("{padded} ");
        assert_eq!(
            parse_header(&long),
            Err(HeaderError::TooLong {
                len: MAX_HEADER_LEN + 1,
                max: MAX_HEADER_LEN
            })
        );
        assert!(scan(&long).is_none());
        let error = parse_header(&"a".repeat(200_000)).unwrap_err();
        assert!(error.to_string().contains("200000 bytes"), "{error}");
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

    /// `scan` must accept exactly what `parse_header` accepts (up to its
    /// `v1` limit) and read the same timestamp and digests.
    fn assert_scan_agrees(header: &str) {
        let parsed = parse_header(header);
        match scan(header) {
            Some(scanned) => {
                let parsed =
                    parsed.unwrap_or_else(|e| panic!("{header:?}: scan took it, parse: {e}"));
                assert_eq!(scanned.timestamp, parsed.timestamp, "{header:?}");
                let bytes: Vec<[u8; 32]> = parsed.signatures.iter().map(|s| s.bytes).collect();
                assert_eq!(scanned.signatures(), &bytes[..], "{header:?}");
            }
            None => {
                if let Ok(parsed) = parsed {
                    assert!(
                        parsed.signatures.len() > SCAN_MAX_V1,
                        "{header:?}: scan refused it"
                    );
                }
            }
        }
    }

    #[test]
    fn scan_agrees_with_parse_on_edge_cases() {
        let d = digest_hex(SECRET, T, b"");
        let a = "a".repeat(64);
        for header in [
            String::new(),
            " ".into(),
            sign(SECRET, T, b"{}"),
            format!("X-SVC-Signature: {}", sign(SECRET, -5, b"")),
            format!("x-svc-signature:t={T},v1={d}"),
            format!(" t = {T} ,\tv1= {d} "),
            format!("v0=abc==,t={T},v1={a},v2=zzz,v1={d}"),
            format!("t={T},v1={d},"),
            format!("t={T},,v1={d}"),
            format!("t={T}, ,v1={d}"),
            format!("t={T},=x,v1={d}"),
            format!("t={T}, = ,v1={d}"),
            format!("t={T},deadbeef,v1={d}"),
            format!("t=1,t=2,v1={d}"),
            format!("t=+5,v1={d}"),
            format!("t=-,v1={d}"),
            format!("t=99999999999999999999,v1={d}"),
            format!("t={T},v1={}", &d[..63]),
            format!("t={T},v1={}g", &d[..63]),
            format!("t={T},v1={d}=="),
            format!("t={T},v0={d}"),
            format!("t={T},v1={d},v1={d},v1={d},v1={d}"),
            format!("t={T},v1={d},v1={d},v1={d},v1={d},v1={d}"),
            format!("{:<width$}", sign(SECRET, T, b""), width = MAX_HEADER_LEN),
            format!(
                "{:<width$}",
                sign(SECRET, T, b""),
                width = MAX_HEADER_LEN + 1
            ),
        ] {
            assert_scan_agrees(&header);
        }
    }

    proptest::proptest! {
        #[test]
        fn scan_agrees_with_parse_on_generated_headers(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(format!("t={T}")),
                    proptest::strategy::Just(format!("v1={}", "Ab".repeat(32))),
                    "[ tv10-9a-fA-F=,:x-]{0,12}",
                    "[ ]?(t|v1|v0|X-SVC-Signature:)[ ]?=[ ]?-?[0-9a-fA-F]{0,66}[ ]?",
                ],
                0..7,
            ),
        ) {
            assert_scan_agrees(&parts.join(","));
        }
    }

    #[test]
    fn signed_timestamps_round_trip_through_the_parser_at_the_extremes() {
        for t in [i64::MIN, -1, 0, i64::MAX] {
            assert_eq!(parse_header(&sign(SECRET, t, b"")).unwrap().timestamp, t);
        }
    }
}
