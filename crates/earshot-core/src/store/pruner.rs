//! The observer's retention schedule: a thread with its own connection to
//! the store that runs [`retention::prune`] shortly after `listen --store`
//! starts and then every hour (every period, when the period is shorter),
//! while the writer keeps filing events. Each run's outcome goes to a
//! callback (the command line says it on stderr); a failed run is tried
//! again at the next turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::retention::{self, Period, PruneReport};
use super::{Store, StoreError};

/// The first run comes this long after the start.
pub const FIRST_RUN_AFTER: Duration = Duration::from_secs(2);
/// The longest time between two runs.
pub const AT_LEAST_EVERY: Duration = Duration::from_secs(3600);
/// The shortest time between two runs.
const AT_MOST_EVERY: Duration = Duration::from_secs(60);
/// How long the pruner's batches wait for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The time between two runs for `period`: an hour, or the period when
/// it is shorter (never under a minute).
pub fn interval(period: Period) -> Duration {
    period.as_duration().clamp(AT_MOST_EVERY, AT_LEAST_EVERY)
}

/// A running schedule. Dropping it stops the thread after the batch in
/// flight and waits for it.
pub struct Pruner {
    stop: Arc<AtomicBool>,
    wake: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Pruner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pruner")
    }
}

impl Pruner {
    /// Starts pruning the store at `path` to `period`, every
    /// [`interval`] of it; `report` gets each run's outcome, on the
    /// pruner's thread.
    pub fn start(
        path: PathBuf,
        period: Period,
        report: impl FnMut(Result<PruneReport, StoreError>) + Send + 'static,
    ) -> Result<Pruner, StoreError> {
        Pruner::start_every(path, period, interval(period), report)
    }

    /// [`Pruner::start`] with runs `every` apart instead.
    pub fn start_every(
        path: PathBuf,
        period: Period,
        every: Duration,
        report: impl FnMut(Result<PruneReport, StoreError>) + Send + 'static,
    ) -> Result<Pruner, StoreError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, sleep) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("earshot-retention".into())
            .spawn({
                let stop = stop.clone();
                move || run(&path, period, every, &stop, &sleep, report)
            })
            .map_err(StoreError::Thread)?;
        Ok(Pruner {
            stop,
            wake: Some(wake),
            thread: Some(thread),
        })
    }
}

impl Drop for Pruner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Ends the thread's wait at once.
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    path: &std::path::Path,
    period: Period,
    every: Duration,
    stop: &AtomicBool,
    sleep: &mpsc::Receiver<()>,
    mut report: impl FnMut(Result<PruneReport, StoreError>),
) {
    let mut wait = FIRST_RUN_AFTER;
    let mut store: Option<Store> = None;
    loop {
        match sleep.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        wait = every;
        let opened = match store.take() {
            Some(open) => Ok(open),
            None => Store::open(path).and_then(|mut open| {
                open.set_busy_timeout(BUSY_TIMEOUT)?;
                Ok(open)
            }),
        };
        let mut open = match opened {
            Ok(open) => open,
            Err(error) => {
                report(Err(error));
                continue;
            }
        };
        let outcome = retention::prune(&mut open, period, super::now_ms(), stop, &mut |_| {});
        if outcome.is_ok() {
            store = Some(open);
        }
        report(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_come_hourly_or_every_period_when_shorter_but_not_under_a_minute() {
        let every = |text: &str| interval(Period::parse(text).unwrap());
        assert_eq!(every("30d"), Duration::from_secs(3600));
        assert_eq!(every("90m"), Duration::from_secs(3600));
        assert_eq!(every("20m"), Duration::from_secs(1200));
        assert_eq!(every("1m"), Duration::from_secs(60));
    }

    #[test]
    fn a_pruner_started_with_its_own_interval_runs_that_often() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        drop(Store::open(&path).unwrap());
        let (runs, ran) = mpsc::channel();
        let _pruner =
            Pruner::start_every(path, Period::HOUR, Duration::from_millis(50), move |run| {
                let _ = runs.send(run.is_ok());
            })
            .unwrap();
        // The hourly interval of an hour's period would give one run here.
        for _ in 0..3 {
            assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok(true));
        }
    }
}
