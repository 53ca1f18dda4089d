//! The observer's store under stress, through the real binary: `earshot
//! listen --store` killed with SIGKILL in the middle of a flood keeps every
//! event it answered 2xx for, and the file opens again; readers (two
//! "consoles") query the store while `listen` writes to it.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use earshot_core::store::{Store, events, health, sessions};
use tokio::sync::Mutex;

const SECRET: &str = "whsec_reliability_secret_0123456789abcdef";

fn listen(db: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_earshot"))
        .args(["listen", "--secret", SECRET, "--store"])
        .arg(db)
        .env("EARSHOT_CONFIG", "/nonexistent/earshot-test-config.toml")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("earshot listen starts");
    let url = crate::common::cli::listening_url(&mut child);
    (child, url)
}

fn event_body(n: usize) -> (String, Vec<u8>) {
    let event_id = format!("00000000-0000-4000-8000-{n:012}");
    let body = serde_json::json!({
        "event_id": event_id,
        "event": "session.started",
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "session": {
            "session_id": format!("ses_{n:032x}"),
            "account_id": 1,
            "agent_id": "11111111-2222-4333-8444-555555555555",
            "status": "created",
            "duration_seconds": null,
            "public_close_reason": null,
            "s3_prefix": null,
            "created_at": chrono::Utc::now().to_rfc3339(),
            "ended_at": null
        }
    });
    (event_id, serde_json::to_vec(&body).unwrap())
}

/// What became of one POST.
enum Posted {
    /// Answered 2xx: acknowledged.
    Acknowledged(String),
    /// Answered, but not 2xx (a 503 while the queue is full): not ours to keep.
    Refused,
    /// No answer: the process is gone.
    Gone,
}

async fn post(http: &reqwest::Client, url: &str, n: usize) -> Option<String> {
    match post_once(http, url, n).await {
        Posted::Acknowledged(event_id) => Some(event_id),
        Posted::Refused | Posted::Gone => None,
    }
}

async fn post_once(http: &reqwest::Client, url: &str, n: usize) -> Posted {
    let (event_id, body) = event_body(n);
    let header =
        earshot_core::signature::sign(SECRET.as_bytes(), chrono::Utc::now().timestamp(), &body);
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("x-svc-signature", header)
        .header("x-svc-event", "session.started")
        .header("x-svc-delivery-id", format!("d-{n}"))
        .body(body)
        .send()
        .await;
    match response {
        Ok(response) if response.status().is_success() => Posted::Acknowledged(event_id),
        Ok(_) => Posted::Refused,
        Err(_) => Posted::Gone,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_answered_2xx_survives_sigkill_mid_flood() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let (child, url) = listen(&db);
    let child = Arc::new(Mutex::new(child));
    // A request cut by the kill ends in an error, not a wait.
    let http = earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let acknowledged = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let next = Arc::new(AtomicUsize::new(0));
    const TOTAL: usize = 20_000;
    const KILL_AFTER: usize = 600;
    let mut senders = Vec::new();
    for _ in 0..16 {
        let (http, url, acknowledged, next, child) = (
            http.clone(),
            url.clone(),
            acknowledged.clone(),
            next.clone(),
            child.clone(),
        );
        senders.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= TOTAL {
                    return;
                }
                let event_id = match post_once(&http, &url, n).await {
                    Posted::Acknowledged(event_id) => event_id,
                    Posted::Refused => continue,
                    Posted::Gone => return, // killed: no more answers
                };
                let count = {
                    let mut acknowledged = acknowledged.lock().unwrap();
                    acknowledged.insert(event_id);
                    acknowledged.len()
                };
                if count == KILL_AFTER {
                    child.lock().await.kill().expect("SIGKILL listen");
                }
            }
        }));
    }
    // One deadline for the whole flood, generous for a loaded 2-core
    // machine running the rest of the suite beside it.
    tokio::time::timeout(Duration::from_secs(240), async {
        for sender in senders {
            sender.await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| {
        let acknowledged = acknowledged.lock().unwrap().len();
        panic!("the flood did not end within 240 s ({acknowledged} acknowledged)")
    });
    {
        // Killed by the flood; if it never got that far, now (the
        // assertions below then say so), so that the wait cannot hang.
        let mut child = child.lock().await;
        let _ = child.kill();
        child.wait().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= KILL_AFTER);
    assert!(acknowledged.len() < TOTAL, "listen was killed mid-flood");

    let store = Store::open(&db).expect("the store opens after SIGKILL");
    let mut missing = Vec::new();
    for event_id in &acknowledged {
        if events::get(&store, event_id).unwrap().is_none() {
            missing.push(event_id.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "{} answered 2xx but not stored: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_query_while_listen_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let (mut child, url) = listen(&db);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (db, done) = (db.clone(), done.clone());
            std::thread::spawn(move || {
                let store = Store::open(&db).expect("a second process opens the store");
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) {
                    health::outcomes_since(&store, 0).expect("board query");
                    sessions::list(&store, 50).expect("session list");
                    events::count(&store).expect("event count");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    for n in 0..300 {
        assert!(
            post(&http, &url, n).await.is_some(),
            "request {n} answered 2xx"
        );
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    child.kill().ok();
    child.wait().ok();
    let store = Store::open(&db).unwrap();
    assert_eq!(events::count(&store).unwrap(), 300);
    assert_eq!(sessions::count(&store).unwrap(), 300);
}
