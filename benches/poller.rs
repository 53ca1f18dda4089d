//! `cargo bench --bench poller`: earshot's poll scheduler as its real
//! callers use it, against a poller that spends the same budget blindly,
//! the fixed-interval pollers of the official SDKs, and a true floor, in
//! simulated time, on a simulated platform that enforces the spec's limits
//! the way the emulator does.
//!
//! The platform: pre-recorded jobs run at most `concurrency` at once
//! (`max(5, N/10)`), the rest wait FIFO (spec part 3). A job's processing
//! time is `overhead + ratio × audio duration`, with overhead 0.5–2 s and
//! ratio 0.25 × (0.85–1.15); audio durations are log-uniform between 10 s and
//! 60 min; 3% of jobs end in `error`. Jobs are submitted at random over the
//! first minute. Every request takes a round trip of 50–150 ms (uniform):
//! the platform answers from the job's state at the middle of it. Limits
//! (spec part 8 E), over sliding windows, counting only the requests a limit
//! lets through (as the emulator does, `src/emulator/limits.rs`): more than
//! 20,000 requests of the account in any 300 s → 403; more than 60 GETs of
//! one transcript in any 60 s → 429 with `Retry-After` (whole seconds until
//! the window has room, so obeying it exactly works). A GET refused with 429
//! has passed the account limit and counts there.
//!
//! Pollers (at most 16 requests in flight, like the watcher, except the
//! fixed ones, which poll every job in its own loop):
//!
//! - **earshot, hint-less** (the headline: what `jobs watch` gets): the
//!   default [`Scheduler`] given bare ids; the only hint is the record's
//!   `audio_duration`, taken (as the watcher does) from the final record
//!   only, the least a platform may show.
//! - **earshot, hinted** (what the console gets for a file it submits): the
//!   submit time and audio duration up front.
//! - **round robin**: the budget-respecting baseline. The same request rate
//!   as earshot's share (2,000 per 5 min: one request every 0.15 s) spent
//!   cycling over the unfinished jobs, each at most 50 times a minute.
//! - **fixed 1 s / 3 s**: every job polled that long after each answer until
//!   it is seen finished, ignoring `Retry-After` and errors (SDK behaviour).
//! - **floor**: a true lower bound for any poller with earshot's budget,
//!   even one that knows when every change happens (see [`floor`]): half
//!   the shortest round trip, more where the changes in a 5-minute window
//!   outnumber what its budget can show.
//!
//! Detection lag: for each real status change (queued → processing,
//! processing → completed/error), the time from the change until the
//! poller holds an answer showing that state or a later one. A change never
//! seen counts with the lag it had when the run stopped ("never" in the
//! max column), so a poller cannot look fast by missing changes. Each run
//! stops 10 min of simulated time after the last change.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use earshot::api::types::prerecorded::TranscriptStatus;
use earshot::poll::{Decision, JobHint, PollOutcome, Scheduler, SchedulerConfig};

const ACCOUNT_LIMIT: usize = 20_000;
const ACCOUNT_WINDOW: f64 = 300.0;
const JOB_LIMIT: usize = 60;
const JOB_WINDOW: f64 = 60.0;
const SUBMIT_SPREAD: f64 = 60.0;
const TAIL: f64 = 600.0;
/// Requests in flight at once, per poller (the watcher's `MAX_IN_FLIGHT`).
const MAX_IN_FLIGHT: usize = 16;
/// Round trip of a request, seconds: uniform in this range.
const ROUND_TRIP: (f64, f64) = (0.05, 0.15);
/// earshot's default share of the account limit, and the round robin's.
const BUDGET: usize = 2_000;
/// The round robin's per-job cap (earshot's default), polls per minute.
const ROUND_ROBIN_PER_JOB: f64 = 50.0;
/// Job counts, and how many scenarios (seeds) each is averaged over.
const SIZES: [(usize, usize); 4] = [(10, 30), (100, 5), (1_000, 2), (10_000, 1)];

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        low + (high - low) * unit
    }
}

/// One job as the platform runs it (seconds since the start).
#[derive(Clone, Debug)]
struct SimJob {
    submit: f64,
    audio: f64,
    start: f64,
    end: f64,
    error: bool,
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

    fn status(&self, t: f64) -> TranscriptStatus {
        match self.progress(t) {
            1 => TranscriptStatus::Queued,
            2 => TranscriptStatus::Processing,
            _ if self.error => TranscriptStatus::Error,
            _ => TranscriptStatus::Completed,
        }
    }

