use chrono::{DateTime, TimeZone, Utc};
use rusqlite::Connection;

use super::*;
use crate::api::types::agents::{DeliveryRecord, DeliveryStatus};

pub(super) fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("nested").join("earshot.db")).expect("open");
    (dir, store)
}

pub(super) fn at(ms: i64) -> DateTime<chrono::FixedOffset> {
    Utc.timestamp_millis_opt(ms).unwrap().fixed_offset()
}

pub(super) fn record(
    id: &str,
    sub: &str,
    session: &str,
    status: DeliveryStatus,
    code: Option<u16>,
    created_ms: i64,
) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        subscription_id: sub.into(),
        session_id: session.into(),
        error: code
            .filter(|c| *c >= 300)
            .map(|c| format!("HTTP {c}: nope")),
        status,
        attempt_count: 1,
        http_status_code: code,
        delivered_at: None,
        next_retry_at: None,
        created_at: at(created_ms),
        extra: Default::default(),
    }
}

pub(super) fn event(
    id: &str,
    session: &str,
    kind: &str,
    occurred_ms: i64,
) -> events::ObservedEvent {
    let body = format!(
        r#"{{"event_id":"{id}","event":"{kind}","timestamp":"{}","session":{{"session_id":"{session}"}}}}"#,
        at(occurred_ms).to_rfc3339()
    );
    events::ObservedEvent::from_delivery(
        body.as_bytes(),
        vec![],
        Some("d1".into()),
        occurred_ms + 5,
    )
    .expect("a session event")
}

#[test]
fn a_new_store_is_created_with_the_current_schema_and_reopens() {
    let (dir, store) = temp_store();
    let path = store.path().to_owned();
    drop(store);
    let reopened = Store::open(&path).expect("reopen");
    let version: i64 = reopened
        .conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = reopened
        .conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(dir);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let (_dir, store) = temp_store();
    let path = store.path().to_owned();
    store.conn.pragma_update(None, "user_version", 99).unwrap();
    drop(store);
    let before = std::fs::read(&path).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::NewerVersion { found: 99, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("upgrade earshot"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me');")
        .unwrap();
    drop(other);
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::NotAStore { .. }), "{error}");
    let other = Connection::open(&path).unwrap();
    let text: String = other
        .query_row("SELECT text FROM notes", [], |row| row.get(0))
        .unwrap();
    assert_eq!(text, "keep me");
}

#[test]
fn a_damaged_file_is_refused_with_a_clear_error_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("earshot.db");
    let garbage =
        b"this is not sqlite at all, just some text that fills more than a header.".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::NotAStore { .. }), "{error}");
    assert!(error.to_string().contains("left untouched"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn an_event_is_stored_once_and_makes_its_session_known_and_due() {
    let (_dir, mut store) = temp_store();
    let first = event("e1", "ses_1", "session.started", 1_000);
    assert!(events::insert(&store.conn, &first).unwrap());
    assert!(
        !events::insert(&store.conn, &first).unwrap(),
        "a repeat is ignored"
    );
    assert_eq!(events::count(&store).unwrap(), 1);
    let stored = events::get(&store, "e1").unwrap().unwrap();
    assert_eq!(stored.body, first.body);
    assert_eq!(stored.session_id, "ses_1");
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        vec!["ses_1".to_owned()]
    );
    // Swept with nothing pending, long after its last event: settled.
    deliveries::record_sweep(&mut store, "ses_1", &[], 1_000 + sessions::SETTLE_MS + 10).unwrap();
    assert!(sessions::due_for_sweep(&store, 10).unwrap().is_empty());
    // A new event makes it due again.
    events::insert(
        &store.conn,
        &event("e2", "ses_1", "session.completed", 90_000),
    )
    .unwrap();
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        vec!["ses_1".to_owned()]
    );
}

#[test]
fn a_sweep_with_pending_attempts_leaves_the_session_due() {
    let (_dir, mut store) = temp_store();
    sessions::add(
        &mut store,
        &["ses_a".into(), "ses_b".into()],
        sessions::Source::Added,
        0,
    )
    .unwrap();
    let pending = record("r1", "sub", "ses_a", DeliveryStatus::Pending, None, 10);
    assert!(deliveries::record_sweep(&mut store, "ses_a", &[pending], 100_000).unwrap());
    assert!(!deliveries::record_sweep(&mut store, "ses_b", &[], 100_000).unwrap());
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        vec!["ses_a".to_owned()]
    );
}

