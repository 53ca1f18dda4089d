//! The signature module against vectors it did not compute:
//! `tests/it/data/signatures.json` (made with Python's `hmac`, copied into the
//! crate so a fresh clone has it), and Python's `hmac` run live over random
//! bodies, secrets and timestamps.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use earshot_core::signature::{
    Candidate, DEFAULT_TOLERANCE_SECS, Finding, InvalidReason, Mistake, Verdict, diagnose, sign,
    verify,
};
use serde_json::Value;

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/data/signatures.json")
}

fn load_vectors() -> Value {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read the signature vectors at {}: {error}",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("signatures.json is valid JSON")
}

/// Standard base64 (with padding), enough for the vectors.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = ALPHABET
            .iter()
            .position(|&a| a == c)
            .unwrap_or_else(|| panic!("not base64: {c:?}")) as u32;
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

struct Vector {
    name: String,
    secret: String,
    timestamp: Option<i64>,
    body: Vec<u8>,
    header: String,
    now: i64,
    valid: bool,
    why: Option<String>,
}

fn vectors() -> Vec<Vector> {
    let root = load_vectors();
    assert_eq!(
        root["tolerance_seconds"].as_u64(),
        Some(DEFAULT_TOLERANCE_SECS),
        "the vectors assume the spec's tolerance"
    );
    let cases = root["cases"].as_array().expect("`cases` is an array");
    assert!(
        cases.len() >= 10,
        "expected the full set, got {}",
        cases.len()
    );
    cases
        .iter()
        .map(|c| Vector {
            name: c["name"].as_str().unwrap().to_owned(),
            secret: c["secret"].as_str().unwrap().to_owned(),
            timestamp: c["timestamp"].as_i64(),
            body: base64_decode(c["body_base64"].as_str().unwrap()),
            header: c["header"].as_str().unwrap().to_owned(),
            now: c["now"].as_i64().unwrap(),
            valid: c["valid"].as_bool().unwrap(),
            why: c["why"].as_str().map(str::to_owned),
        })
        .collect()
}

fn candidates(v: &Vector) -> [Candidate<'_>; 1] {
    [Candidate {
        label: "current",
        secret: v.secret.as_bytes(),
    }]
}

#[test]
fn base64_helper_decodes_a_known_value() {
    assert_eq!(base64_decode("eyJhIjoxfQ0K"), b"{\"a\":1}\r\n");
    assert_eq!(base64_decode(""), b"");
}

#[test]
fn verify_agrees_with_every_vector() {
    for v in vectors() {
        let verdict = verify(
            &v.header,
            &v.body,
            &candidates(&v),
            v.now,
            DEFAULT_TOLERANCE_SECS,
        );
        assert_eq!(verdict.is_valid(), v.valid, "{}: {verdict:?}", v.name);
    }
}

#[test]
fn sign_reproduces_every_valid_header_exactly() {
    let mut signed = 0;
    for v in vectors().into_iter().filter(|v| v.valid) {
        let Some(timestamp) = v.timestamp else {
            // Valid cases without their own timestamp reuse another's header;
            // the header's t is what was signed.
            continue;
        };
        if v.header.matches("v1=").count() != 1 {
            continue; // several v1 values: only one of them is ours
        }
        assert_eq!(
            sign(v.secret.as_bytes(), timestamp, &v.body),
            v.header,
            "{}",
            v.name
        );
        signed += 1;
    }
    assert!(signed >= 5, "only {signed} valid vectors were signed");
}

/// What each invalid vector's `why` says, as the finding that must name it.
fn expected_cause(v: &Vector) -> &'static str {
    let why = v
        .why
        .as_deref()
        .unwrap_or_else(|| panic!("{}: no why", v.name));
    match why {
        w if w.contains("body differs") => "body_changed",
        w if w.contains("s old") || w.contains("in the future") => "timestamp_outside_tolerance",
        w if w.contains("without the '<t>.' prefix") => "prefix_omitted",
        w if w.contains("another secret") => "wrong_secret",
        w if w.contains("pretty-printed after signing") => "body_compacted",
        other => panic!("{}: no expectation for why = {other:?}", v.name),
    }
}

