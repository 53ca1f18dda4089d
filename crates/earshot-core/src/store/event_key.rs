//! Events keyed by time: version 11 of the schema, and finding an event
//! by its id alone.
//!
//! The platform sends a repeat with the same bytes, so `(occurred_ms,
//! event_id)` tells a repeat as well as the id does (the PostgreSQL store
//! keys on it too), and a live event lands at the end of that index
//! instead of on a random leaf of a million-entry one: filing into a large
//! store reads and dirties one page fewer at a random place an event
//! (`docs/performance.md`, "Events keyed by time"). The same key replaces
//! the time index, which it covers. The rowid becomes a column of its own
//! (`seq`), so no `VACUUM` renumbers what the free-text index and a live
//! list hold.
//!
//! An event asked for by its id alone ([`rowid_of`]: `events get`, the
//! console, recover by id) is found through the free-text index's
//! `id_text` column, and the events its filler has not reached yet, each
//! candidate checked by its id; an id shorter than a trigram, or a store
//! whose index is not filled yet, is found by reading the table.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::{StoreError, event_words};

/// The migration to version 11: `events` rewritten with its new key and
/// the same rows and rowids; its other indexes and its triggers (dropped
/// with the old table) made again as earlier versions made them.
pub(super) fn schema() -> String {
    let columns =
        "event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body";
    let mut sql = format!(
        "
CREATE TABLE events_11 (
    seq          INTEGER PRIMARY KEY,
    event_id     TEXT NOT NULL,
    event        TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    occurred_ms  INTEGER NOT NULL,
    received_ms  INTEGER NOT NULL,
    delivery_id  TEXT,
    headers      TEXT NOT NULL,
    body         BLOB NOT NULL,
    UNIQUE (occurred_ms, event_id)
);
INSERT INTO events_11 (seq, {columns}) SELECT rowid, {columns} FROM events ORDER BY rowid;
DROP TABLE events;
ALTER TABLE events_11 RENAME TO events;
CREATE INDEX events_by_session ON events (session_id, occurred_ms);
CREATE INDEX events_by_received ON events (received_ms);
CREATE INDEX events_by_type ON events (event, occurred_ms);
"
    );
    sql.push_str(event_words::TRIGGERS);
    sql.push_str(super::schema::EVENTS_RECEIVED_TRIGGERS);
    for change in ["UPDATE", "DELETE"] {
        sql.push_str(&super::schema::listed_trigger("events", change, ""));
    }
    sql
}

/// Refuses, before anything is written, to rewrite the events of the store
/// at `path` when its disk lacks the room: the new table goes to the
/// write-ahead log, then into the file beside the old one, whose pages are
/// free only once the transaction ends (twice the file, as a bound).
pub(super) fn room_to_rewrite(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let file: u64 = conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |row| {
            row.get::<_, i64>(0)
                .map(|bytes| u64::try_from(bytes).unwrap_or(0))
        },
    )?;
    match free_bytes(path) {
        Some(free) => room_for(path, file, free),
        None => Ok(()),
    }
}

/// [`room_to_rewrite`]'s rule for a file of `file` bytes with `free`
/// bytes free beside it.
fn room_for(path: &Path, file: u64, free: u64) -> Result<(), StoreError> {
    let needed = file.saturating_mul(2);
    if free >= needed {
        return Ok(());
    }
    Err(StoreError::NoRoomToUpgrade {
        path: path.to_owned(),
        version: super::SCHEMA_VERSION,
        needed_mb: needed.div_ceil(1 << 20),
        free_mb: free >> 20,
    })
}