#[test]
fn sessions_with_something_new_come_first_and_re_checks_take_turns() {
    let (_dir, mut store) = temp_store();
    let pending =
        |id: &str, session: &str| record(id, "sub", session, DeliveryStatus::Pending, None, 10);
    sessions::add(
        &mut store,
        &["old".into(), "older".into()],
        sessions::Source::Added,
        0,
    )
    .unwrap();
    // Both swept with attempts still pending: re-checks, "older" longer ago.
    deliveries::record_sweep(&mut store, "older", &[pending("r1", "older")], 100_000).unwrap();
    deliveries::record_sweep(&mut store, "old", &[pending("r2", "old")], 200_000).unwrap();
    // Then two new sessions arrive, "newest" last.
    events::insert(&store.conn, &event("e1", "new", "session.started", 300_000)).unwrap();
    events::insert(
        &store.conn,
        &event("e2", "newest", "session.started", 400_000),
    )
    .unwrap();
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        ["newest", "new", "older", "old"]
            .map(str::to_owned)
            .to_vec()
    );
    // A re-check swept again goes to the back of the re-checks.
    deliveries::record_sweep(&mut store, "older", &[pending("r1", "older")], 500_000).unwrap();
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        ["newest", "new", "old", "older"]
            .map(str::to_owned)
            .to_vec()
    );
    assert_eq!(sessions::due_for_sweep(&store, 3).unwrap().len(), 3);
}

