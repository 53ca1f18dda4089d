//! The writer's background checkpoints: a thread with its own connection
//! copies committed pages from the write-ahead log into the store file
//! after each commit, so the writer's thread files the next batch instead
//! of waiting for that copy and its flush. A passive checkpoint never
//! blocks the writer or a reader. On a large store most of a commit's
//! pages are leaves at random places in the file, and copying them back
//! cost the writer as much as filing the batch.
//!
//! The writer keeps SQLite's own automatic checkpoint, at
//! [`WAL_BOUND_PAGES`] instead of 1,000, so the log stays bounded when this
//! thread falls behind or stops.

use std::path::Path;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

/// Pages in the write-ahead log past which the writer checkpoints itself
/// (32 MiB of 4 KiB pages).
pub(super) const WAL_BOUND_PAGES: u32 = 8_192;

/// A running checkpoint thread. Dropping it stops the thread after the
/// checkpoint in progress.
pub(super) struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the store at `path` (already open and
    /// migrated), or says why it could not: the writer then checkpoints
    /// as SQLite does by default.
    pub(super) fn start(path: &Path) -> Result<Checkpointer, String> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|error| error.to_string())?;
        // One pending nudge is enough: a checkpoint copies every commit
        // made before it starts.
        let (nudge, nudges) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("earshot-checkpoint".into())
            .spawn(move || run(&conn, &nudges))
            .map_err(|error| error.to_string())?;
        Ok(Checkpointer {
            nudge: Some(nudge),
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint after a commit (never waits).
    pub(super) fn nudge(&self) {
        if let Some(nudge) = &self.nudge
            && let Err(TrySendError::Disconnected(())) = nudge.try_send(())
        {
            tracing::debug!("the checkpoint thread has stopped");
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.nudge.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(conn: &Connection, nudges: &mpsc::Receiver<()>) {
    let mut failing = false;
    while nudges.recv().is_ok() {
        let checkpoint = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        match checkpoint {
            Ok(()) => failing = false,
            // Said once per run of failures; the writer's own checkpoint
            // still bounds the log.
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(%error, "a background checkpoint of the store failed");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn file_len(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    #[test]
    fn a_nudge_copies_the_commits_before_it_into_the_store_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let store = Store::open(&path).unwrap();
        store
            .conn
            .pragma_update(None, "wal_autocheckpoint", 0)
            .unwrap();
        store
            .conn
            .execute_batch("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(400000));")
            .unwrap();
        // Committed, but only in the log so far.
        let before = file_len(&path);
        assert!(before < 400_000, "the store file is {before} bytes");
        let checkpointer = Checkpointer::start(&path).unwrap();
        checkpointer.nudge();
        drop(checkpointer);
        let after = file_len(&path);
        assert!(after >= before + 400_000, "{before} -> {after} bytes");
    }

    #[test]
    fn a_store_that_cannot_be_opened_is_said_not_panicked() {
        let dir = tempfile::tempdir().unwrap();
        let error = Checkpointer::start(&dir.path().join("missing.db"))
            .err()
            .unwrap();
        assert!(error.contains("unable to open"), "{error}");
    }
}
