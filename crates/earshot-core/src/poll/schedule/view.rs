//! What the caller sees: a job as a [`JobView`], the account [`Pause`],
//! and the scheduler's counters and learned figures.

use std::time::Duration;

use super::{JobProblem, Progress, Scheduler, Tick, duration, secs};
use crate::api::types::prerecorded::TranscriptStatus;

/// The account share's requests in its window, by what sent them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// Polls of the jobs the front end shows (its focus).
    pub on_screen: u32,
    /// Polls of every other watched job.
    pub off_screen: u32,
    /// The front end's own requests: uploads, job creations, the record
    /// fetched after a webhook said `error`.
    pub other: u32,
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
    /// The latest moment an observation proves it was queued (for a poll:
    /// its sending, as the platform answered at some moment after it).
    pub queued_until: Option<Tick>,
    /// First seen `processing`.
    pub processing_since: Option<Tick>,
    /// The latest moment an observation proves it was processing: from
    /// `processing_since` to here it certainly was; from here to
    /// `finished_at` no observation tells.
    pub processing_until: Option<Tick>,
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

impl Scheduler {
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
        self.jobs
            .range()
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

    /// What spent the account share in its window.
    pub fn spent(&self, now: Tick) -> Spent {
        Spent {
            on_screen: self.spent_on_screen.count(now),
            off_screen: self.spent_off_screen.count(now),
            other: self.spent_other.count(now),
        }
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

    pub(super) fn view(&self, slot: usize, now: Tick) -> Option<JobView> {
        let job = self.jobs.get(slot)?;
        let terminal = job.is_terminal();
        let paused = self.pause_until.is_some_and(|until| now < until);
        let backing_off = job.error_streak > 0 || job.not_before > now || paused;
        let age = now.saturating_sub(job.info_time());
        let stale = !terminal && (backing_off || age > self.config.stale_after);
        let eta = match job.progress() {
            Progress::Running => self.completion(job).map(|(expected, _)| expected),
            _ => None,
        };
        Some(JobView {
            id: job.id.clone(),
            status: job.status.clone(),
            added_at: job.added_at,
            last_seen: job.last_seen,
            queued_since: job.queued_since,
            queued_until: job.queued_until,
            processing_since: job.processing_since,
            processing_until: job.processing_until,
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
}
