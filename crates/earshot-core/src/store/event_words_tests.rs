//! The free-text index (`event_words`) against the scan it replaces: the
//! same lists for every word and filter on tricky ids; entries gone with
//! their event (forget, prune); a migrated store filled in batches.

use std::sync::atomic::AtomicBool;

use rusqlite::OptionalExtension;

use super::event_list::{self, Filter};
use super::event_words::{self, FillProgress};
use super::events::{self, ObservedEvent};
use super::outcomes::EventState;
use super::tests::temp_store;
use super::*;
use crate::api::types::agents::Subscription;

const T0: i64 = 1_800_000_000_000;

/// Takes a store back to before version 7 (for the migration tests):
/// versions 10 (the relay's cursors), 8 (the type index) and 7 undone (9
/// dropped one of 8's triggers).
pub(super) const UNDO_SINCE_VERSION_7: &str = "DROP TABLE relay_cursors; DROP INDEX events_by_type;
    DROP TRIGGER IF EXISTS events_listed_insert; DROP TRIGGER events_listed_update;
    DROP TRIGGER events_listed_delete; DROP TRIGGER event_outcomes_listed_insert;
    DROP TRIGGER event_outcomes_listed_update; DROP TRIGGER event_outcomes_listed_delete;
    DROP TRIGGER subscriptions_listed_insert; DROP TRIGGER subscriptions_listed_delete;
    DROP TRIGGER subscriptions_listed_update; DROP TABLE list_changes;
    DROP TRIGGER events_received_counted; DROP TRIGGER events_received_uncounted;
    DROP TRIGGER events_received_recounted; DROP TABLE events_received_hourly;
    DROP TRIGGER events_worded; DROP TRIGGER events_reworded;
    DROP TRIGGER events_unworded; DROP TABLE event_words; DROP TABLE event_words_fill;
    DROP TABLE event_words_pending;";

/// Ids, sessions and types with what `instr` and FTS5 might read
/// differently: case, accents, letters whose lower case differs in
/// SQLite and Rust, quotes, `%` and `_`, FTS5 syntax, emoji, CJK.
const TRICKY: [(&str, &str, &str); 12] = [
    ("EVT-Upper-0001", "ses_MiXeD", "session.started"),
    ("évt-été-0002", "ses_ÉTÉ", "session.completed"),
    ("evt-straße-0003", "call_İstanbul", "call.ended"),
    ("evt\"quote\"0004", "ses_'single'", "call.failed"),
    ("evt%percent_0005", "ses_100%_x", "Call.Ended"),
    ("evt*star-0006", "ses_NEAR(a b)", "session.started"),
    ("evt-minus--0007", "ses_a OR b", "custom.TYPE"),
    ("evt:colon^0008", "ses_😀emoji", "session.started"),
    ("evt-日本語-0009", "ses_ﬃ", "session.completed"),
    ("evt-0010", "ses_AND_NOT", "call.connected"),
    ("ab", "x", "session.started"),
    ("0011-EVT-upper", "SES_mixed", "session.completed"),
];

/// Words that are FTS5 syntax, or match across case rules.
const SPECIAL: [&str; 30] = [
    "\"",
    "\"quote",
    "\"\"",
    "*",
    "star*",
    "near",
    "near(",
    "near(a",
    "-",
    "--",
    "minus--",
    "%",
    "_",
    "%_",
    "or b",
    "a or",
    "and",
    "and_not",
    "not",
    "é",
    "été",
    "ÉTÉ",
    "ss",
    "straße",
    "i̇st",
    "😀emo",
    "日本語",
    "ffi",
    "call.",
    "nothing-here",
];

fn observed(id: &str, session: &str, kind: &str, occurred_ms: i64) -> ObservedEvent {
    ObservedEvent {
        event_id: id.to_owned(),
        event: kind.to_owned(),
        session_id: session.to_owned(),
        kind: "session",
        occurred_ms,
        received_ms: occurred_ms + 5,
        delivery_id: None,
        headers: vec![],
        body: format!("{{\"call\":\"{session}\"}}").into_bytes(),
    }
}

fn listening_to_all(store: &mut Store) {
    let types: Vec<&str> = TRICKY.iter().map(|(_, _, kind)| *kind).collect();
    let subscription: Subscription = serde_json::from_value(serde_json::json!({
        "id": "sub_all", "url": "https://a.example.invalid/x", "events": types,
        "enabled": true, "secret_version": 1,
    }))
    .expect("a subscription");
    deliveries::replace_subscriptions(store, &[subscription], T0).expect("stored");
}

