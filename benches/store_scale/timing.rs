//! Whole-process timings on a built store (see the crate doc): each
//! command a user runs, as the release binary, interleaved run by run with
//! the `sqlite3` shell doing the same work in plain SQL; warm, then with
//! the store's files evicted from the page cache before every run (cold).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::BoxError;
use super::cache::evict;
use super::cases::list_cases;

/// One row of the table: what a user runs, and the plain SQL beside it.
struct Case {
    name: String,
    args: Vec<String>,
    sql: String,
}

fn cases(now_ms: i64, since_ms: i64) -> Vec<Case> {
    let mut cases = vec![
        Case {
            name: "health --json --no-sweep".into(),
            args: ["health", "--json", "--no-sweep"]
                .map(String::from)
                .to_vec(),
            sql: format!(
                "SELECT subscription_id, state, count(*) FROM event_outcomes
                 WHERE occurred_ms >= {since_ms} GROUP BY 1, 2;"
            ),
        },
        Case {
            name: "incidents --json --no-sweep".into(),
            args: ["incidents", "--json", "--no-sweep"]
                .map(String::from)
                .to_vec(),
            sql: "SELECT subscription_id, http_status_code, error_class, state, count(*)
                  FROM event_outcomes WHERE last_failure_ms IS NOT NULL
                  GROUP BY 1, 2, 3, 4;"
                .to_owned(),
        },
    ];
    // Each filter with `--limit 100`, and the newest 100 in plain SQL.
    cases.extend(list_cases(now_ms).into_iter().map(|case| {
        let mut args: Vec<String> = ["events", "--json", "--no-sweep", "--limit", "100"]
            .map(String::from)
            .to_vec();
        args.extend(case.typed.iter().cloned());
        Case {
            name: case
                .name
                .replace("events (no filter)", "events --limit 100"),
            sql: case.sql(since_ms, 100),
            args,
        }
    }));
    cases
}

/// One whole-process run: its wall time, and whether it exited 0 or 1
/// (`health`/`incidents` exit 1 while something is missed, 3 while the
/// observer is silent: a store built hours ago is).
fn time(mut command: Command) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let output = command.stdin(Stdio::null()).output()?;
    let took = started.elapsed();
    if !matches!(output.status.code(), Some(0 | 1 | 3)) {
        return Err(format!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(took)
}

/// The middle of `samples` (the upper one of an even count), or NaN.
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

pub fn median_min_max(samples: &mut [Duration]) -> String {
    samples.sort_unstable();
    let ms = |d: &Duration| {
        let ms = d.as_secs_f64() * 1000.0;
        if ms < 10.0 {
            format!("{ms:.1}")
        } else {
            format!("{ms:.0}")
        }
    };
    match (
        samples.first(),
        samples.get(samples.len() / 2),
        samples.last(),
    ) {
        (Some(min), Some(median), Some(max)) => {
            format!("{} ({}–{})", ms(median), ms(min), ms(max))
        }
        _ => "-".to_owned(),
    }
}

/// Times every case whose name contains one of `only` (all when empty).
pub fn run(path: &Path, runs: usize, only: &[String]) -> Result<(), BoxError> {
    if !path.exists() {
        return Err(format!("{} is not built: run `build` first", path.display()).into());
    }
    let exe = std::env::current_exe()?;
    let release = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "target"))
        .map(|target| target.join("release").join("earshot"))
        .filter(|binary| binary.exists())
        .ok_or("target/release/earshot not found: run `cargo build --release` first")?;
    let home = tempfile::tempdir()?;
    // The commands' default window (24 h back from now), in the SQL too.
    let now_ms = chrono::Utc::now().timestamp_millis();
    let since_ms = now_ms - 24 * 3_600_000;
    println!(
        "{} ({:.2} GB), {runs} runs each, the two commands of a row in turn",
        path.display(),
        std::fs::metadata(path)?.len() as f64 / 1e9
    );
    println!(
        "| what a user runs | cache | earshot median (min–max) ms | plain SQL in sqlite3, same run |"
    );
    println!("|---|---|---|---|");
    let chosen = cases(now_ms, since_ms).into_iter().filter(|case| {
        only.is_empty() || only.iter().any(|word| case.name.contains(word.as_str()))
    });
    for case in chosen {
        for cold in [false, true] {
            let mut ours = Vec::with_capacity(runs);
            let mut reference = Vec::with_capacity(runs);
            for run in 0..=runs {
                if cold {
                    evict(path);
                }
                let mut command = Command::new(&release);
                command
                    .args(&case.args)
                    .arg("--store")
                    .arg(path)
                    .env("EARSHOT_CONFIG", home.path().join("none.toml"))
                    .env("XDG_STATE_HOME", home.path())
                    .env("XDG_CONFIG_HOME", home.path());
                let a = time(command)?;
                if cold {
                    evict(path);
                }
                let mut sqlite = Command::new("sqlite3");
                sqlite.arg("-readonly").arg(path).arg(&case.sql);
                let b = time(sqlite)?;
                // The first warm pair warms the cache; not counted.
                if cold || run > 0 {
                    ours.push(a);
                    reference.push(b);
                }
            }
            println!(
                "| `{}` | {} | {} | {} |",
                case.name,
                if cold { "cold" } else { "warm" },
                median_min_max(&mut ours),
                median_min_max(&mut reference)
            );
        }
    }
    Ok(())
}
