//! 1. `health`: a Health board refresh against a plain `GROUP BY` reference.

use super::BoxError;
use super::HOUR_MS;
use super::MINUTE_MS;
use super::Options;
use super::Rng;
use super::at;
use super::mib;
use super::spread;
use super::store_bytes;
use earshot_core::api::types::agents::DeliveryRecord;
use earshot_core::api::types::agents::DeliveryStatus;
use earshot_core::api::types::agents::Subscription;
use earshot_core::history;
use earshot_core::history::report::SubscriptionHealth;
use earshot_core::store;
use earshot_core::store::Store;
use earshot_core::store::deliveries;
use earshot_core::store::health;
use rusqlite::Connection;
use rusqlite::OpenFlags;
use serde_json::Map;
use std::collections::BTreeMap;
use std::time::Instant;

/// One seeded attempt's outcome: status, code, error, retry after (min).
fn outcome(
    rng: &mut Rng,
) -> (
    DeliveryStatus,
    Option<u16>,
    Option<&'static str>,
    Option<i64>,
) {
    match rng.below(100) {
        0..60 => (DeliveryStatus::Delivered, Some(200), None, None),
        60..70 => (
            DeliveryStatus::Failed,
            Some(401),
            Some("HTTP 401: invalid signature"),
            None,
        ),
        70..78 => (
            DeliveryStatus::Failed,
            Some(500),
            Some("HTTP 500: internal server error"),
            Some(1 + rng.below(60) as i64),
        ),
        78..84 => (
            DeliveryStatus::Failed,
            None,
            Some("timeout: no answer within 15 s"),
            Some(1 + rng.below(60) as i64),
        ),
        84..90 => (
            DeliveryStatus::Failed,
            None,
            Some("connection error: Connection refused (os error 111)"),
            Some(1 + rng.below(60) as i64),
        ),
        90..95 => (DeliveryStatus::Pending, None, None, None),
        _ => (
            DeliveryStatus::Failed,
            Some(404),
            Some("HTTP 404: not found"),
            None,
        ),
    }
}

/// `per_session` attempts of one session, created within 24 h before `now`.
fn seeded_session(
    index: usize,
    per_session: usize,
    subs: &[Subscription],
    now: i64,
    rng: &mut Rng,
) -> (String, Vec<DeliveryRecord>) {
    let session_id = format!("ses_{}", rng.hex32());
    let start = now - 1 - rng.below(24 * HOUR_MS as u64 - MINUTE_MS as u64) as i64;
    let records = (0..per_session)
        .map(|attempt| {
            let subscription = &subs[rng.below(subs.len() as u64) as usize];
            let created = start + (attempt as i64) * 1_500 + rng.below(1_000) as i64;
            let (status, code, error, retry_minutes) = outcome(rng);
            let delivered = status == DeliveryStatus::Delivered;
            DeliveryRecord {
                id: format!("dlv_{index:07}_{attempt:02}_{}", rng.hex32()),
                subscription_id: subscription.id.clone(),
                session_id: session_id.clone(),
                status,
                attempt_count: 1 + rng.below(3) as u32,
                http_status_code: code,
                error: error.map(str::to_owned),
                delivered_at: delivered.then(|| at(created + 40 + rng.below(400) as i64)),
                next_retry_at: retry_minutes.map(|minutes| at(created + minutes * MINUTE_MS)),
                created_at: at(created),
                extra: Map::new(),
            }
        })
        .collect();
    (session_id, records)
}

fn seeded_subscriptions(count: usize) -> Vec<Subscription> {
    (0..count)
        .map(|i| Subscription {
            id: format!("{:08x}-7d3a-4e6b-9c0f-{:012x}", 0x5f2b_8c00 + i, i),
            url: format!("https://hooks-{i}.example.com/svc/voice-agent"),
            events: vec!["session.started".into(), "session.completed".into()],
            agent_id: None,
            enabled: i % 7 != 6,
            secret_version: 1,
            extra: Map::new(),
        })
        .collect()
}

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

pub(super) fn bench_health(options: &Options) -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("health.db");
    let mut store = Store::open(&path)?;
    let now = store::now_ms();
    let subs = seeded_subscriptions(options.subs);
    deliveries::replace_subscriptions(&mut store, &subs, now)?;
    let per_session = (options.records / options.sessions).max(1);
    println!(
        "== 1. Health refresh: {} records, {} sessions, {} subscriptions, 24 h ==",
        per_session * options.sessions,
        options.sessions,
        subs.len()
    );

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeding = Instant::now();
    const SESSIONS_PER_BATCH: usize = 2_000;
    let mut first = 0;
    while first < options.sessions {
        let last = (first + SESSIONS_PER_BATCH).min(options.sessions);
        let batch: Vec<(String, Vec<DeliveryRecord>)> = (first..last)
            .map(|index| seeded_session(index, per_session, &subs, now, &mut rng))
            .collect();
        let view: Vec<(&str, &[DeliveryRecord])> = batch
            .iter()
            .map(|(id, records)| (id.as_str(), records.as_slice()))
            .collect();
        deliveries::record_sweeps(&mut store, &view, now)?;
        first = last;
    }
    let seeding = seeding.elapsed();
    let stored = deliveries::count(&store)?;
    let (db, wal) = store_bytes(&path)?;
    println!(
        "seeded           {stored} records in {:.1} s ({:.0} records/s), store {:.1} MiB (+ WAL {:.1} MiB), {:.0} B/record",
        seeding.as_secs_f64(),
        stored as f64 / seeding.as_secs_f64(),
        mib(db),
        mib(wal),
        (db + wal) as f64 / stored.max(1) as f64,
    );

    let reference_conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let outcomes: i64 =
        reference_conn.query_row("SELECT count(*) FROM event_outcomes", [], |row| row.get(0))?;
    println!("event rows       {outcomes} (one per subscription and event, kept by the sweep)");
    println!(
        "{:<8} {:>9} {:>11} {:>9} {:>9} {:>9} {:>24}",
        "window", "attempts", "variant", "median", "p90", "max", "runs"
    );
    for (label, window) in [("1 h", HOUR_MS), ("24 h", 24 * HOUR_MS)] {
        let since = now - window;
        let mut board_times = Vec::with_capacity(options.runs);
        let mut reference_times = Vec::with_capacity(options.runs);
        let mut attempts = 0;
        for run in 0..options.runs {
            let started = Instant::now();
            let board = history::report::health(&store, since, now)?;
            board_times.push(started.elapsed());
            let started = Instant::now();
            let reference = reference_health(&reference_conn, since, now)?;
            reference_times.push(started.elapsed());
            if run == 0 {
                check_agree(&store, &board, &reference, since)?;
                attempts = board
                    .iter()
                    .map(|row| row.delivered + row.failed + row.pending)
                    .sum::<i64>();
            }
        }
        for (variant, times) in [
            ("counts", &mut board_times),
            ("GROUP BY", &mut reference_times),
        ] {
            let (median, p90, max) = spread(times);
            println!(
                "{label:<8} {attempts:>9} {variant:>11} {median:>7.2}ms {p90:>7.2}ms {max:>7.2}ms {:>24}",
                format!("{} (interleaved, agree)", times.len())
            );
        }
    }
    println!();
    Ok(())
}
