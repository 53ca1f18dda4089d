//! `earshot sign` and `earshot verify` as an operator runs them: exit codes
//! (0 valid, 1 invalid, 2 bad input), the diagnosis on standard output, and
//! secrets never printed in full.

use std::path::Path;
use std::process::{Command, Output};

const SECRET: &str = "whsec-cli-test-0123456789abcdefghijklmnop";
const OLD_SECRET: &str = "whsec-cli-old-0123456789abcdefghijklmnopq";
const T: &str = "1795300000";

fn earshot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_earshot"))
        .args(args)
        .output()
        .expect("run the earshot binary")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_body(dir: &Path, name: &str, body: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.to_str().unwrap().to_owned()
}

fn sign_file(secret: &str, file: &str) -> String {
    let out = earshot(&[
        "sign",
        "--secret",
        secret,
        "--body-file",
        file,
        "--timestamp",
        T,
    ]);
    assert_eq!(out.status.code(), Some(0), "sign failed: {}", stderr(&out));
    let header = stdout(&out).trim().to_owned();
    assert!(header.starts_with(&format!("t={T},v1=")), "{header}");
    header
}

/// `earshot verify --header HEADER --body-file FILE --secret SECRET`, then
/// `extra`.
fn verify(header: &str, body_file: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "verify",
        "--header",
        header,
        "--body-file",
        body_file,
        "--secret",
        SECRET,
    ];
    args.extend_from_slice(extra);
    earshot(&args)
}

#[test]
fn a_signed_body_verifies_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{\"event\":\"call.ended\"}");
    let header = sign_file(SECRET, &file);
    let out = verify(&header, &file, &["--now", T]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("valid"), "{text}");
    assert!(text.contains("current"), "{text}");
    assert!(!text.contains(SECRET), "secret printed in full: {text}");
}

#[test]
fn sign_prints_the_same_value_as_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.bin", &[0, 1, 2, 255, b'\n']);
    let header = sign_file(SECRET, &file);
    assert_eq!(
        header,
        earshot_core::signature::sign(SECRET.as_bytes(), 1_795_300_000, &[0, 1, 2, 255, b'\n'])
    );
}

#[test]
fn a_tampered_body_exits_1_and_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{\"amount\":1}");
    let header = sign_file(SECRET, &file);
    let tampered = write_body(dir.path(), "tampered.json", b"{\"amount\":9}");
    let out = verify(&header, &tampered, &["--now", T]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("✗"), "{text}");
    assert!(text.contains("body differs from what was signed"), "{text}");
    assert!(text.contains("Next:"), "{text}");
    assert!(!text.contains(SECRET), "secret printed in full: {text}");
}

#[test]
fn a_pretty_printed_copy_of_the_body_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{\"b\":1,\"a\":2}");
    let header = sign_file(SECRET, &file);
    let pretty = write_body(
        dir.path(),
        "pretty.json",
        b"{\n  \"b\": 1,\n  \"a\": 2\n}\n",
    );
    let out = verify(&header, &pretty, &["--now", T]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("pretty-printed"), "{text}");
}

#[test]
fn json_output_carries_the_verdict_and_coded_findings() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{}");
    let header = sign_file(OLD_SECRET, &file);
    let out = verify(
        &header,
        &file,
        &["--secret", OLD_SECRET, "--now", "1795300412", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["valid"], false);
    assert_eq!(value["matched"], "previous");
    assert_eq!(value["skew_secs"], 412);
    let codes: Vec<&str> = value["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["timestamp_outside_tolerance", "matched_previous_secret"]
    );
    let first = value["findings"][0]["message"].as_str().unwrap();
    assert!(first.contains("6 min 52 s old"), "{first}");
}

#[test]
fn a_receiver_digest_without_the_prefix_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{\"a\":1}");
    let header = sign_file(SECRET, &file);
    // What a receiver that forgot `<t>.` computes.
    let theirs = earshot_core::signature::parse_header(&header).unwrap();
    assert_eq!(theirs.signatures.len(), 1);
    let forgot_prefix = {
        use hmac::{Hmac, KeyInit, Mac};
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(b"{\"a\":1}");
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let out = verify(
        &header,
        &file,
        &["--now", T, "--receiver-digest", &forgot_prefix],
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the header itself is fine: {text}"
    );
    assert!(text.contains("without the `<t>.` prefix"), "{text}");
}

#[test]
fn a_missing_body_file_exits_2_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["sign", "--secret", SECRET, "--body-file", missing],
        vec![
            "verify",
            "--header",
            "t=1,v1=00",
            "--body-file",
            missing,
            "--secret",
            SECRET,
        ],
    ] {
        let out = earshot(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("nope.json"), "{err}");
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
}

#[test]
fn a_malformed_receiver_digest_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{}");
    let header = sign_file(SECRET, &file);
    let out = verify(&header, &file, &["--receiver-digest", "xyz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--receiver-digest"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_malformed_header_exits_1_and_names_the_part() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_body(dir.path(), "body.json", b"{}");
    let out = earshot(&[
        "verify",
        "--header",
        "t=soon,v1=abc",
        "--body-file",
        &file,
        "--secret",
        SECRET,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("`t=soon`"), "{}", stdout(&out));
}
