//! The timings: each case is an `earshot` command (the release binary,
//! the whole process, as a user runs it) and the plain SQL of the same
//! answer (one statement on a kept connection: the server's time and a
//! loopback round trip), run `runs` times each, interleaved, so both see
//! the same load; min, median and max of each.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use crate::{BenchError, CUSTOMER_SUB, support};

/// One row of the table.
struct Case {
    name: &'static str,
    args: Vec<String>,
    /// The plain SQL, given the window's first millisecond.
    sql: String,
}

const DAY_MS: i64 = 86_400_000;
const LIST: &str =
    "SELECT event_id, event, session_id, occurred_ms, received_ms FROM earshot.events";
const ORDER: &str = "ORDER BY occurred_ms DESC, event_id COLLATE \"C\" DESC LIMIT 100";

fn cases(since_day: i64, since_hour: i64) -> Vec<Case> {
    let events = |query: &[&str]| {
        let mut args: Vec<String> = ["events", "--json", "--no-sweep", "--limit", "100"]
            .map(str::to_owned)
            .to_vec();
        args.extend(query.iter().map(|term| (*term).to_owned()));
        args
    };
    let text =
        |column: &str, word: &str| format!("strpos(lower({column} COLLATE \"C\"), '{word}') > 0");
    let free_text = |word: &str| {
        format!(
            "{LIST} WHERE occurred_ms >= {since_day} AND ({} OR {} OR {}) {ORDER}",
            text("event_id", word),
            text("session_id", word),
            text("event", word)
        )
    };
    vec![
        Case {
            name: "health --json --no-sweep",
            args: ["health", "--json", "--no-sweep"]
                .map(str::to_owned)
                .to_vec(),
            sql: format!(
                "SELECT subscription_id, state, count(*) FROM earshot.event_outcomes
                 WHERE occurred_ms >= {since_day} GROUP BY subscription_id, state"
            ),
        },
        Case {
            name: "events (no filter)",
            args: events(&[]),
            sql: format!("{LIST} WHERE occurred_ms >= {since_day} {ORDER}"),
        },
        Case {
            name: "events status:missed",
            args: events(&["status:missed"]),
            sql: format!(
                "{LIST} AS e WHERE occurred_ms >= {since_day} AND EXISTS (
                     SELECT 1 FROM earshot.event_outcomes AS o
                     WHERE o.event_key = e.event_id AND o.state = 'missed') {ORDER}"
            ),
        },
        Case {
            name: "events sub:c0570000",
            args: events(&["sub:c0570000"]),
            sql: format!(
                "{LIST} AS e WHERE occurred_ms >= {since_day} AND EXISTS (
                     SELECT 1 FROM earshot.event_outcomes AS o
                     WHERE o.event_key = e.event_id AND o.subscription_id = '{CUSTOMER_SUB}')
                 {ORDER}"
            ),
        },
        Case {
            name: "events sub:c0570000 status:missed",
            args: events(&["sub:c0570000", "status:missed"]),
            sql: format!(
                "{LIST} AS e WHERE occurred_ms >= {since_day} AND EXISTS (
                     SELECT 1 FROM earshot.event_outcomes AS o
                     WHERE o.event_key = e.event_id AND o.subscription_id = '{CUSTOMER_SUB}'
                       AND o.state = 'missed')
                 {ORDER}"
            ),
        },
        Case {
            name: "events type:call.failed (1 %)",
            args: events(&["type:call.failed"]),
            sql: format!(
                "{LIST} WHERE occurred_ms >= {since_day} AND event = 'call.failed' {ORDER}"
            ),
        },
        Case {
            name: "events type:transferred (rare)",
            args: events(&["type:transferred"]),
            sql: format!(
                "{LIST} WHERE occurred_ms >= {since_day} AND strpos(event, 'transferred') > 0 \
                 {ORDER}"
            ),
        },
        Case {
            name: "events since:1h",
            args: events(&["since:1h"]),
            sql: format!("{LIST} WHERE occurred_ms >= {since_hour} {ORDER}"),
        },
        Case {
            name: "events zzqx (free text, no match)",
            args: events(&["zzqx"]),
            sql: free_text("zzqx"),
        },
        Case {
            name: "events 7f3a9 (free text, rare)",
            args: events(&["7f3a9"]),
            sql: free_text("7f3a9"),
        },
        Case {
            name: "events ended (free text, 40 %)",
            args: events(&["ended"]),
            sql: free_text("ended"),
        },
        Case {
            name: "incidents --json --no-sweep",
            args: ["incidents", "--json", "--no-sweep"]
                .map(str::to_owned)
                .to_vec(),
            sql: "SELECT * FROM earshot.incidents ORDER BY last_seen_ms DESC".to_owned(),
        },
    ]
}

/// Times every case `runs` times and prints the table.
pub async fn table(
    client: &Client,
    binary: &Path,
    dir: &Path,
    url: &str,
    password: &str,
    runs: usize,
) -> Result<(), BenchError> {
    let now = earshot_core::store::now_ms();
    let cases = cases(now - DAY_MS, now - DAY_MS / 24);
    let mut earshot: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    let mut plain: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    let mut outcome: Vec<String> = vec![String::new(); cases.len()];
    for _ in 0..runs {
        for (index, case) in cases.iter().enumerate() {
            let mut command = support::isolated(binary, dir);
            command
                .args(&case.args)
                .args(["--store", url])
                .env("PGPASSWORD", password);
            let started = Instant::now();
            let output = command.output()?;
            earshot[index].push(started.elapsed());
            outcome[index] = if output.status.success() {
                format!("{} bytes", output.stdout.len())
            } else {
                let said = String::from_utf8_lossy(&output.stderr);
                format!(
                    "exit {}: {}",
                    output.status.code().unwrap_or(-1),
                    said.lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(60)
                        .collect::<String>()
                )
            };
            let started = Instant::now();
            let rows = client.query(case.sql.as_str(), &[]).await?;
            plain[index].push(started.elapsed());
            outcome[index].push_str(&format!("; SQL {} rows", rows.len()));
        }
    }
    let load = load_average();
    println!("runs={runs}, load average after: {load}");
    println!(
        "{:<34} {:>22} {:>22}  output",
        "case", "earshot min/med/max ms", "plain SQL min/med/max"
    );
    for (index, case) in cases.iter().enumerate() {
        println!(
            "{:<34} {:>22} {:>22}  {}",
            case.name,
            spread(&mut earshot[index]),
            spread(&mut plain[index]),
            outcome[index]
        );
    }
    Ok(())
}

/// `min/median/max` in milliseconds.
fn spread(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    match (times.first(), times.get(times.len() / 2), times.last()) {
        (Some(min), Some(median), Some(max)) => {
            format!("{:.0}/{:.0}/{:.0}", ms(*min), ms(*median), ms(*max))
        }
        _ => "-".to_owned(),
    }
}

/// `/proc/loadavg`'s first three fields.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
