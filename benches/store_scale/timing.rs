//! Whole-process timings on a built store (see the crate doc): each
//! command a user runs, as the release binary, interleaved run by run with
//! the `sqlite3` shell doing the same work in plain SQL; warm, then with
//! the store's files evicted from the page cache before every run (cold).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::BoxError;
use super::builder::CUSTOMER_SUB;

/// One row of the table: what a user runs, and the plain SQL beside it.
struct Case {
    name: &'static str,
    args: Vec<String>,
    sql: String,
}

fn cases(since_ms: i64) -> Vec<Case> {
    let events = |query: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["events", "--json", "--no-sweep", "--limit", "100"]
            .map(String::from)
            .to_vec();
        args.extend(query.iter().map(|word| (*word).to_owned()));
        args
    };
    // The newest 100 events passing a condition on the events and their
    // outcome rows, with every outcome row of those events.
    let listed = |condition: &str| -> String {
        format!(
            "WITH picked AS (SELECT e.event_id, e.session_id, e.occurred_ms FROM events e
                 WHERE e.occurred_ms >= {since_ms} AND {condition}
                 ORDER BY e.occurred_ms DESC LIMIT 100)
             SELECT p.event_id, o.subscription_id, o.state FROM picked p
             LEFT JOIN event_outcomes o
                 ON o.session_id = p.session_id AND o.event_id = p.event_id;"
        )
    };
    // The newest 100 events with an outcome row passing a condition, read
    // along the outcomes' (state, time) index, with their outcome rows.
    let by_outcome = |condition: &str| -> String {
        format!(
            "WITH picked AS (SELECT DISTINCT o.event_id, o.session_id, o.occurred_ms
                 FROM event_outcomes o
                 WHERE o.event_id IS NOT NULL AND o.occurred_ms >= {since_ms} AND {condition}
                 ORDER BY o.occurred_ms DESC LIMIT 100)
             SELECT p.event_id, e.event, e.session_id, o.subscription_id, o.state FROM picked p
             JOIN events e ON e.event_id = p.event_id
             LEFT JOIN event_outcomes o
                 ON o.session_id = p.session_id AND o.event_id = p.event_id;"
        )
    };
    let short = &CUSTOMER_SUB[..8];
    vec![
        Case {
            name: "health --json --no-sweep",
            args: ["health", "--json", "--no-sweep"]
                .map(String::from)
                .to_vec(),
            sql: format!(
                "SELECT subscription_id, state, count(*) FROM event_outcomes
                 WHERE occurred_ms >= {since_ms} GROUP BY 1, 2;"
            ),
        },
        Case {
            name: "incidents --json --no-sweep",
            args: ["incidents", "--json", "--no-sweep"]
                .map(String::from)
                .to_vec(),
            sql: "SELECT subscription_id, http_status_code, error_class, state, count(*)
                  FROM event_outcomes WHERE last_failure_ms IS NOT NULL
                  GROUP BY 1, 2, 3, 4;"
                .to_owned(),
        },
        Case {
            name: "events --limit 100",
            args: events(&[]),
            sql: listed("1"),
        },
        Case {
            name: "events status:missed",
            args: events(&["status:missed"]),
            sql: by_outcome("o.state = 'missed'"),
        },
        Case {
            name: "events sub:… status:missed",
            args: events(&[&format!("sub:{short}"), "status:missed"]),
            sql: by_outcome(&format!(
                "o.subscription_id = '{CUSTOMER_SUB}' AND o.state = 'missed'"
            )),
        },
        Case {
            name: "events type:call.failed (1 %)",
            args: events(&["type:call.failed"]),
            sql: listed("e.event = 'call.failed'"),
        },
        Case {
            name: "events since:1h",
            args: events(&["since:1h"]),
            sql: listed(&format!("e.occurred_ms >= {}", since_ms + 23 * 3_600_000)),
        },
        Case {
            name: "events free text (one session)",
            args: events(&["00000004d2"]),
            // Along the same free-text index.
            sql: listed(
                "e.rowid IN (SELECT rowid FROM event_words WHERE event_words MATCH '\"00000004d2\"')",
            ),
        },
    ]
}

/// Drops the pages of `path` (and its `-wal`) from the page cache.
fn evict(path: &Path) {
    for file in [path.to_owned(), side(path, "-wal")] {
        if let Ok(open) = std::fs::File::open(&file) {
            // SAFETY: advice on an open descriptor; it changes no memory.
            unsafe {
                libc::posix_fadvise(open.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}

fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
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

fn median_min_max(samples: &mut [Duration]) -> String {
    samples.sort_unstable();
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    match (
        samples.first(),
        samples.get(samples.len() / 2),
        samples.last(),
    ) {
        (Some(min), Some(median), Some(max)) => {
            format!("{:.0} ({:.0}–{:.0})", ms(median), ms(min), ms(max))
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
    let since_ms = chrono::Utc::now().timestamp_millis() - 24 * 3_600_000;
    println!(
        "{} ({:.2} GB), {runs} runs each, the two commands of a row in turn",
        path.display(),
        std::fs::metadata(path)?.len() as f64 / 1e9
    );
    println!(
        "| what a user runs | cache | earshot median (min–max) ms | plain SQL in sqlite3, same run |"
    );
    println!("|---|---|---|---|");
    let chosen = cases(since_ms).into_iter().filter(|case| {
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
