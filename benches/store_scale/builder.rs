//! A store filled the way an account fills it, through earshot's own write
//! paths: the observer's writer files each event (realistic bodies of
//! ~600 bytes with the platform's headers), then the sweep records every
//! delivery attempt of two subscriptions per event, so the trigger-kept
//! counts, event outcomes and incidents are the ones a real store has.
//!
//! - Traffic over the 24 hours before the build: calls (`call.connected`
//!   then `call.ended`, with a caller's number and presigned links),
//!   WebSocket sessions (`session.started` then `session.completed`), and
//!   `call.failed`, the rare type, about 1 % of events.
//! - The observer's subscription: every event delivered at the first
//!   attempt (its attempt id is the `X-SVC-Delivery-Id` the observer kept).
//! - A customer's subscription with the failure mix of a bad day: 401 for
//!   everything over 2.4 hours (one incident of about 100,000 events at
//!   1M events a day), 1 % answered 503 and 0.5 % timing out elsewhere,
//!   each retried on the platform's schedule (5 s, 30 s, 2 min, 10 min,
//!   30 min) and delivered by a later attempt six times in ten; the
//!   chains still running at the end are pending.
//!
//! Every store benchmark reads its store from here ([`built`]:
//! `target/bench-stores/events-N.db`, built on first use and kept), so
//! each one sees the same bodies, headers, failure mix and rare type; `N`
//! only sets the size (`events=20000` builds in seconds, the same mix).

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, deliveries};
use futures_util::StreamExt;

pub const OBSERVER_SUB: &str = "0b5e4e00-7d3a-4e6b-9c0f-0000000000aa";
pub const CUSTOMER_SUB: &str = "c0570000-7d3a-4e6b-9c0f-0000000000bb";
const HOUR_MS: i64 = 3_600_000;
const RETRY_SECS: [i64; 5] = [5, 30, 120, 600, 1800];

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One observed event and what the platform did with it.
pub(crate) struct Planned {
    pub(crate) event: ObservedEvent,
    session_id: String,
    occurred_ms: i64,
    delivery_id: String,
}

/// How the customer's receiver answers one event.
#[derive(Clone, Copy)]
enum Answer {
    Ok,
    Unauthorized,
    /// Retried: `fails` attempts failing with this answer, then delivered
    /// (or failed for good after six).
    Flaky {
        status: Option<u16>,
        fails: usize,
    },
}

fn at(ms: i64) -> DateTime<FixedOffset> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .fixed_offset()
}

