//! The observer's filling of the free-text index of a migrated store
//! ([`event_words::fill`]): a thread with its own connection that puts the
//! events in the index in short batches, each followed by a pause twice as
//! long, while the writer keeps filing events; it ends when the index is
//! complete (said through a callback) or the observer stops.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::event_words::{self, FillProgress};
use super::{Store, StoreError};

/// Rowids put in the index in one write transaction (tens of ms).
const BATCH: i64 = 1_000;
/// How long a batch waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the thread waits after a failed batch before trying again.
const AFTER_FAILURE: Duration = Duration::from_secs(30);

/// What the filling came to: the events added, and how long it took.
pub type Filled = Result<(u64, Duration), StoreError>;

/// A running fill. Dropping it stops the thread after the batch in flight.
pub struct WordFiller {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for WordFiller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WordFiller")
    }
}

impl WordFiller {
    /// Starts filling the index of the store at `path`; `done` is told of
    /// the first failure (the batch is tried again after a pause) and of
    /// the completion.
    pub fn start(
        path: PathBuf,
        done: impl FnMut(Filled) + Send + 'static,
    ) -> Result<WordFiller, StoreError> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("earshot-words".into())
            .spawn({
                let stop = stop.clone();
                move || run(&path, &stop, done)
            })
            .map_err(StoreError::Thread)?;
        Ok(WordFiller {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for WordFiller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Sleeps `total` in short steps, and whether `stop` was set meanwhile.
fn pause(total: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + total;
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

fn run(path: &std::path::Path, stop: &AtomicBool, mut done: impl FnMut(Filled)) {
    let started = Instant::now();
    let mut added = 0;
    let mut store: Option<Store> = None;
    let mut reported_failure = false;
    while !stop.load(Ordering::Relaxed) {
        let step = match store.as_mut() {
            Some(open) => Ok(open),
            None => Store::open(path)
                .and_then(|mut open| {
                    open.set_busy_timeout(BUSY_TIMEOUT)?;
                    Ok(open)
                })
                .map(|open| store.insert(open)),
        }
        .and_then(|open| {
            let batch_started = Instant::now();
            event_words::fill(open, BATCH).map(|step| (step, batch_started.elapsed()))
        });
        match step {
            Ok((
                FillProgress {
                    complete: true,
                    added: last,
                    ..
                },
                _,
            )) => {
                done(Ok((added + last, started.elapsed())));
                return;
            }
            Ok((progress, took)) => {
                added += progress.added;
                if pause(took * 2, stop) {
                    return;
                }
            }
            Err(error) => {
                store = None;
                if !reported_failure {
                    reported_failure = true;
                    done(Err(error));
                }
                if pause(AFTER_FAILURE, stop) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migrated_stores_index_is_filled_in_the_background_and_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let store = Store::open(&path).unwrap();
        for n in 0..2_500 {
            let body = format!(
                r#"{{"event_id":"evt-{n:05}","event":"call.ended","timestamp":"2026-11-25T01:00:00Z","call":{{"call_id":"call_{n}"}}}}"#
            );
            let event = super::super::events::ObservedEvent::from_delivery(
                body.as_bytes(),
                vec![],
                None,
                1,
            )
            .unwrap();
            super::super::events::insert(&store.conn, &event).unwrap();
        }
        // As a store of version 6 opened by this version: nothing indexed.
        store
            .conn
            .execute_batch(
                "DELETE FROM event_words; INSERT INTO event_words_fill VALUES (1, 2500);",
            )
            .unwrap();
        assert!(!event_words::is_complete(&store.conn).unwrap());
        let (tell, told) = std::sync::mpsc::channel();
        let filler = WordFiller::start(path.clone(), move |filled| {
            let _ = tell.send(filled.map(|(added, _)| added).map_err(|e| e.to_string()));
        })
        .unwrap();
        let added = told
            .recv_timeout(Duration::from_secs(60))
            .expect("done within a minute");
        drop(filler);
        assert_eq!(added, Ok(2_500));
        assert!(event_words::is_complete(&store.conn).unwrap());
        let indexed: i64 = store
            .conn
            .query_row("SELECT count(*) FROM event_words", [], |row| row.get(0))
            .unwrap();
        assert_eq!(indexed, 2_500);
    }
}
