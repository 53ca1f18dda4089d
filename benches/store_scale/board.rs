//! In-process Health board (`health`): a refresh of the board
//! (`history::report::health`, what `earshot health` and the console's
//! Health pane run, on a store opened for it as the console's tasks open
//! one) over the last hour and the last 24 hours of the realistic store,
//! interleaved run by run with a reference computing the same board with
//! plain `GROUP BY`s over `deliveries` and `event_outcomes` (no
//! trigger-kept counts) on a read-only connection of its own; warm, then
//! with the store's file evicted from the page cache before every run of
//! either (cold). Both must count the same attempts and events.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use earshot_core::history;
use earshot_core::history::report::SubscriptionHealth;
use earshot_core::store::{Store, health};
use rusqlite::{Connection, OpenFlags};

use super::BoxError;
use super::cache::evict;
use super::console_read::store_now;
use super::timing::median_min_max;

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// An outcome bucket: subscription, status, code (0 for none), error class.
type Bucket = (String, String, i64, String);

/// What the reference computes: per bucket the count and newest attempt;
/// per subscription the retries still due; and the events by state.
struct Reference {
    buckets: BTreeMap<Bucket, (i64, i64)>,
    totals: BTreeMap<String, [i64; 4]>,
    /// Per subscription: delivered, missed, recovered, pending, unknown,
    /// and the events in failure groups.
    events: BTreeMap<String, [i64; 6]>,
}

/// The same board without `delivery_counts`: the subscription list, one
/// `GROUP BY` over `deliveries` for the window (to the minute, as the
/// board counts), the retries due, folded into per-subscription totals.
fn reference_health(conn: &Connection, since: i64, now: i64) -> rusqlite::Result<Reference> {
    let mut listed = conn.prepare_cached("SELECT id FROM subscriptions")?;
    let mut totals: BTreeMap<String, [i64; 4]> = listed
        .query_map([], |row| row.get::<_, String>(0))?
        .map(|id| id.map(|id| (id, [0; 4])))
        .collect::<rusqlite::Result<_>>()?;
    let mut grouped = conn.prepare_cached(
        "SELECT subscription_id, status, coalesce(http_status_code, 0),
                CASE WHEN http_status_code IS NOT NULL OR error IS NULL THEN ''
                     WHEN error LIKE 'timeout%' THEN 'timeout'
                     WHEN error LIKE 'connection error%' THEN 'connection error'
                     ELSE substr(error, 1, 8) END,
                count(*), max(created_ms)
         FROM deliveries WHERE created_ms >= ?1
         GROUP BY 1, 2, 3, 4",
    )?;
    let mut buckets = BTreeMap::new();
    let rows = grouped.query_map([since.div_euclid(MINUTE_MS) * MINUTE_MS], |row| {
        Ok((
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?),
            (row.get(4)?, row.get(5)?),
        ))
    })?;
    for row in rows {
        let (bucket, counted): (Bucket, (i64, i64)) = row?;
        if let Some(total) = totals.get_mut(&bucket.0) {
            let slot = match bucket.1.as_str() {
                "delivered" => 0,
                "pending" => 2,
                _ => 1,
            };
            total[slot] += counted.0;
        }
        buckets.insert(bucket, counted);
    }
    let mut due = conn.prepare_cached(
        "SELECT subscription_id, count(*) FROM deliveries
         WHERE next_retry_ms IS NOT NULL AND next_retry_ms > ?1 GROUP BY subscription_id",
    )?;
    let rows = due.query_map([now], |row| Ok((row.get::<_, String>(0)?, row.get(1)?)))?;
    for row in rows {
        let (id, count) = row?;
        if let Some(total) = totals.get_mut(&id) {
            total[3] = count;
        }
    }
    let mut by_state = conn.prepare_cached(
        "SELECT subscription_id, state,
                sum(state IN ('missed', 'recovered', 'pending')
                    AND (http_status_code <> 0 OR error_class <> '')),
                count(*)
         FROM event_outcomes WHERE occurred_ms >= ?1 GROUP BY 1, 2",
    )?;
    let mut events: BTreeMap<String, [i64; 6]> = BTreeMap::new();
    let rows = by_state.query_map([since.div_euclid(MINUTE_MS) * MINUTE_MS], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (id, state, failed, count) = row?;
        let slot = match state.as_str() {
            "delivered" => 0,
            "missed" => 1,
            "recovered" => 2,
            "pending" => 3,
            _ => 4,
        };
        let totals = events.entry(id).or_default();
        totals[slot] += count;
        totals[5] += failed;
    }
    Ok(Reference {
        buckets,
        totals,
        events,
    })
}

