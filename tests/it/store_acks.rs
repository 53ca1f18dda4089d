//! What the observer acknowledges is in the store: a second copy of an
//! event is not answered 2xx while the first copy waits for the write lock
//! (held here by another connection, as a sweep would), and shares the
//! first copy's failure; and every genuine signed delivery answered 2xx,
//! whatever its timestamp form, type or session id, can be found in the
//! store afterwards (`events` or `unfiled_events`).

use std::path::Path;
use std::time::{Duration, Instant};

use earshot_core::receiver::listen::{self, ListenConfig};
use earshot_core::redact::SecretString;
use earshot_core::store::Store;
use earshot_core::store::writer::Writer;
use serde_json::{Value, json};

use crate::common::cli::{listen_with_store, post_signed};

const SECRET: &str = "whsec_store_acks_0123456789abcdefghijklm";

/// Rows in `table` with `event_id` (0 when the table does not exist).
fn rows_with_id(db: &Path, table: &str, event_id: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    let exists: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |row| row.get(0),
        )
        .unwrap();
    if !exists {
        return 0;
    }
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE event_id = ?1"),
        [event_id],
        |row| row.get(0),
    )
    .unwrap()
}

/// All rows of `table` (0 when it does not exist).
fn rows(db: &Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
        row.get(0)
    })
    .unwrap_or(0)
}

/// Holds `db`'s write lock from another connection for `hold`; the
/// thread returns when the lock was released.
fn hold_write_lock(db: &Path, hold: Duration) -> std::thread::JoinHandle<Instant> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(hold);
        let released = Instant::now();
        conn.execute_batch("COMMIT").unwrap();
        released
    })
}

/// An in-process observer on `db` whose writes wait `busy` for a lock.
async fn observer(db: &Path, busy: Duration) -> listen::Listener {
    let mut store = Store::open(db).unwrap();
    store.set_busy_timeout(busy).unwrap();
    let (writer, _thread) = Writer::start(store).unwrap();
    let mut config = ListenConfig::with_secrets(SecretString::new(SECRET), None);
    config.store = Some(writer.into());
    let (listener, _inbox) = listen::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    listener
}

fn session_event(event_id: &str) -> Vec<u8> {
    json!({ "event_id": event_id, "event": "session.started",
            "timestamp": "2026-11-25T01:00:00Z", "session": { "session_id": "ses_acks" } })
    .to_string()
    .into_bytes()
}