/// The bytes an unprivileged writer may still use on the file system
/// holding `path`; `None` where it cannot be told.
#[cfg(unix)]
#[allow(clippy::useless_conversion)] // the fields are 32 bits on some targets
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `name` is a NUL-terminated path and `stats` has room for
    // one `statvfs`, which the call fills when it returns 0.
    if unsafe { libc::statvfs(name.as_ptr(), stats.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: filled by the successful call above.
    let stats = unsafe { stats.assume_init() };
    u64::from(stats.f_bavail).checked_mul(u64::from(stats.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

/// The rowid of the event with id `event_id`, the oldest if two events
/// somehow share one. Through the free-text index where it can serve (a
/// lookup of about 20 ms on a million events, where reading the table
/// takes seconds).
pub(crate) fn rowid_of(conn: &Connection, event_id: &str) -> rusqlite::Result<Option<i64>> {
    if !event_words::indexable(event_id) || !event_words::is_complete(conn)? {
        return conn
            .prepare_cached("SELECT rowid FROM events WHERE event_id = ?1 ORDER BY rowid LIMIT 1")?
            .query_row([event_id], |row| row.get(0))
            .optional();
    }
    let folded = crate::query::fold(event_id);
    let expression = format!(
        "id_text : {}",
        event_words::match_expression([folded.as_ref()])
    );
    conn.prepare_cached(
        "SELECT e.rowid FROM
             (SELECT rowid AS r FROM event_words WHERE event_words MATCH ?1
              UNION SELECT event_rowid FROM event_words_pending) w
         CROSS JOIN events e ON e.rowid = w.r
         WHERE e.event_id = ?2 ORDER BY e.rowid LIMIT 1",
    )?
    .query_row(params![expression, event_id], |row| row.get(0))
    .optional()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{event, temp_store};
    use super::super::{Store, event_words, events, schema};
    use super::{Path, free_bytes, room_for};

    const T0: i64 = 1_764_000_000_000;

    #[test]
    fn an_upgrade_needs_twice_the_file_free_and_says_both_sizes_when_it_lacks_it() {
        let path = Path::new("/srv/earshot.db");
        let file = 1_000 << 20;
        assert!(room_for(path, file, 2_000 << 20).is_ok());
        let refused = room_for(path, file, (1_500 << 20) + 7).expect_err("no room");
        let said = refused.to_string();
        assert!(
            said.contains("/srv/earshot.db was left untouched")
                && said.contains("about 2000 MB free")
                && said.contains("which has 1500 MB"),
            "{said}"
        );
        let dir = tempfile::tempdir().expect("a dir");
        let free = free_bytes(&dir.path().join("earshot.db")).expect("statvfs");
        assert!(free > 0);
        assert!(
            free_bytes(Path::new("earshot.db")).is_some(),
            "the working directory's"
        );
    }

    fn file(store: &Store, id: &str, session: &str, occurred_ms: i64) -> bool {
        events::insert(
            &store.conn,
            &event(id, session, "session.started", occurred_ms),
        )
        .expect("filed")
    }

    fn found(store: &Store, id: &str) -> Option<(String, i64)> {
        events::get(store, id)
            .expect("read")
            .map(|event| (event.session_id, event.occurred_ms))
    }

    #[test]
    fn an_event_is_found_by_its_id_alone_pending_indexed_short_or_unindexed() {
        let (_dir, store) = temp_store();
        assert!(file(&store, "evt-Alpha-001", "ses_a", T0));
        assert!(file(&store, "evt-Alpha-0012", "ses_b", T0 + 1));
        assert!(file(&store, "e1", "ses_c", T0 + 2));
        // Not in the index yet: the filler's pending rows.
        assert_eq!(found(&store, "evt-Alpha-001"), Some(("ses_a".into(), T0)));
        event_words::index_pending(&store.conn, i64::MAX).expect("indexed");
        assert_eq!(found(&store, "evt-Alpha-001"), Some(("ses_a".into(), T0)));
        assert_eq!(
            found(&store, "evt-Alpha-0012"),
            Some(("ses_b".into(), T0 + 1))
        );
        // The index folds case and finds substrings; the id must be equal.
        assert_eq!(found(&store, "EVT-ALPHA-001"), None);
        assert_eq!(found(&store, "evt-Alpha-00"), None);
        assert_eq!(found(&store, "vt-Alpha-001"), None);
        // Shorter than a trigram: read from the table.
        assert_eq!(found(&store, "e1"), Some(("ses_c".into(), T0 + 2)));
        // An index still being filled (a migrated store's): the table too.
        store
            .conn
            .execute("INSERT INTO event_words_fill VALUES (1, 3)", [])
            .expect("an unfinished fill");
        assert!(!event_words::is_complete(&store.conn).expect("read"));
        store
            .conn
            .execute("DELETE FROM event_words", [])
            .expect("emptied");
        assert_eq!(found(&store, "evt-Alpha-001"), Some(("ses_a".into(), T0)));
    }

    #[test]
    fn a_repeat_is_told_by_its_time_and_id_and_the_first_copy_is_found() {
        let (_dir, store) = temp_store();
        assert!(file(&store, "evt-1", "ses_a", T0), "new");
        assert!(!file(&store, "evt-1", "ses_a", T0), "a repeat");
        // The platform resends the same bytes; another time is another row,
        // and the id alone finds the first.
        assert!(file(&store, "evt-1", "ses_a", T0 + 9));
        assert_eq!(found(&store, "evt-1"), Some(("ses_a".into(), T0)));
        let at = events::get_at(&store, T0 + 9, "evt-1").expect("read");
        assert_eq!(at.map(|event| event.occurred_ms), Some(T0 + 9));
        let unknown_time = events::get_at(&store, T0 + 5, "evt-1").expect("read");
        assert_eq!(unknown_time.map(|event| event.occurred_ms), Some(T0));
    }

    /// `(type, name)` of what `sqlite_schema` holds on `events`, sorted.
    fn on_events(store: &Store) -> Vec<(String, String)> {
        let mut statement = store
            .conn
            .prepare(
                "SELECT type, name FROM sqlite_schema
                 WHERE tbl_name = 'events' AND type IN ('index', 'trigger') ORDER BY 1, 2",
            )
            .expect("the schema");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("the schema")
            .collect::<rusqlite::Result<_>>()
            .expect("the schema")
    }

    type Row = (i64, String, String, i64, i64, Vec<u8>);

    fn rows(store: &Store) -> Vec<Row> {
        let mut statement = store
            .conn
            .prepare(
                "SELECT rowid, event_id, session_id, occurred_ms, received_ms, body
                 FROM events ORDER BY rowid",
            )
            .expect("the rows");
        statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                ))
            })
            .expect("the rows")
            .collect::<rusqlite::Result<_>>()
            .expect("the rows")
    }

    #[test]
    fn a_version_10_store_is_keyed_by_time_with_its_rows_rowids_indexes_and_triggers() {
        let (_dir, store) = temp_store();
        let path = store.path().to_owned();
        for n in 0..5 {
            file(&store, &format!("evt-{n}"), &format!("ses_{n}"), T0 + n);
        }
        event_words::index_pending(&store.conn, i64::MAX).expect("indexed");
        // A gap in the rowids, which the rewrite must keep.
        store
            .conn
            .execute("DELETE FROM events WHERE event_id = 'evt-2'", [])
            .expect("deleted");
        let before = rows(&store);
        let fresh = on_events(&store);
        // Back to version 10: keyed by id, with a time index.
        let columns =
            "event_id, event, session_id, occurred_ms, received_ms, delivery_id, headers, body";
        let mut back = format!(
            "CREATE TABLE events_10 (
                 event_id TEXT PRIMARY KEY, event TEXT NOT NULL, session_id TEXT NOT NULL,
                 occurred_ms INTEGER NOT NULL, received_ms INTEGER NOT NULL, delivery_id TEXT,
                 headers TEXT NOT NULL, body BLOB NOT NULL);
             INSERT INTO events_10 (rowid, {columns}) SELECT rowid, {columns} FROM events;
             DROP TABLE events;
             ALTER TABLE events_10 RENAME TO events;
             CREATE INDEX events_by_session ON events (session_id, occurred_ms);
             CREATE INDEX events_by_time ON events (occurred_ms);
             CREATE INDEX events_by_received ON events (received_ms);
             CREATE INDEX events_by_type ON events (event, occurred_ms);
             {}{}",
            event_words::TRIGGERS,
            schema::EVENTS_RECEIVED_TRIGGERS
        );
        for change in ["UPDATE", "DELETE"] {
            back.push_str(&schema::listed_trigger("events", change, ""));
        }
        back.push_str("PRAGMA user_version = 10;");
        store.conn.execute_batch(&back).expect("taken back");
        assert!(on_events(&store).contains(&("index".into(), "events_by_time".into())));
        drop(store);

        let store = Store::open(&path).expect("migrated");
        assert_eq!(rows(&store), before, "the same rows and rowids");
        assert_eq!(
            on_events(&store),
            fresh,
            "a new store's indexes and triggers"
        );
        let key: Vec<String> = store
            .conn
            .prepare(
                "SELECT i.name FROM pragma_index_list('events') l, pragma_index_info(l.name) i
                 WHERE l.\"unique\" = 1 ORDER BY i.seqno",
            )
            .expect("the key")
            .query_map([], |row| row.get(0))
            .expect("the key")
            .collect::<rusqlite::Result<_>>()
            .expect("the key");
        assert_eq!(key, ["occurred_ms", "event_id"]);
        // The triggers work on the new table: the next event is counted,
        // worded and found; a repeat is still one row.
        let hourly = |store: &Store| -> i64 {
            store
                .conn
                .query_row("SELECT sum(count) FROM events_received_hourly", [], |row| {
                    row.get(0)
                })
                .expect("the counts")
        };
        let counted = hourly(&store);
        assert!(file(&store, "evt-9", "ses_9", T0 + 9));
        assert!(!file(&store, "evt-9", "ses_9", T0 + 9));
        assert_eq!(hourly(&store), counted + 1);
        assert_eq!(found(&store, "evt-9"), Some(("ses_9".into(), T0 + 9)));
        assert_eq!(found(&store, "evt-3"), Some(("ses_3".into(), T0 + 3)));
        let newest: i64 = store
            .conn
            .query_row("SELECT max(rowid) FROM events", [], |row| row.get(0))
            .expect("the newest");
        assert_eq!(newest, before.last().expect("rows").0 + 1);
    }
}
