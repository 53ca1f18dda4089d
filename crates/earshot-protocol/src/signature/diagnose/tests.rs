use super::*;
use crate::signature::json_forms::JsonForms;
use crate::signature::test_support::{
    OLD_SECRET, SECRET, T, current_and_previous, hex_of, only_current, v1,
};
use crate::signature::{HeaderError, Mistake, digest_hex, sign};

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
    assert!(text.contains("6 min 52 s old"), "{text}");
    assert!(text.contains("receiver clock is ahead"), "{text}");
    assert!(text.contains("replay"), "{text}");
    assert!(
        text.contains("1 min 52 s beyond the 5 min tolerance"),
        "{text}"
    );
}

#[test]
fn diagnose_a_future_signature_says_the_receiver_clock_is_behind() {
    let header = sign(SECRET, T, b"x");
    let d = diagnose(&header, b"x", &only_current(), T - 301, 300, None);
    let text = d.findings[0].to_string();
    assert!(text.contains("5 min 1 s in the future"), "{text}");
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
