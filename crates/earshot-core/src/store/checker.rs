//! The observer's whole-file check of its store: a thread that runs
//! [`check::whole_file`] a little after `listen --store` starts (so the
//! observer answers at once, however large the store) and then daily, at
//! the lowest CPU priority, on its own read-only connection while the
//! writer keeps filing. Each outcome goes to a callback (the observer's
//! health, `/metrics`, and a line on stderr). Dropping it ends a check in
//! progress at once.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::InterruptHandle;

use super::StoreError;
use super::check::{self, Checked, Depth};

/// The first check comes this long after the start.
pub const FIRST_RUN_AFTER: Duration = Duration::from_secs(2);
/// The time between two checks.
pub const EVERY: Duration = Duration::from_secs(24 * 3600);

/// A running schedule; see the module doc.
pub struct Checker {
    wake: Option<mpsc::Sender<()>>,
    running: Arc<Mutex<Option<InterruptHandle>>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checker")
    }
}

impl Checker {
    /// Starts checking the store at `path`; `report` gets each outcome, on
    /// the checker's thread.
    pub fn start(
        path: PathBuf,
        report: impl FnMut(Result<Checked, StoreError>) + Send + 'static,
    ) -> Result<Checker, StoreError> {
        Checker::start_after(path, FIRST_RUN_AFTER, report)
    }

    /// [`Checker::start`] with the first check after `first`.
    pub fn start_after(
        path: PathBuf,
        first: Duration,
        mut report: impl FnMut(Result<Checked, StoreError>) + Send + 'static,
    ) -> Result<Checker, StoreError> {
        let (wake, sleep) = mpsc::channel::<()>();
        let running: Arc<Mutex<Option<InterruptHandle>>> = Arc::default();
        let thread = std::thread::Builder::new()
            .name("earshot-store-check".into())
            .spawn({
                let running = running.clone();
                move || {
                    lowest_priority();
                    let mut wait = first;
                    while let Err(RecvTimeoutError::Timeout) = sleep.recv_timeout(wait) {
                        wait = EVERY;
                        let outcome = check::whole_file_with(&path, Depth::Quick, |handle| {
                            *lock(&running) = Some(handle);
                        });
                        lock(&running).take();
                        // Interrupted because the observer stops: no report.
                        if matches!(sleep.try_recv(), Err(mpsc::TryRecvError::Disconnected)) {
                            return;
                        }
                        report(outcome);
                    }
                }
            })
            .map_err(StoreError::Thread)?;
        Ok(Checker {
            wake: Some(wake),
            running,
            thread: Some(thread),
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for Checker {
    fn drop(&mut self) {
        // Ends the thread's wait, and a check in progress.
        self.wake.take();
        if let Some(handle) = lock(&self.running).as_ref() {
            handle.interrupt();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The check reads the whole file: on Linux, where each thread has its own
/// nice value, this one yields the CPU to filing and answering.
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on the calling thread's id only changes its nice
    // value; a failure (not permitted) leaves it as it was.
    unsafe {
        let thread = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_sound_store_is_reported_sound_soon_after_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        drop(Store::open(&path).unwrap());
        let (tx, rx) = mpsc::channel();
        let checker = Checker::start_after(path, Duration::from_millis(10), move |outcome| {
            let _ = tx.send(outcome.map(|checked| checked.is_sound()));
        })
        .unwrap();
        let sound = rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
        assert!(sound);
        drop(checker);
    }

    #[test]
    fn dropping_it_before_the_first_check_reports_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        drop(Store::open(&path).unwrap());
        let (tx, rx) = mpsc::channel::<bool>();
        let checker = Checker::start_after(path, Duration::from_secs(3600), move |_| {
            let _ = tx.send(true);
        })
        .unwrap();
        drop(checker);
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }
}
