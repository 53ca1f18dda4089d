//! Part 5, `eventlist`: the Events list (`earshot events`, the console's
//! Events pane) over LIST observed events with two subscriptions each: the
//! newest 5,000 matching a filter, through `history::event_list::list`,
//! interleaved with the straightforward way (read every event with its
//! outcomes, filter in memory, keep the newest 5,000); both must agree.

use std::collections::BTreeMap;
use std::time::Instant;

use earshot_core::api::types::agents::Subscription;
use earshot_core::history::event_list::{EventRow, list};
use earshot_core::history::event_query::EventQuery;
use earshot_core::store::{self, Store, deliveries};
use rusqlite::{Connection, OpenFlags, params};
use serde_json::Map;

use super::{BoxError, HOUR_MS, Options, Rng, spread};

/// Rows the console's Events pane loads at most.
const SHOWN: usize = 5_000;
const TYPES: [&str; 5] = [
    "session.started",
    "session.completed",
    "call.connected",
    "call.ended",
    "call.failed",
];
const SUBS: [&str; 2] = [
    "5f2b8c00-7d3a-4e6b-9c0f-000000000000",
    "db318dee-7d3a-4e6b-9c0f-000000000001",
];

/// One subscription's state for an event: mostly delivered, 1 % missed,
/// 2 % pending, 0.5 % recovered, the rest unknown.
fn state(rng: &mut Rng) -> &'static str {
    match rng.below(1_000) {
        0..10 => "missed",
        10..30 => "pending",
        30..35 => "recovered",
        35..950 => "delivered",
        _ => "unknown",
    }
}

/// LIST events over 24 h before `now`, written straight into the tables
/// (the observer's and the sweep's paths are measured by parts 2–4).
fn seed(path: &std::path::Path, count: usize, now: i64) -> Result<(), BoxError> {
    let mut conn = Connection::open(path)?;
    let tx = conn.transaction()?;
    {
        let mut event = tx.prepare(
            "INSERT INTO events (event_id, event, session_id, occurred_ms, received_ms,
                                 delivery_id, headers, body)
             VALUES (?1, ?2, ?3, ?4, ?4, NULL, '[]', ?5)",
        )?;
        let mut outcome = tx.prepare(
            "INSERT INTO event_outcomes (subscription_id, event_key, event_id, event, session_id,
                 occurred_ms, state, attempts, http_status_code, error_class)
             VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, 1, ?7, '')",
        )?;
        let mut rng = Rng(0x5EED_0000_0000_0001);
        for n in 0..count {
            let event_id = format!("{:08x}-ev-{}", n, rng.hex32());
            let kind = TYPES[n % TYPES.len()];
            let session = if kind.starts_with("call") {
                format!("call_{:012x}", n / 2)
            } else {
                format!("ses_{:012x}", n / 2)
            };
            let occurred = now - 24 * HOUR_MS + (n as i64 * 24 * HOUR_MS) / count as i64;
            let body = format!(r#"{{"event_id":"{event_id}","event":"{kind}"}}"#);
            event.execute(params![event_id, kind, session, occurred, body])?;
            for sub in SUBS {
                let state = state(&mut rng);
                let code = if state == "delivered" { 0 } else { 401 };
                outcome.execute(params![sub, event_id, kind, session, occurred, state, code])?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// The straightforward list: every event with its outcomes, filtered in
/// memory, newest first. Its own connection each time, as the console's
/// loads have: a connection kept open with this statement cached was seen
/// to slow the next list query on the other connection by 60 ms (100,000
/// events) to 550 ms (1,000,000), whichever variant it was.
fn reference(
    path: &std::path::Path,
    query: &EventQuery,
    since: i64,
) -> Result<Vec<String>, BoxError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut statement = conn.prepare(
        "SELECT e.event_id, e.event, e.session_id, e.occurred_ms, o.subscription_id, o.state
         FROM events e LEFT JOIN event_outcomes o ON o.event_id = e.event_id
         ORDER BY e.occurred_ms DESC, e.event_id DESC",
    )?;
    type Event = (String, String, String, i64, Vec<(String, String)>);
    let mut events: BTreeMap<(i64, String), Event> = BTreeMap::new();
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
            row.get::<_, Option<String>>(4)?,
            row.get::<_, Option<String>>(5)?,
        ))
    })?;
    for row in rows {
        let (id, kind, session, occurred, sub, state) = row?;
        let entry = events
            .entry((occurred, id.clone()))
            .or_insert_with(|| (id, kind, session, occurred, Vec::new()));
        if let (Some(sub), Some(state)) = (sub, state) {
            entry.4.push((sub, state));
        }
    }
    let since = query.since_ms.unwrap_or(since);
    Ok(events
        .into_values()
        .rev()
        .filter(|(id, kind, session, occurred, outcomes)| {
            *occurred >= since
                && query.event_type.as_ref().is_none_or(|t| t == kind)
                && query
                    .session
                    .as_ref()
                    .is_none_or(|s| session.starts_with(s.as_str()))
                && (query.state.is_none() && query.subscription.is_none()
                    || outcomes.iter().any(|(sub, state)| {
                        query.state.is_none_or(|wanted| wanted.as_str() == state)
                            && query
                                .subscription
                                .as_ref()
                                .is_none_or(|prefix| sub.starts_with(prefix.as_str()))
                    }))
                && query.words.iter().all(|word| {
                    id.to_lowercase().contains(word)
                        || session.to_lowercase().contains(word)
                        || kind.contains(word.as_str())
                })
        })
        .take(SHOWN)
        .map(|(id, ..)| id)
        .collect())
}

