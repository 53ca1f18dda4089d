//! Properties of the signature module over generated inputs: round trips,
//! tamper detection, several `v1` values, fresh secrets, parsers and the
//! diagnosis that never panic, and every receiver mistake named correctly
//! on arbitrary JSON objects.

use std::collections::HashSet;

use earshot_core::signature::{
    Candidate, DEFAULT_TOLERANCE_SECS, Finding, InvalidReason, Mistake, Verdict, diagnose,
    digest_hex, generate_secret, parse_header, sign, verify,
};
use proptest::prelude::*;

// HMAC-SHA256 straight from RustCrypto, independent of the module.
use crate::common::hmac_hex;

fn current(secret: &[u8]) -> [Candidate<'_>; 1] {
    [Candidate {
        label: "current",
        secret,
    }]
}

const TOLERANCE: u64 = DEFAULT_TOLERANCE_SECS;

fn timestamps() -> impl Strategy<Value = i64> {
    0i64..4_000_000_000
}

fn skews() -> impl Strategy<Value = i64> {
    -(TOLERANCE as i64)..=(TOLERANCE as i64)
}

proptest! {
    #[test]
    fn a_signed_delivery_verifies_with_its_secret(
        secret in proptest::collection::vec(any::<u8>(), 0..300),
        body in proptest::collection::vec(any::<u8>(), 0..4096),
        t in timestamps(),
        skew in skews(),
    ) {
        let header = sign(&secret, t, &body);
        let verdict = verify(&header, &body, &current(&secret), t + skew, TOLERANCE);
        prop_assert_eq!(
            verdict,
            Verdict::Valid { matched: "current".into(), timestamp: t, skew_secs: skew }
        );
    }

    #[test]
    fn flipping_any_bit_of_the_body_invalidates_it(
        secret in proptest::collection::vec(any::<u8>(), 1..64),
        body in proptest::collection::vec(any::<u8>(), 1..2048),
        index in any::<prop::sample::Index>(),
        bit in 0u8..8,
        t in timestamps(),
    ) {
        let header = sign(&secret, t, &body);
        let mut tampered = body.clone();
        tampered[index.index(body.len())] ^= 1 << bit;
        let verdict = verify(&header, &tampered, &current(&secret), t, TOLERANCE);
        prop_assert_eq!(
            verdict,
            Verdict::Invalid(InvalidReason::NoMatchingSignature { timestamp: t, skew_secs: 0 })
        );
    }

    #[test]
    fn a_changed_timestamp_invalidates_it(
        secret in proptest::collection::vec(any::<u8>(), 1..64),
        body in proptest::collection::vec(any::<u8>(), 0..512),
        t in timestamps(),
        delta in prop_oneof![-(TOLERANCE as i64)..0, 1..=(TOLERANCE as i64)],
    ) {
        let header = sign(&secret, t, &body);
        let moved = header.replacen(&format!("t={t}"), &format!("t={}", t + delta), 1);
        let verdict = verify(&moved, &body, &current(&secret), t, TOLERANCE);
        prop_assert!(!verdict.is_valid(), "{:?}", verdict);
        prop_assert_eq!(verdict.matched(), None);
    }

    #[test]
    fn another_secret_invalidates_it(
        secret in proptest::collection::vec(any::<u8>(), 0..64),
        other in proptest::collection::vec(any::<u8>(), 0..64),
        body in proptest::collection::vec(any::<u8>(), 0..512),
        t in timestamps(),
    ) {
        prop_assume!(secret != other);
        let header = sign(&other, t, &body);
        let verdict = verify(&header, &body, &current(&secret), t, TOLERANCE);
        prop_assert!(!verdict.is_valid());
    }

    #[test]
    fn one_good_v1_among_many_is_enough(
        secret in proptest::collection::vec(any::<u8>(), 1..64),
        body in proptest::collection::vec(any::<u8>(), 0..512),
        decoys in proptest::collection::vec(any::<[u8; 32]>(), 0..6),
        position in any::<prop::sample::Index>(),
        t in timestamps(),
    ) {
        let mut values: Vec<String> = decoys
            .iter()
            .map(|d| d.iter().map(|b| format!("{b:02x}")).collect())
            .collect();
        values.insert(position.index(values.len() + 1), digest_hex(&secret, t, &body));
        let header = format!(
            "t={t},{}",
            values.iter().map(|v| format!("v1={v}")).collect::<Vec<_>>().join(",")
        );
        prop_assert!(verify(&header, &body, &current(&secret), t, TOLERANCE).is_valid());

        // And none good is not enough.
        values.retain(|v| *v != digest_hex(&secret, t, &body));
        if !values.is_empty() {
            let header = format!(
                "t={t},{}",
                values.iter().map(|v| format!("v1={v}")).collect::<Vec<_>>().join(",")
            );
            prop_assert!(!verify(&header, &body, &current(&secret), t, TOLERANCE).is_valid());
        }
    }

    #[test]
    fn parse_header_never_panics(header in any::<String>()) {
        let _ = parse_header(&header);
    }

    #[test]
    fn parse_header_never_panics_on_near_miss_headers(
        header in "(X-SVC-Signature:)?[ tv01=,a-fA-F9x:-]{0,160}",
    ) {
        let _ = parse_header(&header);
    }

    #[test]
    fn diagnose_never_panics(
        header in prop_oneof![any::<String>(), "[ tv01=,a-f9-]{0,150}"],
        body in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..256),
            "[\\[\\]{}\":, \\n\\r\\\\a-c0-9]{0,64}".prop_map(String::into_bytes),
        ],
        secrets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..3),
        now in any::<i64>(),
        tolerance in any::<u64>(),
        receiver in proptest::option::of(prop_oneof![any::<String>(), "[0-9a-fA-F]{64}"]),
    ) {
        let candidates: Vec<Candidate> = secrets
            .iter()
            .map(|s| Candidate { label: "x", secret: s })
            .collect();
        let d = diagnose(&header, &body, &candidates, now, tolerance, receiver.as_deref());
        for finding in &d.findings {
            prop_assert!(!finding.to_string().is_empty());
        }
        prop_assert_eq!(d.is_valid(), verify(&header, &body, &candidates, now, tolerance).is_valid());
    }

    #[test]
    fn diagnose_never_panics_on_signed_json_bodies(
        json in json_object(),
        ws in whitespace(),
        secret in "[!-~]{32,48}",
        t in timestamps(),
        skew in any::<i16>(),
    ) {
        let body = render(&json, Layout::Raw(ws));
        let header = sign(secret.as_bytes(), t, &body);
        let d = diagnose(&header, &body, &current(secret.as_bytes()), t + i64::from(skew), 300, None);
        prop_assert_eq!(d.is_valid(), i64::from(skew).unsigned_abs() <= 300);
    }

    #[test]
    fn every_mistake_is_named_on_both_sides_for_json_objects(
        json in json_object(),
        ws in whitespace(),
        trailing in prop_oneof![Just(""), Just("\n"), Just("\r\n")],
        secret in "[!-~]{32,48}",
        t in timestamps(),
    ) {
        let mut body = render(&json, Layout::Raw(ws));
        body.extend_from_slice(trailing.as_bytes());
        for mistake in Mistake::ALL {
            check_mistake(mistake, &json, &body, secret.as_bytes(), t)?;
        }
    }
}

