//! Cadence planning: when a job's next poll is due, from its state (first
//! poll, queued, running near or far from its expected completion), fitted
//! to the account budget and the per-job window.

use super::{Job, Progress, Scheduler, Tick, duration, secs};

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

impl Scheduler {
    /// Expected completion and its spread (seconds) of a running job.
    pub(super) fn completion(&self, job: &Job) -> Option<(Tick, f64)> {
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
        let job = self.jobs.get(slot)?;
        if job.is_terminal() {
            return None;
        }
        if job.boosted {
            return Some(Plan::Once(now));
        }
        match job.progress() {
            Progress::Unknown => Some(Plan::Once(job.added_at.max(job.submitted()))),
            Progress::Queued => {
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
        let Some(job) = self.jobs.get_mut(slot) else {
            return natural;
        };
        self.core_sum += core - job.core_rate;
        self.fresh_sum += fresh - job.fresh_rate;
        job.core_rate = core;
        job.fresh_rate = fresh;
        let focused = job.focused;
        // (A job of known audio has an expected completion to save its
        // per-job window for.)
        let running = job.progress() == Progress::Running && job.hint.audio_duration.is_none();
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
                // Spare: everyone a little more often, and a running job of
                // unknown length never less often than an even split of the
                // supply among the running jobs would poll it (spare budget
                // goes where the changes an operator waits for happen; a
                // queued job keeps backing off, and a completion boosts the
                // head of the queue).
                let scale = ((core_sum + self.fresh_sum) / supply).max(self.config.spare_scale);
                let even = if running {
                    (supply / self.running.max(1) as f64).min(per_job_rate)
                } else {
                    0.0
                };
                (planned / scale).max(even)
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
        for job in self.jobs.iter() {
            if !job.is_terminal() {
                core += job.core_rate;
                fresh += job.fresh_rate;
            }
        }
        self.core_sum = core;
        self.fresh_sum = fresh;
    }

    /// The due time of the job's next poll counted from `base`.
    pub(super) fn plan_due(&mut self, slot: usize, now: Tick, base: Tick) -> Option<Tick> {
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
                // Spread the polls the job's window has left over the time
                // until its oldest poll leaves it, fully from half the
                // window on (less before, so a job's first seconds can be
                // polled closely), so that burst never locks the job out
                // for the rest of the window.
                let job = self.jobs.get(slot)?;
                let (limit, used) = (job.limiter.limit(), job.limiter.count(now));
                let left = limit.saturating_sub(used);
                if let Some(frees_at) = job.limiter.frees_at(now)
                    && left > 0
                {
                    let spread = secs(frees_at.saturating_sub(now)) / f64::from(left);
                    let weight = (2.0 * f64::from(used) / f64::from(limit)).min(1.0);
                    due = due.max(now + duration(spread * weight));
                }
                due
            }
        };
        let job = self.jobs.get(slot)?;
        Some(due.max(job.not_before).max(job.limiter.ready_at(now)))
    }

    /// Plans the job's next poll from `base` (not while one is in flight).
    pub(super) fn reschedule(&mut self, slot: usize, now: Tick, base: Tick) {
        let Some(job) = self.jobs.get(slot) else {
            return;
        };
        if job.in_flight || job.is_terminal() {
            return;
        }
        if let Some(due) = self.plan_due(slot, now, base) {
            self.set_due(slot, due);
        }
    }
}
