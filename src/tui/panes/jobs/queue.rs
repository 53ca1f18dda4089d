//! The watched jobs' queue over time, as the Jobs chart draws it: per time
//! bucket, how many jobs were queued, processing, completed and failed at
//! the bucket's end (the newest bucket: now), the account's concurrency as
//! the watcher saw it, and the request budget's peak per minute. Built from
//! the times the watcher first saw each state ([`JobView`]), so it holds
//! no more than the pane's rows ([`super::ROWS_MAX`]). Pure: no clock, no
//! I/O; the pane passes its [`Tick`].

use std::collections::VecDeque;
use std::time::Duration;

use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::poll::Tick;
use earshot_core::poll::schedule::JobView;

/// Buckets the model keeps at most (the chart merges them to its width).
pub(crate) const COLUMNS_MAX: usize = 60;

/// Bucket lengths, shortest first: the shortest that covers the watch in
/// at most [`COLUMNS_MAX`] buckets is used.
const LADDER_SECS: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 21_600, 86_400,
];

/// Minutes of the request budget kept.
pub(crate) const BUDGET_MINUTES: usize = 60;

/// One job's states as first seen (times on the watcher's clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JobSpan {
    /// When it was added to the watch.
    pub(crate) added: Tick,
    pub(crate) queued: Option<Tick>,
    pub(crate) processing: Option<Tick>,
    pub(crate) finished: Option<Tick>,
    /// It ended `error` (else `completed`, once finished).
    pub(crate) error: bool,
}

impl JobSpan {
    /// A job added at `added`, as the watcher last reported it (`None`
    /// before its first report).
    pub(crate) fn of(added: Tick, view: Option<&JobView>) -> JobSpan {
        JobSpan {
            added,
            queued: view.and_then(|view| view.queued_since),
            processing: view.and_then(|view| view.processing_since),
            finished: view.and_then(|view| view.finished_at),
            error: view.is_some_and(|view| view.status == Some(TranscriptStatus::Error)),
        }
    }
}

/// The platform starts queued jobs in submission order (spec part 3), as
/// the watcher assumes too: a job seen queued at `t` means every job
/// submitted after it was queued at `t` as well, if it was not seen in a
/// later state by then. `spans` in submission order; each job's queued
/// start becomes the earlier of its own sighting and that inference.
fn infer_fifo(spans: &mut [JobSpan]) {
    let mut earliest: Option<Tick> = None;
    for span in spans {
        let seen_queued = span.queued;
        if let Some(ahead) = earliest {
            let inferred = ahead.max(span.added);
            let left = span.processing.or(span.finished);
            if left.is_none_or(|left| inferred < left) {
                span.queued = Some(span.queued.map_or(inferred, |own| own.min(inferred)));
            }
        }
        if let Some(queued) = seen_queued {
            earliest = Some(earliest.map_or(queued, |ahead| ahead.min(queued)));
        }
    }
}

/// Jobs in each state at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QueueCounts {
    pub(crate) queued: u32,
    pub(crate) processing: u32,
    pub(crate) completed: u32,
    pub(crate) error: u32,
    /// Jobs that ended `error` within the bucket (`error` counts them all).
    pub(crate) failed: u32,
}

/// The queue over time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct QueueSeries {
    /// Each bucket's length.
    pub(crate) bucket: Duration,
    /// The first bucket's number (its start over `bucket`).
    pub(crate) first_index: u64,
    /// The counts at each bucket's end, oldest first (the last: at `now`).
    pub(crate) counts: Vec<QueueCounts>,
    /// The most jobs processing at a bucket's end while another waited
    /// queued: the account's concurrency as far as the watcher saw (the
    /// platform does not state it; FIFO starts a queued job as soon as a
    /// slot frees). Polls see a finish late, so under a short request
    /// budget it can read above the account's limit.
    pub(crate) seen_limit: Option<u32>,
}

/// One change of a count, at a time.
#[derive(Clone, Copy, Debug)]
struct Step {
    at: Tick,
    queued: i64,
    processing: i64,
    completed: i64,
    error: i64,
}

fn steps(spans: &[JobSpan]) -> Vec<Step> {
    let step = |at, queued, processing, completed, error| Step {
        at,
        queued,
        processing,
        completed,
        error,
    };
    let mut steps = Vec::with_capacity(spans.len() * 4);
    for span in spans {
        if let Some(queued) = span.queued {
            steps.push(step(queued, 1, 0, 0, 0));
            if let Some(left) = span.processing.or(span.finished) {
                steps.push(step(left.max(queued), -1, 0, 0, 0));
            }
        }
        if let Some(processing) = span.processing {
            steps.push(step(processing, 0, 1, 0, 0));
            if let Some(finished) = span.finished {
                steps.push(step(finished.max(processing), 0, -1, 0, 0));
            }
        }
        if let Some(finished) = span.finished {
            let error = i64::from(span.error);
            steps.push(step(finished, 0, 0, 1 - error, error));
        }
    }
    steps.sort_by_key(|step| step.at);
    steps
}