fn uuid(rng: &mut fastrand::Rng) -> String {
    let a = rng.u64(..);
    let b = rng.u64(..);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn hex(rng: &mut fastrand::Rng, len: usize) -> String {
    (0..len)
        .map(|_| char::from_digit(rng.u32(..16), 16).unwrap_or('0'))
        .collect()
}

/// A presigned link as the platform gives them (about 250 bytes).
fn presigned(rng: &mut fastrand::Rng, call: &str, what: &str) -> String {
    format!(
        "https://artifacts.example.invalid/{call}/{what}?X-Amz-Algorithm=AWS4-HMAC-SHA256&\
         X-Amz-Credential={}%2F20261205%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261205T000000Z&\
         X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={}",
        hex(rng, 20).to_uppercase(),
        hex(rng, 64)
    )
}

fn body(
    rng: &mut fastrand::Rng,
    kind: &str,
    id: &str,
    occurred_ms: i64,
    started_ms: i64,
) -> String {
    let event_id = uuid(rng);
    let timestamp = at(occurred_ms).to_rfc3339();
    let created = at(started_ms).to_rfc3339();
    let agent = "7c1e4f2a-3b5d-4e6f-8a9b-0c1d2e3f4a5b";
    if kind.starts_with("call") {
        let ended = kind != "call.connected";
        let (recording, transcript) = if kind == "call.ended" {
            (
                format!("\"{}\"", presigned(rng, id, "recording.wav")),
                format!("\"{}\"", presigned(rng, id, "transcript.json")),
            )
        } else {
            ("null".to_owned(), "null".to_owned())
        };
        format!(
            r#"{{"event_id":"{event_id}","event":"{kind}","timestamp":"{timestamp}","call":{{"call_id":"{id}","session_id":"{id}","account_id":40213,"agent_id":"{agent}","status":"{}","direction":"inbound","from_number":"+1555{:07}","to_number":"+15550100","created_at":"{created}","ended_at":{},"recording_url":{recording},"transcript_url":{transcript}}}}}"#,
            match kind {
                "call.connected" => "in-progress",
                "call.ended" => "completed",
                _ => "failed",
            },
            rng.u32(..10_000_000),
            if ended {
                format!("\"{timestamp}\"")
            } else {
                "null".to_owned()
            },
        )
    } else {
        let completed = kind == "session.completed";
        format!(
            r#"{{"event_id":"{event_id}","event":"{kind}","timestamp":"{timestamp}","session":{{"session_id":"{id}","account_id":40213,"agent_id":"{agent}","status":"{}","duration_seconds":{},"public_close_reason":{},"s3_prefix":null,"created_at":"{created}","ended_at":{}}}}}"#,
            if completed { "completed" } else { "created" },
            if completed {
                format!("{:.1}", (occurred_ms - started_ms) as f64 / 1000.0)
            } else {
                "null".to_owned()
            },
            if completed {
                "\"client_closed\""
            } else {
                "null"
            },
            if completed {
                format!("\"{timestamp}\"")
            } else {
                "null".to_owned()
            },
        )
    }
}

fn headers(
    rng: &mut fastrand::Rng,
    kind: &str,
    delivery_id: &str,
    len: usize,
) -> Vec<(String, String)> {
    [
        ("host", "observer.example.invalid".to_owned()),
        ("user-agent", "SVC-Webhooks/1.0".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("content-length", len.to_string()),
        ("accept", "*/*".to_owned()),
        ("accept-encoding", "gzip, br".to_owned()),
        (
            "x-svc-signature",
            format!(
                "t={},v1={}",
                rng.u32(1_700_000_000..1_800_000_000),
                hex(rng, 64)
            ),
        ),
        ("x-svc-event", kind.to_owned()),
        ("x-svc-delivery-id", delivery_id.to_owned()),
        ("x-forwarded-for", "203.0.113.7".to_owned()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// The day of traffic a store is built from: 24 hours before the build.
pub(crate) const DAY_MS: i64 = 24 * HOUR_MS;

/// The window live traffic's sessions began in (what an observer receives
/// as it runs): the filing and listen floods.
pub(crate) const LIVE_MS: i64 = 60_000;

/// `count` events of sessions begun over the `window_ms` before `now_ms`
/// (a day for the build, the last minute for live traffic), grouped by
/// session. Session ids are random, as the platform's are
/// (`call_<32 hex>`), so they spread over every index keyed by them.
pub(crate) fn plan(
    count: usize,
    now_ms: i64,
    window_ms: i64,
    rng: &mut fastrand::Rng,
) -> Vec<Vec<Planned>> {
    let start = now_ms - window_ms;
    let mut sessions = Vec::new();
    let mut made = 0;
    while made < count {
        let began = start + (made as i64 * window_ms) / count as i64;
        let roll = rng.u32(..1000);
        let random = format!("{:016x}{:016x}", rng.u64(..), rng.u64(..));
        let (id, kinds): (String, &[&str]) = if roll < 20 {
            (format!("call_{random}"), &["call.failed"])
        } else if roll < 600 {
            (format!("call_{random}"), &["call.connected", "call.ended"])
        } else {
            (
                format!("ses_{random}"),
                &["session.started", "session.completed"],
            )
        };
        let length = i64::from(rng.u32(20_000..600_000));
        let mut events = Vec::new();
        for (index, kind) in kinds.iter().enumerate() {
            let occurred = if index == 0 {
                began
            } else {
                (began + length).min(now_ms - 1_000)
            };
            let delivery_id = uuid(rng);
            let text = body(rng, kind, &id, occurred, began);
            let header = headers(rng, kind, &delivery_id, text.len());
            let Some(event) = ObservedEvent::from_delivery(
                text.as_bytes(),
                header,
                Some(delivery_id.clone()),
                occurred + 180,
            ) else {
                continue;
            };
            events.push(Planned {
                event,
                session_id: id.clone(),
                occurred_ms: occurred,
                delivery_id,
            });
        }
        made += events.len();
        sessions.push(events);
    }
    sessions
}

fn answer(occurred_ms: i64, now_ms: i64, rng: &mut fastrand::Rng) -> Answer {
    let hours_in = (occurred_ms - (now_ms - 24 * HOUR_MS)) as f64 / HOUR_MS as f64;
    if (10.0..12.4).contains(&hours_in) {
        return Answer::Unauthorized;
    }
    let roll = rng.u32(..1000);
    let fails = if rng.u32(..10) < 6 {
        rng.usize(1..6)
    } else {
        6
    };
    match roll {
        0..10 => Answer::Flaky {
            status: Some(503),
            fails,
        },
        10..15 => Answer::Flaky {
            status: None,
            fails,
        },
        _ => Answer::Ok,
    }
}

fn record(id: String, sub: &str, session: &str, attempt: usize, created_ms: i64) -> DeliveryRecord {
    DeliveryRecord {
        id,
        subscription_id: sub.to_owned(),
        session_id: session.to_owned(),
        status: DeliveryStatus::Delivered,
        attempt_count: u32::try_from(attempt).unwrap_or(u32::MAX),
        http_status_code: Some(200),
        error: None,
        delivered_at: Some(at(created_ms + 90)),
        next_retry_at: None,
        created_at: at(created_ms),
        extra: Default::default(),
    }
}

/// The attempts of both subscriptions for one event, as a sweep at
/// `now_ms` lists them.
fn attempts(event: &Planned, now_ms: i64, rng: &mut fastrand::Rng) -> Vec<DeliveryRecord> {
    let first = event.occurred_ms + 150;
    let mut out = vec![record(
        event.delivery_id.clone(),
        OBSERVER_SUB,
        &event.session_id,
        1,
        first,
    )];
    let session = &event.session_id;
    match answer(event.occurred_ms, now_ms, rng) {
        Answer::Ok => out.push(record(uuid(rng), CUSTOMER_SUB, session, 1, first + 3)),
        Answer::Unauthorized => {
            let mut failed = record(uuid(rng), CUSTOMER_SUB, session, 1, first + 3);
            failed.status = DeliveryStatus::Failed;
            failed.http_status_code = Some(401);
            failed.error = Some("HTTP 401: invalid signature".into());
            failed.delivered_at = None;
            out.push(failed);
        }
        Answer::Flaky { status, fails } => {
            let mut created = first + 3;
            for attempt in 1..=6 {
                if created > now_ms {
                    break;
                }
                let mut this = record(uuid(rng), CUSTOMER_SUB, session, attempt, created);
                if attempt <= fails {
                    this.status = DeliveryStatus::Failed;
                    this.delivered_at = None;
                    this.http_status_code = status;
                    this.error = Some(match status {
                        Some(code) => format!("HTTP {code}: service unavailable"),
                        None => "timeout: no answer within 15 s".into(),
                    });
                    let next = RETRY_SECS
                        .get(attempt - 1)
                        .map(|secs| created + 15_000 + secs * 1_000);
                    this.next_retry_at = next.map(at);
                    out.push(this);
                    match next {
                        Some(next) => created = next,
                        None => break,
                    }
                } else {
                    out.push(this);
                    break;
                }
            }
        }
    }
    out
}

/// The two subscriptions every event goes to: the observer's and a
/// customer's, listening to every type.
pub(crate) fn subscriptions() -> Result<Vec<Subscription>, BoxError> {
    let subscription = |id: &str, url: &str| -> Result<Subscription, BoxError> {
        Ok(serde_json::from_value(serde_json::json!({
            "id": id, "url": url, "events": ["session.started", "session.completed",
            "call.connected", "call.ended", "call.failed"], "enabled": true, "secret_version": 1,
        }))?)
    };
    Ok(vec![
        subscription(OBSERVER_SUB, "https://observer.example.invalid/hooks")?,
        subscription(CUSTOMER_SUB, "https://customer.example.invalid/webhooks")?,
    ])
}

/// How long [`file`] took.
pub(crate) struct Filed {
    /// Until every event was committed (each request answered).
    pub filed: std::time::Duration,
    /// Until the writer had also put every event in the free-text index,
    /// which it does as the flood ebbs.
    pub indexed: std::time::Duration,
}

/// Files `events` through the observer's writer into `store` as `listen
/// --store` does (512 requests in flight, group commits), and how long
/// that took, the writer's last commit included, and until the events
/// were in the free-text index too.
pub(crate) fn file<'a>(
    store: Store,
    events: impl Iterator<Item = &'a Planned>,
) -> Result<Filed, BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let reader = rusqlite::Connection::open(store.path())?;
    let (writer, thread) = Writer::start(store)?;
    let started = Instant::now();
    runtime.block_on(async {
        futures_util::stream::iter(events)
            .for_each_concurrent(512, |planned| {
                let writer = writer.clone();
                async move {
                    if let Err(error) = writer.write(planned.event.clone()).await {
                        eprintln!("not filed: {error}");
                    }
                }
            })
            .await;
    });
    let filed = started.elapsed();
    let waiting = || -> rusqlite::Result<i64> {
        reader.query_row("SELECT count(*) FROM event_words_pending", [], |row| {
            row.get(0)
        })
    };
    while waiting()? > 0 {
        if started.elapsed() > std::time::Duration::from_secs(600) {
            return Err("the free-text index did not catch up within 10 minutes".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let indexed = started.elapsed();
    drop(writer);
    thread.join().map_err(|_| "the writer thread panicked")?;
    Ok(Filed { filed, indexed })
}

/// `target/bench-stores/events-N.db`, beside the running benchmark's
/// binary.
pub fn store_path(events: usize) -> Result<PathBuf, BoxError> {
    let exe = std::env::current_exe()?;
    let target = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "target"))
        .ok_or("cannot locate the target directory")?;
    let dir = target.join("bench-stores");
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join(format!("events-{events}.db")))
}

/// The store of `events` events, built first when it is not there yet
/// (into a `.partial` file renamed when complete, so a build cut short is
/// never taken for a store).
pub fn built(events: usize) -> Result<PathBuf, BoxError> {
    let path = store_path(events)?;
    if path.exists() {
        return Ok(path);
    }
    let partial = path.with_extension("partial");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", partial.display()));
    }
    build(&partial, events)?;
    let conn = rusqlite::Connection::open(&partial)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    drop(conn);
    std::fs::rename(&partial, &path)?;
    let bytes = std::fs::metadata(&path)?.len();
    eprintln!(
        "built {} ({:.2} GB, {:.0} bytes an event)",
        path.display(),
        bytes as f64 / 1e9,
        bytes as f64 / events.max(1) as f64
    );
    Ok(path)
}

/// Builds the store at `path` (which must not exist) with `count` events.
fn build(path: &Path, count: usize) -> Result<(), BoxError> {
    let started = Instant::now();
    let now_ms = Utc::now().timestamp_millis();
    let mut rng = fastrand::Rng::with_seed(0x5EED_2026_1205);
    let sessions = plan(count, now_ms, DAY_MS, &mut rng);
    eprintln!(
        "planned {} events in {} sessions in {:.1} s",
        sessions.iter().map(Vec::len).sum::<usize>(),
        sessions.len(),
        started.elapsed().as_secs_f64()
    );
    let filed = file(Store::open(path)?, sessions.iter().flatten())?;
    eprintln!(
        "filed in {:.1} s, indexed in {:.1} s",
        filed.filed.as_secs_f64(),
        filed.indexed.as_secs_f64()
    );

    let swept = Instant::now();
    let mut store = Store::open(path)?;
    deliveries::replace_subscriptions(&mut store, &subscriptions()?, now_ms)?;
    let mut done = 0;
    for chunk in sessions.chunks(500) {
        let lists: Vec<(String, Vec<DeliveryRecord>)> = chunk
            .iter()
            .filter_map(|events| {
                let session = events.first()?.session_id.clone();
                let records = events
                    .iter()
                    .flat_map(|event| attempts(event, now_ms, &mut rng))
                    .collect();
                Some((session, records))
            })
            .collect();
        let batch: Vec<(&str, &[DeliveryRecord])> = lists
            .iter()
            .map(|(session, records)| (session.as_str(), records.as_slice()))
            .collect();
        deliveries::record_sweeps(&mut store, &batch, now_ms)?;
        done += chunk.len();
        if done % 50_000 < 500 {
            eprintln!(
                "swept {done} of {} sessions ({:.0} s)",
                sessions.len(),
                swept.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!("swept in {:.1} s", swept.elapsed().as_secs_f64());
    Ok(())
}
