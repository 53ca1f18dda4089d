//! The sweep in the background (`earshot listen --store --sweep`): every
//! interval, one [`sweep`] within its request budget on a connection of its
//! own, so the store knows what each subscription's events became with no
//! console open. Then the per-subscription gauges are read again from the
//! store.
//!
//! It never stops the receiver: a failed sweep (the platform down, the key
//! refused, the store busy) is counted, said (the same failure again only
//! every [`REPEAT_SAID_EVERY`] times, and once more when sweeping works
//! again), and tried again at the next interval. It shares
//! the store with the receiver's writer: each session's records are stored
//! in a transaction of their own (`store::deliveries::record_sweep`), so an
//! event write waits at most for one session's, never for the whole sweep.
//! It runs on a thread of its own ([`Sweeper::spawn`]): its store calls
//! block while they wait for the write lock, and they must not hold up a
//! worker of the runtime that answers the webhooks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::metrics::Metrics;
use crate::api::Client;
use crate::history::sweep::{SweepReport, sweep};
use crate::store::{self, AsyncStore, StoreError, totals};

/// How often, and within how many requests, the background sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepPlan {
    pub every: Duration,
    pub budget: usize,
}

impl SweepPlan {
    /// Once a minute, at most [`crate::history::sweep::DEFAULT_BUDGET`]
    /// requests each time (what `earshot health` spends).
    pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);
}

/// A failure repeated in a row is said again only this often.
pub const REPEAT_SAID_EVERY: u32 = 10;

/// Where the sweeper says what happened (a line for stderr).
pub type Say = Box<dyn Fn(&str) + Send + Sync>;

/// The background sweeper's parts.
pub struct Sweeper {
    pub client: Client,
    pub db: PathBuf,
    pub plan: SweepPlan,
    pub metrics: Option<Arc<Metrics>>,
    pub say: Say,
}

/// A sweeper running on its thread; [`stop`](SweeperThread::stop) it.
#[derive(Debug)]
pub struct SweeperThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl SweeperThread {
    /// Stops the sweeper at its next await (a store call under way ends
    /// first); the thread is not waited for.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Sweeper {
    /// Runs [`run`](Self::run) on a thread of its own, with a runtime of
    /// its own, until stopped.
    pub fn spawn(self) -> std::io::Result<SweeperThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("earshot-sweep".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        () = self.run() => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(SweeperThread { stop: Some(stop) })
    }

    /// Sweeps at once, then every `plan.every`, until the task is dropped.
    pub async fn run(self) {
        let mut ticks = tokio::time::interval(self.plan.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut store: Option<AsyncStore> = None;
        let mut failures = Failures::default();
        loop {
            ticks.tick().await;
            let result = self.once(&mut store).await;
            let now = store::now_ms();
            let next = format!("next try in {}", crate::duration_text::of(self.plan.every));
            match result {
                Ok(report) => {
                    let stopped = report.stopped.clone();
                    self.count(Some(&report), stopped.is_some(), now);
                    match stopped {
                        Some(why) => {
                            if let Some(times) = failures.failed(&why) {
                                (self.say)(&format!(
                                    "the sweep stopped early{times} ({why}); what it fetched is \
                                     kept, {next}"
                                ));
                            }
                        }
                        None if failures.recovered() => {
                            (self.say)(&format!(
                                "the sweep works again ({} sessions swept, {} requests)",
                                report.sessions_swept, report.requests
                            ));
                        }
                        None => {}
                    }
                }
                Err(error) => {
                    self.count(None, true, now);
                    if let Some(times) = failures.failed(&error) {
                        (self.say)(&format!(
                            "the sweep failed{times} ({error}); receiving goes on, {next}"
                        ));
                    }
                }
            }
            if let Some(store) = &store {
                self.refresh(store).await;
            }
        }
    }

    /// One sweep, opening the store first if needed (a connection that
    /// failed is opened again next time).
    async fn once(&self, slot: &mut Option<AsyncStore>) -> Result<SweepReport, String> {
        if slot.is_none() {
            let opened = AsyncStore::open(self.db.clone()).await;
            *slot = Some(opened.map_err(|error| error.to_string())?);
        }
        let Some(store) = slot.as_ref() else {
            return Err("the store is not open".to_owned());
        };
        match sweep(&self.client, store, self.plan.budget).await {
            Ok(report) => Ok(report),
            Err(error) => {
                if matches!(error, crate::history::HistoryError::Store(_)) {
                    *slot = None;
                }
                Err(error.to_string())
            }
        }
    }

    fn count(&self, report: Option<&SweepReport>, failed: bool, now_ms: i64) {
        if let Some(metrics) = &self.metrics {
            metrics.swept(report, failed, now_ms);
        }
    }

    /// Reads the per-subscription figures again into the gauges.
    async fn refresh(&self, store: &AsyncStore) {
        let Some(metrics) = &self.metrics else { return };
        let read = store
            .run(|store| totals::subscription_totals(store).map_err(StoreError::from))
            .await;
        match read {
            Ok(totals) => metrics.set_subscriptions(totals),
            Err(error) => (self.say)(&format!(
                "the subscription gauges were not refreshed ({error})"
            )),
        }
        let now = crate::store::now_ms();
        let coverage = store
            .run(move |store| crate::history::coverage::coverage(store, now - 24 * 3_600_000, now))
            .await;
        match coverage {
            Ok(coverage) => metrics.set_silence(coverage.silent_since_ms),
            Err(error) => (self.say)(&format!(
                "the observer's silence gauge was not refreshed ({error})"
            )),
        }
    }
}

/// Failures in a row, and what the last one said: the rule for what a
/// background sweep says, on either backend (`listen`'s PostgreSQL sweep
/// uses it too).
#[derive(Debug, Default)]
pub struct Failures {
    in_a_row: u32,
    last: Option<String>,
}

impl Failures {
    /// Notes a failure; what to add to its line when it is to be said
    /// (`""`, or ` again, N times in a row`), `None` when it is not.
    pub fn failed(&mut self, why: &str) -> Option<String> {
        self.in_a_row = self.in_a_row.saturating_add(1);
        let same = self.last.as_deref() == Some(why);
        self.last = Some(why.to_owned());
        if !same {
            return Some(String::new());
        }
        self.in_a_row
            .is_multiple_of(REPEAT_SAID_EVERY)
            .then(|| format!(" again, {} times in a row", self.in_a_row))
    }

    /// Notes a success; whether failures came before it.
    pub fn recovered(&mut self) -> bool {
        let was_failing = self.in_a_row > 0;
        *self = Failures::default();
        was_failing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_failure_is_said_once_then_every_tenth_time() {
        let mut failures = Failures::default();
        assert_eq!(failures.failed("down"), Some(String::new()));
        let said: Vec<_> = (2..=20).filter_map(|_| failures.failed("down")).collect();
        assert_eq!(
            said,
            [" again, 10 times in a row", " again, 20 times in a row"]
        );
        assert_eq!(failures.failed("key refused"), Some(String::new()));
        assert!(failures.recovered());
        assert!(!failures.recovered());
        assert_eq!(failures.failed("down"), Some(String::new()));
    }
}