fn count(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// The shortest bucket on the ladder that covers `span` in `columns`.
fn bucket_for(span: Duration, columns: usize) -> Duration {
    let columns = u64::try_from(columns.max(1)).unwrap_or(u64::MAX);
    let secs = LADDER_SECS
        .iter()
        .copied()
        .find(|secs| secs.saturating_mul(columns) > span.as_secs())
        .unwrap_or(LADDER_SECS[LADDER_SECS.len() - 1]);
    Duration::from_secs(secs)
}

/// The queue of `spans` (in submission order) from `since` (when the
/// first job was added) to `now`, in at most `columns` buckets aligned on
/// the bucket length (the newest kept). A job is queued from when it or a
/// job submitted before it was seen queued ([`infer_fifo`]).
pub(crate) fn series(spans: &[JobSpan], since: Tick, now: Tick, columns: usize) -> QueueSeries {
    let mut spans = spans.to_vec();
    infer_fifo(&mut spans);
    let spans = spans.as_slice();
    let columns = columns.max(1);
    let since = since.min(now);
    let bucket = bucket_for(now - since, columns);
    let index = |at: Tick| (at.as_nanos() / bucket.as_nanos().max(1)) as u64;
    let last = index(now);
    let first = index(since).max(last.saturating_sub(columns as u64 - 1));
    let steps = steps(spans);
    let mut totals = [0i64; 4];
    let mut next = 0;
    let mut counts = Vec::with_capacity(columns);
    // Walks the changes in time order: each bucket's end takes the counts
    // as of then.
    let apply_until = |until: Tick, next: &mut usize, totals: &mut [i64; 4]| {
        while let Some(step) = steps.get(*next).filter(|step| step.at <= until) {
            let at = step.at;
            while let Some(step) = steps.get(*next).filter(|step| step.at == at) {
                totals[0] += step.queued;
                totals[1] += step.processing;
                totals[2] += step.completed;
                totals[3] += step.error;
                *next += 1;
            }
        }
    };
    for column in first..=last {
        let end = Duration::from_nanos(
            u64::try_from(bucket.as_nanos() * u128::from(column + 1)).unwrap_or(u64::MAX),
        );
        // A change at a bucket's boundary belongs to the next bucket.
        let at = if column == last {
            now
        } else {
            end.saturating_sub(Duration::from_nanos(1))
        };
        // What failed before the first bucket is not its own.
        let start = end.saturating_sub(bucket);
        if column == first && !start.is_zero() {
            apply_until(start - Duration::from_nanos(1), &mut next, &mut totals);
        }
        let errors_before = totals[3];
        apply_until(at, &mut next, &mut totals);
        counts.push(QueueCounts {
            queued: count(totals[0]),
            processing: count(totals[1]),
            completed: count(totals[2]),
            error: count(totals[3]),
            failed: count(totals[3] - errors_before),
        });
    }
    // Read at the buckets' ends as the chart is: a poll that sees a
    // finish late counts the job a moment beside the one in its slot.
    let seen_limit = counts
        .iter()
        .filter(|counts| counts.queued > 0 && counts.processing > 0)
        .map(|counts| counts.processing)
        .max();
    QueueSeries {
        bucket,
        first_index: first,
        counts,
        seen_limit,
    }
}

/// The request budget per minute: the most requests of the account share
/// its window held during each minute, against the share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BudgetMinutes {
    /// `(minute since the watcher started, peak used)`, oldest first.
    pub(crate) minutes: VecDeque<(u64, u32)>,
    /// The share (requests per window), as last reported.
    pub(crate) limit: u32,
}

impl BudgetMinutes {
    /// The watcher reported `used` of `limit` at `at`; whether a minute's
    /// figure changed.
    pub(crate) fn record(&mut self, at: Tick, used: u32, limit: u32) -> bool {
        let minute = at.as_secs() / 60;
        self.limit = limit;
        match self.minutes.back_mut() {
            Some((last, peak)) if *last == minute => {
                let changed = used > *peak;
                *peak = (*peak).max(used);
                changed
            }
            _ => {
                self.minutes.push_back((minute, used));
                while self.minutes.len() > BUDGET_MINUTES {
                    self.minutes.pop_front();
                }
                true
            }
        }
    }

    /// The peaks of the minutes up to `now`, oldest first, a minute with
    /// no report read as `None` (at most `columns`, the newest kept).
    pub(crate) fn peaks(&self, now: Tick, columns: usize) -> Vec<Option<u32>> {
        let Some(&(first, _)) = self.minutes.front() else {
            return Vec::new();
        };
        let last = now.as_secs() / 60;
        let first = first.max(last.saturating_sub(columns.max(1) as u64 - 1));
        (first..=last)
            .map(|minute| {
                self.minutes
                    .iter()
                    .find(|(at, _)| *at == minute)
                    .map(|(_, peak)| *peak)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