pub(super) fn bench_event_list(options: &Options) -> Result<(), BoxError> {
    println!(
        "== 5. Events list: {} events, 2 subscriptions each, newest {SHOWN} matching ==",
        options.list
    );
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("events.db");
    let mut store = Store::open(&path)?;
    let now = store::now_ms();
    let subs: Vec<Subscription> = SUBS
        .iter()
        .map(|id| Subscription {
            id: (*id).to_owned(),
            url: format!("https://{}.example.com/hook", &id[..8]),
            events: TYPES.map(str::to_owned).to_vec(),
            agent_id: None,
            enabled: true,
            secret_version: 1,
            extra: Map::new(),
        })
        .collect();
    deliveries::replace_subscriptions(&mut store, &subs, now)?;
    let seeding = Instant::now();
    seed(&path, options.list, now)?;
    println!(
        "seeded           in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );
    println!(
        "{:<34} {:>7} {:>11} {:>9} {:>9} {:>9}",
        "filter", "rows", "variant", "median", "p90", "max"
    );
    let since = now - 24 * HOUR_MS - 1;
    for filter in [
        "",
        "type:call.ended",
        "status:missed",
        "sub:db318dee status:missed",
        "session:call_00000000001",
        "since:1h",
        "nothing-matches-this",
    ] {
        let query = EventQuery::parse(filter, now)?;
        let runs = options.runs.min(5);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let mut rows = 0;
        for run in 0..runs {
            let started = Instant::now();
            let listed: Vec<EventRow> = list(&store, &query, since, SHOWN)?;
            ours.push(started.elapsed());
            let started = Instant::now();
            let expected = reference(&path, &query, since)?;
            theirs.push(started.elapsed());
            if run == 0 {
                let got: Vec<&str> = listed.iter().map(|row| row.event_id.as_str()).collect();
                if got != expected {
                    return Err(format!("`{filter}`: the list and the reference disagree").into());
                }
                rows = listed.len();
            }
        }
        let label = if filter.is_empty() { "(none)" } else { filter };
        for (variant, times) in [("store", &mut ours), ("in memory", &mut theirs)] {
            let (median, p90, max) = spread(times);
            println!(
                "{label:<34} {rows:>7} {variant:>11} {median:>7.2}ms {p90:>7.2}ms {max:>7.2}ms"
            );
        }
    }
    println!();
    Ok(())
}
