//! Endless traffic keeps bounded records: `earshot emulator --traffic`
//! grew ~0.6 MB a minute for as long as it ran. 100,000 operations through
//! the handlers the demo's traffic calls (sessions, calls, delivery
//! attempts, jobs, polls), no network and no waiting, and every collection
//! the emulator keeps stays under its cap all along.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Bytes, to_bytes};
use axum::extract::{Path, State as Extract};
use axum::response::Response;
use chrono::Utc;
use serde_json::{Value, json};
use url::Url;

use super::control::{complete_session, end_call, start_call, start_session};
use super::limits::{POLL_WINDOW, SWEEP_EVERY};
use super::prerecorded::create;
use super::{DEMO_KEEP_CONVERSATIONS, DEMO_KEEP_JOBS, EmulatorConfig, SharedState, State};
use earshot_protocol::redact::SecretString;
use earshot_protocol::types::agents::{DeliveryRecord, DeliveryStatus};

/// Each makes a conversation, ends it, records three attempts and a late
/// one, submits a job and polls it: 8 operations, 100,000 in all.
const ITERATIONS: usize = 12_500;
const ATTEMPTS: usize = 3;
/// Simulated time between two polls.
const POLL_STEP: Duration = Duration::from_millis(10);

fn state() -> SharedState {
    let config = EmulatorConfig::new(SecretString::new("emu_bounds_key")).for_endless_traffic();
    let base = Url::parse("http://127.0.0.1:9/").expect("a base URL");
    Arc::new(State::new(config, base).expect("an emulator state"))
}

async fn id_in(response: Response, field: &str) -> String {
    let body = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    let value: Value = serde_json::from_slice(&body).expect("JSON");
    value[field].as_str().expect("an id").to_owned()
}

/// A session, a connected call or a failed call, ended where it can be.
async fn conversation(state: &SharedState, n: usize) -> String {
    let extract = || Extract(state.clone());
    match n % 3 {
        0 => {
            let started = start_session(extract(), Bytes::from_static(b"{}")).await;
            let id = id_in(started.expect("started"), "session_id").await;
            let completed = complete_session(extract(), Path(id.clone())).await;
            assert_eq!(completed.expect("completed")["status"], "completed");
            id
        }
        1 => {
            let body = Bytes::from_static(br#"{"outcome":"connected"}"#);
            let id = id_in(
                start_call(extract(), body).await.expect("placed"),
                "call_id",
            )
            .await;
            let ended = end_call(extract(), Path(id.clone())).await;
            assert_eq!(ended.expect("ended")["status"], "ended");
            id
        }
        _ => {
            let body = Bytes::from_static(br#"{"outcome":"failed"}"#);
            id_in(
                start_call(extract(), body).await.expect("placed"),
                "call_id",
            )
            .await
        }
    }
}

fn attempt(session_id: &str, number: u32) -> DeliveryRecord {
    DeliveryRecord {
        id: uuid::Uuid::new_v4().to_string(),
        subscription_id: "sub_bounds".into(),
        session_id: session_id.to_owned(),
        status: DeliveryStatus::Failed,
        attempt_count: number,
        http_status_code: Some(500),
        error: Some("HTTP 500: boom".into()),
        delivered_at: None,
        next_retry_at: None,
        created_at: Utc::now().fixed_offset(),
        extra: Default::default(),
    }
}

/// Lets the spawned jobs run (their audio is missing: each ends `error`
/// at its first poll, with no timer) until none is queued or processing.
async fn settle(state: &SharedState) {
    for _ in 0..1_000 {
        let [_, queued, processing, _, _] = state.prerecorded.kept();
        if queued + processing == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

fn assert_bounded(state: &SharedState, polls_made: usize) {
    let store = state.lock();
    let keep = DEMO_KEEP_CONVERSATIONS;
    assert!(
        store.conversations.len() <= keep,
        "{}",
        store.conversations.len()
    );
    assert_eq!(store.remembered(), store.conversations.len());
    assert!(store.deliveries.len() <= keep, "{}", store.deliveries.len());
    let attempts: usize = store.deliveries.values().map(Vec::len).sum();
    assert!(attempts <= keep * ATTEMPTS, "{attempts} attempts");
    assert!(
        store.artifacts.len() <= 2 * keep,
        "{}",
        store.artifacts.len()
    );
    drop(store);
    let [jobs, queued, processing, finished, uploads] = state.prerecorded.kept();
    assert!(jobs <= DEMO_KEEP_JOBS + queued + processing, "{jobs} jobs");
    assert!(finished <= DEMO_KEEP_JOBS, "{finished} finished");
    assert_eq!(uploads, 0);
    // Logs idle for a window go at the next sweep.
    let window = (POLL_WINDOW.as_millis() / POLL_STEP.as_millis()) as usize;
    let polled = state.limits.polled();
    assert!(polled <= window + SWEEP_EVERY as usize + 1, "{polled} logs");
    assert!(polled <= polls_made);
}

#[tokio::test]
async fn endless_traffic_keeps_every_collection_under_its_cap() {
    let state = state();
    let epoch = Instant::now();
    let mut ids: Vec<String> = Vec::with_capacity(ITERATIONS);
    for n in 0..ITERATIONS {
        let id = conversation(&state, n).await;
        {
            let mut store = state.lock();
            for number in 1..=ATTEMPTS {
                assert!(store.add_delivery(attempt(&id, number as u32)));
            }
            // A retry that comes after its conversation was forgotten.
            if let Some(old) = n.checked_sub(DEMO_KEEP_CONVERSATIONS + 10) {
                assert!(!store.add_delivery(attempt(&ids[old], 6)));
            }
        }
        ids.push(id);

        let job = json!({ "audio_url": "http://127.0.0.1:9/_emulator/uploads/none" });
        let created = create(Extract(state.clone()), Bytes::from(job.to_string())).await;
        let job_id = id_in(created.expect("created"), "id").await;
        let at = epoch + POLL_STEP * u32::try_from(n).expect("few iterations");
        assert!(state.limits.admit_poll(&job_id, at).is_ok());
        settle(&state).await;

        if n % 1_000 == 999 {
            assert_bounded(&state, n + 1);
        }
    }
    settle(&state).await;
    assert_bounded(&state, ITERATIONS);
    // Full, not emptier: the newest records are all there.
    let store = state.lock();
    assert_eq!(store.conversations.len(), DEMO_KEEP_CONVERSATIONS);
    let newest = &ids[ITERATIONS - 1];
    assert!(store.conversations.contains_key(newest));
    assert_eq!(store.session_deliveries(newest).len(), ATTEMPTS);
    drop(store);
    let [jobs, queued, processing, finished, _] = state.prerecorded.kept();
    assert_eq!(
        (jobs, queued, processing, finished),
        (DEMO_KEEP_JOBS, 0, 0, DEMO_KEEP_JOBS)
    );
}
