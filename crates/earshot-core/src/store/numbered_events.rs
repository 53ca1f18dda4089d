//! Events found by their session's number: version 13 of the schema.
//!
//! `events_by_session` was keyed by the platform's random session ids, so
//! in a store of a million events each filed event wrote a leaf of its
//! own at a random place in it (a third of the log frames filing wrote
//! beyond a new store's, `docs/performance.md`, "Where the built store's
//! log frames go"). Events filed from version 13 on carry their session's
//! number (`events.session_no`, given in order of first sight, version
//! 12) and are found along `events_by_session_no`, where live sessions'
//! events land at the end, many to a leaf. The events filed before keep
//! no number (rewriting a million rows with their bodies would make a
//! long upgrade) and are found by id along `events_by_session`, now made
//! for them alone. A statement that asks for a session's events asks both
//! ([`SESSION_EVENTS`]).

/// The migration to version 13: events filed from now on carry their
/// session's number and are found by it (`events_by_session_no`, where
/// live sessions' events land at the end, many to a leaf); the events
/// filed before keep only the id, found along `events_by_session`, now
/// made for them alone. Adding the column rewrites nothing; the index by
/// id is built again (about 10 s a million events).
pub(super) fn schema() -> String {
    "
ALTER TABLE events ADD COLUMN session_no INTEGER;
DROP INDEX events_by_session;
CREATE INDEX events_by_session ON events (session_id, occurred_ms) WHERE session_no IS NULL;
CREATE INDEX events_by_session_no ON events (session_no, occurred_ms)
    WHERE session_no IS NOT NULL;
"
    .to_owned()
}

/// `events e` of the session whose id is bound as `?1`, by number and by
/// id: a statement's `FROM` (its rows are `events` rows with their `seq`).
pub(super) const SESSION_EVENTS: &str = "(
    SELECT * FROM events
    WHERE session_no IS NOT NULL
      AND session_no = (SELECT session_no FROM sessions WHERE session_id = ?1)
    UNION ALL
    SELECT * FROM events WHERE session_no IS NULL AND session_id = ?1
) e";

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::super::retention::Table;
    use super::super::tests::event;
    use super::super::{Store, event_list, events, forget, schema, sessions};

    /// A store at `path` as version 12 left it: two events of `call_a`
    /// and one of `call_b`, filed without a number.
    fn version_12_store(path: &std::path::Path) {
        let conn = Connection::open(path).expect("the file");
        for migration in &schema::MIGRATIONS[..12] {
            conn.execute_batch(&migration()).expect("migrated to 12");
        }
        conn.execute_batch(&format!(
            "PRAGMA application_id = {};
             PRAGMA user_version = 12;
             INSERT INTO sessions (session_id, kind, source, first_seen_ms, last_event_ms)
             VALUES ('call_a', 'call', 'observer', 1000, 2000),
                    ('call_b', 'call', 'observer', 1500, 1500);
             INSERT INTO events (event_id, event, session_id, occurred_ms, received_ms,
                                 headers, body)
             VALUES ('a1', 'call.connected', 'call_a', 1000, 1000, '[]', x'7b7d'),
                    ('b1', 'call.connected', 'call_b', 1500, 1500, '[]', x'7b7d'),
                    ('a2', 'call.failed', 'call_a', 2000, 2000, '[]', x'7b7d');",
            schema::APPLICATION_ID
        ))
        .expect("the rows of version 12");
    }

    fn column(conn: &Connection, sql: &str) -> Vec<String> {
        let mut statement = conn.prepare(sql).expect("the query");
        statement
            .query_map([], |row| row.get(0))
            .expect("the rows")
            .collect::<Result<_, _>>()
            .expect("the rows")
    }

    /// Which indexes a statement's plan reads `events` along.
    fn plan(conn: &Connection, sql: &str) -> String {
        let mut statement = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("the plan");
        let details = statement
            .query_map(["call_a"], |row| row.get::<_, String>(3))
            .expect("the plan")
            .collect::<Result<Vec<_>, _>>()
            .expect("the plan");
        details.join("; ")
    }

    #[test]
    fn a_sessions_events_filed_before_and_after_version_13_are_found_together() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("earshot.db");
        version_12_store(&path);
        let mut store = Store::open(&path).expect("upgraded");
        events::insert(&store.conn, &event("a3", "call_a", "call.ended", 3_000)).expect("filed");
        assert_eq!(
            column(
                &store.conn,
                "SELECT event_id || ':' || coalesce(session_no, 'none') FROM events ORDER BY seq"
            ),
            ["a1:none", "b1:none", "a2:none", "a3:1"],
            "filed before keep no number; filed after carry their session's"
        );

        let timeline = events::for_session(&store, "call_a").expect("read");
        let timeline: Vec<_> = timeline.into_iter().map(|e| e.event_id).collect();
        assert_eq!(timeline, ["a1", "a2", "a3"], "oldest first, old and new");
        let listed = sessions::list(&store, 10).expect("listed");
        let counts: Vec<_> = listed
            .iter()
            .map(|s| (s.session_id.as_str(), s.events))
            .collect();
        assert_eq!(counts, [("call_a", 3), ("call_b", 1)]);
        let filter = event_list::Filter {
            session: Some("call_a"),
            ..event_list::Filter::default()
        };
        let pane: Vec<_> = event_list::list(&store, &filter, 10)
            .expect("listed")
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        assert_eq!(pane, ["a3", "a2", "a1"], "a session: prefix, newest first");

        // Each half along its own index, neither a scan of every event.
        let read = plan(
            &store.conn,
            &format!(
                "SELECT event_id FROM {} ORDER BY occurred_ms",
                super::SESSION_EVENTS
            ),
        );
        assert!(read.contains("events_by_session_no"), "{read}");
        assert!(read.contains("INDEX events_by_session "), "{read}");
        assert!(!read.contains("SCAN events"), "{read}");

        let gone = forget::forget(&mut store, "call_a").expect("forgotten");
        assert_eq!(gone.removed.get(Table::Events), 3);
        let left = column(&store.conn, "SELECT event_id FROM events ORDER BY seq");
        assert_eq!(left, ["b1"]);
    }
}
