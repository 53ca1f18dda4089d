//! The writer's background checkpoints: a thread with its own connection
//! copies committed pages from the write-ahead log into the store file
//! after each commit, so the writer's thread files the next batch instead
//! of waiting for that copy and its flush. A passive checkpoint never
//! blocks the writer or a reader. On a large store most of a commit's
//! pages are leaves at random places in the file, and copying them back
//! cost the writer as much as filing the batch.
//!
//! The log starts again from its beginning only when a write begins with
//! every earlier commit copied. Under a flood the writer commits while
//! each pass runs, so that moment seldom comes: filing a million events
//! into a store of a million grew the log to 749 MB, and the file kept
//! that length until the observer stopped. So once a pass finds the log
//! past [`WAL_HELD_PAGES`], the writer waits, before its next batch, for
//! a pass that copies everything ([`Checkpointer::after_commit`]); its
//! next write starts the log again, and SQLite cuts the file back to that
//! length (`journal_size_limit`). The wait is rare enough to cost no rate
//! that the runs could tell (`docs/performance.md`, "The log held under a
//! flood"). SQLite's own automatic checkpoint, at [`WAL_BOUND_PAGES`]
//! instead of 1,000 pages, keeps the log short when this thread stops.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// Pages in the write-ahead log past which the writer checkpoints itself
/// (32 MiB of 4 KiB pages).
pub(super) const WAL_BOUND_PAGES: u32 = 8_192;

/// Pages in the write-ahead log past which the writer waits for a whole
/// pass, and the length its file is cut back to (256 MiB of 4 KiB pages).
pub(super) const WAL_HELD_PAGES: u32 = 65_536;

/// The longest the writer waits for a pass to copy the whole log.
const CATCH_UP_WAIT: Duration = Duration::from_secs(5);

/// A running checkpoint thread. Dropping it stops the thread after the
/// checkpoint in progress.
pub(super) struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the writer and the thread both see.
#[derive(Default)]
struct Shared {
    /// Set by a pass that found the log past its bound.
    behind: AtomicBool,
    /// A writer waiting for the next pass to begin and end.
    waiting: Mutex<Option<SyncSender<()>>>,
}

impl Checkpointer {
    /// Starts checkpointing the store at `path` (already open and
    /// migrated), or says why it could not: the writer then checkpoints
    /// as SQLite does by default.
    pub(super) fn start(path: &Path) -> Result<Checkpointer, String> {
        Checkpointer::start_bounded(path, WAL_HELD_PAGES)
    }

    /// [`Checkpointer::start`] with the log's bound in pages.
    fn start_bounded(path: &Path, bound_pages: u32) -> Result<Checkpointer, String> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|error| error.to_string())?;
        // One pending nudge is enough: a checkpoint copies every commit
        // made before it starts.
        let (nudge, nudges) = mpsc::sync_channel(1);
        let shared = Arc::new(Shared::default());
        let seen = shared.clone();
        let thread = std::thread::Builder::new()
            .name("earshot-checkpoint".into())
            .spawn(move || run(&conn, &nudges, &seen, bound_pages))
            .map_err(|error| error.to_string())?;
        Ok(Checkpointer {
            nudge: Some(nudge),
            shared,
            thread: Some(thread),
        })
    }

    /// After a commit: a checkpoint, asked for without waiting, or, once
    /// the log is past its bound, waited for until it has copied every
    /// commit so far (at most [`CATCH_UP_WAIT`]).
    pub(super) fn after_commit(&self) {
        let Some(nudge) = &self.nudge else { return };
        let copied = self.shared.behind.swap(false, Ordering::Relaxed).then(|| {
            let (done, copied) = mpsc::sync_channel(1);
            *lock(&self.shared.waiting) = Some(done);
            copied
        });
        // Taken, or one is pending already: either way a pass begins
        // after this commit.
        if let Err(TrySendError::Disconnected(())) = nudge.try_send(()) {
            tracing::debug!("the checkpoint thread has stopped");
            return;
        }
        if let Some(copied) = copied {
            let _ = copied.recv_timeout(CATCH_UP_WAIT);
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn run(conn: &Connection, nudges: &mpsc::Receiver<()>, shared: &Shared, bound_pages: u32) {
    let mut failing = false;
    while nudges.recv().is_ok() {
        // Asked for before this pass begins, so it copies every commit
        // the writer waiting made.
        let waiting = lock(&shared.waiting).take();
        // Its second column: the pages in the log.
        let checkpoint = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            row.get::<_, i64>(1)
        });
        let pages = checkpoint.as_ref().map_or(0, |pages| *pages);
        match waiting {
            // Everything is copied: the writer's next write starts the
            // log again, whatever its length now.
            Some(done) => {
                shared.behind.store(false, Ordering::Relaxed);
                let _ = done.try_send(());
            }
            None => shared
                .behind
                .store(pages > i64::from(bound_pages), Ordering::Relaxed),
        }
        match checkpoint {
            Ok(_) => failing = false,
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
        checkpointer.after_commit();
        drop(checkpointer);
        let after = file_len(&path);
        assert!(after >= before + 400_000, "{before} -> {after} bytes");
    }

    /// Commits `pages` pages of new rows on `conn`.
    fn commit_pages(conn: &Connection, pages: usize) {
        conn.execute(
            "INSERT INTO t VALUES (randomblob(?1))",
            [i64::try_from(pages * 4096).unwrap()],
        )
        .unwrap();
    }

    #[test]
    fn once_a_pass_finds_the_log_past_its_bound_the_next_write_starts_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let store = Store::open(&path).unwrap();
        let conn = &store.conn;
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        // As the writer sets it: the log's file is cut back to its bound
        // when the log starts again.
        conn.pragma_update(None, "journal_size_limit", 64 * 4096)
            .unwrap();
        conn.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let log = || file_len(&dir.path().join("earshot.db-wal"));
        let checkpointer = Checkpointer::start_bounded(&path, 64).unwrap();
        commit_pages(conn, 200);
        // A reader on that snapshot keeps the next write from starting the
        // log again, as the writer's commits during a pass do in a flood.
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap();
        checkpointer.after_commit();
        let found = std::time::Instant::now();
        while !checkpointer.shared.behind.load(Ordering::Relaxed) {
            assert!(
                found.elapsed() < Duration::from_secs(10),
                "no pass found the log long"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        commit_pages(conn, 200);
        reader.execute_batch("COMMIT").unwrap();
        let grown = log();
        assert!(grown > 400 * 4096, "the log is {grown} bytes");
        // Past its bound: this waits for a pass that copies both commits.
        checkpointer.after_commit();
        commit_pages(conn, 1);
        let started_again = log();
        assert!(
            started_again <= 64 * 4096,
            "the log is still {started_again} bytes"
        );
        drop(checkpointer);
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
