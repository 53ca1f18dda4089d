//! The scheduler's tunables ([`SchedulerConfig`]): their defaults and the
//! safe range each is clamped to.

use std::time::Duration;

use super::SERVER_PER_JOB_LIMIT;

/// Tunables. [`Default`] is what the console uses; [`Scheduler::new`](super::Scheduler::new) clamps
/// values that would break a guarantee (see each field).
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// The console's share of the account limit, requests per
    /// `account_window` (default 2,000 of the platform's 20,000 per 5 min).
    pub account_budget: u32,
    /// The account limit's window (default 5 min, the spec's).
    pub account_window: Duration,
    /// Requests of the account share that may go back to back (default 10);
    /// the rest are spread evenly. At most half the budget.
    pub account_burst: u32,
    /// Polls of one job in any 60 s window (default 50; clamped to 1..=59,
    /// below the platform's 60).
    pub per_job_per_minute: u32,
    /// A job whose last good observation is older than this shows as stale
    /// (default 30 s).
    pub stale_after: Duration,
    /// Seed of the jitter.
    pub seed: u64,
    /// Shortest gap between two polls of a job near its expected change
    /// (default 250 ms; the per-job window still applies).
    pub min_gap: Duration,
    /// When the budget allows, every job is polled at least this often
    /// (default 20 s, below `stale_after`).
    pub max_interval: Duration,
    /// Longest back-off of a queued job at the head of the queue (default
    /// 60 s; jobs further back wait longer, unless the budget is spare).
    pub queued_max_interval: Duration,
    /// Processing time over audio duration before anything is learned
    /// (default 0.25). Learned from observed jobs afterwards.
    pub prior_ratio: f64,
    /// Relative spread of that ratio before anything is learned (default 0.5).
    pub prior_spread: f64,
    /// Typical processing time of a job with no known audio duration, before
    /// anything is learned (default 60 s).
    pub prior_processing: Duration,
    /// First back-off after a network error or 404 (default 1 s), doubling up
    /// to `error_backoff_max` (default 60 s), with jitter.
    pub error_backoff: Duration,
    pub error_backoff_max: Duration,
    /// First pause after a 403 (default 30 s), doubling up to
    /// `pause_backoff_max` (default 5 min), with jitter.
    pub pause_backoff: Duration,
    pub pause_backoff_max: Duration,
    /// A poll with no outcome reported after this long counts as a network
    /// error (default 60 s).
    pub request_timeout: Duration,
    /// Fraction of the account share the cadence plans to use (default 0.9;
    /// the rest absorbs first polls, boosts and retries).
    pub utilisation: f64,
    /// How far gaps may shrink below the natural cadence when the budget is
    /// spare (default 0.5: at most twice as often; 1.0 never shrinks).
    pub spare_scale: f64,
    /// The platform starts queued jobs in submission order (spec part 3), so
    /// a job seen queued implies that later ones are queued too (default on).
    pub fifo_inference: bool,
    /// Finished jobs remembered (for [`Scheduler::jobs`](super::Scheduler::jobs)),
    /// the oldest forgotten first. `None` (the default) keeps every one:
    /// `jobs watch` reports them all at the end. The console, which watches
    /// jobs that never stop coming (the demo), keeps as many as it shows.
    pub keep_finished: Option<usize>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            account_budget: 2_000,
            account_window: Duration::from_secs(300),
            account_burst: 10,
            per_job_per_minute: 50,
            stale_after: Duration::from_secs(30),
            seed: 0x5eed_ea25_4070,
            min_gap: Duration::from_millis(250),
            max_interval: Duration::from_secs(20),
            queued_max_interval: Duration::from_secs(60),
            prior_ratio: 0.25,
            prior_spread: 0.5,
            prior_processing: Duration::from_secs(60),
            error_backoff: Duration::from_secs(1),
            error_backoff_max: Duration::from_secs(60),
            pause_backoff: Duration::from_secs(30),
            pause_backoff_max: Duration::from_secs(300),
            request_timeout: Duration::from_secs(60),
            utilisation: 0.9,
            spare_scale: 0.5,
            fifo_inference: true,
            keep_finished: None,
        }
    }
}

impl SchedulerConfig {
    /// The same configuration with every value inside its safe range.
    pub(super) fn sanitised(mut self) -> Self {
        self.account_budget = self.account_budget.max(1);
        self.account_window = self.account_window.max(Duration::from_secs(1));
        self.account_burst = self
            .account_burst
            .clamp(1, (self.account_budget / 2).max(1));
        self.per_job_per_minute = self.per_job_per_minute.clamp(1, SERVER_PER_JOB_LIMIT - 1);
        self.min_gap = self.min_gap.max(Duration::from_millis(1));
        self.max_interval = self.max_interval.max(self.min_gap);
        self.queued_max_interval = self.queued_max_interval.max(Duration::from_secs(2));
        if !(self.prior_ratio.is_finite() && self.prior_ratio > 0.0) {
            self.prior_ratio = 0.25;
        }
        if !(self.prior_spread.is_finite() && self.prior_spread > 0.0) {
            self.prior_spread = 0.5;
        }
        self.prior_processing = self.prior_processing.max(Duration::from_secs(1));
        self.error_backoff = self.error_backoff.max(Duration::from_millis(10));
        self.error_backoff_max = self.error_backoff_max.max(self.error_backoff);
        self.pause_backoff = self.pause_backoff.max(Duration::from_secs(1));
        self.pause_backoff_max = self.pause_backoff_max.max(self.pause_backoff);
        self.request_timeout = self.request_timeout.max(Duration::from_secs(1));
        if !(self.utilisation.is_finite() && self.utilisation > 0.0) {
            self.utilisation = 0.9;
        }
        self.utilisation = self.utilisation.clamp(0.05, 1.0);
        if !self.spare_scale.is_finite() {
            self.spare_scale = 0.5;
        }
        self.spare_scale = self.spare_scale.clamp(0.05, 1.0);
        // The job that just finished is always remembered (its change is
        // reported from its record).
        self.keep_finished = self.keep_finished.map(|keep| keep.max(1));
        self
    }
}