#[test]
fn generated_secrets_follow_the_subscription_rules_and_never_repeat() {
    let mut seen = HashSet::new();
    for _ in 0..500 {
        let secret = generate_secret().unwrap();
        assert!((32..=256).contains(&secret.len()), "{} chars", secret.len());
        assert!(
            secret.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "not printable ASCII without whitespace: {secret:?}"
        );
        assert!(seen.insert(secret), "a secret repeated");
    }
}

/// Signs (or has the receiver hash) `body` the way `mistake` does, and
/// checks that the diagnosis names `mistake` — or, when an earlier mistake
/// hashes exactly the same bytes, names that one and lists `mistake` with it.
fn check_mistake(
    mistake: Mistake,
    json: &Json,
    body: &[u8],
    secret: &[u8],
    t: i64,
) -> Result<(), TestCaseError> {
    let padded = [b"  ", secret, b"\t"].concat();
    let (given, key): (&[u8], Vec<u8>) = match mistake {
        Mistake::SecretTrailingNewline => (secret, [secret, b"\n"].concat()),
        Mistake::SecretTrimmed => (&padded, secret.to_vec()),
        _ => (secret, secret.to_vec()),
    };
    let hashed = mistaken_bytes(mistake, json, body);
    let prefix = format!("{t}.");
    let theirs = if mistake == Mistake::PrefixOmitted {
        hmac_hex(&key, &[&hashed])
    } else {
        hmac_hex(&key, &[prefix.as_bytes(), &hashed])
    };
    let changes_nothing = hashed == body && key == given && mistake != Mistake::PrefixOmitted;
    let names_it = |finding: &Finding| match finding {
        Finding::HeaderComputedOver {
            mistake: named,
            same_as,
            label,
        }
        | Finding::ReceiverMistake {
            mistake: named,
            same_as,
            label,
        } => label == "current" && (*named == mistake || same_as.contains(&mistake)),
        _ => false,
    };
    let candidates = current(given);

    // Receiver side: the header is right, the receiver computed `theirs`.
    let header = sign(given, t, body);
    let d = diagnose(&header, body, &candidates, t, 300, Some(&theirs));
    prop_assert!(d.is_valid());
    if changes_nothing {
        prop_assert_eq!(
            &d.findings,
            &vec![Finding::ReceiverDigestCorrect {
                label: "current".into()
            }],
            "{:?}",
            mistake
        );
    } else {
        prop_assert_eq!(d.findings.len(), 1, "{:?}: {:?}", mistake, d.findings);
        prop_assert!(
            names_it(&d.findings[0]),
            "{:?} not named: {:?}",
            mistake,
            d.findings
        );
    }

    // Sender side: the header itself was computed that way.
    let header = format!("t={t},v1={theirs}");
    let d = diagnose(&header, body, &candidates, t, 300, None);
    if changes_nothing {
        prop_assert!(d.is_valid());
    } else {
        prop_assert!(!d.is_valid());
        prop_assert!(
            names_it(&d.findings[0]),
            "{:?} not named: {:?}",
            mistake,
            d.findings
        );
    }
    Ok(())
}

