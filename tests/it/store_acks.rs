//! What the observer acknowledges is in the store: a second copy of an
//! event is not answered 2xx while the first copy waits for the write lock
//! (held here by another connection, as a sweep would), and shares the
//! first copy's failure.

use std::path::Path;
use std::time::{Duration, Instant};

use earshot::receiver::listen::{self, ListenConfig};
use earshot::redact::SecretString;
use earshot::store::Store;
use earshot::store::writer::Writer;
use serde_json::{Value, json};

const SECRET: &str = "whsec_store_acks_0123456789abcdefghijklm";

/// `body` signed now with [`SECRET`]: the status and the JSON answer.
async fn post_signed(url: &str, body: &[u8]) -> (u16, Value) {
    let header = earshot::signature::sign(SECRET.as_bytes(), chrono::Utc::now().timestamp(), body);
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("content-type", "application/json")
        .header("x-svc-signature", header)
        .body(body.to_vec())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("listen answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

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
    config.store = Some(writer);
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
        async move { post_signed(&url, &body).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::spawn({
        let url = url.to_owned();
        async move { (post_signed(&url, &body).await, Instant::now()) }
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
    let retry = post_signed(&listener.url(), &session_event(id)).await;
    listener.stop().await;
    assert_eq!(retry.0, 200, "{retry:?}");
    assert_eq!(rows_with_id(&db, "events", id), 1);
}
