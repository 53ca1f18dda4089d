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

/// What the watcher's observations say of one job (times on the
/// watcher's clock). Queued from when the job was added (a job seen
/// queued was queued since it was submitted) until first seen further,
/// if a poll ever proved it queued; processing only from the first answer
/// that said so to the last poll's sending that said so (a poll sees a
/// finish late, and polls of jobs off screen come late under a short
/// budget: the job may have finished and another taken its slot);
/// finished from the answer that said so. From its last processing poll
/// to the answer that said it finished, and before a poll proves any
/// state, the job is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JobSpan {
    /// When it was added to the watch.
    pub(crate) added: Tick,
    /// The last moment it was certainly queued (`None`: never proven).
    pub(crate) queued_until: Option<Tick>,
    /// First answer that said processing.
    pub(crate) processing: Option<Tick>,
    /// The last moment it was certainly processing.
    pub(crate) processing_until: Option<Tick>,
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
            queued_until: view.and_then(|view| view.queued_until),
            processing: view.and_then(|view| view.processing_since),
            processing_until: view.and_then(|view| view.processing_until),
            finished: view.and_then(|view| view.finished_at),
            error: view.is_some_and(|view| view.status == Some(TranscriptStatus::Error)),
        }
    }

    /// When it left the queue at the latest: first seen further.
    fn left(&self) -> Option<Tick> {
        self.processing.or(self.finished)
    }
}

/// The platform starts queued jobs in submission order (spec part 3), as
/// the watcher assumes too: a job seen queued at `t` means every job
/// submitted before `t` and after it was still queued at `t`. `spans` in
/// submission order; each job's last queued moment becomes the later of
/// its own and that inference (from the jobs ahead's own sightings).
fn infer_fifo(spans: &mut [JobSpan]) {
    let mut latest: Option<Tick> = None;
    for span in spans {
        let own = span.queued_until;
        if let Some(ahead) = latest.filter(|ahead| *ahead >= span.added)
            && span.left().is_none_or(|left| ahead < left)
        {
            span.queued_until = span.queued_until.max(Some(ahead));
        }
        latest = latest.max(own);
    }
}

/// Jobs in each state in a bucket, as far as observations prove it:
/// queued and processing the most at one moment of the bucket (its end
/// may fall between two polls), the rest at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QueueCounts {
    pub(crate) queued: u32,
    pub(crate) processing: u32,
    pub(crate) completed: u32,
    pub(crate) error: u32,
    /// Watched jobs in no proven state: between two observations (queued
    /// or processing, processing or finished) or never answered yet.
    pub(crate) unknown: u32,
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
    /// The most jobs certainly processing at one moment: the account's
    /// concurrency is at least this (the platform does not state it).
    /// Never above it, however late polls come; below it when no moment
    /// had every running job seen before and after (short jobs, a short
    /// request budget). `None` before any job was seen processing twice.
    pub(crate) seen_limit: Option<u32>,
}

/// One change of a count, at a time.
#[derive(Clone, Copy, Debug)]
struct Step {
    at: Tick,
    /// Watched, queued, processing, completed, error.
    by: [i64; 5],
}

/// Processing proven `from..=until`: a step up and one down after it
/// (nothing when no moment is proven: one poll, answered after it was
/// sent).
fn processing_steps(steps: &mut Vec<Step>, from: Tick, until: Option<Tick>) {
    let Some(until) = until.filter(|until| *until >= from) else {
        return;
    };
    steps.push(Step {
        at: from,
        by: [0, 0, 1, 0, 0],
    });
    steps.push(Step {
        at: until + Duration::from_nanos(1),
        by: [0, 0, -1, 0, 0],
    });
}

fn steps(spans: &[JobSpan]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(spans.len() * 6);
    for span in spans {
        steps.push(Step {
            at: span.added,
            by: [1, 0, 0, 0, 0],
        });
        if span.queued_until.is_some() {
            steps.push(Step {
                at: span.added,
                by: [0, 1, 0, 0, 0],
            });
            if let Some(left) = span.left() {
                steps.push(Step {
                    at: left.max(span.added),
                    by: [0, -1, 0, 0, 0],
                });
            }
        }
        if let Some(processing) = span.processing {
            processing_steps(&mut steps, processing, span.processing_until);
        }
        if let Some(finished) = span.finished {
            let error = i64::from(span.error);
            steps.push(Step {
                at: finished,
                by: [0, 0, 0, 1 - error, error],
            });
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
/// the bucket length (the newest kept). A job counts as queued when it
/// or a job submitted before it was seen queued after it was added
/// ([`infer_fifo`]).
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
    let mut totals = [0i64; 5];
    let mut next = 0;
    let mut counts = Vec::with_capacity(columns);
    // Walks the changes in time order: each bucket's end takes the counts
    // as of then; the most of each at one moment up to `until` (from the
    // counts carried in) is returned.
    let apply_until = |until: Tick, next: &mut usize, totals: &mut [i64; 5]| {
        let mut most = *totals;
        while let Some(step) = steps.get(*next).filter(|step| step.at <= until) {
            let at = step.at;
            while let Some(step) = steps.get(*next).filter(|step| step.at == at) {
                for (total, by) in totals.iter_mut().zip(step.by) {
                    *total += by;
                }
                *next += 1;
            }
            for (most, total) in most.iter_mut().zip(*totals) {
                *most = (*most).max(total);
            }
        }
        most
    };
    let mut most = 0i64;
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
            let before = apply_until(start - Duration::from_nanos(1), &mut next, &mut totals);
            most = most.max(before[2]);
        }
        let errors_before = totals[4];
        // The counts at the bucket's start (after the changes at that very
        // moment, not before them), then the most of each until its end.
        apply_until(start, &mut next, &mut totals);
        let mut in_bucket = totals;
        let later = apply_until(at, &mut next, &mut totals);
        for (most, later) in in_bucket.iter_mut().zip(later) {
            *most = (*most).max(later);
        }
        most = most.max(in_bucket[2]);
        let [watched, queued, processing, completed, error] = totals;
        counts.push(QueueCounts {
            queued: count(in_bucket[1]),
            processing: count(in_bucket[2]),
            completed: count(completed),
            error: count(error),
            unknown: count(watched - queued - processing - completed - error),
            failed: count(error - errors_before),
        });
    }
    QueueSeries {
        bucket,
        first_index: first,
        counts,
        seen_limit: (most > 0).then(|| count(most)),
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
