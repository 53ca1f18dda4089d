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
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use super::Tick;
use super::budget::{SlidingWindow, TokenBucket};
use crate::api::types::prerecorded::TranscriptStatus;
use model::{DurationModel, Estimate};
use probe::LimitProbe;
use slots::Slots;

pub use config::SchedulerConfig;
pub use view::{JobView, Pause, Spent};

mod cadence;
mod config;
mod fifo;
mod model;
mod outcome;
mod probe;
mod slots;
mod timetable;
mod view;

/// The server's per-transcript window.
const PER_JOB_WINDOW: Duration = Duration::from_secs(60);
/// The server's per-transcript limit; the configured one stays below it.
pub const SERVER_PER_JOB_LIMIT: u32 = 60;

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

/// A job's place in the ready set, ordered field by field: focused first,
/// then never seen, then the oldest information, then add order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ReadyKey {
    unfocused: bool,
    seen: bool,
    info_time: Tick,
    seq: u64,
    slot: usize,
}

/// How far a job has got, in order: what the scheduler compares when an
/// answer arrives (an older answer never moves a job back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Progress {
    Unknown,
    Queued,
    /// Processing, or a status this client does not know.
    Running,
    Finished,
}

impl Progress {
    fn of(status: &TranscriptStatus) -> Progress {
        match status {
            TranscriptStatus::Queued => Progress::Queued,
            TranscriptStatus::Processing | TranscriptStatus::Other(_) => Progress::Running,
            TranscriptStatus::Completed | TranscriptStatus::Error => Progress::Finished,
        }
    }
}

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
    /// The latest moment an observation proves it queued (a poll's
    /// sending: the platform answered between sending and answer).
    queued_until: Option<Tick>,
    processing_since: Option<Tick>,
    last_processing: Option<Tick>,
    /// The latest moment an observation proves it processing.
    processing_until: Option<Tick>,
    finished_at: Option<Tick>,
    /// When it started, at the latest and at the earliest.
    start_window: Option<(Tick, Tick)>,
    focused: bool,
    polls: u32,
    error_streak: u32,
    problem: Option<JobProblem>,
    not_before: Tick,
    in_flight: bool,
    /// The count in its window of the poll in flight (or the last one).
    sent_count: u32,
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
        ReadyKey {
            unfocused: !self.focused,
            seen: self.last_seen.is_some(),
            info_time: self.info_time(),
            seq: self.seq,
            slot,
        }
    }

    /// Its status, or queued when inferred so from another job.
    fn progress(&self) -> Progress {
        match &self.status {
            Some(status) => Progress::of(status),
            None if self.inferred_queued.is_some() => Progress::Queued,
            None => Progress::Unknown,
        }
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

/// Decides when to poll which job. See the [module docs](super).
#[derive(Debug)]
pub struct Scheduler {
    config: SchedulerConfig,
    now: Tick,
    jobs: Slots,
    index: HashMap<String, usize>,
    next_seq: u64,
    due: BinaryHeap<Reverse<(Tick, u64, usize)>>,
    ready: BTreeSet<ReadyKey>,
    /// Finished jobs' slots, oldest first (for `keep_finished`).
    finished: VecDeque<usize>,
    /// Watched jobs in the queue, by add order.
    pending: BTreeSet<(u64, usize)>,
    /// The pending jobs not already given an immediate poll.
    unboosted: BTreeSet<(u64, usize)>,
    /// Jobs whose last observation was `queued`.
    observed_queued: BTreeSet<(u64, usize)>,
    focused: Vec<usize>,
    active: usize,
    /// Jobs last seen processing (not finished).
    running: usize,
    core_sum: f64,
    fresh_sum: f64,
    reschedules: u64,
    account_bucket: TokenBucket,
    account_log: SlidingWindow,
    /// [`view::Spent`]'s logs, over the account window.
    spent_on_screen: SlidingWindow,
    spent_off_screen: SlidingWindow,
    spent_other: SlidingWindow,
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
    probe: LimitProbe,
}

impl Scheduler {
    pub fn new(config: SchedulerConfig, now: Tick) -> Self {
        let config = config.sanitised();
        let keep = config.keep_finished;
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
            jobs: Slots::default(),
            // Sized at start for `keep_finished` twice over: a table that
            // forgets and adds ids doubles once the slots of forgotten ones
            // run out while it is over half full (an endless demo's, at
            // some hour long after its warm-up).
            index: HashMap::with_capacity(keep.map_or(0, |keep| 2 * keep)),
            next_seq: 0,
            due: BinaryHeap::new(),
            ready: BTreeSet::new(),
            finished: VecDeque::with_capacity(keep.map_or(0, |keep| keep + 1)),
            pending: BTreeSet::new(),
            unboosted: BTreeSet::new(),
            observed_queued: BTreeSet::new(),
            focused: Vec::new(),
            active: 0,
            running: 0,
            core_sum: 0.0,
            fresh_sum: 0.0,
            reschedules: 0,
            account_bucket,
            spent_on_screen: account_log.clone(),
            spent_off_screen: account_log.clone(),
            spent_other: account_log.clone(),
            account_log,
            pause_until: None,
            pause_started: None,
            pause_backoff: None,
            pauses: 0,
            requests: 0,
            model,
            processing,
            probe: LimitProbe::new(),
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
            if let Some(job) = self.jobs.get_mut(slot) {
                job.hint.submitted_at = job.hint.submitted_at.or(hint.submitted_at);
                job.hint.audio_duration = job.hint.audio_duration.or(hint.audio_duration);
            }
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.jobs.push(Job {
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
            queued_until: None,
            processing_since: None,
            last_processing: None,
            processing_until: None,
            finished_at: None,
            start_window: None,
            focused: false,
            polls: 0,
            error_streak: 0,
            problem: None,
            not_before: now,
            in_flight: false,
            sent_count: 0,
            limiter: SlidingWindow::new(self.config.per_job_per_minute, PER_JOB_WINDOW),
            generation: 0,
            due: None,
            ready: None,
            core_rate: 0.0,
            fresh_rate: 0.0,
            boosted: false,
            pending: false,
        });
        self.index.insert(id.to_owned(), slot);
        self.active += 1;
        self.reschedule(slot, now, now);
    }

    /// Fills in what `hint` knows and the job's hint does not (a record's
    /// audio duration, read before its outcome is reported, so a finished
    /// job teaches the duration model). Does nothing for an unknown id.
    pub fn fill_hint(&mut self, id: &str, hint: JobHint) {
        let Some(job) = self.index.get(id).and_then(|&slot| self.jobs.get_mut(slot)) else {
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

    /// Stops watching a job.
    pub fn remove_job(&mut self, id: &str) {
        let Some(slot) = self.index.remove(id) else {
            return;
        };
        let Some(job) = self.jobs.take(slot) else {
            return;
        };
        if job.progress() == Progress::Running {
            self.running = self.running.saturating_sub(1);
        }
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
        let woken = self.probe.forget(slot);
        self.wake(woken);
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
        let Some(job) = self.jobs.get_mut(slot) else {
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
            let slot = key.slot;
            let Some(job) = self.jobs.get_mut(slot) else {
                self.ready.remove(&key);
                continue;
            };
            if job.in_flight {
                // Its outcome never came: count it as a network error.
                job.in_flight = false;
                self.ready.remove(&key);
                let woken = self.probe.answered(slot, None);
                self.wake(woken);
                if let Some(job) = self.jobs.get_mut(slot) {
                    job.ready = None;
                }
                self.back_off(slot, JobProblem::NoAnswer, now);
                continue;
            }
            if job.status.is_none() && job.inferred_queued.is_none() && self.infer_queued(slot) {
                self.ready.remove(&key);
                if let Some(job) = self.jobs.get_mut(slot) {
                    job.ready = None;
                }
                self.reschedule(slot, now, now);
                continue;
            }
            let Some(job) = self.jobs.get_mut(slot) else {
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
            let count = job.limiter.count(now).saturating_add(1);
            if self.probe.hold(slot, count) {
                // Another job is finding out whether the platform allows
                // this many polls per job: wait for its answer.
                self.unschedule(slot);
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
            let Some(job) = self.jobs.get_mut(slot) else {
                continue;
            };
            if job.focused {
                self.spent_on_screen.record(now);
            } else {
                self.spent_off_screen.record(now);
            }
            job.ready = None;
            job.limiter.record(now);
            job.sent_count = count;
            job.in_flight = true;
            job.polls = job.polls.saturating_add(1);
            job.last_poll = Some(now);
            let id = job.id.clone();
            self.probe.sent(slot, count);
            let timeout = now + self.config.request_timeout;
            self.set_due(slot, timeout);
            return Decision::Poll(id);
        }
    }

    /// Counts a request the console made for another reason (a submission,
    /// a list) against the account share.
    pub fn record_other_request(&mut self, now: Tick) {
        self.advance(now);
        self.account_bucket.try_take(now);
        self.account_log.record(now);
        self.spent_other.record(now);
    }

    /// Puts jobs held for a probe's answer back in line.
    fn wake(&mut self, slots: Vec<usize>) {
        let now = self.now;
        for slot in slots {
            if self
                .jobs
                .get(slot)
                .is_some_and(|job| !job.in_flight && !job.is_terminal() && job.due.is_none())
            {
                self.set_due(slot, now);
            }
        }
    }

    fn advance(&mut self, now: Tick) {
        self.now = self.now.max(now);
    }
}

#[cfg(test)]
mod tests;