/// Copy 1, then 200 ms later copy 2, of one event, while the lock is held
/// for `hold`: both answers, and when the lock was released. Checks that
/// neither copy is answered while the lock is still held.
async fn two_copies_under_a_held_lock(
    db: &Path,
    url: &str,
    event_id: &str,
    hold: Duration,
) -> ((u16, Value), (u16, Value), Instant) {
    let lock = hold_write_lock(db, hold);
    let body = session_event(event_id);
    let first = tokio::spawn({
        let (url, body) = (url.to_owned(), body.clone());
        async move { post_signed(&url, SECRET, &body).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::spawn({
        let url = url.to_owned();
        async move { (post_signed(&url, SECRET, &body).await, Instant::now()) }
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !second.is_finished(),
        "copy 2 was answered while copy 1 waits for the write lock: {:?}",
        second.await.unwrap().0
    );
    let released = tokio::task::spawn_blocking(move || lock.join().unwrap())
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(20), first)
        .await
        .expect("copy 1 answered")
        .unwrap();
    let (second, second_at) = tokio::time::timeout(Duration::from_secs(20), second)
        .await
        .expect("copy 2 answered")
        .unwrap();
    if (200..300).contains(&second.0) {
        assert!(second_at >= released, "copy 2 answered 2xx under the lock");
    }
    (first, second, released)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_copy_waits_for_the_first_copys_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let listener = observer(&db, Duration::from_secs(10)).await;
    let id = "00000000-0000-4000-8000-0000000ac001";
    let (first, second, _) =
        two_copies_under_a_held_lock(&db, &listener.url(), id, Duration::from_millis(2500)).await;
    listener.stop().await;
    assert_eq!(
        first.0, 200,
        "copy 1 stored once the lock is free: {first:?}"
    );
    assert_eq!(second.0, 200, "{second:?}");
    assert_eq!(second.1["duplicate"], true, "{second:?}");
    assert_eq!(rows_with_id(&db, "events", id), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_copy_is_not_acknowledged_when_the_first_copy_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    // The lock outlasts the busy timeout: copy 1 gets 503.
    let listener = observer(&db, Duration::from_millis(800)).await;
    let id = "00000000-0000-4000-8000-0000000ac002";
    let (first, second, _) =
        two_copies_under_a_held_lock(&db, &listener.url(), id, Duration::from_millis(2500)).await;
    assert_eq!(first.0, 503, "{first:?}");
    assert!(
        !(200..300).contains(&second.0),
        "copy 2 acknowledged, but no copy was stored: {second:?}"
    );
    assert_eq!(rows_with_id(&db, "events", id), 0);
    // The platform's retry, once the lock is free, is stored.
    let retry = post_signed(&listener.url(), SECRET, &session_event(id)).await;
    listener.stop().await;
    assert_eq!(retry.0, 200, "{retry:?}");
    assert_eq!(rows_with_id(&db, "events", id), 1);
}

/// Genuine deliveries `events` may not be able to file: name, event_id,
/// body, and whether `events` files it (else `unfiled_events`).
fn odd_deliveries() -> Vec<(&'static str, String, Value, bool)> {
    let id = |n: u32| format!("00000000-0000-4000-8000-0000000bd{n:03}");
    let session = json!({ "session_id": "ses_odd_marker", "status": "created" });
    let at = |timestamp: &str, n: u32| {
        json!({ "event_id": id(n), "event": "session.started", "timestamp": timestamp,
                "session": session })
    };
    vec![
        ("well formed", id(1), at("2026-11-25T01:00:00Z", 1), true),
        (
            "offset +0000",
            id(2),
            at("2026-11-25T01:00:00+0000", 2),
            true,
        ),
        ("offset +00", id(3), at("2026-11-25T01:00:00+00", 3), true),
        ("no seconds", id(4), at("2026-11-25T01:00Z", 4), true),
        ("basic form", id(5), at("20261125T010000Z", 5), true),
        (
            "no timestamp",
            id(6),
            json!({ "event_id": id(6), "event": "session.started", "session": session }),
            false,
        ),
        ("no zone", id(7), at("2026-11-25T01:00:00", 7), false),
        (
            "unknown event type",
            id(8),
            json!({ "event_id": id(8), "event": "agent.updated",
                    "timestamp": "2026-11-25T01:00:00Z", "agent": { "agent_id": "ag_odd_marker" } }),
            false,
        ),
        (
            "numeric session_id",
            id(9),
            json!({ "event_id": id(9), "event": "session.started",
                    "timestamp": "2026-11-25T01:00:00Z", "session": { "session_id": 42 } }),
            false,
        ),
        (
            "missing session_id",
            id(10),
            json!({ "event_id": id(10), "event": "session.started",
                    "timestamp": "2026-11-25T01:00:00Z", "session": { "status": "created" } }),
            false,
        ),
    ]
}

#[tokio::test]
async fn every_genuine_delivery_answered_2xx_is_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let (mut child, url, lines) = listen_with_store(SECRET, &db);

    let deliveries = odd_deliveries();
    let mut acknowledged = 0;
    let mut lost = Vec::new();
    for (name, event_id, body, _) in &deliveries {
        let (status, answer) = post_signed(&url, SECRET, body.to_string().as_bytes()).await;
        assert!(
            (200..300).contains(&status) || status >= 500,
            "{name}: a status the platform does not retry: {status} {answer}"
        );
        if (200..300).contains(&status) {
            acknowledged += 1;
            let kept = rows_with_id(&db, "events", event_id)
                + rows_with_id(&db, "unfiled_events", event_id);
            if kept != 1 {
                lost.push(*name);
            }
        }
    }
    // Lines reach stderr after the answers: wait for one per unfiled
    // delivery (10 s at most).
    let unfiled = deliveries.iter().filter(|d| !d.3).count();
    let mut stderr = String::new();
    let mut said = 0;
    while said < unfiled {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) else {
            break;
        };
        said += usize::from(line.contains("unfiled"));
        stderr.push_str(&line);
        stderr.push('\n');
    }
    child.kill().unwrap();
    child.wait().unwrap();

    assert!(lost.is_empty(), "answered 2xx, not in the store: {lost:?}");
    assert_eq!(
        rows(&db, "events") + rows(&db, "unfiled_events"),
        acknowledged,
        "one row per 2xx"
    );
    for (name, event_id, _, filed) in &deliveries {
        let table = if *filed { "events" } else { "unfiled_events" };
        assert_eq!(rows_with_id(&db, table, event_id), 1, "{name} in {table}");
    }
    // The lenient timestamp forms are all the same instant.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let instants: Vec<i64> = conn
        .prepare("SELECT DISTINCT occurred_ms FROM events")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(instants, vec![1_795_568_400_000]);
    assert_eq!(said, unfiled, "one stderr line per unfiled event: {stderr}");
    for why in [
        "no timestamp",
        "not an ISO 8601 time with a zone",
        "neither a session nor a call",
        "session_id is not a string",
        "no session_id or call_id",
    ] {
        assert!(stderr.contains(why), "{why}: {stderr}");
    }
    assert!(
        !stderr.contains("odd_marker"),
        "no body on stderr: {stderr}"
    );
}