#[test]
fn diagnose_names_the_cause_each_invalid_vector_states() {
    let mut checked = 0;
    for v in vectors().into_iter().filter(|v| !v.valid) {
        let d = diagnose(
            &v.header,
            &v.body,
            &candidates(&v),
            v.now,
            DEFAULT_TOLERANCE_SECS,
            None,
        );
        assert!(!d.is_valid(), "{}", v.name);
        let first = &d.findings[0];
        let all: Vec<String> = d.findings.iter().map(ToString::to_string).collect();
        match expected_cause(&v) {
            "body_changed" => {
                assert!(matches!(
                    d.verdict,
                    Verdict::Invalid(InvalidReason::NoMatchingSignature { .. })
                ));
                assert!(d.has("body_changed"), "{}: {all:#?}", v.name);
            }
            "timestamp_outside_tolerance" => {
                let Finding::TimestampOutsideTolerance { skew_secs, .. } = first else {
                    panic!("{}: {all:#?}", v.name);
                };
                assert_eq!(skew_secs.unsigned_abs(), 301, "{}", v.name);
                assert_eq!(
                    d.verdict.matched(),
                    Some("current"),
                    "digest itself is fine"
                );
                let text = first.to_string();
                assert!(text.contains("5 min 1 s"), "{text}");
                let direction = if v.why.as_deref().unwrap().contains("future") {
                    "in the future"
                } else {
                    "old"
                };
                assert!(text.contains(direction), "{}: {text}", v.name);
            }
            "prefix_omitted" => {
                assert_eq!(first.mistake(), Some(Mistake::PrefixOmitted), "{all:#?}");
                assert!(first.to_string().contains("without the `<t>.` prefix"));
            }
            "wrong_secret" => {
                assert_eq!(first, &Finding::WrongSecret, "{}: {all:#?}", v.name);
                assert!(first.to_string().contains("secret you did not give"));
            }
            "body_compacted" => {
                assert_eq!(first.mistake(), Some(Mistake::BodyCompacted), "{all:#?}");
                assert!(first.to_string().contains("pretty-printed"), "{all:#?}");
            }
            _ => unreachable!(),
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} invalid vectors were checked");
}

// --- live cross-check with Python -------------------------------------------

/// Reproducible pseudo-random test data from a printed seed.
struct Rng(fastrand::Rng);

impl Rng {
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.0.u8(..)).collect()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.u64(..n)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const PYTHON: &str = r#"
import hashlib, hmac, sys
for line in sys.stdin:
    secret, t, body = line.rstrip("\n").split(" ")
    msg = t.encode() + b"." + bytes.fromhex(body)
    print("t=%s,v1=%s" % (t, hmac.new(bytes.fromhex(secret), msg, hashlib.sha256).hexdigest()))
"#;

#[test]
fn sign_agrees_with_python_hmac_on_random_inputs() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(fastrand::Rng::with_seed(seed));
    // Fixed shapes first: empty body, 1 MiB, every byte value, empty secret,
    // a secret longer than the SHA-256 block.
    let mut cases: Vec<(Vec<u8>, i64, Vec<u8>)> = vec![
        (b"k".to_vec(), 0, Vec::new()),
        (rng.bytes(40), 1_795_300_000, rng.bytes(1 << 20)),
        (rng.bytes(32), 1_795_300_001, (0..=255).collect()),
        (Vec::new(), 1, b"{}".to_vec()),
        (rng.bytes(300), -1, b"negative t".to_vec()),
    ];
    while cases.len() < 64 {
        let secret_len = rng.below(260) as usize;
        let body_len = match rng.below(4) {
            0 => rng.below(8),
            1 => rng.below(200),
            2 => rng.below(5000),
            _ => rng.below(70_000),
        } as usize;
        let timestamp = rng.below(4_000_000_000) as i64;
        cases.push((rng.bytes(secret_len), timestamp, rng.bytes(body_len)));
    }

    // One line per case: hex secret, t, hex body (either hex may be empty).
    let input: String = cases
        .iter()
        .map(|(secret, timestamp, body)| format!("{} {timestamp} {}\n", hex(secret), hex(body)))
        .collect();
    let output = run_python(&input);
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines.len(), cases.len(), "python printed {output:?}");
    for ((secret, timestamp, body), expected) in cases.iter().zip(lines) {
        assert_eq!(
            sign(secret, *timestamp, body),
            expected,
            "seed {seed}: secret {} bytes, t {timestamp}, body {} bytes",
            secret.len(),
            body.len()
        );
    }
}

fn run_python(input: &str) -> String {
    let child = Command::new("python3")
        .args(["-c", PYTHON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.unwrap_or_else(|error| {
        panic!(
            "cannot run python3 ({error}): this test checks sign() against Python's hmac; \
             install python3 (CI has it)"
        )
    });
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
