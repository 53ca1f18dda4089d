//! Sweep (`sweep`): SESSIONS sessions created and completed on an
//! in-process emulator with one subscription to a local receiver
//! answering 200, added by id to a copy of the realistic store, then swept
//! with a budget of 20,000 requests a pass until a pass sweeps nothing:
//! requests per session and sessions per second, each session's attempts
//! committed into a store that already holds the built account's history.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::{EventKind, NewSubscription};
use earshot_core::history;
use earshot_core::redact::SecretString;
use earshot_core::store::{self, Store, deliveries, sessions};

use super::support;
use super::{BoxError, SECRET};

const KEY: &str = "bench_key_0123456789";

/// `count` sessions created, delivered and swept into a copy of `built`.
pub async fn run(built: &Path, count: usize) -> Result<(), BoxError> {
    const BUDGET: usize = 20_000;
    const CONCURRENCY: usize = 32;
    println!(
        "Sweep: {count} sessions, one subscription, budget {BUDGET}, into a copy of {}",
        built.display()
    );
    let (receiver_url, received) = support::counting_receiver().await?;
    let (emulator, client) = support::emulator_with_client(KEY).await?;
    client
        .create_subscription(&NewSubscription {
            url: receiver_url,
            events: vec![EventKind::SessionStarted, EventKind::SessionCompleted],
            secret: SecretString::new(SECRET),
            agent_id: None,
            enabled: None,
        })
        .await?;

    let http = earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?;
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    let next = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let creating = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (http, base, next, ids, total) =
            (http.clone(), base.clone(), next.clone(), ids.clone(), count);
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let answer: serde_json::Value = http
                    .post(format!("{base}/_emulator/sessions"))
                    .json(&serde_json::json!({}))
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?;
                let id = answer["session_id"]
                    .as_str()
                    .ok_or("no session_id")?
                    .to_owned();
                http.post(format!("{base}/_emulator/sessions/{id}/complete"))
                    .send()
                    .await?
                    .error_for_status()?;
                ids.lock().map_err(|_| "poisoned")?.push(id);
            }
            Ok::<_, BoxError>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let expected = count * 2;
    while received.load(Ordering::Relaxed) < expected {
        if creating.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "only {} of {expected} deliveries after 300 s",
                received.load(Ordering::Relaxed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // An attempt answered but not yet recorded as delivered is still due:
    // the passes below come back to it, and count its requests.
    println!(
        "setup            {} sessions created and completed, {expected} deliveries answered 200, in {:.1} s",
        count,
        creating.elapsed().as_secs_f64()
    );

    // Beside the built store: the same disk.
    let dir = tempfile::tempdir_in(built.parent().ok_or("the store has no directory")?)?;
    let db = dir.path().join("sweep.db");
    std::fs::copy(built, &db)?;
    std::fs::File::open(&db)?.sync_all()?;
    let mut store = Store::open(&db)?;
    let (records_before, sessions_before) = (deliveries::count(&store)?, sessions::count(&store)?);
    let ids = ids.lock().map_err(|_| "poisoned")?.clone();
    sessions::add(&mut store, &ids, sessions::Source::Added, store::now_ms())?;
    let store = store::AsyncStore::new(store);
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11}",
        "sweep", "requests", "sessions", "left due", "seconds", "sessions/s", "req/session"
    );
    let mut pass = 0;
    loop {
        pass += 1;
        let started = Instant::now();
        let report = history::sweep::sweep(&client, &store, BUDGET).await?;
        let seconds = started.elapsed().as_secs_f64();
        let label = if report.sessions_swept == 0 {
            "settled again".to_owned()
        } else {
            format!("pass {pass}")
        };
        println!(
            "{label:<14} {:>9} {:>9} {:>9} {seconds:>9.2} {:>10.0} {:>11}",
            report.requests,
            report.sessions_swept,
            report.left_for_later,
            report.sessions_swept as f64 / seconds,
            if report.sessions_swept == 0 {
                "-".to_owned()
            } else {
                format!(
                    "{:.3}",
                    report.requests as f64 / report.sessions_swept as f64
                )
            },
        );
        if let Some(stopped) = report.stopped {
            return Err(format!("the sweep stopped: {stopped}").into());
        }
        if report.sessions_swept == 0 || pass >= 10 {
            break;
        }
    }
    let store = store
        .into_inner()
        .map_err(|_| "the store is still held by the sweep")?;
    println!(
        "stored           {} new delivery records for {} new sessions",
        deliveries::count(&store)? - records_before,
        sessions::count(&store)? - sessions_before
    );
    emulator.shutdown().await;
    Ok(())
}
