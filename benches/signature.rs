//! `cargo bench --bench signature --features openssl-reference`: how fast earshot checks a delivery,
//! against OpenSSL's HMAC-SHA256 in the same process and the same loop.
//!
//! Like with like, each pair keyed the same way:
//! - MAC vs MAC: [`KeyedSecret::digest`] (keyed state cloned per call)
//!   against OpenSSL's `HMAC_Init_ex(ctx, NULL, …)` (keyed state reused),
//!   both over `"<t>."` + body.
//! - verify vs verify: [`Verifier::verify`] (parse the header, MAC, compare
//!   in constant time, judge the clock) against a receiver built on OpenSSL
//!   doing the same steps ([`openssl_receiver`]: read `t` and `v1` from the
//!   header, decode the hex, write `"<t>."`, MAC, `CRYPTO_memcmp`, check the
//!   tolerance) without allocating.
//! - verify vs bare OpenSSL: the same verify against OpenSSL's MAC plus
//!   `CRYPTO_memcmp` with the digest decoded once outside the loop. It
//!   parses nothing, so it is a lower bound on any OpenSSL-based verify.
//!
//! The two sides run in alternating batches inside one loop (A B, B A, …),
//! so a noisy neighbour slows both; the ratio is the median of the per-round
//! ratios (OpenSSL time / earshot time: 1.0 is parity, above 1 earshot is
//! faster). Python's `hmac` (a separate process, not interleaved) is shown
//! for context only. No harness: plain `Instant` timing, bounded in time.

use std::hint::black_box;
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use earshot_core::signature::{
    Candidate, DEFAULT_TOLERANCE_SECS, KeyedSecret, Verifier, parse_digest_hex, sign, verify,
};

const SECRET: &str = "whsec_bench_0123456789abcdefghijklmnopqrstuvwxyz";
const T: i64 = 1_795_300_000;
const SIZES: [(usize, &str); 3] = [(1 << 10, "1 KiB"), (64 << 10, "64 KiB"), (1 << 20, "1 MiB")];
/// Alternating rounds per comparison.
const ROUNDS: usize = 41;

