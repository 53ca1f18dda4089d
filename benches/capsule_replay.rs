//! `cargo build --release && cargo bench --bench capsule_replay [--
//! events=1000 span_s=20 speed=1]`: how close `earshot emulator --replay`
//! keeps each attempt to its recorded time (target: ±50 ms for 1,000
//! events at speed 1), and that it reproduces the recorded
//! delivered/missed sequence against a receiver that behaves as the
//! recorded one did.
//!
//! The capsule is made here, EVENTS events over SPAN_S seconds as the
//! platform records them: a third of them, in the middle, missed (one 401,
//! as a receiver with the wrong secret answers); every tenth of the others
//! delivered on its second attempt 1.5 s after a 500; the rest delivered
//! at once. The receiver on 127.0.0.1 answers each event as recorded (401
//! to the missed ones, 500 to a retried one's first attempt, else 200).
//! The binary replays the capsule to it; its results file gives each
//! attempt's planned and actual time, and `capsule::compare` the states.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use earshot_core::capsule::format::{
    self, AttemptLine, Capsule, DeliveryLine, EventLine, FORMAT, Header, SubscriptionLine, VERSION,
};
use earshot_core::capsule::{compare, results_path};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SUBSCRIPTION: &str = "sub_bench";
/// 2026-01-01T00:00:00Z.
const BASE_MS: i64 = 1_767_225_600_000;

/// How event `index` of `count` went in the incident.
#[derive(Clone, Copy, PartialEq)]
enum Recorded {
    Missed,
    SecondAttempt,
    Delivered,
}

fn recorded(index: usize, count: usize) -> Recorded {
    if (count / 3..2 * count / 3).contains(&index) {
        Recorded::Missed
    } else if index.is_multiple_of(10) {
        Recorded::SecondAttempt
    } else {
        Recorded::Delivered
    }
}

fn attempt(number: u32, at_ms: i64, code: u16) -> AttemptLine {
    AttemptLine {
        attempt: number,
        at_ms,
        status: if code == 200 { "delivered" } else { "failed" }.to_owned(),
        http_status_code: Some(code),
        error: (code != 200).then(|| format!("HTTP {code}")),
        next_retry_ms: None,
    }
}

fn capsule(count: usize, span_ms: i64) -> Capsule {
    let events: Vec<EventLine> = (0..count)
        .map(|index| {
            let at = BASE_MS + span_ms * index as i64 / count.max(1) as i64;
            let event_id = format!("evt_{index:05}");
            let (state, diagnosis, attempts) = match recorded(index, count) {
                Recorded::Missed => (
                    "missed",
                    Some("401 invalid signature".to_owned()),
                    vec![attempt(1, at + 5, 401)],
                ),
                Recorded::SecondAttempt => (
                    "delivered",
                    None,
                    vec![attempt(1, at + 5, 500), attempt(2, at + 1_505, 200)],
                ),
                Recorded::Delivered => ("delivered", None, vec![attempt(1, at + 5, 200)]),
            };
            EventLine {
                body: Some(format!(
                    r#"{{"event_id":"{event_id}","event":"call.ended","timestamp":{at}}}"#
                )),
                event_id,
                event: "call.ended".to_owned(),
                session_id: format!("call_{index:05}"),
                occurred: String::new(),
                occurred_ms: at,
                received_ms: at + 3,
                headers: vec![],
                body_base64: None,
                body_masked: false,
                deliveries: vec![DeliveryLine {
                    subscription_id: SUBSCRIPTION.to_owned(),
                    state: state.to_owned(),
                    diagnosis,
                    attempts,
                }],
            }
        })
        .collect();
    Capsule {
        header: Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            first_ms: events.first().map(|event| event.occurred_ms),
            last_ms: events.last().map(|event| event.occurred_ms),
            subscription: None,
            sessions: vec![],
            events: events.len(),
            personal_data: "masked".to_owned(),
            signatures: "dropped".to_owned(),
        },
        subscriptions: vec![SubscriptionLine {
            id: SUBSCRIPTION.to_owned(),
            url: "http://127.0.0.1:9/hook".to_owned(),
            events: vec!["call.ended".to_owned()],
        }],
        events,
    }
}

/// A receiver that answers each event as the recorded one did.
async fn receiver(count: usize) -> Result<String, BoxError> {
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let seen = seen.clone();
            async move {
                let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let id = value["event_id"].as_str().unwrap_or_default().to_owned();
                let index: usize = id.trim_start_matches("evt_").parse().unwrap_or_default();
                let first = seen.lock().map(|mut set| set.insert(id)).unwrap_or(false);
                let code = match recorded(index, count) {
                    Recorded::Missed => 401,
                    Recorded::SecondAttempt if first => 500,
                    _ => 200,
                };
                (
                    axum::http::StatusCode::from_u16(code)
                        .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
                    "answer",
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(url)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str, default: f64| -> f64 {
        args.iter()
            .find_map(|arg| arg.strip_prefix(&format!("{name}=")))
            .and_then(|text| text.parse().ok())
            .unwrap_or(default)
    };
    let count = value("events", 1000.0) as usize;
    let span_ms = (value("span_s", 20.0) * 1000.0) as i64;
    let speed = value("speed", 1.0);
    let binary = support::release_binary().map_err(|error| error.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let url = receiver(count).await?;
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("bench.capsule.jsonl");
        let made = capsule(count, span_ms);
        format::write(&made, &file)?;
        let mut command = support::isolated(&binary, dir.path());
        command
            .args(["emulator", "--replay"])
            .arg(&file)
            .args(["--deliver-to", &url, "--speed", &speed.to_string()])
            .stdout(std::process::Stdio::null());
        let status = tokio::process::Command::from(command).status().await?;
        if !status.success() {
            return Err(format!("the replay exited {status}").into());
        }
        let results = format::read_results(&results_path(&file))?;
        let mut off: Vec<i64> = results
            .deliveries
            .iter()
            .flat_map(|delivery| &delivery.attempts)
            .map(|attempt| (attempt.sent_ms - attempt.planned_ms).abs())
            .collect();
        off.sort_unstable();
        let (lines, _) = compare::compare(&made, &results);
        let states: HashMap<&str, (&str, &str)> = lines
            .iter()
            .map(|line| {
                (
                    line.event_id.as_str(),
                    (line.recorded.state.as_str(), line.replay.state.as_str()),
                )
            })
            .collect();
        let same = states.values().filter(|(was, now)| was == now).count();
        println!(
            "| events | attempts | speed | p50 off ms | p99 off ms | max off ms | same state |"
        );
        println!("|---|---|---|---|---|---|---|");
        println!(
            "| {count} | {} | {speed} | {} | {} | {} | {same} of {} |",
            off.len(),
            percentile(&off, 0.5),
            percentile(&off, 0.99),
            off.last().copied().unwrap_or_default(),
            states.len()
        );
        let late = off.last().copied().unwrap_or_default();
        if late > 50 || same != states.len() {
            return Err(format!(
                "missed the target: {late} ms off at worst, {same} of {} states reproduced",
                states.len()
            )
            .into());
        }
        Ok(())
    })
}
