//! What comes back: a poll's outcome or a webhook applied to a job (status
//! changes, learning from a finished job), and the back-offs after a
//! failed poll or a 403.

use std::time::Duration;

use super::model::Took;
use super::{JobProblem, JobView, PollOutcome, Progress, Scheduler, Tick, duration, secs};
use crate::api::types::prerecorded::TranscriptStatus;

/// A per-job limit learned from a 429 applies to every job only from this
/// value up.
const MIN_SHARED_PER_JOB_LIMIT: u32 = 3;
/// Waited on top of a `Retry-After`, so the retry lands after it.
const RETRY_MARGIN: Duration = Duration::from_millis(100);

impl Scheduler {
    /// Reports how a poll ended. Returns the job when its status changed.
    pub fn on_outcome(&mut self, id: &str, outcome: PollOutcome, now: Tick) -> Option<JobView> {
        self.advance(now);
        let slot = *self.index.get(id)?;
        let job = self.jobs.get_mut(slot)?;
        job.in_flight = false;
        let allowed = matches!(outcome, PollOutcome::Status { .. }).then_some(job.sent_count);
        let woken = self.probe.answered(slot, allowed);
        self.wake(woken);
        let job = self.jobs.get_mut(slot)?;
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
                // The platform answered between the sending and now: the
                // sending is the latest moment the answer proves.
                let proven = sent_at.map_or(now, |sent| sent.min(now));
                self.observe(slot, status, proven, now)
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
        self.observe(slot, status, now, now)
    }

    /// Lowers the per-job limit of every job to `limit` (at least 1; never
    /// raises it).
    fn lower_per_job_limit(&mut self, limit: u32) {
        let limit = limit.max(1);
        if limit >= self.config.per_job_per_minute {
            return;
        }
        self.config.per_job_per_minute = limit;
        for job in self.jobs.iter_mut() {
            job.limiter.set_limit(limit);
        }
    }

    /// Applies a good observation, true of the job at `proven` (a poll's
    /// sending; a webhook's arrival) and learnt at `now`. Returns the job
    /// when its status changed.
    fn observe(
        &mut self,
        slot: usize,
        status: TranscriptStatus,
        proven: Tick,
        now: Tick,
    ) -> Option<JobView> {
        let job = self.jobs.get_mut(slot)?;
        if job.is_terminal() {
            return None;
        }
        let before = job.progress();
        let after = Progress::of(&status);
        if after < before {
            // An answer older than what is known (out of order): ignore it.
            self.reschedule(slot, now, now);
            return None;
        }
        let changed = job.status.as_ref() != Some(&status);
        if (before == Progress::Running) != (after == Progress::Running) {
            if after == Progress::Running {
                self.running += 1;
            } else {
                self.running = self.running.saturating_sub(1);
            }
        }
        let job = self.jobs.get_mut(slot)?;
        job.last_seen = Some(now);
        job.error_streak = 0;
        if job.problem != Some(JobProblem::RateLimited) || job.not_before <= now {
            job.problem = None;
        }
        let seq = job.seq;
        match after {
            Progress::Queued => {
                if job.status != Some(TranscriptStatus::Queued) {
                    job.queued_since = Some(now);
                }
                job.last_queued = Some(now);
                job.queued_until = job.queued_until.max(Some(proven));
                job.status = Some(status);
                self.observed_queued.insert((seq, slot));
                self.enter_pending(slot);
                // A boost that found it still queued: a later slot may be its.
                if let Some(job) = self.jobs.get_mut(slot)
                    && job.boosted
                {
                    job.boosted = false;
                    self.unboosted.insert((seq, slot));
                }
            }
            Progress::Running => {
                if before < Progress::Running {
                    let earliest = job
                        .last_queued
                        .or(job.inferred_queued)
                        .unwrap_or_else(|| job.submitted())
                        .min(now);
                    job.start_window = Some((earliest, now));
                    job.processing_since = Some(now);
                }
                job.last_processing = Some(now);
                job.processing_until = job.processing_until.max(Some(proven));
                job.status = Some(status);
                self.observed_queued.remove(&(seq, slot));
                self.leave_pending(slot);
                if before < Progress::Running {
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
                if before >= Progress::Queued {
                    // A slot has freed: the oldest queued job starts now.
                    self.credit(now);
                }
                if before < Progress::Running {
                    self.fifo_boost(seq, now);
                }
            }
        }
        if after < Progress::Finished {
            // A running job of unknown length (polled at an even share)
            // counts its cadence from the poll's sending, not its answer,
            // so the round trip does not stretch every gap.
            let sent = self
                .jobs
                .get(slot)
                .filter(|job| after == Progress::Running && job.hint.audio_duration.is_none())
                .and_then(|job| job.last_poll)
                .map_or(now, |sent| sent.min(now));
            self.reschedule(slot, now, sent);
        }
        if changed { self.view(slot, now) } else { None }
    }

    /// Learns processing time from a job seen both starting and finishing
    /// (see [`Took::learnable`]).
    fn learn_from(&mut self, slot: usize, now: Tick) {
        let Some(job) = self.jobs.get(slot) else {
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

    /// A job reached `completed` or `error`: it leaves every schedule.
    fn finish(&mut self, slot: usize) {
        let Some(job) = self.jobs.get_mut(slot) else {
            return;
        };
        self.active = self.active.saturating_sub(1);
        self.core_sum -= job.core_rate;
        self.fresh_sum -= job.fresh_rate;
        job.core_rate = 0.0;
        job.fresh_rate = 0.0;
        job.problem = None;
        job.limiter.clear();
        self.unschedule(slot);
        let woken = self.probe.forget(slot);
        self.wake(woken);
        self.forget_finished_beyond_keep(slot);
    }

    /// Remembers that the job in `slot` finished, and forgets the oldest
    /// finished jobs beyond `keep_finished`.
    fn forget_finished_beyond_keep(&mut self, slot: usize) {
        let Some(keep) = self.config.keep_finished else {
            return;
        };
        self.finished.push_back(slot);
        while self.finished.len() > keep {
            let Some(oldest) = self.finished.pop_front() else {
                break;
            };
            if let Some(id) = self
                .jobs
                .get(oldest)
                .filter(|job| job.is_terminal())
                .map(|job| job.id.clone())
            {
                self.remove_job(&id);
            }
        }
    }

    /// A failed poll: back off this job, 1 s doubling, with jitter.
    pub(super) fn back_off(&mut self, slot: usize, problem: JobProblem, now: Tick) {
        let base = secs(self.config.error_backoff);
        let max = secs(self.config.error_backoff_max);
        let jitter = 0.5 + 0.5 * self.rng.f64();
        let Some(job) = self.jobs.get_mut(slot) else {
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
