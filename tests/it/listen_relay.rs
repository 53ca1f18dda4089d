//! `earshot listen --store --forward-to` through the real binary, the
//! emulator as the platform: the app answers 500, then is stopped, the
//! observer is killed with SIGKILL and started again, then the app is
//! fixed; every stored event reaches the app once, in the order it was
//! stored, none lost, each signed anew with the webhook secret (checked
//! with Python's `hmac`).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::common::cli::{
    earshot, line_with, listening_url_and_lines, python_verifies, stderr_lines,
};
use crate::common::{self, SECRET, eventually};
use earshot_core::api::types::agents::EventKind;

/// What the app was sent: the event id, the signature header, the body,
/// and the status it answered.
type Sent = (String, String, Vec<u8>, u16);

/// The app: answers every request with `status`, logging it, until
/// `stop` is sent (its port is then closed: connections are refused).
fn serve_app(
    listener: TcpListener,
    status: u16,
    log: Arc<Mutex<Vec<Sent>>>,
) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let log = log.clone();
        async move {
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = json["event_id"].as_str().unwrap_or_default().to_owned();
            let signature = headers
                .get("x-svc-signature")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            log.lock()
                .unwrap()
                .push((id, signature, body.to_vec(), status));
            StatusCode::from_u16(status).unwrap()
        }
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (stop, task)
}

/// A child process killed when dropped, so a failed assertion leaves no
/// observer running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `earshot ARGS` and its stderr's lines.
fn observer(args: &[String]) -> (Running, std::sync::mpsc::Receiver<String>) {
    let mut child = earshot()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("earshot listen starts");
    let said = stderr_lines(&mut child);
    let _ = listening_url_and_lines(&mut child);
    (Running(child), said)
}

/// The stored events' ids in the order they were stored.
fn stored(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).expect("the store opens");
    let mut statement = conn
        .prepare("SELECT event_id FROM events ORDER BY rowid")
        .expect("a query");
    statement
        .query_map([], |row| row.get(0))
        .expect("the rows")
        .collect::<rusqlite::Result<_>>()
        .expect("the rows")
}

/// The first line of `said` containing `text` (up to 10 s).
fn said_within(said: &std::sync::mpsc::Receiver<String>, text: &str) -> String {
    let (line, _) = line_with(said, text, Duration::from_secs(10));
    line.unwrap_or_else(|| panic!("no line with {text:?} on stderr"))
}

async fn eventually_stored(db: PathBuf, count: usize) {
    eventually(Duration::from_secs(30), "the events are stored", || {
        let db = db.clone();
        async move { (stored(&db).len() >= count).then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_events_wait_for_the_app_through_a_refusal_a_stop_and_a_kill_and_arrive_in_order_once()
 {
    let harness = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (db, secret) = (dir.path().join("store.db"), dir.path().join("secret"));
    std::fs::write(&secret, SECRET).unwrap();
    let log: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let app_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app_addr = app_listener.local_addr().unwrap();
    let (stop_app, app) = serve_app(app_listener, 500, log.clone());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args: Vec<String> = vec![
        "listen".into(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
        "--secret-file".into(),
        secret.display().to_string(),
        "--store".into(),
        db.display().to_string(),
        "--forward-to".into(),
        format!("http://{app_addr}/hook"),
    ];
    let (mut child, said) = observer(&args);
    harness
        .subscribe_secret(
            &format!("http://127.0.0.1:{port}/"),
            &[EventKind::SessionStarted, EventKind::SessionCompleted],
            SECRET,
        )
        .await;

    // The app answers 500: the first event is sent again, and nothing
    // overtakes it.
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(harness.start_session(None).await);
    }
    let refused = eventually(Duration::from_secs(10), "the event is tried again", || {
        let log = log.lock().unwrap().clone();
        async move { (log.len() >= 2).then_some(log) }
    })
    .await;
    assert!(
        refused.iter().all(|sent| sent.0 == refused[0].0),
        "only the first event is tried while it is refused"
    );
    let stalled = said_within(&said, "the app did not take");
    assert!(
        stalled.contains("HTTP 500") && stalled.contains("queued"),
        "{stalled}"
    );

    // The app stops; more events arrive and are stored.
    let _ = stop_app.send(());
    app.await.unwrap();
    for _ in 0..3 {
        sessions.push(harness.start_session(None).await);
    }
    for session in &sessions[..3] {
        harness.complete_session(session).await;
    }
    eventually_stored(db.clone(), 9).await;

    // The observer is killed; the platform's deliveries meanwhile fail and
    // are retried once it is back.
    child.0.kill().expect("SIGKILL listen");
    child.0.wait().unwrap();
    for session in &sessions[3..] {
        harness.complete_session(session).await;
    }
    let (child, said) = observer(&args);
    let resuming = said_within(&said, "stored events your app has not taken yet go first");
    // The nine stored before the kill, and any retried meanwhile.
    let waiting: usize = resuming
        .trim_start_matches("earshot listen: ")
        .split(' ')
        .next()
        .and_then(|count| count.parse().ok())
        .unwrap_or(0);
    assert!((9..=12).contains(&waiting), "{resuming}");

    // The app is fixed, on the same address.
    let (_keep_app, _app) = serve_app(TcpListener::bind(app_addr).await.unwrap(), 200, log.clone());
    eventually_stored(db.clone(), 12).await;
    let taken = eventually(Duration::from_secs(30), "every event is taken", || {
        let log = log.lock().unwrap().clone();
        async move {
            let taken: Vec<Sent> = log.into_iter().filter(|sent| sent.3 == 200).collect();
            (taken.len() >= 12).then_some(taken)
        }
    })
    .await;
    // A moment for a duplicate to show, were one coming.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(child);

    let ids: Vec<String> = taken.iter().map(|sent| sent.0.clone()).collect();
    assert_eq!(
        ids,
        stored(&db),
        "every stored event, once, in the order stored"
    );
    let all_taken = log
        .lock()
        .unwrap()
        .iter()
        .filter(|sent| sent.3 == 200)
        .count();
    assert_eq!(all_taken, 12, "no event is taken twice");
    let (_, header, body, _) = &taken[11];
    assert_eq!(python_verifies(&secret, header, body), "ok");
}

#[test]
fn forwarding_from_a_store_without_a_secret_to_sign_with_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = earshot()
        .args(["listen", "--forward-to", "http://127.0.0.1:9/x", "--store"])
        .arg(dir.path().join("store.db"))
        .env("EARSHOT_AUTH_HEADER", "X-Auth: token-0123456789")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--forward-secret-file"), "{stderr}");
    assert!(!dir.path().join("store.db").exists(), "nothing is created");
}
