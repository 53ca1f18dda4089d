//! What a forwarder from the store (`listen --store --forward-to`) has
//! yet to pass on: the events filed after its cursor, in the order they
//! were filed (their sequence, the row id), and the cursor itself, kept
//! per app in `relay_cursors` so that a restart resumes after the last
//! event the app took.
//!
//! A forwarder that starts with no cursor starts at the newest event: it
//! passes on what arrives from then on, not the store's history (`earshot
//! events resend` sends that). A cursor past the newest event (the store
//! was emptied by a prune, and row ids start again) is brought back to it.

use rusqlite::{OptionalExtension, params};

use super::Store;

/// Schema version 10: the cursors.
pub(super) fn schema() -> String {
    "CREATE TABLE relay_cursors (
         app        TEXT PRIMARY KEY,
         after_seq  INTEGER NOT NULL,
         at_ms      INTEGER NOT NULL
     );"
    .to_owned()
}

/// A filed event waiting to be passed on (from either backend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Its sequence on SQLite (the row id); PostgreSQL has none.
    pub seq: Option<i64>,
    /// Its filing transaction on PostgreSQL
    /// ([`super::postgres::relay`]); SQLite has none.
    pub filed_xid: Option<i64>,
    pub event_id: String,
    pub occurred_ms: i64,
    pub event: String,
    pub session_id: String,
    /// The platform's `X-SVC-Delivery-Id` of the copy that was filed.
    pub delivery_id: Option<String>,
    pub body: Vec<u8>,
}

/// Where the forwarder to `app` resumes: its cursor, or the newest event
/// when it has none or its cursor is past the newest (both kept).
pub fn resume(store: &Store, app: &str, now_ms: i64) -> rusqlite::Result<i64> {
    let newest = newest_seq(store)?;
    let kept: Option<i64> = store
        .conn
        .query_row(
            "SELECT after_seq FROM relay_cursors WHERE app = ?1",
            [app],
            |row| row.get(0),
        )
        .optional()?;
    match kept {
        Some(cursor) if cursor <= newest => Ok(cursor),
        _ => {
            store.conn.execute(
                "INSERT INTO relay_cursors (app, after_seq, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (app) DO UPDATE SET after_seq = excluded.after_seq,
                     at_ms = excluded.at_ms",
                params![app, newest, now_ms],
            )?;
            Ok(newest)
        }
    }
}

/// Keeps `seq` as the last event the forwarder to `app` is done with.
pub fn advance(store: &Store, app: &str, seq: i64, now_ms: i64) -> rusqlite::Result<()> {
    store
        .conn
        .prepare_cached("UPDATE relay_cursors SET after_seq = ?2, at_ms = ?3 WHERE app = ?1")?
        .execute(params![app, seq, now_ms])?;
    Ok(())
}

/// Up to `limit` events filed after `seq`, oldest first.
pub fn after(store: &Store, seq: i64, limit: usize) -> rusqlite::Result<Vec<Pending>> {
    let mut statement = store.conn.prepare_cached(
        "SELECT rowid, event_id, event, session_id, delivery_id, body, occurred_ms FROM events
         WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
    )?;
    let rows = statement.query_map(
        params![seq, i64::try_from(limit).unwrap_or(i64::MAX)],
        |row| {
            Ok(Pending {
                seq: Some(row.get(0)?),
                filed_xid: None,
                event_id: row.get(1)?,
                occurred_ms: row.get(6)?,
                event: row.get(2)?,
                session_id: row.get(3)?,
                delivery_id: row.get(4)?,
                body: row.get(5)?,
            })
        },
    )?;
    super::readable(rows)
}

/// How many events were filed after `seq`.
pub fn waiting(store: &Store, seq: i64) -> rusqlite::Result<i64> {
    store
        .conn
        .prepare_cached("SELECT count(*) FROM events WHERE rowid > ?1")?
        .query_row([seq], |row| row.get(0))
}

fn newest_seq(store: &Store) -> rusqlite::Result<i64> {
    Ok(super::mark::list_state(store)?.newest_seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::events::{self, ObservedEvent};

    fn file(store: &Store, id: &str) {
        let body = format!(
            r#"{{"event_id":"{id}","event":"call.ended","timestamp":"2026-11-25T01:00:00Z","call":{{"call_id":"call_1"}}}}"#
        );
        let event = ObservedEvent::from_delivery(body.as_bytes(), vec![], None, 1).unwrap();
        assert!(events::insert(&store.conn, &event).unwrap());
    }

    #[test]
    fn a_new_forwarder_starts_at_the_newest_event_and_resumes_at_its_cursor() {
        let (_dir, store) = crate::store::tests::temp_store();
        file(&store, "old");
        let start = resume(&store, "app", 1).unwrap();
        assert!(
            after(&store, start, 10).unwrap().is_empty(),
            "history is not sent"
        );
        file(&store, "new-1");
        file(&store, "new-2");
        let pending = after(&store, start, 10).unwrap();
        let ids: Vec<_> = pending.iter().map(|p| p.event_id.as_str()).collect();
        assert_eq!(ids, ["new-1", "new-2"]);
        assert_eq!(waiting(&store, start).unwrap(), 2);
        let seq = |at: usize| pending[at].seq.unwrap();
        advance(&store, "app", seq(0), 2).unwrap();
        assert_eq!(resume(&store, "app", 3).unwrap(), seq(0));
        assert_eq!(resume(&store, "another app", 3).unwrap(), seq(1));
    }

    #[test]
    fn a_cursor_past_an_emptied_store_comes_back_to_its_newest_event() {
        let (_dir, store) = crate::store::tests::temp_store();
        file(&store, "a");
        file(&store, "b");
        let newest = resume(&store, "app", 1).unwrap();
        store.conn.execute("DELETE FROM events", []).unwrap();
        assert_eq!(resume(&store, "app", 2).unwrap(), 0);
        file(&store, "c");
        let pending = after(&store, 0, 10).unwrap();
        assert_eq!(pending.len(), 1, "row ids started again below {newest}");
        assert_eq!(pending[0].event_id, "c");
    }
}
