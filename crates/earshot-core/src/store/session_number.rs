//! Sessions numbered in order of first sight: version 12 of the schema.
//!
//! The platform's session ids are random (`call_<32 hex>`), so a tree
//! keyed by them takes each new session on a random leaf: in a store of a
//! million events nearly every filed event dirtied a leaf of its own in
//! the outcome rows, written to the log and copied into the file again
//! (`docs/performance.md`, "Sessions numbered in order"). Each session
//! now has a number (`sessions.session_no`, its rowid, given in order of
//! first sight and never renumbered by a `VACUUM`), and the outcome rows
//! are keyed by it first: live sessions are the newest numbers, so their
//! rows land at the end of the tree, many to a leaf. The id stays a
//! column of both tables, unique in `sessions`.
//!
//! A statement that asks for a session's outcome rows by its id finds
//! the number first (`session_no = (SELECT session_no FROM sessions WHERE
//! session_id = ?)`), so every outcome row's session has a row in
//! `sessions`: filing and the sweep add it before the outcome rows, and
//! the retention prune removes a session only once none of its rows is
//! left.

use rusqlite::{Connection, OptionalExtension, params};

/// The number of session `session_id`, which is added (as the sweep adds
/// an id it meets first, at `now_ms`) if the store does not know it yet.
pub(super) fn number(conn: &Connection, session_id: &str, now_ms: i64) -> rusqlite::Result<i64> {
    let known = conn
        .prepare_cached("SELECT session_no FROM sessions WHERE session_id = ?1")?
        .query_row([session_id], |row| row.get(0))
        .optional()?;
    match known {
        Some(number) => Ok(number),
        None => conn
            .prepare_cached(
                "INSERT INTO sessions (session_id, source, first_seen_ms) VALUES (?1, 'added', ?2)
                 RETURNING session_no",
            )?
            .query_row(params![session_id, now_ms], |row| row.get(0)),
    }
}

