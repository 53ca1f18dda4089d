//! `cargo bench --bench poller`: earshot's poll scheduler against the
//! fixed-interval pollers of the official SDKs, in simulated time, on a
//! simulated platform that enforces the spec's limits.
//!
//! The platform: pre-recorded jobs run at most `concurrency` at once
//! (`max(5, N/10)`), the rest wait FIFO (spec part 3). A job's processing
//! time is `overhead + ratio × audio duration`, with overhead 0.5–2 s and
//! ratio 0.25 × (0.85–1.15); audio durations are log-uniform between 10 s and
//! 60 min; 3% of jobs end in `error`. Jobs are submitted at random over the
//! first minute. Limits (spec part 8 E), counted exactly, over sliding
//! windows, refused requests included: more than 60 GETs of one transcript in
//! any 60 s → 429 with `Retry-After` (whole seconds until the window has
//! room); more than 20,000 requests of the account in any 300 s → 403.
//! Requests are answered instantly.
//!
//! Pollers: earshot's [`Scheduler`] (default configuration: 2,000 requests
//! per 5 min, 50 polls per job per minute), and fixed pollers at 1 s and 3 s
//! that poll every job from its submission until they see it finish, ignore
//! `Retry-After` and keep going on errors (SDK behaviour).
//!
//! Detection lag: for each real status change (queued → processing,
//! processing → completed/error), the time until the poller first sees that
//! state or a later one. The floor for earshot is the lag that spreading its
//! budget evenly would give: `max(0.5 s, N̄ × 0.15 s / 2)`, where 0.15 s is
//! 300 s / 2,000 requests and N̄ the mean number of unfinished jobs.
//! Each run stops when every change has been seen, or 10 min of simulated
//! time after the last change.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use earshot::api::types::prerecorded::TranscriptStatus;
use earshot::poll::{Decision, JobHint, PollOutcome, Scheduler, SchedulerConfig};

const ACCOUNT_LIMIT: usize = 20_000;
const ACCOUNT_WINDOW: f64 = 300.0;
const JOB_LIMIT: usize = 60;
const JOB_WINDOW: f64 = 60.0;
const SUBMIT_SPREAD: f64 = 60.0;
const TAIL: f64 = 600.0;
/// Job counts, and how many scenarios (seeds) each is averaged over.
const SIZES: [(usize, usize); 4] = [(10, 30), (100, 5), (1_000, 2), (5_000, 1)];

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
        }
    }

    fn changes(&self) -> usize {
        self.jobs.iter().map(|job| job.changes().len()).sum()
    }
}