fn body(len: usize) -> Vec<u8> {
    // Deterministic, not all one byte value.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

struct Row {
    size: &'static str,
    tool: String,
    per_call: Option<Duration>,
    mb_per_s: Option<f64>,
    note: String,
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn median_f64(samples: &mut [f64]) -> f64 {
    samples.sort_unstable_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// One call of the keyed verifier at `T`, kept from being optimised away.
fn keyed_verify(verifier: &Verifier, header: &str, body: &[u8]) {
    black_box(verifier.verify(
        black_box(header),
        black_box(body),
        black_box(T),
        DEFAULT_TOLERANCE_SECS,
    ));
}

fn mb_per_s(bytes: usize, per_call: Duration) -> f64 {
    bytes as f64 / per_call.as_secs_f64() / 1e6
}

/// OpenSSL's HMAC-SHA256 with the key set once: each call restarts from
/// the keyed state (`HMAC_Init_ex` with a null key), as OpenSSL's own
/// callers do when they MAC many messages with one key.
struct OpensslHmac {
    ctx: *mut openssl_sys::HMAC_CTX,
}

impl OpensslHmac {
    fn new(key: &[u8]) -> Self {
        openssl_sys::init();
        // SAFETY: a fresh context from OpenSSL, checked for null, keyed with
        // a live slice of the length passed.
        unsafe {
            let ctx = openssl_sys::HMAC_CTX_new();
            assert!(!ctx.is_null(), "HMAC_CTX_new");
            let ok = openssl_sys::HMAC_Init_ex(
                ctx,
                key.as_ptr().cast(),
                key.len() as _,
                openssl_sys::EVP_sha256(),
                std::ptr::null_mut(),
            );
            assert_eq!(ok, 1, "HMAC_Init_ex");
            Self { ctx }
        }
    }

    fn mac(&mut self, parts: &[&[u8]]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut len = 0;
        // SAFETY: `ctx` was keyed in `new`; every pointer is a live slice
        // with its length; `out` holds the 32 bytes SHA-256 writes.
        unsafe {
            let mut ok = openssl_sys::HMAC_Init_ex(
                self.ctx,
                std::ptr::null(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            for part in parts {
                ok &= openssl_sys::HMAC_Update(self.ctx, part.as_ptr(), part.len());
            }
            ok &= openssl_sys::HMAC_Final(self.ctx, out.as_mut_ptr(), &mut len);
            assert!(ok == 1 && len == 32, "HMAC");
        }
        out
    }

    /// The digest compared in constant time with `expected`.
    fn verify(&mut self, parts: &[&[u8]], expected: &[u8; 32]) -> bool {
        let got = self.mac(parts);
        // SAFETY: two live 32-byte arrays.
        unsafe {
            openssl_sys::CRYPTO_memcmp(got.as_ptr().cast(), expected.as_ptr().cast(), 32) == 0
        }
    }
}

/// A receiver on OpenSSL, step for step what [`Verifier::verify`] does with
/// a well-formed header: read `t` and the first `v1`, decode the hex, write
/// `"<t>."` on the stack, MAC it and the body, compare in constant time,
/// and check the clock.
fn openssl_receiver(
    openssl: &mut OpensslHmac,
    header: &str,
    body: &[u8],
    now: i64,
    tolerance: u64,
) -> bool {
    let (mut timestamp, mut signature) = (None, None);
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signature = decode_hex32(value),
            _ => {}
        }
    }
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return false;
    };
    let mut prefix = [0u8; 24];
    let mut cursor = std::io::Cursor::new(&mut prefix[..]);
    if write!(cursor, "{timestamp}.").is_err() {
        return false;
    }
    let written = cursor.position() as usize;
    openssl.verify(&[&prefix[..written], body], &signature) && now.abs_diff(timestamp) <= tolerance
}

/// 64 hex digits, either case, as 32 bytes.
fn decode_hex32(text: &str) -> Option<[u8; 32]> {
    fn nibble(digit: u8) -> Option<u8> {
        match digit {
            b'0'..=b'9' => Some(digit - b'0'),
            b'a'..=b'f' => Some(digit - b'a' + 10),
            b'A'..=b'F' => Some(digit - b'A' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

impl Drop for OpensslHmac {
    fn drop(&mut self) {
        // SAFETY: allocated by HMAC_CTX_new, freed once.
        unsafe { openssl_sys::HMAC_CTX_free(self.ctx) }
    }
}

/// Per-call time of `a` and `b`, measured in alternating batches within one
/// loop; returns both medians and the median per-round ratio `b / a`.
fn interleaved(batch: u32, mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration, f64) {
    let time = |f: &mut dyn FnMut()| {
        let t0 = Instant::now();
        for _ in 0..batch {
            f();
        }
        t0.elapsed() / batch
    };
    time(&mut a); // warm up
    time(&mut b);
    let (mut ta, mut tb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (x, y) = if round % 2 == 0 {
            let x = time(&mut a);
            (x, time(&mut b))
        } else {
            let y = time(&mut b);
            (time(&mut a), y)
        };
        ta.push(x);
        tb.push(y);
        ratios.push(y.as_secs_f64() / x.as_secs_f64());
    }
    (median(&mut ta), median(&mut tb), median_f64(&mut ratios))
}

fn bench_against_openssl(rows: &mut Vec<Row>) {
    let candidates = [Candidate {
        label: "current",
        secret: SECRET.as_bytes(),
    }];
    let verifier = Verifier::new(&candidates);
    let keyed = KeyedSecret::new(SECRET.as_bytes());
    let mut openssl = OpensslHmac::new(SECRET.as_bytes());
    let prefix = format!("{T}.");
    for (len, size) in SIZES {
        let body = body(len);
        let header = sign(SECRET.as_bytes(), T, &body);
        let expected = parse_digest_hex(&header["t=1795300000,v1=".len()..]).expect("own header");
        assert_eq!(openssl.mac(&[prefix.as_bytes(), &body]), expected);
        assert_eq!(keyed.digest(T, &body), expected);
        assert!(
            verifier
                .verify(&header, &body, T, DEFAULT_TOLERANCE_SECS)
                .is_valid()
        );
        assert!(openssl.verify(&[prefix.as_bytes(), &body], &expected));
        assert!(openssl_receiver(
            &mut openssl,
            &header,
            &body,
            T,
            DEFAULT_TOLERANCE_SECS
        ));
        let batch = ((1 << 20) / len as u32).max(4); // ~1 MiB hashed per batch

        let (ours, theirs, ratio) = interleaved(
            batch,
            || {
                black_box(keyed.digest(black_box(T), black_box(&body)));
            },
            || {
                black_box(openssl.mac(&[black_box(prefix.as_bytes()), black_box(&body)]));
            },
        );
        push_pair(rows, size, len, "MAC", ours, theirs, ratio, batch);

        let (ours, theirs, ratio) = interleaved(
            batch,
            || {
                keyed_verify(&verifier, &header, &body);
            },
            || {
                black_box(openssl_receiver(
                    &mut openssl,
                    black_box(&header),
                    black_box(&body),
                    black_box(T),
                    DEFAULT_TOLERANCE_SECS,
                ));
            },
        );
        push_pair(rows, size, len, "verify", ours, theirs, ratio, batch);

        let (ours, theirs, ratio) = interleaved(
            batch,
            || {
                keyed_verify(&verifier, &header, &body);
            },
            || {
                black_box(
                    openssl.verify(&[black_box(prefix.as_bytes()), black_box(&body)], &expected),
                );
            },
        );
        push_pair(
            rows,
            size,
            len,
            "verify vs bare MAC",
            ours,
            theirs,
            ratio,
            batch,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn push_pair(
    rows: &mut Vec<Row>,
    size: &'static str,
    len: usize,
    what: &str,
    ours: Duration,
    theirs: Duration,
    ratio: f64,
    batch: u32,
) {
    let (ours_tool, theirs_tool) = match what {
        "MAC" => ("earshot KeyedSecret::digest", "OpenSSL HMAC, keyed once"),
        "verify" => ("earshot Verifier::verify", "OpenSSL receiver, same steps"),
        _ => ("earshot Verifier::verify", "OpenSSL MAC + memcmp only"),
    };
    rows.push(Row {
        size,
        tool: ours_tool.into(),
        per_call: Some(ours),
        mb_per_s: Some(mb_per_s(len, ours)),
        note: format!(
            "{what}: {ratio:.2}× OpenSSL speed (median of {ROUNDS} paired rounds × {batch})"
        ),
    });
    rows.push(Row {
        size,
        tool: theirs_tool.into(),
        per_call: Some(theirs),
        mb_per_s: Some(mb_per_s(len, theirs)),
        note: format!("{what} reference, same loop"),
    });
}

/// The one-shot API (`verify` with a raw secret: key setup on every call)
/// and the two-secret rotation case, for context.
fn bench_one_shot(rows: &mut Vec<Row>) {
    let old = "whsec_bench_old_0123456789abcdefghijklmnopqrstuvw";
    let rotation = [
        Candidate {
            label: "current",
            secret: SECRET.as_bytes(),
        },
        Candidate {
            label: "previous",
            secret: old.as_bytes(),
        },
    ];
    let small = body(1 << 10);
    let header = sign(SECRET.as_bytes(), T, &small);
    let verifier = Verifier::new(&rotation[..1]);
    let (keyed, one_shot, ratio) = interleaved(
        256,
        || {
            keyed_verify(&verifier, &header, &small);
        },
        || {
            black_box(verify(
                black_box(&header),
                black_box(&small),
                black_box(&rotation[..1]),
                T,
                DEFAULT_TOLERANCE_SECS,
            ));
        },
    );
    rows.push(Row {
        size: "1 KiB",
        tool: "earshot verify (one-shot)".into(),
        per_call: Some(one_shot),
        mb_per_s: Some(mb_per_s(1 << 10, one_shot)),
        note: format!(
            "keys the secret every call; Verifier is {ratio:.2}× its speed ({} per call) in the same loop",
            fmt_duration(keyed)
        ),
    });
    let header = sign(old.as_bytes(), T, &small);
    let verifier = Verifier::new(&rotation);
    let (per_call, _, _) = interleaved(
        256,
        || {
            keyed_verify(&verifier, &header, &small);
        },
        || {},
    );
    rows.push(Row {
        size: "1 KiB",
        tool: "earshot Verifier, 2 secrets".into(),
        per_call: Some(per_call),
        mb_per_s: Some(mb_per_s(1 << 10, per_call)),
        note: "previous matches: both secrets are always tried".into(),
    });
}

const PYTHON: &str = r#"
import hashlib, hmac, os, sys, timeit
key = sys.argv[1].encode()
t = sys.argv[2]
for size in map(int, sys.argv[3:]):
    body = os.urandom(size)
    expected = hmac.new(key, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    def verify():
        got = hmac.new(key, t.encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(got, expected)
    timer = timeit.Timer(verify)
    number, _ = timer.autorange()
    best = sorted(timer.repeat(repeat=5, number=number))
    print(size, best[len(best) // 2] / number * 1e9, number, flush=True)
"#;

fn bench_python(rows: &mut Vec<Row>) {
    let mut args = vec![
        "-c".to_owned(),
        PYTHON.to_owned(),
        SECRET.to_owned(),
        T.to_string(),
    ];
    args.extend(SIZES.iter().map(|(len, _)| len.to_string()));
    let output = Command::new("python3").args(&args).output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => {
            skip(
                rows,
                "python3 hmac",
                &String::from_utf8_lossy(&output.stderr),
            );
            return;
        }
        Err(error) => {
            skip(
                rows,
                "python3 hmac",
                &format!("python3 not runnable: {error}"),
            );
            return;
        }
    };
    let version = Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [len, ns, number] = fields[..] else {
            continue;
        };
        let (Ok(len), Ok(ns)) = (len.parse::<usize>(), ns.parse::<f64>()) else {
            continue;
        };
        let Some((_, size)) = SIZES.iter().find(|(l, _)| *l == len) else {
            continue;
        };
        let per_call = Duration::from_nanos(ns as u64);
        rows.push(Row {
            size,
            tool: "python3 hmac + compare_digest".into(),
            per_call: Some(per_call),
            mb_per_s: Some(mb_per_s(len, per_call)),
            note: format!("{version}, timeit median of 5 × {number}"),
        });
    }
}

fn skip(rows: &mut Vec<Row>, tool: &str, why: &str) {
    rows.push(Row {
        size: "-",
        tool: tool.into(),
        per_call: None,
        mb_per_s: None,
        note: why.trim().to_owned(),
    });
}

fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

fn main() {
    let started = Instant::now();
    let mut rows = Vec::new();
    bench_against_openssl(&mut rows);
    bench_one_shot(&mut rows);
    bench_python(&mut rows);

    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\nsignature: HMAC-SHA256 over \"<t>.\" + body, one secret unless noted; earshot and OpenSSL interleaved"
    );
    let _ = writeln!(
        out,
        "{:<7} {:<30} {:>11} {:>9}  note",
        "body", "implementation", "per call", "MB/s"
    );
    let _ = writeln!(out, "{}", "-".repeat(100));
    let order = ["1 KiB", "64 KiB", "1 MiB", "-"];
    for size in order {
        for row in rows.iter().filter(|r| r.size == size) {
            let per_call = row.per_call.map(fmt_duration).unwrap_or_else(|| "-".into());
            let mbps = row
                .mb_per_s
                .map(|v| {
                    if v < 10.0 {
                        format!("{v:.2}")
                    } else {
                        format!("{v:.0}")
                    }
                })
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "{:<7} {:<30} {:>11} {:>9}  {}",
                row.size, row.tool, per_call, mbps, row.note
            );
        }
    }
    let _ = writeln!(
        out,
        "\n(total bench time {:.1} s)",
        started.elapsed().as_secs_f64()
    );
}
