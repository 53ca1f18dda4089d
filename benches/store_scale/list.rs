//! In-process Events list (`list`): the read behind the console's Events
//! pane (`console_read.rs`: the newest 5,000 events of its 7-day window
//! passing the filter), for every filter an operator types,
//! interleaved run by run with plain SQL along the same indexes on a
//! read-only connection of its own (`cases.rs`); warm, then with the
//! store's file evicted from the page cache before every run of either
//! (cold). Both must list the same events with the same outcome rows.

use std::path::Path;
use std::time::{Duration, Instant};

use earshot_core::history::event_list::EventRow;
use earshot_core::history::event_query::EventQuery;
use rusqlite::{Connection, OpenFlags};

use super::BoxError;
use super::cache::evict;
use super::cases::{ListCase, list_cases};
use super::console_read::{PANE_WINDOW_MS, SHOWN, read, store_now};
use super::timing::median_min_max;

/// Per event, newest first: its id and its outcome rows (subscription,
/// state, attempts), sorted.
type Listed = Vec<(String, Vec<(String, String, i64)>)>;

fn theirs(path: &Path, sql: &str) -> Result<Listed, BoxError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut statement = conn.prepare(sql)?;
    let mut rows = statement.query([])?;
    let mut listed: Listed = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        if listed.last().is_none_or(|(last, _)| *last != id) {
            listed.push((id, Vec::new()));
        }
        if let (Some(sub), Some(state), Some(attempts), Some((_, outcomes))) = (
            row.get::<_, Option<String>>(3)?,
            row.get::<_, Option<String>>(4)?,
            row.get::<_, Option<i64>>(5)?,
            listed.last_mut(),
        ) {
            outcomes.push((sub, state, attempts));
        }
    }
    for (_, outcomes) in &mut listed {
        outcomes.sort();
    }
    Ok(listed)
}

fn as_listed(rows: &[EventRow]) -> Listed {
    rows.iter()
        .map(|row| {
            let mut outcomes: Vec<(String, String, i64)> = row
                .subscriptions
                .iter()
                .map(|o| (o.id.clone(), o.state.as_str().to_owned(), o.attempts))
                .collect();
            outcomes.sort();
            (row.event_id.clone(), outcomes)
        })
        .collect()
}

fn one_case(path: &Path, case: &ListCase, now_ms: i64, runs: usize) -> Result<(), BoxError> {
    let since_ms = now_ms - PANE_WINDOW_MS;
    let query = EventQuery::parse(&case.query(), now_ms)?;
    let sql = case.sql(query.since_ms.unwrap_or(since_ms), SHOWN);
    let typed = match case.query() {
        typed if typed.is_empty() => "(none)".to_owned(),
        typed => format!("`{typed}`"),
    };
    let mut count = 0;
    for cold in [false, true] {
        let (mut a, mut b): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
        for run in 0..=runs {
            if cold {
                evict(path);
            }
            let started = Instant::now();
            let rows = read(path, &query, now_ms)?;
            let took_ours = started.elapsed();
            if cold {
                evict(path);
            }
            let started = Instant::now();
            let reference = theirs(path, &sql)?;
            let took_theirs = started.elapsed();
            if run == 0 && !cold {
                if as_listed(&rows) != reference {
                    return Err(format!(
                        "`{}`: earshot listed {} events, plain SQL {}, or other outcomes",
                        case.query(),
                        rows.len(),
                        reference.len()
                    )
                    .into());
                }
                count = rows.len();
            }
            // The first warm pair warms the cache; not counted.
            if cold || run > 0 {
                a.push(took_ours);
                b.push(took_theirs);
            }
        }
        println!(
            "| {typed} | {count} | {} | {} | {} |",
            if cold { "cold" } else { "warm" },
            median_min_max(&mut a),
            median_min_max(&mut b)
        );
    }
    Ok(())
}

/// Times every filter whose name contains one of `only` (all when empty).
pub fn run(path: &Path, runs: usize, only: &[String]) -> Result<(), BoxError> {
    let now_ms = store_now(path)?;
    println!(
        "{} ({:.2} GB), {runs} runs each, the two reads of a row in turn, newest {SHOWN}",
        path.display(),
        std::fs::metadata(path)?.len() as f64 / 1e9
    );
    println!(
        "| filter typed | events listed | cache | earshot median (min–max) ms | plain SQL, same run |"
    );
    println!("|---|---|---|---|---|");
    for case in list_cases(now_ms)
        .iter()
        .filter(|case| only.is_empty() || only.iter().any(|word| case.name.contains(word.as_str())))
    {
        one_case(path, case, now_ms, runs)?;
    }
    Ok(())
}
