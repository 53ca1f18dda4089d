//! A store file's write mark: what a live reader compares to learn,
//! without opening the store or reading a row, whether anything was
//! written since it last read.
//!
//! A commit in WAL mode bumps the change counter in the shared-memory
//! file's header (the `-shm` file's first 48 bytes) and grows or rewrites
//! the `-wal` file; a write with no connection left open recreates them
//! and, closing, copies itself into the main file. The mark holds the
//! `-wal` and `-shm` files and, only while there is no `-shm` file, the
//! main file: so any commit changes it, and a checkpoint (which copies
//! committed pages into the main file, on the writer's own thread or not,
//! and leaves the WAL index header alone) does not.
//!
//! Many commits change nothing a list shows (the sweep notes when it
//! checked a session, re-lists the same subscriptions): after the mark
//! moved, [`list_state`] tells those apart with one row read.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use super::private::side_file;

/// The bytes of the `-shm` header a commit changes (the WAL index header:
/// its change counter, last frame, page count, checksums, salts).
const SHM_HEADER: usize = 48;

/// One file's size and last write time, if it exists.
type FileStamp = Option<(u64, SystemTime)>;

/// What a store's files looked like at one moment; equal marks mean no
/// commit came between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreMark {
    main: FileStamp,
    wal: FileStamp,
    shm_header: Option<[u8; SHM_HEADER]>,
}

impl StoreMark {
    /// The store at `path` now (a file that cannot be read counts as
    /// absent, so a store coming back changes the mark).
    pub fn of(path: &Path) -> StoreMark {
        let shm_header = shm_header(&side_file(path, "-shm"));
        StoreMark {
            main: if shm_header.is_some() {
                None
            } else {
                stamp(path)
            },
            wal: stamp(&side_file(path, "-wal")),
            shm_header,
        }
    }
}

/// What a live event list compares, read in one snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListState {
    /// How often what an event list shows (events, their outcome rows, the
    /// subscriptions' records) changed other than by events filed: counted
    /// by triggers (schema 8; schema 9 leaves out a filed event and the
    /// rows it starts with, which are new rows, not changes).
    pub version: i64,
    /// The newest event's sequence (`events.rowid`; 0 when none): events
    /// filed since a read are those after it.
    pub newest_seq: i64,
}

/// The store's [`ListState`]: equal states mean an equal list; an equal
/// version with a newer sequence means only events were filed, and a list
/// is brought up to date by reading those (`Filter::after_seq`).
pub fn list_state(store: &super::Store) -> rusqlite::Result<ListState> {
    store
        .conn
        .prepare_cached(
            "SELECT (SELECT n FROM list_changes), (SELECT coalesce(max(rowid), 0) FROM events)",
        )?
        .query_row([], |row| {
            Ok(ListState {
                version: row.get(0)?,
                newest_seq: row.get(1)?,
            })
        })
}

fn stamp(path: &Path) -> FileStamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn shm_header(path: &Path) -> Option<[u8; SHM_HEADER]> {
    let mut header = [0; SHM_HEADER];
    File::open(path).ok()?.read_exact(&mut header).ok()?;
    Some(header)
}

#[cfg(test)]
mod tests {
    use super::StoreMark;
    use crate::store::Store;

    #[test]
    fn a_commit_changes_the_mark_and_a_read_does_not() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("events.db");
        let store = Store::open(&path)?;
        store.conn.execute_batch("CREATE TABLE t (x INTEGER)")?;
        let before = StoreMark::of(&path);
        let _: i64 = store
            .conn
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))?;
        assert_eq!(StoreMark::of(&path), before, "a read is no write");
        store.conn.execute("INSERT INTO t VALUES (1)", [])?;
        let after_insert = StoreMark::of(&path);
        assert_ne!(after_insert, before, "an insert changes the mark");
        store.conn.execute("UPDATE t SET x = 2", [])?;
        assert_ne!(
            StoreMark::of(&path),
            after_insert,
            "an update changes it too"
        );
        Ok(())
    }

    #[test]
    fn a_checkpoint_leaves_the_mark_and_a_commit_whose_connection_closed_moves_it()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("events.db");
        let store = Store::open(&path)?;
        store.conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        store
            .conn
            .execute_batch("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(100000));")?;
        let committed = StoreMark::of(&path);
        let main_before = std::fs::metadata(&path)?.len();
        let other = rusqlite::Connection::open(&path)?;
        other.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        assert!(
            std::fs::metadata(&path)?.len() > main_before,
            "the checkpoint wrote"
        );
        assert_eq!(StoreMark::of(&path), committed, "a checkpoint is no commit");
        // With no connection left, a commit and its close leave no `-wal`
        // or `-shm` file behind: the main file says it.
        drop(other);
        drop(store);
        let closed = StoreMark::of(&path);
        let writer = rusqlite::Connection::open(&path)?;
        writer.execute("INSERT INTO t VALUES (zeroblob(5000))", [])?;
        drop(writer);
        assert_ne!(
            StoreMark::of(&path),
            closed,
            "a commit since, its connection closed"
        );
        Ok(())
    }

    #[test]
    fn the_list_version_moves_with_what_a_list_shows_only() -> Result<(), Box<dyn std::error::Error>>
    {
        let version = |store: &Store| super::list_state(store).map(|state| state.version);
        let newest = |store: &Store| super::list_state(store).map(|state| state.newest_seq);
        use crate::store::{deliveries, events};
        let dir = tempfile::tempdir()?;
        let mut store = Store::open(&dir.path().join("events.db"))?;
        let subscription: crate::api::types::agents::Subscription =
            serde_json::from_value(serde_json::json!({
                "id": "sub_a", "url": "https://a.example.invalid/x",
                "events": ["call.ended"], "enabled": true, "secret_version": 1,
            }))?;
        deliveries::replace_subscriptions(&mut store, std::slice::from_ref(&subscription), 1)?;
        let start = version(&store)?;
        // The sweep's bookkeeping: the same listing again, a session checked.
        deliveries::replace_subscriptions(&mut store, std::slice::from_ref(&subscription), 2)?;
        assert_eq!(version(&store)?, start, "an unchanged listing");
        events::insert(
            &store.conn,
            &events::ObservedEvent {
                event_id: "evt_1".into(),
                event: "call.ended".into(),
                session_id: "call_1".into(),
                kind: "call",
                occurred_ms: 10,
                received_ms: 11,
                delivery_id: None,
                headers: vec![],
                body: b"{}".to_vec(),
            },
        )?;
        let after_event = version(&store)?;
        assert_eq!(
            after_event, start,
            "an event filed with its new rows is no change"
        );
        assert!(newest(&store)? > 0, "but a newer sequence");
        store.conn.execute(
            "UPDATE event_outcomes SET state = 'delivered', attempts = 1",
            [],
        )?;
        let after_event = version(&store)?;
        assert!(after_event > start, "its rows swept");
        store
            .conn
            .execute("UPDATE sessions SET last_swept_ms = 99", [])?;
        assert_eq!(version(&store)?, after_event, "a session checked");
        let mut paused = subscription.clone();
        paused.enabled = false;
        deliveries::replace_subscriptions(&mut store, &[paused], 3)?;
        assert!(version(&store)? > after_event, "a subscription paused");
        Ok(())
    }
}
