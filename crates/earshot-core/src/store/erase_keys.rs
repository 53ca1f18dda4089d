//! What deleting rows leaves behind, removed: an index B-tree keeps a copy
//! of some keys in its interior pages (the dividers between its leaves),
//! and deleting the rows does not take those copies out, so a forgotten
//! call id stayed in the file's bytes. [`rebuild_session_keys`] rebuilds
//! every index whose key holds a session or call id (`REINDEX`): the new
//! index has dividers of kept ids only, and the old pages go to the free
//! list, zeroed (`PRAGMA secure_delete`, which [`super::forget`] and the
//! prune turn on). [`rewrite`] rewrites the whole file, for a prune asked
//! to erase, where stale cells outlive a rebuild.

use rusqlite::Connection;

use super::{Store, StoreError};

/// Rewrites the whole file (`VACUUM`), after a prune asked to erase: an
/// index rebuild is not enough there, since a page that SQLite rebalanced
/// while rows were deleted can keep stale copies of cells in its free
/// space, out of `secure_delete`'s reach (seen in a table's own pages
/// after pruning 3,000 calls). Takes the store's write lock for the whole
/// rewrite and needs the file's size again in free space.
pub fn rewrite(store: &Store) -> Result<(), StoreError> {
    store.conn.execute_batch("VACUUM")?;
    Ok(())
}

/// [`rebuild_session_keys`] on `store`, after an erasure.
pub fn rebuild(store: &Store) -> Result<usize, StoreError> {
    Ok(rebuild_session_keys(&store.conn)?)
}

/// The indexes whose entries hold a `session_id` column (the sessions'
/// unique index and the outcome rows' key included), each rebuilt; how
/// many.
pub fn rebuild_session_keys(conn: &Connection) -> rusqlite::Result<usize> {
    let indexes = session_key_indexes(conn)?;
    for index in &indexes {
        conn.execute_batch(&format!("REINDEX \"{}\"", index.replace('"', "\"\"")))?;
    }
    Ok(indexes.len())
}

/// Every index of the schema whose entries hold a `session_id` column: in
/// their key, or beside it (`pragma_index_xinfo`: the primary key of a
/// `WITHOUT ROWID` table holds the whole row, `event_outcomes`' the id
/// after the session's number).
fn session_key_indexes(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT DISTINCT i.name
         FROM sqlite_master AS t, pragma_index_list(t.name) AS i,
              pragma_index_xinfo(i.name) AS c
         WHERE t.type = 'table' AND c.name = 'session_id'
         ORDER BY i.name",
    )?;
    let names = statement.query_map([], |row| row.get::<_, String>(0))?;
    names.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{event, temp_store};
    use crate::store::{events, forget};

    /// The bytes of the store's file once its log is emptied into it.
    fn file_bytes(store: &mut crate::store::Store) -> Vec<u8> {
        assert!(forget::empty_wal(store, std::time::Duration::from_secs(5)).unwrap());
        std::fs::read(store.path()).unwrap()
    }

    fn held(bytes: &[u8], ids: &[String]) -> Vec<String> {
        ids.iter()
            .filter(|id| {
                bytes
                    .windows(id.len())
                    .any(|window| window == id.as_bytes())
            })
            .cloned()
            .collect()
    }

    /// 30 of 3,000 calls erased: with the session-keyed indexes rebuilt,
    /// none of their ids is left anywhere in the file; the others are.
    #[test]
    fn erased_ids_leave_no_divider_behind() {
        let (_dir, mut store) = temp_store();
        // A subscription listening: each event has an outcome row too.
        store
            .conn
            .execute(
                "INSERT INTO subscriptions (id, url, events, enabled, secret_version, seen_ms,
                     record)
                 VALUES ('sub_a', 'https://a.example.invalid/x', '[\"call.ended\"]', 1, 1, 1,
                     '{}')",
                [],
            )
            .unwrap();
        let id = |n: usize| format!("call_{n:06}_erasable");
        {
            let tx = store.conn.transaction().unwrap();
            for n in 0..3_000 {
                let observed = event(&format!("e{n}"), &id(n), "call.ended", 1_000 + n as i64);
                events::insert(&tx, &observed).unwrap();
            }
            tx.commit().unwrap();
        }
        let erased: Vec<String> = (0..3_000).step_by(100).map(id).collect();
        for session in &erased {
            forget::forget(&mut store, session).unwrap();
        }
        let bytes = file_bytes(&mut store);
        let left = held(&bytes, &erased);
        assert!(
            !left.is_empty(),
            "deleting alone leaves some ids in interior pages (what this module is for)"
        );
        let indexes = session_key_indexes(&store.conn).unwrap();
        assert!(
            indexes
                .iter()
                .any(|name| name == "sqlite_autoindex_event_outcomes_1"),
            "the outcome rows' key holds the id beside the session's number: {indexes:?}"
        );
        let rebuilt = rebuild_session_keys(&store.conn).unwrap();
        assert!(rebuilt >= 2, "events_by_session and the sessions key");
        let bytes = file_bytes(&mut store);
        assert_eq!(held(&bytes, &erased), Vec::<String>::new());
        let kept: Vec<String> = (1..3_000).step_by(100).map(id).collect();
        assert_eq!(held(&bytes, &kept), kept, "the others stay");
    }
}
