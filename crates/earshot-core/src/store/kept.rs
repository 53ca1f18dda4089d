//! Connections a process keeps between its short pieces of work on one
//! store file ([`KeptConnections`]). The console reads its store every few
//! seconds from several panes; opening a connection for each read parsed
//! the schema and built a page cache anew about 50 times a minute, a fifth
//! of the demo's allocations (`docs/performance.md`, "Memory and idle
//! CPU"). A connection handed back is kept (a few at most) and handed out
//! again while the path still names the file it was opened on; a file
//! replaced or removed since is opened anew.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use super::{Store, StoreError};

/// Which file a path named when a connection was opened on it: a file
/// replaced at the same path has another inode (the kept connection holds
/// the old one open, so its number is not reused meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }
}

/// Idle connections, newest last, at most `most` of them.
pub struct KeptConnections {
    idle: Mutex<Vec<(FileIdentity, Store)>>,
    most: usize,
}

impl KeptConnections {
    /// Keeps at most `most` idle connections (0 keeps none).
    pub const fn new(most: usize) -> KeptConnections {
        KeptConnections {
            idle: Mutex::new(Vec::new()),
            most,
        }
    }

    /// A connection to the store at `path`: a kept one opened on the file
    /// the path names now, else a new one ([`Store::open`], which checks
    /// and migrates). Kept connections to a file the path no longer names
    /// are closed here.
    pub fn take(&self, path: &Path) -> Result<Store, StoreError> {
        let now = FileIdentity::of(path);
        let found = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain(|(identity, store)| store.path() != path || Some(*identity) == now);
            idle.iter()
                .rposition(|(_, store)| store.path() == path)
                .map(|at| idle.remove(at).1)
        };
        match found {
            Some(store) => Ok(store),
            None => Store::open(path),
        }
    }

    /// Keeps `store` for a later [`KeptConnections::take`] (the oldest
    /// idle one is closed past the limit). Hand back only a connection
    /// whose work succeeded: one that met an error is dropped instead.
    pub fn give_back(&self, store: Store) {
        let Some(identity) = FileIdentity::of(store.path()) else {
            return;
        };
        let closed = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.push((identity, store));
            let over = idle.len().saturating_sub(self.most);
            idle.drain(..over).collect::<Vec<_>>()
        };
        // Closed outside the lock: a close may checkpoint.
        drop(closed);
    }

    /// How many connections are idle now.
    pub fn idle(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks `store`'s connection: a temporary table lives on one
    /// connection only.
    fn mark(store: &Store) {
        store
            .conn
            .execute_batch("CREATE TEMP TABLE kept_mark (n INTEGER)")
            .expect("marks");
    }

    fn is_marked(store: &Store) -> bool {
        store
            .conn
            .query_row(
                "SELECT count(*) FROM temp.sqlite_master WHERE name = 'kept_mark'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .expect("reads")
            == 1
    }

    #[test]
    fn a_connection_handed_back_is_handed_out_again_for_the_same_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("earshot.db");
        let kept = KeptConnections::new(2);
        let store = kept.take(&path).expect("opens");
        mark(&store);
        kept.give_back(store);
        assert_eq!(kept.idle(), 1);
        let again = kept.take(&path).expect("takes");
        assert!(is_marked(&again), "a new connection was opened");
        assert_eq!(kept.idle(), 0);
        // Taken twice at once: the second is a connection of its own.
        let second = kept.take(&path).expect("opens");
        assert!(!is_marked(&second));
    }

    #[test]
    fn a_replaced_file_is_opened_anew_and_another_path_never_gets_its_connection() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("earshot.db");
        let other = dir.path().join("other.db");
        let kept = KeptConnections::new(4);
        let store = kept.take(&path).expect("opens");
        mark(&store);
        kept.give_back(store);
        assert!(!is_marked(&kept.take(&other).expect("opens")));
        assert_eq!(kept.idle(), 1, "the first file's connection is still kept");

        std::fs::remove_file(&path).expect("removed");
        let _ = std::fs::remove_file(dir.path().join("earshot.db-wal"));
        let _ = std::fs::remove_file(dir.path().join("earshot.db-shm"));
        let fresh = kept.take(&path).expect("opens the new file");
        assert!(
            !is_marked(&fresh),
            "the removed file's connection came back"
        );
        assert_eq!(kept.idle(), 0, "the stale connection was closed");
    }

    #[test]
    fn at_most_the_limit_is_kept_the_oldest_closed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("earshot.db");
        let kept = KeptConnections::new(2);
        let stores: Vec<Store> = (0..3).map(|_| kept.take(&path).expect("opens")).collect();
        for store in stores {
            kept.give_back(store);
        }
        assert_eq!(kept.idle(), 2);
        let none = KeptConnections::new(0);
        none.give_back(kept.take(&path).expect("takes"));
        assert_eq!(none.idle(), 0);
    }
}