#[test]
fn a_batch_of_sweeps_stores_every_session_in_one_go() {
    let (_dir, mut store) = temp_store();
    let minute = 60_000 * 2_000;
    let pending = record("r1", "sub", "ses_a", DeliveryStatus::Pending, None, minute);
    let failed = record(
        "r2",
        "sub",
        "ses_b",
        DeliveryStatus::Failed,
        Some(401),
        minute,
    );
    let delivered = record(
        "r3",
        "sub",
        "ses_b",
        DeliveryStatus::Delivered,
        Some(200),
        minute,
    );
    let b = [failed, delivered];
    let unsettled = deliveries::record_sweeps(
        &mut store,
        &[
            ("ses_a", &[pending][..]),
            ("ses_b", &b[..]),
            ("ses_c", &[][..]),
        ],
        minute + 1,
    )
    .unwrap();
    assert_eq!(unsettled, vec![true, false, false]);
    assert_eq!(deliveries::count(&store).unwrap(), 3);
    assert_eq!(sessions::count(&store).unwrap(), 3);
    assert_eq!(
        sessions::due_for_sweep(&store, 10).unwrap(),
        vec!["ses_a".to_owned()]
    );
    let counted: i64 = store
        .conn
        .query_row("SELECT sum(count) FROM delivery_counts", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(counted, 3, "the triggers counted every batched record");
}

#[test]
fn counts_follow_records_as_they_are_inserted_and_change() {
    let (_dir, mut store) = temp_store();
    let minute = 60_000 * 1_000;
    let mut first = record("r1", "sub", "ses_1", DeliveryStatus::Pending, None, minute);
    let second = record(
        "r2",
        "sub",
        "ses_2",
        DeliveryStatus::Failed,
        Some(401),
        minute + 5,
    );
    let third = record(
        "r3",
        "sub",
        "ses_3",
        DeliveryStatus::Failed,
        Some(401),
        minute + 9,
    );
    deliveries::record_sweep(&mut store, "ses_1", &[first.clone()], minute).unwrap();
    deliveries::record_sweep(&mut store, "ses_2", &[second], minute).unwrap();
    deliveries::record_sweep(&mut store, "ses_3", &[third], minute).unwrap();
    // The pending attempt is later delivered: it moves from one count to the other.
    first.status = DeliveryStatus::Delivered;
    first.http_status_code = Some(200);
    deliveries::record_sweep(&mut store, "ses_1", &[first], minute).unwrap();
    let counts = health::outcomes_since(&store, minute).unwrap();
    let summary: Vec<(String, Option<u16>, i64, String)> = counts
        .iter()
        .map(|c| {
            (
                c.status.clone(),
                c.http_status_code,
                c.count,
                c.example_session_id.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("delivered".into(), Some(200), 1, "ses_1".into()),
            ("failed".into(), Some(401), 2, "ses_3".into()),
        ]
    );
    assert!(
        health::outcomes_since(&store, minute + 60_000)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn window_counts_from_minutes_and_hours_equal_a_plain_count() {
    let (_dir, mut store) = temp_store();
    // 600 attempts over five hours, 31 s apart, three outcomes.
    let start = 1_700_000_000_000_i64;
    let records: Vec<(String, Vec<DeliveryRecord>)> = (0..600)
        .map(|n| {
            let (status, code) = match n % 3 {
                0 => (DeliveryStatus::Delivered, Some(200)),
                1 => (DeliveryStatus::Failed, Some(401)),
                _ => (DeliveryStatus::Pending, None),
            };
            let session = format!("ses_{n}");
            let record = record(
                &format!("r{n}"),
                "sub",
                &session,
                status,
                code,
                start + n * 31_000,
            );
            (session, vec![record])
        })
        .collect();
    let batch: Vec<(&str, &[DeliveryRecord])> = records
        .iter()
        .map(|(session, records)| (session.as_str(), records.as_slice()))
        .collect();
    deliveries::record_sweeps(&mut store, &batch, start).unwrap();
    for since in [
        start - 1,
        start + 61_000,
        start + 3_599_999,
        start + 7_000_000,
        start + 18_000_000,
    ] {
        let counted: i64 = health::outcomes_since(&store, since)
            .unwrap()
            .iter()
            .map(|outcome| outcome.count)
            .sum();
        let first_minute_ms = since.div_euclid(60_000) * 60_000;
        let expected = (0..600)
            .filter(|n| start + n * 31_000 >= first_minute_ms)
            .count() as i64;
        assert_eq!(counted, expected, "since {since}");
    }
}

#[test]
fn iso_8601_variants_of_an_event_timestamp_are_read() {
    let expected = Some(1_795_568_400_000);
    for text in [
        "2026-11-25T01:00:00Z",
        "2026-11-25T01:00:00.000+00:00",
        "2026-11-25T01:00:00+0000",
        "2026-11-25T01:00:00+00",
        "2026-11-25T02:00:00+01",
        "2026-11-25T01:00Z",
        "2026-11-25 01:00:00Z",
        "20261125T010000Z",
        "20261125T0100Z",
        " 2026-11-25T01:00:00Z ",
    ] {
        assert_eq!(events::parse_timestamp(text), expected, "{text}");
    }
    for text in [
        "2026-11-25T01:00:00",
        "yesterday",
        "",
        "2026-13-25T01:00:00Z",
    ] {
        assert_eq!(events::parse_timestamp(text), None, "{text}");
    }
}

#[test]
fn a_delivery_events_cannot_file_is_kept_unfiled_with_why() {
    use events::{Filing, Unreadable};
    let file = |body: &str| Filing::read(body.as_bytes(), vec![], Some("d1".into()), 7);
    let Filing::Unfiled(unfiled) =
        file(r#"{"event_id":"e1","event":"agent.updated","agent":{"session_id":5}}"#)
    else {
        panic!("filed");
    };
    assert_eq!(unfiled.event_id.as_deref(), Some("e1"));
    assert_eq!(unfiled.event.as_deref(), Some("agent.updated"));
    assert_eq!(
        unfiled.reasons,
        [Unreadable::NoTimestamp, Unreadable::NoSessionOrCall]
    );
    assert_eq!(
        unfiled.reason(),
        "no timestamp; neither a session nor a call object (an unknown event type?)"
    );
    let Filing::Unfiled(unfiled) = file(
        r#"{"event_id":"e2","event":"call.ended","timestamp":"2026-11-25T01:00Z","call":{"call_id":42}}"#,
    ) else {
        panic!("filed");
    };
    assert_eq!(unfiled.occurred_ms, Some(1_795_568_400_000));
    assert_eq!(unfiled.reasons, [Unreadable::SessionIdNotText]);
    assert!(matches!(
        file(
            r#"{"event_id":"e3","event":"call.ended","timestamp":"20261125T010000Z","call":{"call_id":"c1"}}"#
        ),
        Filing::Event(_)
    ));

    let (_dir, store) = temp_store();
    let unfiled = file(r#"{"event_id":"e4","event":"session.started","session":{}}"#);
    assert!(events::keep(&store.conn, &unfiled).unwrap());
    assert!(!events::keep(&store.conn, &unfiled).unwrap(), "a repeat");
    let headless = file("[1, 2]");
    assert!(events::keep(&store.conn, &headless).unwrap());
    assert!(events::keep(&store.conn, &headless).unwrap(), "no id: kept");
    assert_eq!(events::count_unfiled(&store).unwrap(), 3);
    assert_eq!(events::count(&store).unwrap(), 0);
    let (body, reason): (Vec<u8>, String) = store
        .conn
        .query_row(
            "SELECT body, reason FROM unfiled_events WHERE event_id = 'e4'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        body,
        br#"{"event_id":"e4","event":"session.started","session":{}}"#
    );
    assert_eq!(reason, "no timestamp; no session_id or call_id");
}

#[test]
fn a_version_2_store_gains_the_unfiled_table() {
    let (_dir, store) = temp_store();
    let path = store.path().to_owned();
    store
        .conn
        .execute_batch(&format!(
            "{} DROP TABLE unfiled_events; DROP INDEX deliveries_by_created;
             ALTER TABLE incidents DROP COLUMN resolved_reason;
             PRAGMA user_version = 2;",
            super::event_words_tests::UNDO_SINCE_VERSION_7
        ))
        .unwrap();
    drop(store);
    let store = Store::open(&path).expect("migrated");
    let version: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(events::count_unfiled(&store).unwrap(), 0);
    // Version 5: why an incident was resolved.
    let reasons: i64 = store
        .conn
        .query_row("SELECT count(resolved_reason) FROM incidents", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(reasons, 0);
}

#[test]
fn the_observers_subscription_is_the_one_whose_attempt_ids_it_filed() {
    let (_dir, mut store) = temp_store();
    // The observer filed one event, delivered to it as attempt `d1`.
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", 1_000)).unwrap();
    assert!(
        deliveries::observer_subscriptions(&store)
            .unwrap()
            .is_empty(),
        "nothing swept yet: no evidence, no guess"
    );
    let observer = record(
        "d1",
        "sub_obs",
        "ses_1",
        DeliveryStatus::Delivered,
        Some(200),
        1_000,
    );
    let customer = record(
        "d2",
        "sub_cust",
        "ses_1",
        DeliveryStatus::Delivered,
        Some(200),
        1_000,
    );
    deliveries::record_sweep(&mut store, "ses_1", &[customer, observer], 2_000).unwrap();
    assert_eq!(
        deliveries::observer_subscriptions(&store).unwrap(),
        vec!["sub_obs".to_owned()]
    );
}

#[test]
fn events_received_since_any_time_count_as_the_rows_do() {
    let (_dir, store) = temp_store();
    const HOUR: i64 = 3_600_000;
    let t0 = 480_000 * HOUR;
    // Received at whole hours, just before and after them, across 5 hours.
    let times: Vec<i64> = (0..5)
        .flat_map(|h| [t0 + h * HOUR - 6, t0 + h * HOUR - 5, t0 + h * HOUR + 1_000])
        .collect();
    for (n, at) in times.iter().enumerate() {
        events::insert(
            &store.conn,
            &event(&format!("e{n}"), "ses_1", "session.started", at - 5),
        )
        .unwrap();
    }
    store
        .conn
        .execute("DELETE FROM events WHERE event_id = 'e4'", [])
        .unwrap();
    store
        .conn
        .execute(
            "UPDATE events SET received_ms = ?1 WHERE event_id = 'e7'",
            [t0 - 10 * HOUR],
        )
        .unwrap();
    let rows = |since: i64| -> i64 {
        store
            .conn
            .query_row(
                "SELECT count(*) FROM events WHERE received_ms >= ?1",
                [since],
                |row| row.get(0),
            )
            .unwrap()
    };
    let mut checked = 0;
    for since in [
        t0 - 11 * HOUR,
        t0 - HOUR,
        t0 - 6,
        t0 - 5,
        t0 - 4,
        t0,
        t0 + 1_000,
    ]
    .into_iter()
    .chain((0..6).flat_map(|h| [t0 + h * HOUR - 5, t0 + h * HOUR, t0 + h * HOUR + 1_001]))
    {
        let (counted, newest) = events::received_since(&store, since).unwrap();
        assert_eq!(counted, rows(since), "since {since}");
        assert_eq!(newest, times.iter().max().copied());
        checked += usize::from(counted > 0);
    }
    assert!(checked > 10, "{checked}");
}

#[test]
fn a_list_after_a_sequence_holds_only_the_events_filed_since_that_pass_the_filter() {
    use super::event_list::{self, Filter};
    let (_dir, store) = temp_store();
    let file = |id: &str, kind: &str, occurred_ms: i64| {
        let session = format!("call_{id}");
        events::insert(&store.conn, &event(id, &session, kind, occurred_ms)).expect("filed");
    };
    file("e1", "call.ended", 1_000);
    file("e2", "call.ended", 5_000);
    let before = mark::list_state(&store).expect("the state");
    // Filed later, though e3 happened before e2.
    file("e3", "session.started", 2_000);
    file("e4", "call.ended", 3_000);
    let after = mark::list_state(&store).expect("the state");
    assert_eq!(after.version, before.version, "events filed change no list");
    assert!(after.newest_seq > before.newest_seq, "{before:?} {after:?}");
    let listed = |filter: &Filter<'_>| -> Vec<String> {
        event_list::list(&store, filter, 100)
            .expect("the list")
            .into_iter()
            .map(|listed| listed.event_id)
            .collect()
    };
    let newer = Filter {
        after_seq: Some(before.newest_seq),
        ..Filter::default()
    };
    assert_eq!(listed(&newer), ["e4", "e3"]);
    let calls = Filter {
        event_type: Some("call"),
        ..newer.clone()
    };
    assert_eq!(listed(&calls), ["e4"]);
    assert_eq!(listed(&Filter::default()), ["e2", "e4", "e3", "e1"]);
}

#[test]
fn a_version_8_store_says_its_slow_upgrade_first_and_keeps_every_outcome_row() {
    use std::sync::Mutex;
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    super::say_slow_migrations_with(|text| SAID.lock().expect("the notes").push(text.to_owned()));
    let (_dir, store) = temp_store();
    let path = store.path().to_owned();
    store
        .conn
        .execute(
            "INSERT INTO subscriptions (id, url, events, enabled, secret_version, seen_ms, record)
             VALUES ('sub_a', 'https://a.example.invalid/x', '[\"call.ended\"]', 1, 1, 1, '{}')",
            [],
        )
        .expect("a subscription");
    for n in 0..3 {
        let id = format!("e{n}");
        let session = format!("call_{n}");
        events::insert(&store.conn, &event(&id, &session, "call.ended", 1_000 + n)).expect("filed");
    }
    let rows = |store: &Store| -> Vec<(String, String, String)> {
        let mut statement = store
            .conn
            .prepare("SELECT session_id, subscription_id, event_key FROM event_outcomes ORDER BY 3")
            .expect("the rows");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .expect("the rows")
            .collect::<rusqlite::Result<_>>()
            .expect("the rows")
    };
    let before = rows(&store);
    assert_eq!(before.len(), 3, "one row per event for the subscription");
    // Back to version 8: its trigger counting filed events as changes,
    // and no relay cursors.
    store
        .conn
        .execute_batch(
            "DROP TABLE relay_cursors;
             CREATE TRIGGER events_listed_insert AFTER INSERT ON events
             BEGIN UPDATE list_changes SET n = n + 1; END;
             PRAGMA user_version = 8;",
        )
        .expect("taken back");
    drop(store);
    // Other tests' stores migrate in this process too: this store's notes.
    let said = || -> Vec<String> {
        let shown = path.display().to_string();
        let notes = SAID.lock().expect("the notes");
        notes
            .iter()
            .filter(|note| note.contains(&shown))
            .cloned()
            .collect()
    };
    assert!(said().is_empty(), "nothing said yet");
    let store = Store::open(&path).expect("migrated");
    let said = said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&format!("to schema {}", schema::SCHEMA_VERSION)),
        "{said:?}"
    );
    assert_eq!(rows(&store), before);
    let version: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("the version");
    assert_eq!(version, schema::SCHEMA_VERSION);
}
