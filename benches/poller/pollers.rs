//! The pollers and the loop that drives them: earshot's scheduler
//! (hint-less or hinted), the round robin at earshot's budget, and the
//! fixed-interval pollers of the official SDKs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use earshot_core::poll::{Decision, JobHint, PollOutcome, Scheduler, SchedulerConfig};

use crate::platform::{Answer, Platform, Rng, Scenario, micros, tick};
use crate::report::{Run, finish};
use crate::{ACCOUNT_WINDOW, BUDGET, MAX_IN_FLIGHT, ROUND_ROBIN_PER_JOB, ROUND_TRIP};

/// What a poller wants now.
pub(crate) enum Step {
    Poll(usize),
    WaitUntil(f64),
    Idle,
}

/// A poller driven by [`simulate`].
pub(crate) trait Poller {
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
pub(crate) fn simulate(scenario: &Scenario, poller: &mut dyn Poller, horizon: f64) -> Run {
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

pub(crate) struct Earshot {
    pub(crate) scheduler: Scheduler,
    pub(crate) ids: Vec<String>,
    scenario_audio: Vec<f64>,
    pub(crate) submits: Vec<f64>,
    pub(crate) hinted: bool,
}

impl Earshot {
    pub(crate) fn new(scenario: &Scenario, hinted: bool) -> Self {
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
pub(crate) struct RoundRobin {
    gap: f64,
    per_job_gap: f64,
    next_send: f64,
    /// Unfinished jobs, least recently polled first.
    pub(crate) order: VecDeque<usize>,
    last_poll: Vec<f64>,
    in_flight: Vec<bool>,
    done: Vec<bool>,
}

impl RoundRobin {
    pub(crate) fn new(n: usize) -> Self {
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
pub(crate) struct Fixed {
    pub(crate) interval: f64,
    pub(crate) timers: BinaryHeap<Reverse<(u64, usize)>>,
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