fn tricky_store() -> (tempfile::TempDir, Store) {
    let (dir, mut store) = temp_store();
    listening_to_all(&mut store);
    for (n, (id, session, kind)) in TRICKY.iter().enumerate() {
        events::insert(
            &store.conn,
            &observed(id, session, kind, T0 + n as i64 * 1000),
        )
        .expect("inserted");
    }
    // As the writer does between batches.
    event_words::index_pending(&store.conn, i64::MAX).expect("indexed");
    (dir, store)
}

fn ids(store: &Store, filter: &Filter<'_>) -> Vec<String> {
    event_list::list(store, filter, 100)
        .expect("listed")
        .into_iter()
        .map(|event| event.event_id)
        .collect()
}

/// Makes the index read as not filled, so free text scans.
fn scan_only(store: &Store, on: bool) {
    let sql = if on {
        "INSERT INTO event_words_fill VALUES (1, 1)"
    } else {
        "DELETE FROM event_words_fill"
    };
    store.conn.execute(sql, []).expect("fill row");
}

/// Every substring of up to five characters of `text`.
fn substrings(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for start in 0..chars.len() {
        for len in 1..=5 {
            if let Some(part) = chars.get(start..start + len) {
                out.push(part.iter().collect());
            }
        }
    }
    out
}

#[test]
fn free_text_through_the_index_lists_exactly_what_the_scan_lists() {
    let (_dir, store) = tricky_store();
    let mut words: Vec<String> = SPECIAL.iter().map(|word| (*word).to_owned()).collect();
    for (id, session, kind) in TRICKY {
        for text in [
            id.to_lowercase(),
            session.to_lowercase(),
            kind.to_lowercase(),
        ] {
            words.extend(substrings(&text));
        }
    }
    words.sort();
    words.dedup();
    let mut queries: Vec<Vec<String>> = words.iter().map(|word| vec![word.clone()]).collect();
    for special in SPECIAL {
        queries.push(vec![special.to_owned(), "evt".to_owned()]);
        queries.push(vec!["ses_".to_owned(), special.to_owned(), "0".to_owned()]);
    }
    fn filters(words: &[String]) -> Vec<Filter<'_>> {
        let base = Filter {
            since_ms: T0 - 1,
            words,
            ..Filter::default()
        };
        vec![
            base.clone(),
            Filter {
                event_type: Some("session.started"),
                ..base.clone()
            },
            Filter {
                session: Some("ses_"),
                ..base.clone()
            },
            Filter {
                state: Some(EventState::Unknown),
                ..base.clone()
            },
            Filter {
                subscription: Some("sub_"),
                since_ms: T0 + 3_500,
                ..base
            },
        ]
    }
    let (mut compared, mut found, mut through_index) = (0, 0, 0);
    for words in &queries {
        for filter in filters(words) {
            let indexed = event_list::by_words(&store, words, 100)
                .expect("probed")
                .is_some();
            let by_index = ids(&store, &filter);
            scan_only(&store, true);
            assert!(event_list::by_words(&store, words, 100).unwrap().is_none());
            let by_scan = ids(&store, &filter);
            scan_only(&store, false);
            assert_eq!(by_index, by_scan, "{filter:?}");
            compared += 1;
            found += usize::from(!by_scan.is_empty());
            through_index += usize::from(indexed);
        }
    }
    // The comparison is not of empty lists, and the index served most.
    assert!(compared > 3_000, "{compared}");
    assert!(
        found * 3 > compared,
        "{found} of {compared} found something"
    );
    assert!(
        through_index * 2 > compared,
        "{through_index} of {compared}"
    );
    let one = |word: &str| {
        let words = [word.to_owned()];
        ids(
            &store,
            &Filter {
                since_ms: T0 - 1,
                words: &words,
                ..Filter::default()
            },
        )
    };
    assert_eq!(one("\"quote"), ["evt\"quote\"0004"]);
    assert_eq!(one("near(a"), ["evt*star-0006"]);
    assert_eq!(one("%_x"), ["evt%percent_0005"]);
    assert_eq!(one("evt-upper"), ["0011-EVT-upper", "EVT-Upper-0001"]);
    assert_eq!(one("été"), ["évt-été-0002"]);
    assert_eq!(
        one("l.ended"),
        ["evt%percent_0005", "evt-straße-0003"],
        "`Call.Ended` folds like the ids"
    );
    // An event not in the index yet (filed by another program, or before
    // the writer's batch ends) is found too.
    events::insert(
        &store.conn,
        &observed("evt-pending-77", "ses_pending", "call.ended", T0 + 50_000),
    )
    .unwrap();
    let words = ["pending-77".to_owned()];
    assert!(event_list::by_words(&store, &words, 100).unwrap().is_some());
    assert_eq!(one("pending-77"), ["evt-pending-77"]);
    assert_eq!(
        index_rows_of(&store, "evt-pending-77"),
        (0, 0),
        "not indexed"
    );
}