/// The platform's request counting and the lag bookkeeping.
struct Platform<'a> {
    scenario: &'a Scenario,
    /// Request times in µs (exact window arithmetic).
    account: VecDeque<u64>,
    per_job: Vec<VecDeque<u64>>,
    requests: u64,
    /// Most requests seen in one account window.
    peak: usize,
    too_many: u64,
    forbidden: u64,
    /// Per job: the changes not yet seen.
    unseen: Vec<Vec<(f64, u8)>>,
    unseen_total: usize,
    lags: Vec<f64>,
    /// Lags of queued → processing and of processing → finished.
    start_lags: Vec<f64>,
    end_lags: Vec<f64>,
}

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
            account: VecDeque::new(),
            per_job: vec![VecDeque::new(); scenario.jobs.len()],
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

    fn get(&mut self, job: usize, t: f64) -> Answer {
        self.requests += 1;
        let now = micros(t);
        while self
            .account
            .front()
            .is_some_and(|&sent| sent + micros(ACCOUNT_WINDOW) <= now)
        {
            self.account.pop_front();
        }
        self.account.push_back(now);
        self.peak = self.peak.max(self.account.len());
        let window = &mut self.per_job[job];
        while window
            .front()
            .is_some_and(|&sent| sent + micros(JOB_WINDOW) <= now)
        {
            window.pop_front();
        }
        window.push_back(now);
        if self.account.len() > ACCOUNT_LIMIT {
            self.forbidden += 1;
            return Answer::Forbidden;
        }
        if window.len() > JOB_LIMIT {
            self.too_many += 1;
            let oldest = window[window.len() - JOB_LIMIT - 1];
            let wait = (oldest + micros(JOB_WINDOW)).saturating_sub(now);
            let retry_after = wait.div_ceil(1_000_000).max(1);
            return Answer::TooMany { retry_after };
        }
        let sim = &self.scenario.jobs[job];
        let progress = sim.progress(t);
        let unseen = &mut self.unseen[job];
        let before = unseen.len();
        unseen.retain(|&(at, reached)| {
            if at <= t && reached <= progress {
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
        Answer::Status(sim.status(t))
    }
}

/// What one poller did on one scenario.
struct Run {
    requests: u64,
    peak: usize,
    too_many: u64,
    forbidden: u64,
    lags: Vec<f64>,
    start_lags: Vec<f64>,
    end_lags: Vec<f64>,
    unseen: usize,
    simulated: f64,
    wall: Duration,
    /// earshot's learned ratio, and its expected processing of 10 s, 100 s
    /// and 1,000 s of audio.
    ratio: Option<(f64, [f64; 3])>,
}

impl Run {
    fn percentile(&self, p: f64) -> Option<f64> {
        percentile(&self.lags, p)
    }

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
            (&mut self.start_lags, other.start_lags),
            (&mut self.end_lags, other.end_lags),
        ] {
            mine.extend(theirs);
            mine.sort_by(f64::total_cmp);
        }
        self.ratio = other.ratio.or(self.ratio);
        self
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

fn finish(
    platform: Platform<'_>,
    simulated: f64,
    started: Instant,
    ratio: Option<(f64, [f64; 3])>,
) -> Run {
    let mut lags = platform.lags;
    lags.sort_by(f64::total_cmp);
    let mut start_lags = platform.start_lags;
    start_lags.sort_by(f64::total_cmp);
    let mut end_lags = platform.end_lags;
    end_lags.sort_by(f64::total_cmp);
    Run {
        start_lags,
        end_lags,
        requests: platform.requests,
        peak: platform.peak,
        too_many: platform.too_many,
        forbidden: platform.forbidden,
        unseen: platform.unseen.iter().map(Vec::len).sum(),
        lags,
        simulated,
        wall: started.elapsed(),
        ratio,
    }
}

fn micros(t: f64) -> u64 {
    (t * 1e6).round() as u64
}

fn tick(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}

fn run_earshot(scenario: &Scenario, horizon: f64) -> Run {
    let started = Instant::now();
    let mut platform = Platform::new(scenario);
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Duration::ZERO);
    let ids: Vec<String> = (0..scenario.jobs.len())
        .map(|i| format!("job-{i}"))
        .collect();
    let mut submitted = 0;
    let mut t = 0.0_f64;
    loop {
        while submitted < scenario.jobs.len() && scenario.jobs[submitted].submit <= t {
            let job = &scenario.jobs[submitted];
            let hint = JobHint {
                submitted_at: Some(tick(job.submit)),
                audio_duration: Some(Duration::from_secs_f64(job.audio)),
            };
            scheduler.add_job(&ids[submitted], hint, tick(t));
            submitted += 1;
        }
        let next_submit = scenario.jobs.get(submitted).map(|job| job.submit);
        let wake = match scheduler.next(tick(t)) {
            Decision::Poll(id) => {
                let index: usize = id["job-".len()..].parse().unwrap_or(0);
                let outcome = match platform.get(index, t) {
                    Answer::Status(status) => PollOutcome::Status { status },
                    Answer::TooMany { retry_after } => PollOutcome::RateLimited {
                        retry_after: Duration::from_secs(retry_after),
                    },
                    Answer::Forbidden => PollOutcome::AccountLimited,
                };
                scheduler.on_outcome(&id, outcome, tick(t));
                continue;
            }
            Decision::WaitUntil(at) => Some(at.as_secs_f64()),
            Decision::Idle => None,
        };
        let next = match (wake, next_submit) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        // Guard against a scheduler that asks to wait for the past.
        t = if next > t { next } else { t + 1e-3 };
        if t > horizon || (platform.unseen_total == 0 && submitted == scenario.jobs.len()) {
            break;
        }
    }
    let model = [10, 100, 1_000].map(|audio| {
        scheduler
            .expected_processing(Duration::from_secs(audio))
            .as_secs_f64()
    });
    let ratio = Some((scheduler.learned_ratio(), model));
    finish(platform, t.min(horizon), started, ratio)
}

fn run_fixed(scenario: &Scenario, interval: f64, horizon: f64) -> Run {
    let started = Instant::now();
    let mut platform = Platform::new(scenario);
    // (next poll time in µs, job): the first poll right at submission.
    let mut timers: BinaryHeap<Reverse<(u64, usize)>> = scenario
        .jobs
        .iter()
        .enumerate()
        .map(|(index, job)| Reverse(((job.submit * 1e6) as u64, index)))
        .collect();
    let step = (interval * 1e6) as u64;
    let mut t = 0.0;
    while let Some(Reverse((at, index))) = timers.pop() {
        t = at as f64 / 1e6;
        if t > horizon {
            break;
        }
        let done = match platform.get(index, t) {
            Answer::Status(status) => status.is_terminal(),
            Answer::TooMany { .. } | Answer::Forbidden => false,
        };
        if !done {
            timers.push(Reverse((at + step, index)));
        }
    }
    finish(platform, t.min(horizon), started, None)
}

fn seconds(value: Option<f64>) -> String {
    match value {
        None => "—".to_owned(),
        Some(v) if v < 10.0 => format!("{v:.2} s"),
        Some(v) => format!("{v:.0} s"),
    }
}

fn print_run(name: &str, run: &Run) {
    println!(
        "  {name:<10} {:>9} {:>9} {:>7} {:>9} {:>6} {:>8} {:>8} {:>8} {:>9} {:>8}",
        run.requests,
        run.peak,
        run.too_many,
        run.forbidden,
        run.unseen,
        seconds(run.percentile(0.5)),
        seconds(run.percentile(0.95)),
        seconds(run.lags.last().copied()),
        format!("{:.0} s", run.simulated),
        format!("{:.3} s", run.wall.as_secs_f64()),
    );
}

struct Verdict {
    n: usize,
    clean: bool,
    p50: f64,
    floor: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    println!("earshot poller benchmark: simulated time, answers are instant");
    println!(
        "platform: FIFO queue, concurrency max(5, N/10); processing 0.5–2 s + 0.25 × (0.85–1.15) × \
         audio, audio log-uniform 10 s–60 min, 3% end in error, submissions over the first \
         minute"
    );
    println!(
        "limits: 60 GET/60 s per job (429), 20,000/300 s per account (403); sliding windows, \
         refused requests counted; runs stop 10 min after the last change"
    );
    println!(
        "max/5min: most requests in one 5-minute window; unseen: changes never seen; lag: change \
         to first poll showing it (of the changes seen)"
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
        let floor = (mean_active * 0.15 / 2.0).max(0.5);
        println!(
            "N = {n}: concurrency {concurrency}, {seeds} scenario(s), {changes} changes, last at \
             {last_change:.0} s on average, mean unfinished jobs {mean_active:.1}, earshot floor \
             {floor:.2} s",
        );
        println!(
            "  {:<10} {:>9} {:>9} {:>7} {:>9} {:>6} {:>8} {:>8} {:>8} {:>9} {:>8}",
            "poller",
            "requests",
            "max/5min",
            "429s",
            "403s",
            "unseen",
            "lag p50",
            "lag p95",
            "lag max",
            "simulated",
            "wall",
        );
        let run_all = |poller: &dyn Fn(&Scenario, f64) -> Run| {
            scenarios
                .iter()
                .map(|scenario| poller(scenario, scenario.last_change + TAIL))
                .reduce(Run::merge)
        };
        let Some(earshot) = run_all(&run_earshot) else {
            continue;
        };
        print_run("earshot", &earshot);
        for (name, interval) in [("fixed 1 s", 1.0), ("fixed 3 s", 3.0)] {
            if let Some(run) = run_all(&|scenario, horizon| run_fixed(scenario, interval, horizon))
            {
                print_run(name, &run);
            }
        }
        println!(
            "  earshot lag p50/p95: queued → processing {} / {}, processing → finished {} / {}",
            seconds(percentile(&earshot.start_lags, 0.5)),
            seconds(percentile(&earshot.start_lags, 0.95)),
            seconds(percentile(&earshot.end_lags, 0.5)),
            seconds(percentile(&earshot.end_lags, 0.95)),
        );
        if let Some((ratio, [short, medium, long])) = earshot.ratio {
            println!(
                "  earshot learned {ratio:.3} s per s of audio; expects 10 s / 100 s / 1,000 s of \
                 audio to take {short:.1} / {medium:.1} / {long:.0} s (truth: 3.8 / 26.3 / 251 s)"
            );
        }
        println!();
        verdicts.push(Verdict {
            n,
            clean: earshot.too_many == 0 && earshot.forbidden == 0 && earshot.unseen == 0,
            p50: earshot.percentile(0.5).unwrap_or(f64::INFINITY),
            floor,
        });
    }

    // Throughput: an hour of 1,000 jobs that keep the scheduler busy.
    let scenario = Scenario::new(1_000, 20, 0x0e4d_0001);
    let run = run_earshot(&scenario, 3_600.0);
    println!(
        "throughput: 1,000 jobs (concurrency 20), {:.0} s simulated in {:.3} s wall, {} requests \
         ({:.2} µs per request)",
        run.simulated,
        run.wall.as_secs_f64(),
        run.requests,
        run.wall.as_secs_f64() * 1e6 / run.requests.max(1) as f64,
    );
    println!();

    println!("targets for earshot:");
    let mut all = true;
    for verdict in &verdicts {
        let ratio = verdict.p50 / verdict.floor;
        let ok_clean = verdict.clean;
        let ok_floor = ratio <= 1.3;
        let ok_small = verdict.n != 10 || verdict.p50 <= 1.0;
        all &= ok_clean && ok_floor && ok_small;
        println!(
            "  N = {:>5}: no 429/403, every change seen: {}; p50 {:.2} s = {:.2} × floor {:.2} s \
             (≤ 1.3): {}{}",
            verdict.n,
            yes(ok_clean),
            verdict.p50,
            ratio,
            verdict.floor,
            yes(ok_floor),
            if verdict.n == 10 {
                format!("; p50 ≤ 1 s: {}", yes(ok_small))
            } else {
                String::new()
            },
        );
    }
    println!("  all targets met: {}", yes(all));
}

fn yes(ok: bool) -> &'static str {
    if ok { "yes" } else { "NO" }
}
