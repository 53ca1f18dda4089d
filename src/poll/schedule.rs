//! The poll scheduler: which job to poll next, and when.
//!
//! Pure and single-threaded: the caller passes the time ([`Tick`]) to every
//! call, sends the request [`Scheduler::next`] asks for, and reports what came
//! back with [`Scheduler::on_outcome`]. The cadence and priority rules are
//! described in the [module documentation](super).
//!
//! Cost: `next`, `on_outcome` and `on_webhook` are O(log n) amortised (a
//! min-heap of due times with lazy deletion, ordered sets for the ready jobs
//! and the queue), so thousands of jobs cost microseconds per request.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::time::Duration;

use super::Tick;
use super::budget::{SlidingWindow, TokenBucket};
use crate::api::types::prerecorded::TranscriptStatus;
use model::{DurationModel, Estimate, Took};

mod model;

/// The server's per-transcript window.
const PER_JOB_WINDOW: Duration = Duration::from_secs(60);
/// The server's per-transcript limit; the configured one stays below it.
pub const SERVER_PER_JOB_LIMIT: u32 = 60;
/// A per-job limit learned from a 429 applies to every job only from this
/// value up.
const MIN_SHARED_PER_JOB_LIMIT: u32 = 3;
/// Waited on top of a `Retry-After`, so the retry lands after it.
const RETRY_MARGIN: Duration = Duration::from_millis(100);
/// Earlier queued jobs given a poll at once when a later one is seen started.
const MAX_FIFO_BOOSTS: usize = 16;
/// Smallest spread around an expected completion, in seconds.
const MIN_SPREAD_SECS: f64 = 0.5;
/// Each gap while closing in on an expected change is at least this
/// fraction of the distance left.
const APPROACH: f64 = 0.1;
/// Gap between polls of a running job of unknown audio duration, as a
/// fraction of the time it has been running.
const UNKNOWN_AUDIO_GAP: f64 = 0.1;
/// Shortest gap between polls of a queued job away from the head, seconds.
const QUEUED_MIN_GAP_SECS: f64 = 2.0;

/// Tunables. [`Default`] is what the console uses; [`Scheduler::new`] clamps
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
        }
    }
}

impl SchedulerConfig {
    /// The same configuration with every value inside its safe range.
    fn sanitised(mut self) -> Self {
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
        self
    }
}

/// What the console knows about a job when it starts watching it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobHint {
    /// When the job was submitted (scheduler time), if known.
    pub submitted_at: Option<Tick>,
    /// The audio's duration, if known: processing time follows it.
    pub audio_duration: Option<Duration>,
}

/// What to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send `GET /v2/transcript/{id}` now, then report with
    /// [`Scheduler::on_outcome`]. The request is already counted.
    Poll(String),
    /// Nothing may or need be sent before this time (call `next` again then,
    /// or sooner when something happens).
    WaitUntil(Tick),
    /// Nothing left to poll: every job is terminal, or there is none.
    Idle,
}

/// How a poll ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PollOutcome {
    /// 200: the job's status.
    Status { status: TranscriptStatus },
    /// 429: wait `retry_after` before polling this job again.
    RateLimited { retry_after: Duration },
    /// 403: the account is over its limit; every poll pauses.
    AccountLimited,
    /// No answer, a connection error or a 5xx.
    NetworkError,
    /// 404: the job is not (or not yet) known to the platform.
    NotFound,
}

/// Why a job is not being polled as usual.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobProblem {
    /// Waiting out a 429's `Retry-After`.
    RateLimited,
    /// Backing off after a network error.
    NetworkError,
    /// Backing off after a 404.
    NotFound,
    /// A poll's outcome was never reported (`request_timeout`).
    NoAnswer,
    /// Its last poll got a 403; every job waits for the pause to end.
    AccountLimited,
}

/// A job as the scheduler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    pub id: String,
    /// The last observed status (`None` until the first good observation).
    pub status: Option<TranscriptStatus>,
    pub added_at: Tick,
    /// The last good observation (poll or webhook).
    pub last_seen: Option<Tick>,
    /// First seen `queued` (this time in the queue).
    pub queued_since: Option<Tick>,
    /// First seen `processing`.
    pub processing_since: Option<Tick>,
    /// First seen `completed` or `error`.
    pub finished_at: Option<Tick>,
    /// When it is due for its next poll (`None` once terminal, or while a
    /// poll is in flight).
    pub next_poll: Option<Tick>,
    /// A poll was sent and its outcome is not reported yet.
    pub in_flight: bool,
    /// The last good observation is older than `stale_after`, or the job is
    /// backing off (after an error, a 429 or during an account pause).
    pub stale: bool,
    /// Requests sent for it.
    pub polls: u32,
    /// Failed polls in a row.
    pub error_streak: u32,
    pub focused: bool,
    /// When its next change is expected (completion while processing).
    pub eta: Option<Tick>,
    /// Why it is backing off, if it is.
    pub problem: Option<JobProblem>,
    /// Not polled before this (a `Retry-After` or back-off), if in the future.
    pub retry_at: Option<Tick>,
}

