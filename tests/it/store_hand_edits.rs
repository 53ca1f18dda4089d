//! A store edited by hand (with `sqlite3`, as docs/store.md invites) does
//! not stop whole commands: a text value in a numeric column, a NULL key,
//! a record that is not JSON are each skipped and counted on stderr, and a
//! stored value's control characters (ESC, BEL) never reach the terminal.

use chrono::{TimeZone, Utc};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, deliveries};

use crate::common::cli::{earshot, run};

const SUB: &str = "5f2b8c00-7d3a-4e6b-9c0f-000000000001";

fn attempt(id: &str, session: &str, code: u16, at_ms: i64) -> DeliveryRecord {
    attempt_to(SUB, id, session, code, at_ms)
}

/// One final attempt of `subscription` about `session`: delivered for 200,
/// failed for good otherwise.
pub(crate) fn attempt_to(
    subscription: &str,
    id: &str,
    session: &str,
    code: u16,
    at_ms: i64,
) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        subscription_id: subscription.into(),
        session_id: session.into(),
        status: if code == 200 {
            DeliveryStatus::Delivered
        } else {
            DeliveryStatus::Failed
        },
        attempt_count: 1,
        http_status_code: Some(code),
        error: (code != 200).then(|| format!("HTTP {code}: no")),
        delivered_at: None,
        next_retry_at: None,
        created_at: Utc.timestamp_millis_opt(at_ms).unwrap().fixed_offset(),
        extra: Default::default(),
    }
}

pub(crate) fn event(id: &str, session: &str, at_ms: i64) -> ObservedEvent {
    let at = Utc.timestamp_millis_opt(at_ms).unwrap().to_rfc3339();
    let body = format!(
        r#"{{"event_id":"{id}","event":"session.started","timestamp":"{at}","session":{{"session_id":"{session}"}}}}"#
    );
    ObservedEvent::from_delivery(body.as_bytes(), vec![], None, at_ms).unwrap()
}

/// Three sessions, each with one observed event and one refused attempt.
async fn seeded(db: &std::path::Path) {
    let now = Utc::now().timestamp_millis() - 60_000;
    let mut store = Store::open(db).unwrap();
    let subscription = Subscription {
        id: SUB.into(),
        url: "https://hooks.example.com/voice".into(),
        events: vec!["session.started".into()],
        agent_id: None,
        enabled: true,
        secret_version: 1,
        extra: Default::default(),
    };
    deliveries::replace_subscriptions(&mut store, &[subscription], now).unwrap();
    let (writer, thread) = Writer::start(store).unwrap();
    for n in 0..3 {
        writer
            .write(event(&format!("e{n}"), &format!("ses_{n}"), now + n))
            .await
            .unwrap();
    }
    drop(writer);
    thread.join().unwrap();
    let mut store = Store::open(db).unwrap();
    for n in 0..3 {
        let session = format!("ses_{n}");
        let records = [attempt(&format!("r{n}"), &session, 401, now + n + 100)];
        deliveries::record_sweep(&mut store, &session, &records, now + 3_600_000).unwrap();
    }
}

#[tokio::test]
async fn hand_edited_rows_are_skipped_and_counted_and_control_characters_never_print() {
    // Hand edits the schema lets through: text where a number belongs, a
    // blob as an event id (NOT NULL refuses a null one), escapes in a URL.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seeded(&db).await;
    let edit = rusqlite::Connection::open(&db).unwrap();
    edit.execute_batch(
        "UPDATE deliveries SET http_status_code = 'four-oh-one' WHERE id = 'r0';
         UPDATE events SET event_id = x'ff' WHERE event_id = 'e1';
         UPDATE subscriptions
             SET record = json_set(record, '$.url', 'https://evil.example/' || char(27) || '[2J' || char(7));",
    )
    .unwrap();
    drop(edit);

    let health = run(earshot()
        .args(["health", "--no-sweep", "--since", "2h", "--store"])
        .arg(&db))
    .await;
    let stdout = String::from_utf8_lossy(&health.stdout);
    let stderr = String::from_utf8_lossy(&health.stderr);
    assert_eq!(
        health.status.code(),
        Some(1),
        "missed events: {stdout}{stderr}"
    );
    assert!(stdout.contains(&SUB[..8]), "the board is printed: {stdout}");
    assert!(stderr.contains("could not be read"), "{stderr}");
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\x07'),
        "{stdout:?}"
    );
    assert!(
        stdout.contains("\\x{1b}"),
        "the escape is shown, not sent: {stdout}"
    );

    let dry = run(earshot()
        .args([
            "redeliver",
            &SUB[..8],
            "--no-sweep",
            "--dry-run",
            "--since",
            "2h",
            "--store",
        ])
        .arg(&db))
    .await;
    let stdout = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    assert!(stdout.contains("would send e2"), "{stdout}");

    let events = run(earshot()
        .args(["events", "--no-sweep", "--since", "2h", "--store"])
        .arg(&db))
    .await;
    let stdout = String::from_utf8_lossy(&events.stdout);
    assert!(
        events.status.success(),
        "{}",
        String::from_utf8_lossy(&events.stderr)
    );
    assert!(stdout.contains("e0") && stdout.contains("e2"), "{stdout}");
}