/// The bytes `mistake` hashes in place of `body`, computed by this test's
/// own renderer from the generated structure.
fn mistaken_bytes(mistake: Mistake, json: &Json, body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(body.to_vec()).unwrap();
    match mistake {
        Mistake::BodyCompacted => render(json, Layout::Compact),
        Mistake::BodyPrettyPrinted => render(json, Layout::Pretty),
        Mistake::BodyKeysSorted => render(&sorted(json), Layout::Compact),
        Mistake::BodyKeysSortedPretty => render(&sorted(json), Layout::Pretty),
        Mistake::BodySpacedSeparators => render(json, Layout::Spaced),
        Mistake::BodySpacedSeparatorsKeysSorted => render(&sorted(json), Layout::Spaced),
        Mistake::TrailingNewlineAdded => [body, b"\n"].concat(),
        Mistake::TrailingNewlineStripped => text.trim_end_matches(['\r', '\n']).into(),
        // The generated bodies hold no `\r` outside CRLF pairs.
        Mistake::CrlfToLf => text.replace("\r\n", "\n").into(),
        Mistake::LfToCrlf => text.replace("\r\n", "\n").replace('\n', "\r\n").into(),
        Mistake::PrefixOmitted | Mistake::SecretTrailingNewline | Mistake::SecretTrimmed => {
            body.to_vec()
        }
    }
}

