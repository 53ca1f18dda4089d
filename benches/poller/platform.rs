//! The simulated platform: the scenario (jobs, their FIFO queue and
//! processing times, from a seeded SplitMix64), the limits it enforces
//! (403 per account, 429 with `Retry-After` per job) and the bookkeeping of
//! which changes a poller has seen, and the simulation's time units.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use earshot_core::api::types::prerecorded::TranscriptStatus;

use crate::{ACCOUNT_LIMIT, ACCOUNT_WINDOW, JOB_LIMIT, JOB_WINDOW, SUBMIT_SPREAD};

/// SplitMix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn uniform(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        low + (high - low) * unit
    }
}

/// One job as the platform runs it (seconds since the start).
#[derive(Clone, Debug)]
pub(crate) struct SimJob {
    pub(crate) submit: f64,
    pub(crate) audio: f64,
    start: f64,
    pub(crate) end: f64,
    pub(crate) error: bool,
}

impl SimJob {
    /// 1 queued, 2 processing, 3 finished.
    fn progress(&self, t: f64) -> u8 {
        if t >= self.end {
            3
        } else if t >= self.start {
            2
        } else {
            1
        }
    }

    pub(crate) fn status(&self, t: f64) -> TranscriptStatus {
        match self.progress(t) {
            1 => TranscriptStatus::Queued,
            2 => TranscriptStatus::Processing,
            _ if self.error => TranscriptStatus::Error,
            _ => TranscriptStatus::Completed,
        }
    }

    /// The changes to detect: (time, progress reached).
    pub(crate) fn changes(&self) -> Vec<(f64, u8)> {
        let mut changes = Vec::with_capacity(2);
        if self.start > self.submit {
            changes.push((self.start, 2));
        }
        changes.push((self.end, 3));
        changes
    }
}

pub(crate) struct Scenario {
    pub(crate) jobs: Vec<SimJob>,
    pub(crate) last_change: f64,
    pub(crate) mean_active: f64,
    pub(crate) seed: u64,
}

impl Scenario {
    pub(crate) fn new(n: usize, concurrency: usize, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let mut submits: Vec<f64> = (0..n).map(|_| rng.uniform(0.0, SUBMIT_SPREAD)).collect();
        submits.sort_by(f64::total_cmp);
        // FIFO with `concurrency` slots: each job in submission order takes
        // the slot that frees first.
        let mut free: BinaryHeap<Reverse<u64>> = (0..concurrency).map(|_| Reverse(0)).collect();
        let mut jobs = Vec::with_capacity(n);
        for submit in submits {
            let audio = (rng.uniform(10f64.ln(), 3600f64.ln())).exp();
            let took = rng.uniform(0.5, 2.0) + audio * 0.25 * rng.uniform(0.85, 1.15);
            let Reverse(slot_free) = free.pop().unwrap_or(Reverse(0));
            let start = submit.max(slot_free as f64 / 1e6);
            let end = start + took;
            free.push(Reverse((end * 1e6).ceil() as u64));
            let error = rng.uniform(0.0, 1.0) < 0.03;
            jobs.push(SimJob {
                submit,
                audio,
                start,
                end,
                error,
            });
        }
        let last_change = jobs.iter().map(|job| job.end).fold(0.0, f64::max);
        // Mean number of unfinished jobs over [0, last_change].
        let active_time: f64 = jobs.iter().map(|job| job.end - job.submit).sum();
        Scenario {
            jobs,
            last_change,
            mean_active: active_time / last_change,
            seed,
        }
    }

    pub(crate) fn changes(&self) -> usize {
        self.jobs.iter().map(|job| job.changes().len()).sum()
    }
}

/// A sliding log of the requests a limit let through, in µs.
#[derive(Clone, Default)]
struct Log(VecDeque<u64>);

impl Log {
    fn forget(&mut self, now: u64, window: u64) {
        while self.0.front().is_some_and(|&sent| sent + window <= now) {
            self.0.pop_front();
        }
    }
}

/// The platform's limits and the lag bookkeeping.
pub(crate) struct Platform<'a> {
    pub(crate) scenario: &'a Scenario,
    account: Log,
    per_job: Vec<Log>,
    pub(crate) requests: u64,
    /// Most requests let through in one account window.
    pub(crate) peak: usize,
    pub(crate) too_many: u64,
    pub(crate) forbidden: u64,
    /// Per job: the changes not yet seen.
    pub(crate) unseen: Vec<Vec<(f64, u8)>>,
    pub(crate) unseen_total: usize,
    pub(crate) lags: Vec<f64>,
    pub(crate) start_lags: Vec<f64>,
    pub(crate) end_lags: Vec<f64>,
}

#[derive(Clone, Debug)]
pub(crate) enum Answer {
    Status(TranscriptStatus),
    TooMany { retry_after: u64 },
    Forbidden,
}

impl<'a> Platform<'a> {
    pub(crate) fn new(scenario: &'a Scenario) -> Self {
        let unseen: Vec<Vec<(f64, u8)>> = scenario.jobs.iter().map(SimJob::changes).collect();
        let unseen_total = unseen.iter().map(Vec::len).sum();
        Platform {
            scenario,
            account: Log::default(),
            per_job: vec![Log::default(); scenario.jobs.len()],
            requests: 0,
            peak: 0,
            too_many: 0,
            forbidden: 0,
            unseen,
            unseen_total,
            lags: Vec::new(),
            start_lags: Vec::new(),
            end_lags: Vec::new(),
        }
    }

    /// A GET reaching the platform at `t`; what it answers.
    pub(crate) fn get(&mut self, job: usize, t: f64) -> Answer {
        self.requests += 1;
        let now = micros(t);
        self.account.forget(now, micros(ACCOUNT_WINDOW));
        if self.account.0.len() >= ACCOUNT_LIMIT {
            self.forbidden += 1;
            return Answer::Forbidden;
        }
        self.account.0.push_back(now);
        self.peak = self.peak.max(self.account.0.len());
        let window = &mut self.per_job[job];
        window.forget(now, micros(JOB_WINDOW));
        if window.0.len() >= JOB_LIMIT {
            self.too_many += 1;
            let oldest = window.0.front().copied().unwrap_or(now);
            let wait = (oldest + micros(JOB_WINDOW)).saturating_sub(now);
            let retry_after = wait.div_ceil(1_000_000).max(1);
            return Answer::TooMany { retry_after };
        }
        window.0.push_back(now);
        Answer::Status(self.scenario.jobs[job].status(t))
    }

    /// The poller holds, at `t`, an answer showing `status` for `job`.
    pub(crate) fn seen(&mut self, job: usize, status: &TranscriptStatus, t: f64) {
        let progress = match status {
            TranscriptStatus::Queued => 1,
            TranscriptStatus::Processing | TranscriptStatus::Other(_) => 2,
            _ => 3,
        };
        let unseen = &mut self.unseen[job];
        let before = unseen.len();
        unseen.retain(|&(at, reached)| {
            if reached <= progress {
                self.lags.push(t - at);
                if reached == 2 {
                    self.start_lags.push(t - at);
                } else {
                    self.end_lags.push(t - at);
                }
                false
            } else {
                true
            }
        });
        self.unseen_total -= before - unseen.len();
    }
}

pub(crate) fn micros(t: f64) -> u64 {
    (t.max(0.0) * 1e6).round() as u64
}

pub(crate) fn tick(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}