    /// The changes to detect: (time, progress reached).
    fn changes(&self) -> Vec<(f64, u8)> {
        let mut changes = Vec::with_capacity(2);
        if self.start > self.submit {
            changes.push((self.start, 2));
        }
        changes.push((self.end, 3));
        changes
    }
}

struct Scenario {
    jobs: Vec<SimJob>,
    last_change: f64,
    mean_active: f64,
    seed: u64,
}

impl Scenario {
    fn new(n: usize, concurrency: usize, seed: u64) -> Self {
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

    fn changes(&self) -> usize {
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
struct Platform<'a> {
    scenario: &'a Scenario,
    account: Log,
    per_job: Vec<Log>,
    requests: u64,
    /// Most requests let through in one account window.
    peak: usize,
    too_many: u64,
    forbidden: u64,
    /// Per job: the changes not yet seen.
    unseen: Vec<Vec<(f64, u8)>>,
    unseen_total: usize,
    lags: Vec<f64>,
    start_lags: Vec<f64>,
    end_lags: Vec<f64>,
}

#[derive(Clone, Debug)]
enum Answer {
    Status(TranscriptStatus),
    TooMany { retry_after: u64 },
    Forbidden,
}

impl<'a> Platform<'a> {
    fn new(scenario: &'a Scenario) -> Self {
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
    fn get(&mut self, job: usize, t: f64) -> Answer {
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
    fn seen(&mut self, job: usize, status: &TranscriptStatus, t: f64) {
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

/// What a poller wants now.
enum Step {
    Poll(usize),
    WaitUntil(f64),
    Idle,
}

/// A poller driven by [`simulate`].
trait Poller {
    /// Job `job` was submitted at `t` (the poller learns of it at once).
    fn add(&mut self, job: usize, t: f64);
    fn next(&mut self, t: f64) -> Step;
    /// The answer to a poll of `job` arrived at `t`.
    fn answer(&mut self, job: usize, answer: Answer, t: f64);
    /// Requests it keeps in flight at most.
    fn max_in_flight(&self) -> usize {
        MAX_IN_FLIGHT
    }
}

/// Runs `poller` over `scenario` until every change is seen or `horizon`.
fn simulate(scenario: &Scenario, poller: &mut dyn Poller, horizon: f64) -> Run {
    let started = Instant::now();
    let mut platform = Platform::new(scenario);
    // The round trips, the same sequence for every poller.
    let mut trips = Rng(scenario.seed ^ 0x7a11_7a11);
    // (arrival µs, sequence, job, answer)
    let mut answers: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut payloads: HashMap<u64, Answer> = HashMap::new();
    let mut sequence = 0u64;
    let mut submitted = 0;
    let mut t = 0.0_f64;
    loop {
        while let Some(&Reverse((at, seq, job))) = answers.peek() {
            if at > micros(t) {
                break;
            }
            answers.pop();
            let at = at as f64 / 1e6;
            if let Some(answer) = payloads.remove(&seq) {
                if let Answer::Status(status) = &answer {
                    platform.seen(job, status, at);
                }
                poller.answer(job, answer, at);
            }
        }
        while submitted < scenario.jobs.len() && scenario.jobs[submitted].submit <= t {
            poller.add(submitted, t);
            submitted += 1;
        }
        let mut wake = None;
        while answers.len() < poller.max_in_flight() {
            match poller.next(t) {
                Step::Poll(job) => {
                    let trip = trips.uniform(ROUND_TRIP.0, ROUND_TRIP.1);
                    let answer = platform.get(job, t + trip / 2.0);
                    sequence += 1;
                    payloads.insert(sequence, answer);
                    answers.push(Reverse((micros(t + trip), sequence, job)));
                }
                Step::WaitUntil(at) => {
                    wake = Some(at);
                    break;
                }
                Step::Idle => break,
            }
        }
        let candidates = [
            wake,
            answers.peek().map(|Reverse((at, _, _))| *at as f64 / 1e6),
            scenario.jobs.get(submitted).map(|job| job.submit),
        ];
        let Some(next) = candidates.into_iter().flatten().reduce(f64::min) else {
            break;
        };
        // Guard against a poller that asks to wait for the past.
        t = if next > t { next } else { t + 1e-6 };
        if t > horizon || (platform.unseen_total == 0 && submitted == scenario.jobs.len()) {
            break;
        }
    }
    finish(platform, t.min(horizon), started)
}

struct Earshot {
    scheduler: Scheduler,
    ids: Vec<String>,
    scenario_audio: Vec<f64>,
    submits: Vec<f64>,
    hinted: bool,
}

impl Earshot {
    fn new(scenario: &Scenario, hinted: bool) -> Self {
        Earshot {
            scheduler: Scheduler::new(SchedulerConfig::default(), Duration::ZERO),
            ids: (0..scenario.jobs.len())
                .map(|i| format!("job-{i}"))
                .collect(),
            scenario_audio: scenario.jobs.iter().map(|job| job.audio).collect(),
            submits: scenario.jobs.iter().map(|job| job.submit).collect(),
            hinted,
        }
    }

    fn index(id: &str) -> usize {
        id["job-".len()..].parse().unwrap_or(0)
    }
}

impl Poller for Earshot {
    fn add(&mut self, job: usize, t: f64) {
        let hint = if self.hinted {
            JobHint {
                submitted_at: Some(tick(self.submits[job])),
                audio_duration: Some(Duration::from_secs_f64(self.scenario_audio[job])),
            }
        } else {
            JobHint::default()
        };
        self.scheduler.add_job(&self.ids[job], hint, tick(t));
    }

    fn next(&mut self, t: f64) -> Step {
        match self.scheduler.next(tick(t)) {
            Decision::Poll(id) => Step::Poll(Self::index(&id)),
            Decision::WaitUntil(at) => Step::WaitUntil(at.as_secs_f64()),
            Decision::Idle => Step::Idle,
        }
    }

    fn answer(&mut self, job: usize, answer: Answer, t: f64) {
        let id = &self.ids[job];
        let outcome = match answer {
            Answer::Status(status) => {
                if status.is_terminal() {
                    // The record's `audio_duration`, as the watcher reads
                    // it (here only from the final record).
                    let hint = JobHint {
                        submitted_at: None,
                        audio_duration: Some(Duration::from_secs_f64(
                            self.scenario_audio[job].round(),
                        )),
                    };
                    self.scheduler.fill_hint(id, hint);
                }
                PollOutcome::Status { status }
            }
            Answer::TooMany { retry_after } => PollOutcome::RateLimited {
                retry_after: Duration::from_secs(retry_after),
            },
            Answer::Forbidden => PollOutcome::AccountLimited,
        };
        self.scheduler.on_outcome(id, outcome, tick(t));
    }
}

/// The same budget as earshot's share, spent cycling over unfinished jobs.
struct RoundRobin {
    gap: f64,
    per_job_gap: f64,
    next_send: f64,
    /// Unfinished jobs, least recently polled first.
    order: VecDeque<usize>,
    last_poll: Vec<f64>,
    in_flight: Vec<bool>,
    done: Vec<bool>,
}

impl RoundRobin {
    fn new(n: usize) -> Self {
        RoundRobin {
            gap: ACCOUNT_WINDOW / BUDGET as f64,
            per_job_gap: 60.0 / ROUND_ROBIN_PER_JOB,
            next_send: 0.0,
            order: VecDeque::new(),
            last_poll: vec![f64::NEG_INFINITY; n],
            in_flight: vec![false; n],
            done: vec![false; n],
        }
    }
}

impl Poller for RoundRobin {
    fn add(&mut self, job: usize, _t: f64) {
        self.order.push_front(job);
    }

    fn next(&mut self, t: f64) -> Step {
        if self.order.is_empty() {
            return Step::Idle;
        }
        if t < self.next_send {
            return Step::WaitUntil(self.next_send);
        }
        let mut earliest = f64::INFINITY;
        for place in 0..self.order.len() {
            let job = self.order[place];
            if self.in_flight[job] {
                continue;
            }
            let allowed = self.last_poll[job] + self.per_job_gap;
            if allowed > t {
                earliest = earliest.min(allowed);
                continue;
            }
            self.order.remove(place);
            self.order.push_back(job);
            self.in_flight[job] = true;
            self.last_poll[job] = t;
            self.next_send = t + self.gap;
            return Step::Poll(job);
        }
        if earliest.is_finite() {
            Step::WaitUntil(earliest)
        } else {
            // Every job is in flight: an answer wakes the driver.
            Step::Idle
        }
    }

    fn answer(&mut self, job: usize, answer: Answer, _t: f64) {
        self.in_flight[job] = false;
        if let Answer::Status(status) = answer
            && status.is_terminal()
            && !self.done[job]
        {
            self.done[job] = true;
            self.order.retain(|&other| other != job);
        }
    }
}

/// Polls every job `interval` after each answer until it is seen finished.
struct Fixed {
    interval: f64,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Poller for Fixed {
    /// Every job has its own loop (SDK behaviour): no cap.
    fn max_in_flight(&self) -> usize {
        usize::MAX
    }

    fn add(&mut self, job: usize, t: f64) {
        self.timers.push(Reverse((micros(t), job)));
    }

    fn next(&mut self, t: f64) -> Step {
        match self.timers.peek() {
            Some(&Reverse((at, job))) if at <= micros(t) => {
                self.timers.pop();
                Step::Poll(job)
            }
            Some(&Reverse((at, _))) => Step::WaitUntil(at as f64 / 1e6),
            None => Step::Idle,
        }
    }

    fn answer(&mut self, job: usize, answer: Answer, t: f64) {
        let done = matches!(&answer, Answer::Status(status) if status.is_terminal());
        if !done {
            self.timers.push(Reverse((micros(t + self.interval), job)));
        }
    }
}

/// The floor: a lower bound on the lags of any poller with earshot's
/// budget and these round trips, however much it knows. An answer comes
/// back at least half the shortest round trip after the platform read the
/// state, and one request shows one job, so at most two changes. Within a
/// 300 s window, the changes in its first `300 − x` seconds can only be seen
/// within `x` by requests inside the window, at most 2 × budget of them; the
/// surplus, summed over a tiling of windows (the best of five offsets),
/// must wait longer than `x`. That gives, for each `k`, a lag the `k`-th
/// largest cannot be below; the rest get the round trip's half.
fn floor(scenario: &Scenario) -> Run {
    let started = Instant::now();
    let mut changes: Vec<f64> = scenario
        .jobs
        .iter()
        .flat_map(|job| job.changes().into_iter().map(|(at, _)| at))
        .collect();
    changes.sort_by(f64::total_cmp);
    let capacity = 2 * BUDGET;
    // Changes that must wait longer than `x`.
    let surplus = |x: f64| -> usize {
        (0..5)
            .map(|offset| {
                let offset = -(offset as f64) * ACCOUNT_WINDOW / 5.0;
                let mut total = 0;
                let mut from = offset;
                while from <= scenario.last_change {
                    let lo = changes.partition_point(|&at| at < from);
                    let hi = changes.partition_point(|&at| at <= from + ACCOUNT_WINDOW - x);
                    total += hi.saturating_sub(lo).saturating_sub(capacity);
                    from += ACCOUNT_WINDOW;
                }
                total
            })
            .max()
            .unwrap_or(0)
    };
    let half_trip = ROUND_TRIP.0 / 2.0;
    let mut lags = vec![half_trip; changes.len()];
    // Largest first: lags[len - k] ≥ x for every k ≤ surplus(x).
    let mut x = 0.0;
    while x < ACCOUNT_WINDOW {
        let must_wait = surplus(x).min(changes.len());
        for k in 1..=must_wait {
            let slot = changes.len() - k;
            lags[slot] = lags[slot].max(half_trip + x);
        }
        if must_wait == 0 {
            break;
        }
        x += 0.5;
    }
    lags.sort_by(f64::total_cmp);
    Run {
        requests: 0,
        peak: 0,
        too_many: 0,
        forbidden: 0,
        lags: lags.clone(),
        lags_all: lags,
        start_lags: Vec::new(),
        end_lags: Vec::new(),
        unseen: 0,
        simulated: scenario.last_change,
        wall: started.elapsed(),
    }
}

/// What one poller did on one scenario.
struct Run {
    requests: u64,
    peak: usize,
    too_many: u64,
    forbidden: u64,
    /// Lags of the changes seen.
    lags: Vec<f64>,
    /// Lags of every change, an unseen one counting until the run stopped.
    lags_all: Vec<f64>,
    start_lags: Vec<f64>,
    end_lags: Vec<f64>,
    unseen: usize,
    simulated: f64,
    wall: Duration,
}

impl Run {
    /// Adds another scenario's run to this one.
    fn merge(mut self, other: Run) -> Run {
        self.requests += other.requests;
        self.peak = self.peak.max(other.peak);
        self.too_many += other.too_many;
        self.forbidden += other.forbidden;
        self.unseen += other.unseen;
        self.simulated += other.simulated;
        self.wall += other.wall;
        for (mine, theirs) in [
            (&mut self.lags, other.lags),
            (&mut self.lags_all, other.lags_all),
            (&mut self.start_lags, other.start_lags),
            (&mut self.end_lags, other.end_lags),
        ] {
            mine.extend(theirs);
            mine.sort_by(f64::total_cmp);
        }
        self
    }

    fn p(&self, p: f64) -> f64 {
        percentile(&self.lags_all, p).unwrap_or(f64::NAN)
    }
}

/// `p`-quantile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    Some(sorted[rank])
}

fn finish(platform: Platform<'_>, stopped: f64, started: Instant) -> Run {
    let sorted = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values
    };
    let mut lags_all = platform.lags.clone();
    for unseen in &platform.unseen {
        lags_all.extend(unseen.iter().map(|&(at, _)| (stopped - at).max(0.0)));
    }
    Run {
        requests: platform.requests,
        peak: platform.peak,
        too_many: platform.too_many,
        forbidden: platform.forbidden,
        unseen: platform.unseen.iter().map(Vec::len).sum(),
        lags: sorted(platform.lags),
        lags_all: sorted(lags_all),
        start_lags: sorted(platform.start_lags),
        end_lags: sorted(platform.end_lags),
        simulated: stopped,
        wall: started.elapsed(),
    }
}

fn micros(t: f64) -> u64 {
    (t.max(0.0) * 1e6).round() as u64
}

fn tick(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}

fn seconds(value: Option<f64>) -> String {
    match value {
        None => "—".to_owned(),
        Some(v) if v < 10.0 => format!("{v:.2} s"),
        Some(v) => format!("{v:.0} s"),
    }
}

fn print_header() {
    println!(
        "  {:<18} {:>9} {:>8} {:>7} {:>7} {:>6} {:>8} {:>8} {:>9} {:>12} {:>7}",
        "poller",
        "requests",
        "max/5min",
        "429s",
        "403s",
        "unseen",
        "lag p50",
        "lag p95",
        "lag max",
        "p50/p95 ÷ RR",
        "wall",
    );
}

fn print_run(name: &str, run: &Run, reference: Option<&Run>) {
    let max = if run.unseen > 0 {
        "never".to_owned()
    } else {
        seconds(run.lags_all.last().copied())
    };
    let ratio = match reference {
        Some(reference) => format!(
            "{:.2} / {:.2}",
            run.p(0.5) / reference.p(0.5),
            run.p(0.95) / reference.p(0.95)
        ),
        None => "—".to_owned(),
    };
    println!(
        "  {name:<18} {:>9} {:>8} {:>7} {:>7} {:>6} {:>8} {:>8} {:>9} {:>12} {:>7}",
        run.requests,
        run.peak,
        run.too_many,
        run.forbidden,
        run.unseen,
        seconds(Some(run.p(0.5))),
        seconds(Some(run.p(0.95))),
        max,
        ratio,
        format!("{:.2} s", run.wall.as_secs_f64()),
    );
}

struct Verdict {
    n: usize,
    clean: bool,
    p50_vs_rr: f64,
    p95_vs_rr: f64,
    p50_vs_floor: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    println!("earshot poller benchmark: simulated time, round trips of 50–150 ms");
    println!(
        "platform: FIFO queue, concurrency max(5, N/10); processing 0.5–2 s + 0.25 × (0.85–1.15) × \
         audio, audio log-uniform 10 s–60 min, 3% end in error, submissions over the first \
         minute"
    );
    println!(
        "limits: 60 GET/60 s per job (429 + Retry-After), 20,000/300 s per account (403); sliding \
         windows counting only what a limit let through (as the emulator); runs stop 10 min after \
         the last change"
    );
    println!(
        "lag: change to the answer that shows it; an unseen change counts until the run stopped \
         (max \"never\"); RR: round robin at earshot's budget (2,000 per 5 min)"
    );
    println!();
    let mut verdicts = Vec::new();
    for (size, &(n, seeds)) in SIZES.iter().enumerate() {
        let concurrency = (n / 10).max(5);
        let scenarios: Vec<Scenario> = (0..seeds)
            .map(|seed| Scenario::new(n, concurrency, 0xbe9c_4000 + (size * 1_000 + seed) as u64))
            .collect();
        let changes: usize = scenarios.iter().map(Scenario::changes).sum();
        let mean_active = scenarios.iter().map(|s| s.mean_active).sum::<f64>() / seeds as f64;
        let last_change = scenarios.iter().map(|s| s.last_change).sum::<f64>() / seeds as f64;
        let blind = mean_active * (ACCOUNT_WINDOW / BUDGET as f64) / 2.0;
        println!(
            "N = {n}: concurrency {concurrency}, {seeds} scenario(s), {changes} changes, last at \
             {last_change:.0} s on average, mean unfinished jobs {mean_active:.1} (a blind even \
             spread of the budget would average {blind:.2} s)",
        );
        print_header();
        let run_all = |make: &dyn Fn(&Scenario) -> Box<dyn Poller>| {
            scenarios
                .iter()
                .map(|scenario| {
                    let mut poller = make(scenario);
                    simulate(scenario, poller.as_mut(), scenario.last_change + TAIL)
                })
                .reduce(Run::merge)
        };
        let Some(round_robin) = run_all(&|s| Box::new(RoundRobin::new(s.jobs.len()))) else {
            continue;
        };
        let Some(hintless) = run_all(&|s| Box::new(Earshot::new(s, false))) else {
            continue;
        };
        let Some(hinted) = run_all(&|s| Box::new(Earshot::new(s, true))) else {
            continue;
        };
        let Some(bound) = scenarios.iter().map(floor).reduce(Run::merge) else {
            continue;
        };
        print_run("earshot hint-less", &hintless, Some(&round_robin));
        print_run("earshot hinted", &hinted, Some(&round_robin));
        print_run("round robin (RR)", &round_robin, Some(&round_robin));
        for (name, interval) in [("fixed 1 s", 1.0), ("fixed 3 s", 3.0)] {
            if let Some(run) = run_all(&|_| {
                Box::new(Fixed {
                    interval,
                    timers: BinaryHeap::new(),
                })
            }) {
                print_run(name, &run, Some(&round_robin));
            }
        }
        print_run("floor (bound)", &bound, Some(&round_robin));
        for (name, run) in [("hint-less", &hintless), ("hinted", &hinted)] {
            println!(
                "  earshot {name}: p50 {:.1} × floor; queued → processing p50/p95 {} / {}, \
                 processing → finished {} / {}",
                run.p(0.5) / bound.p(0.5),
                seconds(percentile(&run.start_lags, 0.5)),
                seconds(percentile(&run.start_lags, 0.95)),
                seconds(percentile(&run.end_lags, 0.5)),
                seconds(percentile(&run.end_lags, 0.95)),
            );
        }
        println!();
        verdicts.push(Verdict {
            n,
            clean: hintless.too_many == 0 && hintless.forbidden == 0 && hintless.unseen == 0,
            p50_vs_rr: hintless.p(0.5) / round_robin.p(0.5),
            p95_vs_rr: hintless.p(0.95) / round_robin.p(0.95),
            p50_vs_floor: hintless.p(0.5) / bound.p(0.5),
        });
    }

    // Throughput: an hour of 1,000 jobs that keep the scheduler busy.
    let scenario = Scenario::new(1_000, 20, 0x0e4d_0001);
    let mut earshot = Earshot::new(&scenario, false);
    let run = simulate(&scenario, &mut earshot, 3_600.0);
    println!(
        "throughput: 1,000 jobs (concurrency 20), {:.0} s simulated in {:.3} s wall, {} requests \
         ({:.2} µs per request, simulator included)",
        run.simulated,
        run.wall.as_secs_f64(),
        run.requests,
        run.wall.as_secs_f64() * 1e6 / run.requests.max(1) as f64,
    );
    println!();

    println!("earshot hint-less (what `jobs watch` gets) against the same budget spent blindly:");
    let mut all = true;
    for verdict in &verdicts {
        let ok = verdict.clean && verdict.p50_vs_rr <= 1.0 && verdict.p95_vs_rr <= 1.0;
        all &= ok;
        println!(
            "  N = {:>6}: no 429/403 and every change seen: {}; p50 {:.2} × RR, p95 {:.2} × RR \
             (both ≤ 1: {}); p50 {:.1} × the floor",
            verdict.n,
            yes(verdict.clean),
            verdict.p50_vs_rr,
            verdict.p95_vs_rr,
            yes(verdict.p50_vs_rr <= 1.0 && verdict.p95_vs_rr <= 1.0),
            verdict.p50_vs_floor,
        );
    }
    println!("  all met: {}", yes(all));
}

fn yes(ok: bool) -> &'static str {
    if ok { "yes" } else { "NO" }
}