/// Whether every poll is paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    None,
    /// A 403 said the account is over its limit: nothing is sent before
    /// `until`; `backoff` is the current pause length (it doubles on every
    /// 403 in a row).
    AccountLimited {
        until: Tick,
        backoff: Duration,
    },
}

/// Order of the ready set: focused first, then never seen, then the oldest
/// information, then add order.
type ReadyKey = (bool, bool, Tick, u64, usize);

#[derive(Clone, Debug)]
struct Job {
    id: String,
    seq: u64,
    hint: JobHint,
    added_at: Tick,
    status: Option<TranscriptStatus>,
    /// Taken as queued (FIFO) from another job's observation at this time.
    inferred_queued: Option<Tick>,
    last_seen: Option<Tick>,
    last_poll: Option<Tick>,
    queued_since: Option<Tick>,
    last_queued: Option<Tick>,
    processing_since: Option<Tick>,
    last_processing: Option<Tick>,
    finished_at: Option<Tick>,
    /// When it started, at the latest and at the earliest.
    start_window: Option<(Tick, Tick)>,
    focused: bool,
    polls: u32,
    error_streak: u32,
    problem: Option<JobProblem>,
    not_before: Tick,
    in_flight: bool,
    limiter: SlidingWindow,
    /// Heap entries of an older generation are stale.
    generation: u64,
    due: Option<Tick>,
    ready: Option<ReadyKey>,
    /// Its planned poll rate (per second): the cadence's own, and the extra
    /// needed to poll at least every `max_interval`.
    core_rate: f64,
    fresh_rate: f64,
    /// Queued and given an immediate poll because a slot has probably freed.
    boosted: bool,
    /// In the (watched part of the) queue: observed or inferred queued.
    pending: bool,
}

impl Job {
    fn submitted(&self) -> Tick {
        self.hint
            .submitted_at
            .unwrap_or(self.added_at)
            .min(self.added_at)
    }

    fn is_terminal(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(TranscriptStatus::is_terminal)
    }

    fn info_time(&self) -> Tick {
        self.last_seen.unwrap_or(self.added_at)
    }

    fn ready_key(&self, slot: usize) -> ReadyKey {
        (
            !self.focused,
            self.last_seen.is_some(),
            self.info_time(),
            self.seq,
            slot,
        )
    }

    /// 0 unknown, 1 queued, 2 running (or an unlisted status), 3 terminal.
    fn progress(&self) -> u8 {
        match &self.status {
            Some(status) => progress(status),
            None if self.inferred_queued.is_some() => 1,
            None => 0,
        }
    }
}

fn progress(status: &TranscriptStatus) -> u8 {
    match status {
        TranscriptStatus::Queued => 1,
        TranscriptStatus::Processing | TranscriptStatus::Other(_) => 2,
        TranscriptStatus::Completed | TranscriptStatus::Error => 3,
    }
}