/// Fails unless the board and the reference counted the same attempts.
fn check_agree(
    store: &Store,
    board: &[SubscriptionHealth],
    reference: &Reference,
    since: i64,
) -> Result<(), BoxError> {
    let kept: BTreeMap<Bucket, (i64, i64)> = health::outcomes_since(store, since)?
        .into_iter()
        .map(|o| {
            let code = i64::from(o.http_status_code.unwrap_or(0));
            (
                (o.subscription_id, o.status, code, o.error_class),
                (o.count, o.last_ms),
            )
        })
        .collect();
    if kept != reference.buckets {
        return Err("delivery_counts and the GROUP BY reference disagree".into());
    }
    for row in board {
        let total = reference
            .totals
            .get(&row.id)
            .ok_or("a row the reference lacks")?;
        let grouped: i64 = row.failures.iter().map(|group| group.count).sum();
        let board_total = [row.delivered, row.failed, row.pending, row.retries_due];
        if board_total != *total {
            return Err(format!("{}: board {board_total:?} vs reference {total:?}", row.id).into());
        }
        let events = &row.events;
        let board_events = [
            events.delivered,
            events.missed,
            events.recovered,
            events.pending,
            events.unknown,
            grouped,
        ];
        let reference_events = reference.events.get(&row.id).copied().unwrap_or_default();
        if board_events != reference_events {
            return Err(format!(
                "{}: events {board_events:?} vs reference {reference_events:?}",
                row.id
            )
            .into());
        }
    }
    if board.len() != reference.totals.len() {
        return Err("the board and the reference list different subscriptions".into());
    }
    Ok(())
}

/// Times the board over 1 h and 24 h back from the store's newest event.
pub fn run(path: &Path, runs: usize) -> Result<(), BoxError> {
    let now = store_now(path)?;
    println!(
        "{} ({:.2} GB), {runs} runs each, the two reads of a row in turn",
        path.display(),
        std::fs::metadata(path)?.len() as f64 / 1e9
    );
    println!(
        "| window | attempts | events | cache | board median (min–max) ms | plain GROUP BYs, same run |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, window) in [("1 h", HOUR_MS), ("24 h", 24 * HOUR_MS)] {
        let since = now - window;
        let (mut attempts, mut events) = (0, 0);
        for cold in [false, true] {
            let (mut ours, mut theirs): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
            for run in 0..=runs {
                if cold {
                    evict(path);
                }
                let started = Instant::now();
                let store = Store::open(path)?;
                let board = history::report::health(&store, since, now)?;
                let took_ours = started.elapsed();
                if cold {
                    evict(path);
                }
                let started = Instant::now();
                let conn = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                let reference = reference_health(&conn, since, now)?;
                let took_theirs = started.elapsed();
                if run == 0 && !cold {
                    check_agree(&store, &board, &reference, since)?;
                    attempts = board
                        .iter()
                        .map(|row| row.delivered + row.failed + row.pending)
                        .sum::<i64>();
                    events = reference
                        .events
                        .values()
                        .map(|counts| counts[..5].iter().sum::<i64>())
                        .sum::<i64>();
                }
                // The first warm pair warms the cache; not counted.
                if cold || run > 0 {
                    ours.push(took_ours);
                    theirs.push(took_theirs);
                }
            }
            println!(
                "| {label} | {attempts} | {events} | {} | {} | {} |",
                if cold { "cold" } else { "warm" },
                median_min_max(&mut ours),
                median_min_max(&mut theirs)
            );
        }
    }
    Ok(())
}