/// The migration to version 12: `sessions` rewritten with its number
/// (its rowid until now, so the same order), a row added for any session
/// that only outcome rows name, and `event_outcomes` rewritten keyed by
/// the number, its indexes and triggers (dropped with the old table)
/// made again.
pub(super) fn schema() -> String {
    let session_columns =
        "session_id, kind, source, first_seen_ms, last_event_ms, last_swept_ms, unsettled";
    let outcome_columns = "session_id, subscription_id, event_key, event_id, event, occurred_ms, \
        state, attempts, http_status_code, error_class, first_failure_ms, last_failure_ms, \
        settled_ms";
    let outcome_columns_of_o = outcome_columns
        .split(", ")
        .map(|column| format!("o.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let outcomes_12 = super::schema::outcome_table("event_outcomes_12", "session_no");
    let details = super::schema::SESSION_DETAILS;
    let mut sql = format!(
        "
CREATE TABLE sessions_12 (
    session_no     INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL UNIQUE,
    {details}
);
INSERT INTO sessions_12 (session_no, {session_columns})
    SELECT rowid, {session_columns} FROM sessions WHERE session_id IS NOT NULL ORDER BY rowid;
INSERT OR IGNORE INTO sessions_12 (session_id, source, first_seen_ms, unsettled)
    SELECT session_id, 'added', min(occurred_ms), 0 FROM event_outcomes
    WHERE session_id NOT IN (SELECT session_id FROM sessions_12)
    GROUP BY session_id ORDER BY min(occurred_ms);
DROP TABLE sessions;
ALTER TABLE sessions_12 RENAME TO sessions;
CREATE INDEX sessions_by_activity ON sessions (coalesce(last_event_ms, first_seen_ms));

{outcomes_12}
INSERT INTO event_outcomes_12 (session_no, {outcome_columns})
    SELECT s.session_no, {outcome_columns_of_o}
    FROM event_outcomes o JOIN sessions s ON s.session_id = o.session_id
    ORDER BY s.session_no, o.subscription_id, o.event_key;
DROP TABLE event_outcomes;
ALTER TABLE event_outcomes_12 RENAME TO event_outcomes;
"
    );
    sql.push_str(&super::schema::outcome_indexes_and_triggers());
    sql
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::super::tests::event;
    use super::super::{Store, events, schema};

    /// A store at `path` as version 11 left it: three outcome rows of two
    /// sessions (`call_b` seen first), and one of a session only its
    /// outcome row names (`call_z`, an attempt the observer never saw).
    fn version_11_store(path: &std::path::Path) {
        let conn = Connection::open(path).expect("the file");
        for migration in &schema::MIGRATIONS[..11] {
            conn.execute_batch(&migration()).expect("migrated to 11");
        }
        conn.execute_batch(&format!(
            "PRAGMA application_id = {};
             PRAGMA user_version = 11;
             INSERT INTO subscriptions (id, url, events, enabled, secret_version, seen_ms, record)
             VALUES ('sub_1', 'https://a.example.invalid/x', '[\"call.ended\"]', 1, 1, 1, '{{}}');
             INSERT INTO sessions (session_id, kind, source, first_seen_ms, last_event_ms)
             VALUES ('call_b', 'call', 'observer', 1000, 1000),
                    ('call_a', 'call', 'observer', 2000, 2000);
             INSERT INTO event_outcomes (session_id, subscription_id, event_key, event_id, event,
                 occurred_ms, state, attempts, http_status_code, error_class, last_failure_ms)
             VALUES ('call_a', 'sub_1', 'e1', 'e1', 'call.ended', 2000, 'delivered', 1, 0, '',
                     NULL),
                    ('call_b', 'sub_1', 'e2', 'e2', 'call.ended', 1000, 'missed', 3, 500, '',
                     1500),
                    ('call_b', 'sub_2', 'e2', 'e2', 'call.ended', 1000, 'unknown', 0, 0, '', NULL),
                    ('call_z', 'sub_1', 'dlv_9', NULL, NULL, 500, 'missed', 2, 503, '', 900);",
            schema::APPLICATION_ID
        ))
        .expect("the rows of version 11");
    }

    fn rows(conn: &Connection, sql: &str) -> Vec<String> {
        let mut statement = conn.prepare(sql).expect("the query");
        let columns = statement.column_count();
        statement
            .query_map([], |row| {
                (0..columns)
                    .map(|index| row.get::<_, rusqlite::types::Value>(index))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|values| format!("{values:?}"))
            })
            .expect("the rows")
            .collect::<Result<_, _>>()
            .expect("the rows")
    }

    const OUTCOMES: &str = "SELECT session_id, subscription_id, event_key, event_id, event,
        occurred_ms, state, attempts, http_status_code, error_class, last_failure_ms
        FROM event_outcomes ORDER BY session_id, subscription_id, event_key";
    const COUNTS: &str = "SELECT * FROM event_counts ORDER BY 1, 2, 3, 4, 5, 6";

    #[test]
    fn version_12_numbers_sessions_in_order_of_first_sight_and_keeps_every_outcome_row() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("earshot.db");
        version_11_store(&path);
        let (outcomes, counts) = {
            let conn = Connection::open(&path).expect("the file");
            (rows(&conn, OUTCOMES), rows(&conn, COUNTS))
        };
        assert_eq!(outcomes.len(), 4);
        assert!(!counts.is_empty(), "the rows are counted");

        let store = Store::open(&path).expect("upgraded");
        assert_eq!(rows(&store.conn, OUTCOMES), outcomes, "every row kept");
        assert_eq!(rows(&store.conn, COUNTS), counts, "counted once, as before");
        assert_eq!(
            rows(
                &store.conn,
                "SELECT session_no, session_id, source FROM sessions ORDER BY session_no"
            ),
            [
                "[Integer(1), Text(\"call_b\"), Text(\"observer\")]",
                "[Integer(2), Text(\"call_a\"), Text(\"observer\")]",
                "[Integer(3), Text(\"call_z\"), Text(\"added\")]",
            ],
            "numbered as first seen; a session only outcome rows named is added"
        );
        let unmatched = rows(
            &store.conn,
            "SELECT o.session_id FROM event_outcomes o
             LEFT JOIN sessions s ON s.session_no = o.session_no
             WHERE s.session_id IS NOT o.session_id",
        );
        assert!(
            unmatched.is_empty(),
            "each row under its session's number: {unmatched:?}"
        );

        // A new session filed after the upgrade takes the next number, and
        // its row is found by the session's id.
        events::insert(&store.conn, &event("e3", "call_c", "call.ended", 3_000)).expect("filed");
        assert_eq!(
            rows(
                &store.conn,
                "SELECT session_no, event_key FROM event_outcomes WHERE session_id = 'call_c'"
            ),
            ["[Integer(4), Text(\"e3\")]"]
        );
        let found = super::super::outcomes::of_event(&store, "call_c", "e3").expect("read");
        assert_eq!(found.len(), 1, "{found:?}");
    }
}