fn secs(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

fn duration(seconds: f64) -> Duration {
    if seconds.is_finite() && seconds > 0.0 {
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    }
}

/// Whether a heap entry is the job's current one (entries are never removed
/// from the heap when a job is rescheduled, only outdated).
fn is_live(jobs: &[Option<Job>], due: Tick, generation: u64, slot: usize) -> bool {
    jobs.get(slot).and_then(Option::as_ref).is_some_and(|job| {
        job.generation == generation
            && job.due == Some(due)
            && job.ready.is_none()
            && !job.is_terminal()
    })
}

/// How a job's next poll is planned.
enum Plan {
    /// Once, at this time (first poll, or a boost).
    Once(Tick),
    /// Every `natural` seconds by its state, subject to the budget, but
    /// never sooner than `floor` seconds even when the budget is spare; when
    /// `land` is set, never beyond that expected change.
    Recurring {
        natural: f64,
        floor: f64,
        land: Option<Tick>,
    },
}

/// Decides when to poll which job. See the [module docs](super).
#[derive(Debug)]
pub struct Scheduler {
    config: SchedulerConfig,
    now: Tick,
    /// By slot; a slot is never reused, so slot order is add order.
    jobs: Vec<Option<Job>>,
    index: HashMap<String, usize>,
    next_seq: u64,
    due: BinaryHeap<Reverse<(Tick, u64, usize)>>,
    ready: BTreeSet<ReadyKey>,
    /// Watched jobs in the queue, by add order.
    pending: BTreeSet<(u64, usize)>,
    /// The pending jobs not already given an immediate poll.
    unboosted: BTreeSet<(u64, usize)>,
    /// Jobs whose last observation was `queued`.
    observed_queued: BTreeSet<(u64, usize)>,
    focused: Vec<usize>,
    active: usize,
    core_sum: f64,
    fresh_sum: f64,
    reschedules: u64,
    account_bucket: TokenBucket,
    account_log: SlidingWindow,
    pause_until: Option<Tick>,
    pause_started: Option<Tick>,
    /// The current pause length; `None` after a good answer.
    pause_backoff: Option<Duration>,
    pauses: u32,
    requests: u64,
    /// Jitter, seeded from the config so a run can be replayed.
    rng: fastrand::Rng,
    model: DurationModel,
    processing: Estimate,
}

impl Scheduler {
    pub fn new(config: SchedulerConfig, now: Tick) -> Self {
        let config = config.sanitised();
        let burst = f64::from(config.account_burst);
        let budget = f64::from(config.account_budget);
        // In any window: at most `burst + (budget - burst)` = budget.
        // (The sliding log below is the guarantee; the bucket spreads.)
        let account_bucket = TokenBucket::with_rate(
            burst,
            (budget - burst).max(1.0),
            config.account_window,
            burst,
            now,
        );
        let account_log = SlidingWindow::new(config.account_budget, config.account_window);
        let model = DurationModel::new(config.prior_ratio, config.prior_spread);
        let processing = Estimate::new(secs(config.prior_processing).ln(), 1.0);
        Scheduler {
            rng: fastrand::Rng::with_seed(config.seed),
            config,
            now,
            jobs: Vec::new(),
            index: HashMap::new(),
            next_seq: 0,
            due: BinaryHeap::new(),
            ready: BTreeSet::new(),
            pending: BTreeSet::new(),
            unboosted: BTreeSet::new(),
            observed_queued: BTreeSet::new(),
            focused: Vec::new(),
            active: 0,
            core_sum: 0.0,
            fresh_sum: 0.0,
            reschedules: 0,
            account_bucket,
            account_log,
            pause_until: None,
            pause_started: None,
            pause_backoff: None,
            pauses: 0,
            requests: 0,
            model,
            processing,
        }
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// Starts watching a job (first poll at once). Adding a known id again
    /// changes nothing but fills in hints that were missing.
    pub fn add_job(&mut self, id: &str, hint: JobHint, now: Tick) {
        self.advance(now);
        if let Some(&slot) = self.index.get(id) {
            if let Some(job) = self.jobs[slot].as_mut() {
                job.hint.submitted_at = job.hint.submitted_at.or(hint.submitted_at);
                job.hint.audio_duration = job.hint.audio_duration.or(hint.audio_duration);
            }
            return;
        }
        let slot = self.jobs.len();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.jobs.push(Some(Job {
            id: id.to_owned(),
            seq,
            hint,
            added_at: now,
            status: None,
            inferred_queued: None,
            last_seen: None,
            last_poll: None,
            queued_since: None,
            last_queued: None,
            processing_since: None,
            last_processing: None,
            finished_at: None,
            start_window: None,
            focused: false,
            polls: 0,
            error_streak: 0,
            problem: None,
            not_before: now,
            in_flight: false,
            limiter: SlidingWindow::new(self.config.per_job_per_minute, PER_JOB_WINDOW),
            generation: 0,
            due: None,
            ready: None,
            core_rate: 0.0,
            fresh_rate: 0.0,
            boosted: false,
            pending: false,
        }));
        self.index.insert(id.to_owned(), slot);
        self.active += 1;
        self.reschedule(slot, now, now);
    }

    /// Fills in what `hint` knows and the job's hint does not (a record's
    /// audio duration, read before its outcome is reported, so a finished
    /// job teaches the duration model). Does nothing for an unknown id.
    pub fn fill_hint(&mut self, id: &str, hint: JobHint) {
        let Some(job) = self
            .index
            .get(id)
            .and_then(|&slot| self.jobs[slot].as_mut())
        else {
            return;
        };
        job.hint.submitted_at = job.hint.submitted_at.or(hint.submitted_at);
        job.hint.audio_duration = job.hint.audio_duration.or(hint.audio_duration);
    }

    /// The per-job limit in force (polls of one job in any 60 s window):
    /// the configured one, or lower after a 429.
    pub fn per_job_limit(&self) -> u32 {
        self.config.per_job_per_minute
    }

    /// Lowers the per-job limit of every job to `limit` (at least 1; never
    /// raises it).
    fn lower_per_job_limit(&mut self, limit: u32) {
        let limit = limit.max(1);
        if limit >= self.config.per_job_per_minute {
            return;
        }
        self.config.per_job_per_minute = limit;
        for job in self.jobs.iter_mut().flatten() {
            job.limiter.set_limit(limit);
        }
    }

    /// Stops watching a job.
    pub fn remove_job(&mut self, id: &str) {
        let Some(slot) = self.index.remove(id) else {
            return;
        };
        let Some(job) = self.jobs[slot].take() else {
            return;
        };
        if !job.is_terminal() {
            self.active = self.active.saturating_sub(1);
            self.core_sum -= job.core_rate;
            self.fresh_sum -= job.fresh_rate;
        }
        if let Some(key) = job.ready {
            self.ready.remove(&key);
        }
        self.pending.remove(&(job.seq, slot));
        self.unboosted.remove(&(job.seq, slot));
        self.observed_queued.remove(&(job.seq, slot));
        self.focused.retain(|&focused| focused != slot);
    }

    /// The jobs on screen: they go first when the budget is short, and are
    /// polled at their natural cadence whatever the budget.
    pub fn set_focus(&mut self, ids: &[String]) {
        let wanted: HashSet<usize> = ids
            .iter()
            .filter_map(|id| self.index.get(id).copied())
            .collect();
        for slot in std::mem::take(&mut self.focused) {
            if !wanted.contains(&slot) {
                self.set_focused(slot, false);
            }
        }
        let mut slots: Vec<usize> = wanted.into_iter().collect();
        slots.sort_unstable();
        for &slot in &slots {
            self.set_focused(slot, true);
        }
        self.focused = slots;
    }

    fn set_focused(&mut self, slot: usize, focused: bool) {
        let now = self.now;
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        if job.focused == focused {
            return;
        }
        job.focused = focused;
        if let Some(key) = job.ready.take() {
            self.ready.remove(&key);
            let key = job.ready_key(slot);
            job.ready = Some(key);
            self.ready.insert(key);
        } else if focused && !job.in_flight && !job.is_terminal() {
            // Poll sooner if its natural cadence says so.
            let base = job.last_poll.unwrap_or(job.added_at);
            let current = job.due;
            let Some(candidate) = self.plan_due(slot, now, base) else {
                return;
            };
            if current.is_none_or(|current| candidate < current) {
                self.set_due(slot, candidate);
            }
        }
    }

    /// What to do now. A `Poll` is counted against both budgets at once, so
    /// call [`Scheduler::on_outcome`] for each (a poll never reported counts
    /// as a network error after `request_timeout`).
    pub fn next(&mut self, now: Tick) -> Decision {
        self.advance(now);
        if self.active == 0 {
            return Decision::Idle;
        }
        if let Some(until) = self.pause_until
            && now < until
        {
            return Decision::WaitUntil(until);
        }
        loop {
            self.promote_due(now);
            let Some(&key) = self.ready.first() else {
                return match self.earliest_due() {
                    Some(at) => Decision::WaitUntil(at.max(now)),
                    None => Decision::Idle,
                };
            };
            let slot = key.4;
            let Some(job) = self.jobs[slot].as_mut() else {
                self.ready.remove(&key);
                continue;
            };
            if job.in_flight {
                // Its outcome never came: count it as a network error.
                job.in_flight = false;
                self.ready.remove(&key);
                if let Some(job) = self.jobs[slot].as_mut() {
                    job.ready = None;
                }
                self.back_off(slot, JobProblem::NoAnswer, now);
                continue;
            }
            if job.status.is_none() && job.inferred_queued.is_none() && self.infer_queued(slot) {
                self.ready.remove(&key);
                if let Some(job) = self.jobs[slot].as_mut() {
                    job.ready = None;
                }
                self.reschedule(slot, now, now);
                continue;
            }
            let Some(job) = self.jobs[slot].as_mut() else {
                continue;
            };
            let job_ready = job.limiter.ready_at(now).max(job.not_before);
            if job_ready > now {
                // Only reachable if a due time was planned too early.
                self.ready.remove(&key);
                job.ready = None;
                self.set_due(slot, job_ready);
                continue;
            }
            let account_ready = self
                .account_bucket
                .ready_at(now)
                .max(self.account_log.ready_at(now));
            if account_ready > now {
                return Decision::WaitUntil(account_ready);
            }
            if !self.account_bucket.try_take(now) {
                return Decision::WaitUntil(now + Duration::from_micros(1));
            }
            self.account_log.record(now);
            self.requests += 1;
            self.ready.remove(&key);
            let Some(job) = self.jobs[slot].as_mut() else {
                continue;
            };
            job.ready = None;
            job.limiter.record(now);
            job.in_flight = true;
            job.polls = job.polls.saturating_add(1);
            job.last_poll = Some(now);
            let id = job.id.clone();
            let timeout = now + self.config.request_timeout;
            self.set_due(slot, timeout);
            return Decision::Poll(id);
        }
    }

    /// Reports how a poll ended. Returns the job when its status changed.
    pub fn on_outcome(&mut self, id: &str, outcome: PollOutcome, now: Tick) -> Option<JobView> {
        self.advance(now);
        let slot = *self.index.get(id)?;
        let job = self.jobs[slot].as_mut()?;
        job.in_flight = false;
        if job.is_terminal() {
            return None;
        }
        let sent_at = job.last_poll;
        match outcome {
            PollOutcome::Status { status } => {
                if let (Some(sent), Some(until)) = (sent_at, self.pause_until)
                    && sent >= until
                {
                    // A good answer after a pause: the next 403 starts over.
                    self.pause_backoff = None;
                }
                self.observe(slot, status, now)
            }
            PollOutcome::RateLimited { retry_after } => {
                // The platform allows fewer polls per job than were sent in
                // this window (the refused one included): every job drops
                // below that, so no job is refused again for this cause.
                let refused_at = job.limiter.count(now);
                job.not_before = job.not_before.max(now + retry_after + RETRY_MARGIN);
                job.problem = Some(JobProblem::RateLimited);
                let below = refused_at.saturating_sub(2).max(1);
                if below < job.limiter.limit() {
                    job.limiter.set_limit(below);
                }
                if below >= MIN_SHARED_PER_JOB_LIMIT {
                    // (A refusal after a poll or two says someone else polls
                    // that job, not what the platform allows.)
                    self.lower_per_job_limit(below);
                }
                self.reschedule(slot, now, now);
                None
            }
            PollOutcome::AccountLimited => {
                job.problem = Some(JobProblem::AccountLimited);
                self.account_limited(sent_at.unwrap_or(now), now);
                self.reschedule(slot, now, now);
                None
            }
            PollOutcome::NetworkError => {
                self.back_off(slot, JobProblem::NetworkError, now);
                None
            }
            PollOutcome::NotFound => {
                self.back_off(slot, JobProblem::NotFound, now);
                None
            }
        }
    }

    /// A webhook (or any other free observation, such as the status in the
    /// answer to the submission) says the job is in `status`: no request is
    /// spent. Returns the job when its status changed.
    pub fn on_webhook(&mut self, id: &str, status: TranscriptStatus, now: Tick) -> Option<JobView> {
        self.advance(now);
        let slot = *self.index.get(id)?;
        self.observe(slot, status, now)
    }

    pub fn job(&self, id: &str) -> Option<JobView> {
        self.job_at(id, self.now)
    }

    /// The job with `stale` judged at `now`.
    pub fn job_at(&self, id: &str, now: Tick) -> Option<JobView> {
        let slot = *self.index.get(id)?;
        self.view(slot, now)
    }

    /// Every job, in add order, with `stale` judged at the latest time the
    /// scheduler was given.
    pub fn jobs(&self) -> Vec<JobView> {
        self.jobs_at(self.now)
    }

    /// Every job, in add order, with `stale` judged at `now`.
    pub fn jobs_at(&self, now: Tick) -> Vec<JobView> {
        (0..self.jobs.len())
            .filter_map(|slot| self.view(slot, now))
            .collect()
    }

    /// The account pause, as of the latest time the scheduler was given.
    pub fn pause(&self) -> Pause {
        self.pause_at(self.now)
    }

    /// The account pause as of `now`.
    pub fn pause_at(&self, now: Tick) -> Pause {
        match (self.pause_until, self.pause_backoff) {
            (Some(until), Some(backoff)) if now < until => Pause::AccountLimited { until, backoff },
            _ => Pause::None,
        }
    }

    /// How many times a 403 paused polling.
    pub fn pauses(&self) -> u32 {
        self.pauses
    }

    /// Polls sent (every `Decision::Poll`).
    pub fn requests_sent(&self) -> u64 {
        self.requests
    }

    /// Requests counted in the last account window, and the share.
    pub fn budget_used(&self, now: Tick) -> (u32, u32) {
        (self.account_log.count(now), self.config.account_budget)
    }

    /// Counts a request the console made for another reason (a submission,
    /// a list) against the account share.
    pub fn record_other_request(&mut self, now: Tick) {
        self.advance(now);
        self.account_bucket.try_take(now);
        self.account_log.record(now);
    }

    /// Every job is `completed` or `error` (or there is none).
    pub fn all_done(&self) -> bool {
        self.active == 0
    }

    /// The learned processing time per second of audio.
    pub fn learned_ratio(&self) -> f64 {
        self.model.ratio()
    }

    /// The expected processing time of audio of this duration, as learned.
    pub fn expected_processing(&self, audio: Duration) -> Duration {
        duration(self.model.predict(secs(audio)))
    }

    fn advance(&mut self, now: Tick) {
        self.now = self.now.max(now);
    }

    fn view(&self, slot: usize, now: Tick) -> Option<JobView> {
        let job = self.jobs.get(slot)?.as_ref()?;
        let terminal = job.is_terminal();
        let paused = self.pause_until.is_some_and(|until| now < until);
        let backing_off = job.error_streak > 0 || job.not_before > now || paused;
        let age = now.saturating_sub(job.info_time());
        let stale = !terminal && (backing_off || age > self.config.stale_after);
        let eta = match job.progress() {
            2 => self.completion(job).map(|(expected, _)| expected),
            _ => None,
        };
        Some(JobView {
            id: job.id.clone(),
            status: job.status.clone(),
            added_at: job.added_at,
            last_seen: job.last_seen,
            queued_since: job.queued_since,
            processing_since: job.processing_since,
            finished_at: job.finished_at,
            next_poll: if terminal || job.in_flight {
                None
            } else {
                job.due
            },
            in_flight: job.in_flight,
            stale,
            polls: job.polls,
            error_streak: job.error_streak,
            focused: job.focused,
            eta: if terminal { None } else { eta },
            problem: if terminal { None } else { job.problem },
            retry_at: (!terminal && job.not_before > now).then_some(job.not_before),
        })
    }

    /// Applies a good observation. Returns the job when its status changed.
    fn observe(&mut self, slot: usize, status: TranscriptStatus, now: Tick) -> Option<JobView> {
        let job = self.jobs[slot].as_mut()?;
        if job.is_terminal() {
            return None;
        }
        let before = job.progress();
        let after = progress(&status);
        if after < before {
            // An answer older than what is known (out of order): ignore it.
            self.reschedule(slot, now, now);
            return None;
        }
        let changed = job.status.as_ref() != Some(&status);
        job.last_seen = Some(now);
        job.error_streak = 0;
        if job.problem != Some(JobProblem::RateLimited) || job.not_before <= now {
            job.problem = None;
        }
        let seq = job.seq;
        match after {
            1 => {
                if job.status != Some(TranscriptStatus::Queued) {
                    job.queued_since = Some(now);
                }
                job.last_queued = Some(now);
                job.status = Some(status);
                self.observed_queued.insert((seq, slot));
                self.enter_pending(slot);
                // A boost that found it still queued: a later slot may be its.
                if let Some(job) = self.jobs[slot].as_mut()
                    && job.boosted
                {
                    job.boosted = false;
                    self.unboosted.insert((seq, slot));
                }
            }
            2 => {
                if before < 2 {
                    let earliest = job
                        .last_queued
                        .or(job.inferred_queued)
                        .unwrap_or_else(|| job.submitted())
                        .min(now);
                    job.start_window = Some((earliest, now));
                    job.processing_since = Some(now);
                }
                job.last_processing = Some(now);
                job.status = Some(status);
                self.observed_queued.remove(&(seq, slot));
                self.leave_pending(slot);
                if before < 2 {
                    self.fifo_boost(seq, now);
                }
            }
            _ => {
                job.finished_at = Some(now);
                job.status = Some(status);
                self.learn_from(slot, now);
                self.observed_queued.remove(&(seq, slot));
                self.leave_pending(slot);
                self.finish(slot);
                if before >= 1 {
                    // A slot has freed: the oldest queued job starts now.
                    self.credit(now);
                }
                if before < 2 {
                    self.fifo_boost(seq, now);
                }
            }
        }
        if after < 3 {
            self.reschedule(slot, now, now);
        }
        if changed { self.view(slot, now) } else { None }
    }

    /// Learns processing time from a job seen both starting and finishing
    /// (see [`Took::learnable`]).
    fn learn_from(&mut self, slot: usize, now: Tick) {
        let Some(job) = self.jobs[slot].as_ref() else {
            return;
        };
        let (Some((start_lo, start_hi)), Some(end_lo)) = (job.start_window, job.last_processing)
        else {
            return;
        };
        let took = Took {
            shortest: (secs(end_lo) - secs(start_hi)).max(1e-3),
            longest: (secs(now) - secs(start_lo)).max(2e-3),
        };
        if let Some(audio) = job.hint.audio_duration.filter(|audio| !audio.is_zero()) {
            self.model.learn(secs(audio), took);
        }
        let predicted = self.processing.mean.exp();
        if let Some(exact) = took.exact(self.processing.spread()) {
            self.processing.learn_error((exact / predicted).ln());
        }
        self.processing.learn(took.learnable(predicted).ln());
    }

    /// Expected completion and its spread (seconds) of a running job.
    fn completion(&self, job: &Job) -> Option<(Tick, f64)> {
        let (lo, hi) = job.start_window?;
        let start_half = secs(hi.saturating_sub(lo)) / 2.0;
        let start = lo + hi.saturating_sub(lo) / 2;
        let (took, spread) = match job.hint.audio_duration.filter(|audio| !audio.is_zero()) {
            Some(audio) => (self.model.predict(secs(audio)), self.model.spread()),
            None => (
                self.processing.mean.exp(),
                self.processing.spread().max(0.3),
            ),
        };
        let spread = (spread * took).max(MIN_SPREAD_SECS) + start_half;
        Some((start + duration(took), spread))
    }

    /// The job's next-poll plan from what is known about it.
    fn plan(&self, slot: usize, now: Tick) -> Option<Plan> {
        let job = self.jobs[slot].as_ref()?;
        if job.is_terminal() {
            return None;
        }
        if job.boosted {
            return Some(Plan::Once(now));
        }
        match job.progress() {
            0 => Some(Plan::Once(job.added_at.max(job.submitted()))),
            1 => {
                let since = job.queued_since.or(job.inferred_queued).unwrap_or(now);
                let age = secs(now.saturating_sub(since));
                let head = self.pending.first().map_or(job.seq, |&(seq, _)| seq);
                let rank = job.seq.saturating_sub(head) as f64;
                let gap =
                    (age / 2.0).clamp(QUEUED_MIN_GAP_SECS, secs(self.config.queued_max_interval));
                Some(Plan::Recurring {
                    natural: gap * (1.0 + rank).sqrt(),
                    floor: 0.0,
                    land: None,
                })
            }
            _ => {
                let per_job_gap = 60.0 / f64::from(self.config.per_job_per_minute);
                if job.hint.audio_duration.is_none()
                    && let Some((lo, hi)) = job.start_window
                {
                    // No audio duration: processing times span decades, so
                    // no expectation is worth landing on. The chance that it
                    // ends in the next second falls as 1/(time running), so
                    // the gap grows with it: the lag stays a small fraction
                    // of the processing time.
                    let running = secs(now.saturating_sub(lo + hi.saturating_sub(lo) / 2));
                    return Some(Plan::Recurring {
                        natural: (UNKNOWN_AUDIO_GAP * running)
                            .clamp(secs(self.config.min_gap), secs(self.config.max_interval)),
                        floor: 0.0,
                        land: None,
                    });
                }
                let Some((expected, spread)) = self.completion(job) else {
                    // Running with no known start (cannot happen): back off.
                    return Some(Plan::Recurring {
                        natural: per_job_gap,
                        floor: 0.0,
                        land: None,
                    });
                };
                // Near the expectation: as tight as the spread deserves and
                // the per-job window can sustain.
                let gap = (spread / 14.0).clamp(secs(self.config.min_gap), per_job_gap);
                let distance = secs(now.abs_diff(expected));
                let relative = distance / spread;
                Some(Plan::Recurring {
                    natural: gap * (1.0 + relative * relative).sqrt(),
                    // Far from it, close in geometrically (each gap at least
                    // a tenth of the distance beyond the spread), so the
                    // approach does not spend the per-job window before the
                    // expected time.
                    floor: APPROACH * (distance - spread).max(0.0),
                    land: (now < expected).then_some(expected),
                })
            }
        }
    }

    /// Turns a job's natural cadence into a gap that fits the budget, and
    /// keeps the demand sums up to date.
    fn allocate(&mut self, slot: usize, natural: f64) -> f64 {
        let per_job_rate = f64::from(self.config.per_job_per_minute) / 60.0;
        let core = (1.0 / natural.max(1e-3)).min(per_job_rate);
        let fresh = (1.0 / secs(self.config.max_interval) - core).max(0.0);
        let Some(job) = self.jobs[slot].as_mut() else {
            return natural;
        };
        self.core_sum += core - job.core_rate;
        self.fresh_sum += fresh - job.fresh_rate;
        job.core_rate = core;
        job.fresh_rate = fresh;
        let focused = job.focused;
        self.reschedules += 1;
        if self.reschedules.is_multiple_of(1 << 16) {
            self.resum();
        }
        let supply = self.account_bucket.rate_per_second() * self.config.utilisation;
        let core_sum = self.core_sum.max(core);
        let mut rate = if core_sum >= supply {
            // Short: every cadence stretched by the same factor.
            core * supply / core_sum
        } else {
            let share = if self.fresh_sum > 0.0 {
                ((supply - core_sum) / self.fresh_sum).min(1.0)
            } else {
                1.0
            };
            let planned = core + share * fresh;
            if share >= 1.0 {
                // Spare: everyone a little more often.
                let scale = ((core_sum + self.fresh_sum) / supply).max(self.config.spare_scale);
                planned / scale
            } else {
                planned
            }
        };
        if focused {
            rate = rate.max(core + fresh);
        }
        1.0 / rate.max(1e-9)
    }

    /// Recomputes the demand sums (float drift).
    fn resum(&mut self) {
        let (mut core, mut fresh) = (0.0, 0.0);
        for job in self.jobs.iter().flatten() {
            if !job.is_terminal() {
                core += job.core_rate;
                fresh += job.fresh_rate;
            }
        }
        self.core_sum = core;
        self.fresh_sum = fresh;
    }

    /// The due time of the job's next poll counted from `base`.
    fn plan_due(&mut self, slot: usize, now: Tick, base: Tick) -> Option<Tick> {
        let due = match self.plan(slot, now)? {
            Plan::Once(at) => at,
            Plan::Recurring {
                natural,
                floor,
                land,
            } => {
                let gap = self
                    .allocate(slot, natural)
                    .max(floor.min(secs(self.config.max_interval)))
                    .max(secs(self.config.min_gap));
                let mut due = base + duration(gap);
                if let Some(expected) = land
                    && due > expected
                {
                    // Never jump over the expected change: land on it.
                    let floor = now + self.config.min_gap;
                    due = expected.max(floor).min(due);
                }
                // Past half of the job's window, slow down gradually to the
                // rate the window sustains, so a burst never locks it out.
                let job = self.jobs[slot].as_ref()?;
                let limit = f64::from(job.limiter.limit());
                let used = f64::from(job.limiter.count(now));
                if let Some(last) = job.limiter.last() {
                    let pressure = ((used - limit / 2.0) / (limit / 2.0)).clamp(0.0, 1.0);
                    due = due.max(last + duration(pressure * secs(PER_JOB_WINDOW) / limit));
                }
                due
            }
        };
        let job = self.jobs[slot].as_ref()?;
        Some(due.max(job.not_before).max(job.limiter.ready_at(now)))
    }

    /// Plans the job's next poll from `base` (not while one is in flight).
    fn reschedule(&mut self, slot: usize, now: Tick, base: Tick) {
        let Some(job) = self.jobs[slot].as_ref() else {
            return;
        };
        if job.in_flight || job.is_terminal() {
            return;
        }
        if let Some(due) = self.plan_due(slot, now, base) {
            self.set_due(slot, due);
        }
    }

    fn set_due(&mut self, slot: usize, due: Tick) {
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        if let Some(key) = job.ready.take() {
            self.ready.remove(&key);
        }
        job.generation += 1;
        job.due = Some(due);
        self.due.push(Reverse((due, job.generation, slot)));
        if self.due.len() > 2 * (self.active + 32) {
            self.compact();
        }
    }

    /// Drops the heap's stale entries.
    fn compact(&mut self) {
        let jobs = &self.jobs;
        self.due
            .retain(|&Reverse((due, generation, slot))| is_live(jobs, due, generation, slot));
    }

    fn is_live(&self, due: Tick, generation: u64, slot: usize) -> bool {
        is_live(&self.jobs, due, generation, slot)
    }

    /// Moves every job due by `now` into the ready set.
    fn promote_due(&mut self, now: Tick) {
        while let Some(&Reverse((due, generation, slot))) = self.due.peek() {
            if due > now {
                break;
            }
            self.due.pop();
            if !self.is_live(due, generation, slot) {
                continue;
            }
            if let Some(job) = self.jobs[slot].as_mut() {
                let key = job.ready_key(slot);
                job.ready = Some(key);
                self.ready.insert(key);
            }
        }
    }

    fn earliest_due(&mut self) -> Option<Tick> {
        while let Some(&Reverse((due, generation, slot))) = self.due.peek() {
            if self.is_live(due, generation, slot) {
                return Some(due);
            }
            self.due.pop();
        }
        None
    }

    /// A job never polled, added after one seen queued (and before that
    /// observation), is queued too: FIFO.
    fn infer_queued(&mut self, slot: usize) -> bool {
        if !self.config.fifo_inference {
            return false;
        }
        let Some(job) = self.jobs[slot].as_ref() else {
            return false;
        };
        let submitted = job.submitted();
        let Some(&(_, earlier)) = self.observed_queued.range(..(job.seq, 0)).next_back() else {
            return false;
        };
        let Some(seen) = self.jobs[earlier].as_ref().and_then(|job| job.last_queued) else {
            return false;
        };
        if submitted > seen {
            return false;
        }
        if let Some(job) = self.jobs[slot].as_mut() {
            job.inferred_queued = Some(seen);
        }
        self.enter_pending(slot);
        true
    }

    fn enter_pending(&mut self, slot: usize) {
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        if !job.pending {
            job.pending = true;
            self.pending.insert((job.seq, slot));
            if !job.boosted {
                self.unboosted.insert((job.seq, slot));
            }
        }
    }

    fn leave_pending(&mut self, slot: usize) {
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        job.pending = false;
        job.boosted = false;
        self.pending.remove(&(job.seq, slot));
        self.unboosted.remove(&(job.seq, slot));
    }

    /// One slot freed: the oldest queued job not yet boosted is polled now.
    fn credit(&mut self, now: Tick) {
        if let Some(&(_, slot)) = self.unboosted.first() {
            self.boost(slot, now);
        }
    }

    /// A job seen started (or finished) means every job queued before it has
    /// started too (FIFO): poll them now.
    fn fifo_boost(&mut self, seq: u64, now: Tick) {
        if !self.config.fifo_inference {
            return;
        }
        let earlier: Vec<usize> = self
            .unboosted
            .range(..(seq, 0))
            .take(MAX_FIFO_BOOSTS)
            .map(|&(_, slot)| slot)
            .collect();
        for slot in earlier {
            self.boost(slot, now);
        }
    }

    fn boost(&mut self, slot: usize, now: Tick) {
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        job.boosted = true;
        self.unboosted.remove(&(job.seq, slot));
        self.reschedule(slot, now, now);
    }

    /// A job reached `completed` or `error`: it leaves every schedule.
    fn finish(&mut self, slot: usize) {
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        self.active = self.active.saturating_sub(1);
        self.core_sum -= job.core_rate;
        self.fresh_sum -= job.fresh_rate;
        job.core_rate = 0.0;
        job.fresh_rate = 0.0;
        job.generation += 1;
        job.due = None;
        job.problem = None;
        job.limiter.clear();
        if let Some(key) = job.ready.take() {
            self.ready.remove(&key);
        }
    }

    /// A failed poll: back off this job, 1 s doubling, with jitter.
    fn back_off(&mut self, slot: usize, problem: JobProblem, now: Tick) {
        let base = secs(self.config.error_backoff);
        let max = secs(self.config.error_backoff_max);
        let jitter = 0.5 + 0.5 * self.rng.f64();
        let Some(job) = self.jobs[slot].as_mut() else {
            return;
        };
        job.error_streak = job.error_streak.saturating_add(1);
        let exponent = job.error_streak.saturating_sub(1).min(30);
        let delay = (base * 2f64.powi(exponent as i32)).min(max) * jitter;
        job.not_before = job.not_before.max(now + duration(delay));
        job.problem = Some(problem);
        self.reschedule(slot, now, now);
    }

    /// A 403: pause every poll, 30 s doubling to 5 min, with jitter. A 403
    /// to a request sent before the current pause began changes nothing.
    fn account_limited(&mut self, sent_at: Tick, now: Tick) {
        if self.pause_started.is_some_and(|started| sent_at < started) {
            return;
        }
        let backoff = match self.pause_backoff {
            Some(previous) => (previous * 2).min(self.config.pause_backoff_max),
            None => self.config.pause_backoff,
        };
        let jitter = duration(secs(backoff) * 0.25 * self.rng.f64());
        self.pause_backoff = Some(backoff);
        self.pause_started = Some(now);
        self.pause_until = Some(now + backoff + jitter);
        self.pauses = self.pauses.saturating_add(1);
    }
}

#[cfg(test)]
mod tests;