/// The rows of the index (content and every indexed trigram) that belong
/// to an event id.
fn index_rows_of(store: &Store, event_id: &str) -> (i64, i64) {
    store
        .conn
        .execute_batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_vocab
                 USING fts5vocab(main, event_words, 'instance')",
        )
        .expect("vocabulary table");
    let rowid: Option<i64> = store
        .conn
        .query_row(
            "SELECT rowid FROM event_words WHERE event_id = ?1",
            [event_id],
            |row| row.get(0),
        )
        .ok();
    let instances: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM temp.words_vocab WHERE doc = ?1",
            [rowid.unwrap_or(-1)],
            |row| row.get(0),
        )
        .expect("instances");
    (i64::from(rowid.is_some()), instances)
}

fn file_holds(store: &Store, needle: &str) -> bool {
    let mut bytes = std::fs::read(store.path()).unwrap_or_default();
    let mut wal = store.path().as_os_str().to_owned();
    wal.push("-wal");
    bytes.extend(std::fs::read(wal).unwrap_or_default());
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn a_forgotten_or_pruned_event_leaves_the_index_and_the_file() {
    let (_dir, mut store) = temp_store();
    listening_to_all(&mut store);
    let gone = ("evt-forget-me-7781", "call_forget_me_7781");
    let kept = ("evt-keep-me-3342", "call_keep_me_3342");
    let old = ("evt-old-one-5566", "call_old_one_5566");
    for (n, (id, session)) in [gone, kept].into_iter().enumerate() {
        events::insert(
            &store.conn,
            &observed(id, session, "call.ended", now_ms() - n as i64),
        )
        .unwrap();
    }
    events::insert(
        &store.conn,
        &observed(old.0, old.1, "call.ended", now_ms() - 40 * 86_400_000),
    )
    .unwrap();
    event_words::index_pending(&store.conn, i64::MAX).unwrap();
    store
        .conn
        .execute(
            "UPDATE events SET received_ms = ?1 WHERE event_id = ?2",
            rusqlite::params![now_ms() - 40 * 86_400_000, old.0],
        )
        .unwrap();
    // Outside a forget, a delete leaves a tombstone (FTS5's secure-delete
    // mode is on only while forget deletes).
    let secure: Option<i64> = store
        .conn
        .query_row(
            "SELECT v FROM event_words_config WHERE k = 'secure-delete'",
            [],
            |row| row.get(0),
        )
        .optional()
        .unwrap();
    assert_ne!(secure, Some(1));
    let (content, instances) = index_rows_of(&store, gone.0);
    assert_eq!(content, 1);
    assert!(instances > 20, "{instances} trigrams indexed");

    forget::forget(&mut store, gone.1).expect("forgotten");
    assert!(forget::empty_wal(&mut store, std::time::Duration::from_secs(2)).unwrap());
    assert_eq!(index_rows_of(&store, gone.0), (0, 0));
    let words = ["forget_me".to_owned()];
    let filter = Filter {
        words: &words,
        ..Filter::default()
    };
    assert!(ids(&store, &filter).is_empty());
    assert!(!file_holds(&store, gone.0), "the id is still in the file");
    assert!(
        !file_holds(&store, gone.1),
        "the session is still in the file"
    );
    assert!(file_holds(&store, kept.0), "the search finds what is there");
    let (content, instances) = index_rows_of(&store, kept.0);
    assert!(content == 1 && instances > 20);

    let period = retention::Period::parse("30d").unwrap();
    retention::prune(
        &mut store,
        period,
        now_ms(),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .expect("pruned");
    assert!(forget::empty_wal(&mut store, std::time::Duration::from_secs(2)).unwrap());
    assert_eq!(index_rows_of(&store, old.0), (0, 0));
    assert!(
        !file_holds(&store, old.0),
        "the pruned id is still in the file"
    );
    assert_eq!(index_rows_of(&store, kept.0).0, 1);
    let rows: i64 = store
        .conn
        .query_row("SELECT count(*) FROM event_words", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 1, "one event left, one row in the index");
}

#[test]
fn a_migrated_store_scans_until_its_index_is_filled_in_batches() {
    let (_dir, store) = tricky_store();
    // Back to version 6: no index, as a store written before it.
    store
        .conn
        .execute_batch(&format!("{UNDO_SINCE_VERSION_7} PRAGMA user_version = 6;"))
        .unwrap();
    let path = store.path().to_owned();
    drop(store);
    let mut store = Store::open(&path).expect("migrated");
    assert!(!event_words::is_complete(&store.conn).unwrap());
    let words = ["evt-".to_owned()];
    let filter = Filter {
        since_ms: T0 - 1,
        words: &words,
        ..Filter::default()
    };
    assert!(event_list::by_words(&store, &words, 100).unwrap().is_none());
    let scanned = ids(&store, &filter);
    assert_eq!(scanned.len(), 6, "{scanned:?}");
    // Filed after the migration: pending, indexed by the first batch.
    events::insert(
        &store.conn,
        &observed("evt-late", "ses_late", "call.ended", T0 + 99_000),
    )
    .unwrap();
    let mut progress = Vec::new();
    loop {
        let step = event_words::fill(&mut store, 5).expect("filled");
        progress.push(step);
        if step.complete {
            break;
        }
    }
    assert_eq!(
        progress,
        [
            FillProgress {
                added: 6,
                done_rowids: 5,
                all_rowids: 12,
                complete: false
            },
            FillProgress {
                added: 5,
                done_rowids: 10,
                all_rowids: 12,
                complete: false
            },
            FillProgress {
                added: 2,
                done_rowids: 12,
                all_rowids: 12,
                complete: true
            },
        ]
    );
    assert!(event_words::is_complete(&store.conn).unwrap());
    assert!(event_list::by_words(&store, &words, 100).unwrap().is_some());
    let mut expected = vec!["evt-late".to_owned()];
    expected.extend(scanned);
    assert_eq!(ids(&store, &filter), expected);
    let rows: i64 = store
        .conn
        .query_row("SELECT count(*) FROM event_words", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 13, "each event once");
    assert_eq!(
        event_words::fill(&mut store, 5).unwrap(),
        FillProgress {
            complete: true,
            ..FillProgress::default()
        }
    );
}

#[test]
fn free_text_folds_unicode_case_through_the_index_and_the_scan_alike() {
    let (_dir, store) = tricky_store();
    for scanning in [false, true] {
        scan_only(&store, scanning);
        for typed in ["ses_été", "SES_ÉTÉ", "Ses_Été"] {
            let words = vec![crate::query::fold(typed).into_owned()];
            let filter = Filter {
                words: &words,
                ..Filter::default()
            };
            assert_eq!(
                ids(&store, &filter),
                ["évt-été-0002"],
                "{typed} (scanning: {scanning})"
            );
        }
        scan_only(&store, false);
    }
}

#[test]
fn a_type_matches_the_types_that_contain_it_in_any_case() {
    let (_dir, store) = tricky_store();
    let found = |typed: &str| {
        let filter = Filter {
            event_type: Some(typed),
            ..Filter::default()
        };
        let mut found = ids(&store, &filter);
        found.sort();
        found
    };
    // `Call.Ended` is a type of its own as stored, and still a call.
    assert_eq!(
        found("call"),
        [
            "evt\"quote\"0004",
            "evt%percent_0005",
            "evt-0010",
            "evt-straße-0003"
        ]
    );
    assert_eq!(found("CALL.ENDED"), ["evt%percent_0005", "evt-straße-0003"]);
    assert_eq!(found("type"), ["evt-minus--0007"]);
    assert!(found("call.endedx").is_empty());
}

#[test]
fn a_rare_type_is_listed_along_the_type_index_with_the_scans_answer() {
    let (_dir, store) = tricky_store();
    for typed in ["call", "SESSION.", "custom", "ended", "nothing"] {
        let filter = Filter {
            event_type: Some(typed),
            ..Filter::default()
        };
        let indexed = event_list::by_type(&store, typed, 0, 100).unwrap();
        assert!(indexed.is_some(), "{typed}: few events, the index is used");
        let mut along_index = ids(&store, &filter);
        // The same filter read with no type index at all.
        store
            .conn
            .execute_batch("DROP INDEX events_by_type")
            .unwrap();
        let mut scanned = {
            let sql = "SELECT event_id FROM events WHERE instr(fold(event), fold(?1)) > 0";
            let mut statement = store.conn.prepare(sql).unwrap();
            statement
                .query_map([typed], |row| row.get::<_, String>(0))
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        };
        store
            .conn
            .execute_batch("CREATE INDEX events_by_type ON events (event, occurred_ms)")
            .unwrap();
        along_index.sort();
        scanned.sort();
        assert_eq!(along_index, scanned, "{typed}");
    }
}