// --- a small JSON model with its own renderer ---------------------------------

#[derive(Clone, Debug)]
enum Json {
    Num(i64),
    Str(String),
    Bool(bool),
    Null,
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

#[derive(Clone, Copy)]
enum Layout {
    /// As a sender might write it, with this whitespace around every token.
    Raw(&'static str),
    Compact,
    Pretty,
    Spaced,
}

fn whitespace() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(""),
        Just(" "),
        Just("\n"),
        Just("\t"),
        Just("\r\n  "),
        Just("  ")
    ]
}

fn unique_keys(members: Vec<(String, Json)>) -> Vec<(String, Json)> {
    let mut seen = HashSet::new();
    members
        .into_iter()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect()
}

fn json_value() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(|n| Json::Num(n.into())),
        "[a-z ,:]{0,8}".prop_map(Json::Str),
        any::<bool>().prop_map(Json::Bool),
        Just(Json::Null),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Json::Arr),
            proptest::collection::vec(("[a-e]{1,3}", inner), 0..4)
                .prop_map(|m| Json::Obj(unique_keys(m))),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Json> {
    proptest::collection::vec(("[a-f]{1,3}", json_value()), 0..6)
        .prop_map(|m| Json::Obj(unique_keys(m)))
}

fn sorted(json: &Json) -> Json {
    match json {
        Json::Arr(items) => Json::Arr(items.iter().map(sorted).collect()),
        Json::Obj(members) => {
            let mut members: Vec<(String, Json)> = members
                .iter()
                .map(|(k, v)| (k.clone(), sorted(v)))
                .collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Obj(members)
        }
        other => other.clone(),
    }
}

fn render(json: &Json, layout: Layout) -> Vec<u8> {
    let mut out = String::new();
    write(json, layout, 0, &mut out);
    out.into_bytes()
}

fn write(json: &Json, layout: Layout, depth: usize, out: &mut String) {
    match json {
        Json::Num(n) => out.push_str(&n.to_string()),
        Json::Str(s) => out.push_str(&format!("\"{s}\"")),
        Json::Bool(b) => out.push_str(&b.to_string()),
        Json::Null => out.push_str("null"),
        Json::Arr(items) => {
            let entries: Vec<(Option<&str>, &Json)> = items.iter().map(|v| (None, v)).collect();
            write_entries('[', ']', &entries, layout, depth, out);
        }
        Json::Obj(members) => {
            let entries: Vec<(Option<&str>, &Json)> =
                members.iter().map(|(k, v)| (Some(k.as_str()), v)).collect();
            write_entries('{', '}', &entries, layout, depth, out);
        }
    }
}

fn write_entries(
    open: char,
    close: char,
    entries: &[(Option<&str>, &Json)],
    layout: Layout,
    depth: usize,
    out: &mut String,
) {
    let (comma, colon) = match layout {
        Layout::Raw(ws) => (format!("{ws},{ws}"), format!("{ws}:{ws}")),
        Layout::Compact => (",".into(), ":".into()),
        Layout::Pretty => (",".into(), ": ".into()),
        Layout::Spaced => (", ".into(), ": ".into()),
    };
    let indent = |d: usize| format!("\n{}", "  ".repeat(d));
    out.push(open);
    if entries.is_empty() {
        out.push(close);
        return;
    }
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(&comma);
        }
        match layout {
            Layout::Pretty => out.push_str(&indent(depth + 1)),
            Layout::Raw(ws) if i == 0 => out.push_str(ws),
            _ => {}
        }
        if let Some(key) = key {
            out.push_str(&format!("\"{key}\"{colon}"));
        }
        write(value, layout, depth + 1, out);
    }
    match layout {
        Layout::Pretty => out.push_str(&indent(depth)),
        Layout::Raw(ws) => out.push_str(ws),
        _ => {}
    }
    out.push(close);
}
