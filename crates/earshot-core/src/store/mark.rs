//! A store file's write mark: what a live reader compares to learn,
//! without opening the store or reading a row, whether anything was
//! written since it last read.
//!
//! A commit in WAL mode bumps the change counter in the shared-memory
//! file's header (the `-shm` file's first 48 bytes) and grows or rewrites
//! the `-wal` file; a write with no connection left open recreates them;
//! a checkpoint rewrites the main file. The mark holds all three, so any
//! commit changes it.

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
        StoreMark {
            main: stamp(path),
            wal: stamp(&side_file(path, "-wal")),
            shm_header: shm_header(&side_file(path, "-shm")),
        }
    }
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
}
