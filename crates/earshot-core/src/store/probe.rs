//! Whether the store can still be written, checked cheaply: the observer's
//! writer thread runs [`probe`] every few seconds (`crate::observer`), not
//! once per request. Two things are tried, each the way SQLite needs it:
//!
//! - the write lock: `BEGIN IMMEDIATE` then `ROLLBACK` (no page is written),
//!   so a lock held elsewhere past the busy timeout fails the probe;
//! - the pages an event write goes through, read from the file (a new
//!   read-only connection, so no page comes from this process's cache):
//!   the header, the schema, and the newest row of each table a filed
//!   event lands in. A file damaged under a quiet observer fails here
//!   before the next event finds it;
//! - the directory: one page ([`PROBE_BYTES`]) written to a new file beside
//!   the store, synced, and removed. SQLite creates its `-wal`, `-shm` and
//!   `-journal` files there and needs room for pages; a read-only or
//!   immutable directory, a file system remounted read-only, a full disk or
//!   a directory removed under the store all fail here, even while writes
//!   to the already open database file still go through.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Store;

/// What the probe file holds: one SQLite page at the default page size.
pub const PROBE_BYTES: usize = 4096;

/// Why the store cannot be written, said without its path (it may be
/// shown to whoever can reach the health endpoint).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("the store's write lock cannot be taken: {0}")]
    Lock(String),
    #[error("no file can be written beside the store: {0}")]
    Directory(String),
    #[error("the store cannot be read: {0}")]
    Read(String),
}

/// Tries the write lock, the pages an event write reads, and a file
/// beside the store at `store`'s path.
pub fn probe(store: &Store) -> Result<(), ProbeError> {
    lock(store)?;
    beside(&store.path)?;
    pages(&store.path)
}

/// Reads, on a new read-only connection, the header, the schema and the
/// newest row of every table an event write lands in.
fn pages(db: &Path) -> Result<(), ProbeError> {
    let read = |error: String| ProbeError::Read(error);
    let conn = super::check::read_only(db).map_err(|error| read(error.to_string()))?;
    conn.query_row(
        "SELECT (SELECT count(*) FROM sqlite_master),
                (SELECT max(rowid) FROM events),
                (SELECT max(rowid) FROM sessions),
                (SELECT max(rowid) FROM unfiled_events)",
        [],
        |_| Ok(()),
    )
    .map_err(|error| read(error.to_string()))
}

fn lock(store: &Store) -> Result<(), ProbeError> {
    store
        .conn
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(|error| ProbeError::Lock(error.to_string()))?;
    store
        .conn
        .execute_batch("ROLLBACK")
        .map_err(|error| ProbeError::Lock(error.to_string()))
}

/// `.<file name>.probe-<pid>` in the store's directory.
fn probe_path(db: &Path) -> PathBuf {
    let name = db
        .file_name()
        .map_or_else(|| "earshot.db".into(), |name| name.to_string_lossy());
    let file = format!(".{name}.probe-{}", std::process::id());
    match db.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        Some(dir) => dir.join(file),
        None => PathBuf::from(file),
    }
}

/// Writes, syncs and removes one page in a new file beside `db`.
fn beside(db: &Path) -> Result<(), ProbeError> {
    let path = probe_path(db);
    let written = write_page(&path);
    // Removed even when the write failed half way (a full disk).
    let removed = std::fs::remove_file(&path);
    written.map_err(|error| ProbeError::Directory(error.to_string()))?;
    removed.map_err(|error| ProbeError::Directory(format!("the probe file stays: {error}")))
}

fn write_page(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, super::private::FILE_MODE);
    let mut file = options.open(path)?;
    file.write_all(&[0u8; PROBE_BYTES])?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_writable_store_passes_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("earshot.db")).unwrap();
        probe(&store).expect("writable");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains("probe"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_removed_directory_fails_though_the_open_database_still_writes() {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("store");
        let store = Store::open(&store_dir.join("earshot.db")).unwrap();
        std::fs::remove_dir_all(&store_dir).unwrap();
        // SQLite keeps writing to the unlinked files: only the probe sees it.
        store
            .conn
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
            .unwrap();
        let error = probe(&store).expect_err("no directory");
        assert!(matches!(error, ProbeError::Directory(_)), "{error}");
        assert!(!error.to_string().contains("store/"), "no path: {error}");
    }

    #[test]
    fn a_write_lock_held_elsewhere_fails_after_the_busy_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("earshot.db");
        let mut store = Store::open(&db).unwrap();
        store.set_busy_timeout(Duration::from_millis(50)).unwrap();
        let other = rusqlite::Connection::open(&db).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let error = probe(&store).expect_err("locked");
        assert!(matches!(error, ProbeError::Lock(_)), "{error}");
        other.execute_batch("ROLLBACK").unwrap();
        probe(&store).expect("free again");
    }
}
