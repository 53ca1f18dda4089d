//! `cargo bench --bench signature`: how fast `signature::verify` checks a
//! delivery, next to Python's `hmac` and `openssl` over the same bytes.
//!
//! Throughput is in MB/s (10^6 bytes per second) of body verified; latency
//! is the median per call. No harness: plain `Instant` timing, each
//! measurement bounded in time so the whole run stays well under 30 s.

use std::hint::black_box;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use earshot::signature::{Candidate, DEFAULT_TOLERANCE_SECS, sign, verify};

const SECRET: &str = "whsec_bench_0123456789abcdefghijklmnopqrstuvwxyz";
const T: i64 = 1_795_300_000;
const SIZES: [(usize, &str); 3] = [(1 << 10, "1 KiB"), (64 << 10, "64 KiB"), (1 << 20, "1 MiB")];

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

/// Median time of one call of `f`, from samples of `batch` calls each,
/// collected for about `budget`.
fn time_per_call(batch: u32, budget: Duration, mut f: impl FnMut()) -> (Duration, usize) {
    for _ in 0..batch {
        f(); // warm up
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed() < budget || samples.len() < 5 {
        let t0 = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(t0.elapsed() / batch);
    }
    let n = samples.len();
    (median(&mut samples), n)
}

fn mb_per_s(bytes: usize, per_call: Duration) -> f64 {
    bytes as f64 / per_call.as_secs_f64() / 1e6
}

fn bench_earshot(rows: &mut Vec<Row>) {
    let candidates = [Candidate {
        label: "current",
        secret: SECRET.as_bytes(),
    }];
    for (len, size) in SIZES {
        let body = body(len);
        let header = sign(SECRET.as_bytes(), T, &body);
        assert!(verify(&header, &body, &candidates, T, DEFAULT_TOLERANCE_SECS).is_valid());
        let batch = (4 << 20) / len as u32; // ~4 MiB hashed per sample
        let (per_call, samples) = time_per_call(batch.max(1), Duration::from_millis(1200), || {
            let verdict = verify(
                black_box(&header),
                black_box(&body),
                black_box(&candidates),
                black_box(T),
                DEFAULT_TOLERANCE_SECS,
            );
            black_box(verdict);
        });
        rows.push(Row {
            size,
            tool: "earshot verify".into(),
            per_call: Some(per_call),
            mb_per_s: Some(mb_per_s(len, per_call)),
            note: format!("median of {samples} samples × {batch}"),
        });
    }

    // The rotation case: two secrets, the second one matches; and the
    // single-call latency distribution for 1 KiB.
    let old = "whsec_bench_old_0123456789abcdefghijklmnopqrstuvw";
    let rotation = [
        candidates[0],
        Candidate {
            label: "previous",
            secret: old.as_bytes(),
        },
    ];
    let small = body(1 << 10);
    let header = sign(old.as_bytes(), T, &small);
    let (per_call, samples) = time_per_call(64, Duration::from_millis(800), || {
        black_box(verify(
            black_box(&header),
            black_box(&small),
            black_box(&rotation),
            T,
            DEFAULT_TOLERANCE_SECS,
        ));
    });
    rows.push(Row {
        size: "1 KiB",
        tool: "earshot verify, 2 secrets".into(),
        per_call: Some(per_call),
        mb_per_s: Some(mb_per_s(1 << 10, per_call)),
        note: format!("previous matches; median of {samples} × 64"),
    });
    let header = sign(SECRET.as_bytes(), T, &small);
    let mut single: Vec<Duration> = (0..20_000)
        .map(|_| {
            let t0 = Instant::now();
            black_box(verify(
                black_box(&header),
                black_box(&small),
                black_box(&candidates),
                T,
                DEFAULT_TOLERANCE_SECS,
            ));
            t0.elapsed()
        })
        .collect();
    single.sort_unstable();
    let p99 = single[single.len() * 99 / 100];
    rows.push(Row {
        size: "1 KiB",
        tool: "earshot verify, one call".into(),
        per_call: Some(median(&mut single)),
        mb_per_s: None,
        note: format!("median of 20000 single calls; p99 {}", fmt_duration(p99)),
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

fn bench_openssl(rows: &mut Vec<Row>) {
    let version = match Command::new("openssl").arg("version").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" "),
        _ => {
            skip(rows, "openssl", "openssl is not on PATH; skipped");
            return;
        }
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            skip(rows, "openssl", &format!("no temp dir: {error}"));
            return;
        }
    };
    for (len, size) in SIZES {
        // The exact signed message: "<t>." + body.
        let path = dir.path().join(format!("msg-{len}"));
        let mut message = format!("{T}.").into_bytes();
        message.extend_from_slice(&body(len));
        if std::fs::write(&path, &message).is_err() {
            continue;
        }
        let mut samples = Vec::new();
        for _ in 0..15 {
            let t0 = Instant::now();
            let status = Command::new("openssl")
                .args(["dgst", "-sha256", "-hmac", SECRET])
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if !matches!(status, Ok(s) if s.success()) {
                skip(rows, "openssl dgst", "openssl dgst failed; skipped");
                return;
            }
            samples.push(t0.elapsed());
        }
        let per_call = median(&mut samples);
        rows.push(Row {
            size,
            tool: "openssl dgst -sha256 -hmac".into(),
            per_call: Some(per_call),
            mb_per_s: Some(mb_per_s(len, per_call)),
            note: format!("{version}, one process per call, median of 15"),
        });
    }
    // openssl's own in-process loop, for the raw HMAC speed of its assembly.
    for (len, size) in SIZES {
        let output = Command::new("openssl")
            .args(["speed", "-hmac", "sha256", "-seconds", "1", "-bytes"])
            .arg(len.to_string())
            .stderr(Stdio::null())
            .output();
        let Ok(output) = output else { continue };
        let text = String::from_utf8_lossy(&output.stdout);
        let kbps = text
            .lines()
            .find(|l| l.starts_with("hmac(sha256)"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.trim_end_matches('k').parse::<f64>().ok());
        if let Some(kbps) = kbps {
            let mb = kbps / 1000.0;
            rows.push(Row {
                size,
                tool: "openssl speed -hmac sha256".into(),
                per_call: Some(Duration::from_secs_f64(len as f64 / (mb * 1e6))),
                mb_per_s: Some(mb),
                note: "in-process loop, HMAC only (no parse/compare)".into(),
            });
        }
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
    bench_earshot(&mut rows);
    bench_python(&mut rows);
    bench_openssl(&mut rows);

    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\nsignature verify: HMAC-SHA256 over \"<t>.\" + body, one secret unless noted"
    );
    let _ = writeln!(
        out,
        "{:<7} {:<31} {:>11} {:>11}  note",
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
                "{:<7} {:<31} {:>11} {:>11}  {}",
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
