//! `earshot store copy` of a forwarder's cursor: an app that took the
//! first K events from `listen --store FILE --forward-to APP` (the real
//! binary; the app then refuses, so the rest wait in the file) is
//! forwarded from event K+1 once `listen --store postgres://…
//! --forward-to APP` runs on the copy: while the app still refuses, the
//! three wait and the stall is said as on a file (the queue counted);
//! then the events it had not taken, in the order filed, then what is
//! filed on PostgreSQL, none of the first K again. A second copy leaves the place alone, and so does a copy after
//! the forwarder on PostgreSQL wrote.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use earshot_testkit::postgres::PgCluster;
use tokio::net::TcpListener;

use crate::common::cli::{line_with, post_signed, postgres_observer, wait_out};
use crate::common::{SECRET, eventually};
use crate::postgres_copy::{DATABASE, cluster, copy_json, counts};
use crate::postgres_relay::event;

/// The app: answers `status` (200 takes), logging the ids it took.
async fn serve_app(status: Arc<AtomicU16>, log: Arc<Mutex<Vec<String>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/hooks", listener.local_addr().expect("address"));
    let app = Router::new().fallback(move |body: Bytes| {
        let (status, log) = (status.clone(), log.clone());
        async move {
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let answer = status.load(Ordering::SeqCst);
            if answer == 200 {
                let id = json["event_id"].as_str().unwrap_or_default().to_owned();
                log.lock().unwrap().push(id);
            }
            StatusCode::from_u16(answer).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

async fn send(url: &str, ids: &[String]) {
    for id in ids {
        let (status, answer) = post_signed(url, SECRET, &event(id)).await;
        assert_eq!(status, 200, "{id}: {answer}");
    }
}

fn ids(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|index| format!("{prefix}-{index:02}")).collect()
}

async fn until_taken(log: &Arc<Mutex<Vec<String>>>, count: usize) {
    eventually(
        Duration::from_secs(20),
        &format!("the app to take {count}"),
        || {
            let have = log.lock().unwrap().len();
            async move { (have >= count).then_some(()) }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_relayed_up_to_k_from_a_file_is_relayed_from_k_plus_1_on_postgresql_after_store_copy()
 {
    let cluster: PgCluster = cluster();
    let store = cluster.url(DATABASE);
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("earshot.db");
    let file_arg = file.display().to_string();
    let status = Arc::new(AtomicU16::new(200));
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = serve_app(status.clone(), log.clone()).await;
    let forward = ["--forward-to", app.as_str()];

    // On the file: the app takes the first four, then refuses; three more
    // wait in the file.
    let (observer, url, said) = postgres_observer(&cluster, &file_arg, &forward);
    let taken_first = ids("taken", 0..4);
    send(&url, &taken_first).await;
    until_taken(&log, 4).await;
    status.store(500, Ordering::SeqCst);
    let waiting = ids("waiting", 0..3);
    send(&url, &waiting).await;
    let (stalled, before) = line_with(&said, "the app did not take", Duration::from_secs(10));
    stalled.unwrap_or_else(|| panic!("the refusal is said: {before:?}"));
    crate::common::cli::send_signal(&observer, "TERM").await;
    wait_out(observer).await;
    assert_eq!(*log.lock().unwrap(), taken_first);

    // Copied twice: the cursor translated once, then already there.
    let first = copy_json(&cluster, &file, &[]).await;
    assert_eq!(counts(&first, "events"), (7, 7, 0, 0), "{first}");
    assert_eq!(counts(&first, "relay_cursors"), (1, 1, 0, 0), "{first}");
    let second = copy_json(&cluster, &file, &[]).await;
    assert_eq!(counts(&second, "relay_cursors"), (1, 0, 1, 0), "{second}");

    // On PostgreSQL, the app still refusing: the three wait, said as on
    // a file; then it takes again, from K+1, then what is filed here.
    let (_replica, pg_url, pg_said) = postgres_observer(&cluster, &store, &forward);
    let said = |text: &str| {
        let (line, before) = line_with(&pg_said, text, Duration::from_secs(15));
        line.unwrap_or_else(|| panic!("{text:?} is said: {before:?}"))
    };
    said("holds the forwarding lease");
    let resuming = said("stored events your app has not taken yet go first");
    assert!(resuming.contains(": 3 stored events"), "{resuming}");
    let stalled = said("the app did not take");
    // The first event the app had not taken (its id's first 8 bytes).
    assert!(
        stalled.contains("waiting-")
            && stalled.contains("HTTP 500")
            && stalled.contains("3 queued"),
        "{stalled}"
    );
    status.store(200, Ordering::SeqCst);
    said("the app takes events again");
    until_taken(&log, 7).await;
    let filed_here = ids("filed-here", 0..3);
    send(&pg_url, &filed_here).await;
    until_taken(&log, 10).await;
    // A moment for a duplicate to show, were one coming.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let expected: Vec<String> = taken_first
        .iter()
        .chain(&waiting)
        .chain(&filed_here)
        .cloned()
        .collect();
    assert_eq!(
        *log.lock().unwrap(),
        expected,
        "from K+1, in the order filed, none of the first K again"
    );

    // The forwarder here has written its place: a copy leaves it alone.
    let third = copy_json(&cluster, &file, &[]).await;
    assert_eq!(counts(&third, "relay_cursors"), (1, 0, 1, 0), "{third}");
    let taken_now = log.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(log.lock().unwrap().len(), taken_now, "nothing sent again");
}
