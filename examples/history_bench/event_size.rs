//! 2. `size`: store bytes per observer event.

use super::BoxError;
use super::Options;
use super::Rng;
use super::SECRET;
use super::mib;
use super::store_bytes;
use chrono::Utc;
use earshot_core::api::types::agents::CallObject;
use earshot_core::api::types::agents::EventKind;
use earshot_core::api::types::agents::EventObject;
use earshot_core::api::types::agents::SessionObject;
use earshot_core::api::types::agents::WebhookEvent;
use earshot_core::signature;
use earshot_core::store;
use earshot_core::store::Store;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;
use serde_json::Map;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The `n`th event of an emulator-shaped stream: sessions (started,
/// completed) and calls (connected, ended) alternate; the exact body bytes
/// and the headers a delivery carries.
pub(super) fn realistic_event(n: usize, rng: &mut Rng) -> (Vec<u8>, Vec<(String, String)>, String) {
    let conversation = n / 2;
    let ending = n % 2 == 1;
    let now = Utc::now().fixed_offset();
    let agent_id = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f".to_owned();
    let (kind, object) = if conversation.is_multiple_of(2) {
        let session_id = format!("ses_{:032x}", conversation as u128 * 0x9E37_79B9);
        let session = SessionObject {
            s3_prefix: (!ending).then(|| format!("accounts/4242/sessions/{session_id}/")),
            session_id,
            account_id: 4242,
            agent_id,
            status: if ending { "completed" } else { "created" }.into(),
            duration_seconds: ending.then_some(73.418),
            public_close_reason: ending.then(|| "client_disconnected".into()),
            created_at: now,
            ended_at: ending.then_some(now),
            extra: Map::new(),
        };
        let kind = if ending {
            EventKind::SessionCompleted
        } else {
            EventKind::SessionStarted
        };
        (kind, EventObject::Session(session))
    } else {
        let call_id = format!("call_{:032x}", conversation as u128 * 0x9E37_79B9);
        let (recording_signature, transcript_signature) = (rng.hex32(), rng.hex32());
        let artifact = |what: &str, signature: &str| {
            format!(
                "https://svc-artifacts.s3.us-west-2.amazonaws.com/accounts/4242/calls/{call_id}/{what}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature={signature}"
            )
        };
        let call = CallObject {
            session_id: call_id.clone(),
            account_id: 4242,
            agent_id,
            status: if ending { "ended" } else { "connected" }.into(),
            direction: "inbound".into(),
            from_number: "+15555550123".into(),
            to_number: "+15555550188".into(),
            created_at: now,
            ended_at: ending.then_some(now),
            recording_url: ending.then(|| artifact("recording.wav", &recording_signature)),
            transcript_url: ending.then(|| artifact("transcript.json", &transcript_signature)),
            call_id,
            extra: Map::new(),
        };
        let kind = if ending {
            EventKind::CallEnded
        } else {
            EventKind::CallConnected
        };
        (kind, EventObject::Call(call))
    };
    let event = WebhookEvent {
        event_id: uuid::Uuid::new_v4().to_string(),
        event: kind.as_str().to_owned(),
        timestamp: now,
        object,
    };
    let body = serde_json::to_vec(&event).unwrap_or_default();
    let delivery_id = format!("dlv_{}", rng.hex32());
    let headers = vec![
        ("content-type".into(), "application/json".into()),
        ("user-agent".into(), "SVC-Webhooks/1.0".into()),
        (
            "x-svc-signature".into(),
            signature::sign(SECRET.as_bytes(), now.timestamp(), &body),
        ),
        ("x-svc-event".into(), kind.as_str().to_owned()),
        ("x-svc-delivery-id".into(), delivery_id.clone()),
        ("accept".into(), "*/*".into()),
        ("host".into(), "127.0.0.1:8787".into()),
        ("content-length".into(), body.len().to_string()),
    ];
    (body, headers, delivery_id)
}

pub(super) async fn bench_event_size(options: &Options) -> Result<(), BoxError> {
    println!(
        "== 2. Store size: {} observer events through the writer ==",
        options.events
    );
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("events.db");
    let (writer, thread) = Writer::start(Store::open(&path)?)?;
    let next = Arc::new(AtomicUsize::new(0));
    let body_bytes = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..64u64 {
        let (writer, next, body_bytes) = (writer.clone(), next.clone(), body_bytes.clone());
        let total = options.events;
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0xA5A5_0000 + task);
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return Ok::<_, BoxError>(());
                }
                let (body, headers, delivery_id) = realistic_event(n, &mut rng);
                body_bytes.fetch_add(body.len(), Ordering::Relaxed);
                let event = ObservedEvent::from_delivery(
                    &body,
                    headers,
                    Some(delivery_id),
                    store::now_ms(),
                )
                .ok_or("not a voice-agent event")?;
                writer.write(event).await?;
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    drop(writer);
    thread.join().map_err(|_| "the writer thread panicked")?;
    let elapsed = started.elapsed();
    let rows = {
        let store = Store::open(&path)?;
        store::events::count(&store)?
    };
    let (db, wal) = store_bytes(&path)?;
    let bodies = body_bytes.load(Ordering::Relaxed) as f64 / options.events as f64;
    println!(
        "{:>9} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "events", "body avg", "db", "wal", "per event", "write rate"
    );
    println!(
        "{rows:>9} {:>10.0} B {:>8.1} MiB {:>10} B {:>10.0} B {:>8.0} ev/s",
        bodies,
        mib(db),
        wal,
        (db + wal) as f64 / rows.max(1) as f64,
        rows as f64 / elapsed.as_secs_f64(),
    );
    println!(
        "per 100,000 events: {:.1} MiB",
        mib(((db + wal) as f64 / rows.max(1) as f64 * 100_000.0) as u64)
    );
    println!();
    Ok(())
}