/// Session ids no request can name (`..`, `a/b`: the client refuses them
/// before sending) count as unknown to the platform; they do not stop the
/// sweep before the sessions after them.
#[tokio::test]
async fn a_session_id_no_request_can_name_does_not_stop_the_sweep() {
    use earshot_core::store::sessions::{self, Source};
    let harness = crate::common::start().await;
    let real = harness.start_session(None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("earshot.db")).unwrap();
    let ids = ["..".to_owned(), "a/b".to_owned(), real];
    sessions::add(
        &mut store,
        &ids,
        Source::Added,
        earshot_core::store::now_ms(),
    )
    .unwrap();
    let store = earshot_core::store::AsyncStore::new(store);
    let report = earshot_core::history::sweep::sweep(&harness.client, &store, 50)
        .await
        .unwrap();
    assert_eq!(report.stopped, None, "{report:?}");
    assert_eq!(report.sessions_swept, 3, "{report:?}");
    assert_eq!(report.unknown_sessions, 2, "{report:?}");
    harness.emulator.shutdown().await;
}

/// A stored id holding a right-to-left override (U+202E) or an isolate is
/// shown as an escape by `events` and `sessions list`, never sent raw (the
/// terminal would print the rest of the line reversed); an id given on the
/// command line is echoed the same way in its error.
#[tokio::test]
async fn reordering_characters_in_stored_ids_are_shown_as_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seeded(&db).await;
    let edit = rusqlite::Connection::open(&db).unwrap();
    edit.execute_batch(
        "UPDATE events SET session_id = 'ses_ab' || char(8238) || 'dc' WHERE event_id = 'e0';
         UPDATE sessions SET session_id = 'ses_ab' || char(8294) || 'dc' WHERE session_id = 'ses_1';",
    )
    .unwrap();
    drop(edit);

    for args in [
        vec!["events", "--no-sweep", "--since", "2h"],
        vec!["sessions", "list"],
    ] {
        let output = run(earshot().args(&args).arg("--store").arg(&db)).await;
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{args:?}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !stdout.contains('\u{202E}') && !stdout.contains('\u{2066}'),
            "{args:?}: {stdout:?}"
        );
        assert!(
            stdout.contains("\\x{202e}") || stdout.contains("\\x{2066}"),
            "{args:?}: the id is shown, escaped: {stdout}"
        );
    }

    let get = run(earshot().args(["sessions", "get", "ses_\u{1b}[31m\u{202E}x"])).await;
    let stderr = String::from_utf8_lossy(&get.stderr);
    assert_eq!(get.status.code(), Some(2), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{202E}'),
        "{stderr:?}"
    );
    assert!(stderr.contains("ses_\\x{1b}[31m\\x{202e}x"), "{stderr}");
}

/// Counters edited up to `i64::MAX` in two hours of one window: `health`
/// and `incidents` skip that group and say so on stderr, instead of
/// stopping on an integer overflow.
#[tokio::test]
async fn a_counter_at_the_integer_limit_is_skipped_not_an_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    seeded(&db).await;
    let edit = rusqlite::Connection::open(&db).unwrap();
    for table in ["delivery_counts_hourly", "event_counts_hourly"] {
        edit.execute_batch(&format!(
            "UPDATE {table} SET count = 9223372036854775807;
             INSERT INTO {table} SELECT hour - 1, subscription_id, {rest}
                 FROM {table};",
            rest = if table == "delivery_counts_hourly" {
                "status, http_status_code, error_class, count, last_ms, example_session_id"
            } else {
                "state, event, http_status_code, error_class, count, last_ms, example_session_id"
            }
        ))
        .unwrap();
    }
    drop(edit);
    for command in ["health", "incidents"] {
        let output = run(earshot()
            .args([command, "--no-sweep", "--since", "3h", "--store"])
            .arg(&db))
        .await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("overflow"), "{command}: {stderr}");
        assert!(stderr.contains("could not be read"), "{command}: {stderr}");
        assert!(
            matches!(output.status.code(), Some(0 | 1 | 3)),
            "{command}: a verdict, not an error: {stderr}"
        );
        assert!(!stderr.contains("error:"), "{command}: {stderr}");
    }
}

/// A query past its bounds (a paste of 999 words, or one of 5,000
/// characters) is bad input: exit 2 saying the bound, and no store is
/// opened for it.
#[tokio::test]
async fn a_query_past_its_bounds_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let words: Vec<String> = (0..999).map(|n| format!("w{n}")).collect();
    let long = "x".repeat(5_000);
    for (query, says) in [
        (words, "999 terms; at most 32"),
        (vec![long], "5000 characters long; at most 1000"),
    ] {
        let output = run(earshot()
            .arg("events")
            .args(&query)
            .args(["--no-sweep", "--store"])
            .arg(&db))
        .await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    assert!(!db.exists(), "nothing opened for a refused query");
}
