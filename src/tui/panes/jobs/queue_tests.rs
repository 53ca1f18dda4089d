use super::*;

fn secs(s: u64) -> Tick {
    Duration::from_secs(s)
}

fn span(queued: Option<u64>, processing: Option<u64>, finished: Option<u64>) -> JobSpan {
    JobSpan {
        added: Tick::ZERO,
        queued: queued.map(secs),
        processing: processing.map(secs),
        finished: finished.map(secs),
        error: false,
    }
}

/// Six jobs at a concurrency of 2, each 10 s: two start at once, the rest
/// wait their turn, one fails.
fn drained() -> Vec<JobSpan> {
    let mut spans = vec![
        span(None, Some(0), Some(10)),
        span(None, Some(0), Some(10)),
        span(Some(0), Some(10), Some(20)),
        span(Some(0), Some(10), Some(20)),
        span(Some(0), Some(20), Some(30)),
        span(Some(0), Some(20), Some(30)),
    ];
    spans[5].error = true;
    spans
}

fn counts(queued: u32, processing: u32, completed: u32, error: u32) -> QueueCounts {
    QueueCounts {
        queued,
        processing,
        completed,
        error,
        failed: 0,
    }
}

#[test]
fn each_bucket_counts_the_states_at_its_end() {
    let series = series(&drained(), secs(0), secs(35), 60);
    assert_eq!(series.bucket, secs(1), "36 s fit in 60 one-second buckets");
    assert_eq!(series.counts.len(), 36);
    assert_eq!(series.counts[0], counts(4, 2, 0, 0));
    assert_eq!(series.counts[9], counts(4, 2, 0, 0), "up to 9.999 s");
    assert_eq!(series.counts[10], counts(2, 2, 2, 0), "the change at 10 s");
    assert_eq!(series.counts[20], counts(0, 2, 4, 0));
    assert_eq!(
        series.counts[30],
        QueueCounts {
            failed: 1,
            ..counts(0, 0, 5, 1)
        },
        "the failure in its bucket"
    );
    assert_eq!(series.counts[35], counts(0, 0, 5, 1), "now: failed before");
    assert_eq!(series.seen_limit, Some(2));
}

#[test]
fn a_longer_watch_takes_longer_buckets_and_keeps_the_newest() {
    let series = series(&drained(), secs(0), secs(35), 10);
    assert_eq!(series.bucket, secs(5), "36 s in at most 10 buckets");
    assert_eq!(series.counts.len(), 8);
    assert_eq!(series.counts[1], counts(4, 2, 0, 0), "5..10 s");
    assert_eq!(series.counts[2], counts(2, 2, 2, 0), "10..15 s");
    // An hour later, on the ladder's 10-minute step.
    let late = series_of(&drained(), secs(3_600), 10);
    assert_eq!(late.bucket, secs(600));
    assert_eq!(late.counts.last(), Some(&counts(0, 0, 5, 1)));
    // Starting after the failure: the first bucket does not count it.
    let after = super::series(&drained(), secs(31), secs(40), 60);
    assert_eq!(after.counts[0], counts(0, 0, 5, 1));
}

fn series_of(spans: &[JobSpan], now: Tick, columns: usize) -> QueueSeries {
    series(spans, secs(0), now, columns)
}

#[test]
fn no_job_waiting_says_nothing_of_the_limit() {
    let spans = vec![span(None, Some(0), Some(10)), span(None, Some(5), None)];
    let series = series_of(&spans, secs(12), 60);
    assert_eq!(
        series.seen_limit, None,
        "nothing waited: the limit is not seen"
    );
    assert_eq!(series.counts[12], counts(0, 1, 1, 0));
    // A job never seen queued or processing counts once finished.
    let jumped = vec![span(Some(0), None, Some(4))];
    let series = series_of(&jumped, secs(5), 60);
    assert_eq!(series.counts[3], counts(1, 0, 0, 0));
    assert_eq!(series.counts[4], counts(0, 0, 1, 0));
}

#[test]
fn the_budget_keeps_each_minutes_peak() {
    let mut budget = BudgetMinutes::default();
    assert!(budget.peaks(secs(0), 10).is_empty(), "nothing reported");
    assert!(budget.record(secs(5), 10, 2_000));
    assert!(budget.record(secs(50), 40, 2_000));
    assert!(
        !budget.record(secs(55), 30, 2_000),
        "below the minute's peak"
    );
    assert!(budget.record(secs(185), 90, 2_000));
    assert_eq!(
        budget.peaks(secs(190), 10),
        vec![Some(40), None, None, Some(90)]
    );
    assert_eq!(budget.peaks(secs(250), 2), vec![Some(90), None]);
    for minute in 0..100 {
        budget.record(secs(300 + minute * 60), 1, 2_000);
    }
    assert_eq!(budget.minutes.len(), BUDGET_MINUTES, "bounded");
}

/// Twelve jobs submitted in order; the watcher polled only the fifth
/// while it waited (at 3 s) and saw the others first later: every job
/// after the fifth was queued from 3 s (FIFO) until seen further.
#[test]
fn jobs_behind_one_seen_queued_count_as_queued() {
    let mut spans = vec![span(None, Some(0), Some(10)); 4];
    spans.push(span(Some(3), Some(10), Some(20)));
    spans.extend(vec![span(None, Some(10), Some(20)); 3]);
    // Not polled yet at all: queued behind it too.
    spans.extend(vec![span(None, None, None); 4]);
    // One added later than the sighting: queued from when it was added.
    spans[11].added = secs(5);
    let series = series_of(&spans, secs(12), 60);
    assert_eq!(
        series.counts[2],
        counts(0, 4, 0, 0),
        "nothing seen queued yet"
    );
    assert_eq!(series.counts[3], counts(7, 4, 0, 0));
    assert_eq!(
        series.counts[5],
        counts(8, 4, 0, 0),
        "the late one from 5 s"
    );
    assert_eq!(series.counts[10], counts(4, 4, 4, 0));
    assert_eq!(series.seen_limit, Some(4));
    // Out of order (a later job seen queued first) says nothing of the
    // jobs ahead of it.
    let mut reversed = vec![span(None, Some(6), None), span(Some(2), None, None)];
    let series = series_of(&reversed, secs(7), 60);
    assert_eq!(series.counts[3], counts(1, 0, 0, 0));
    reversed.swap(0, 1);
    let series = series_of(&reversed, secs(7), 60);
    assert_eq!(series.counts[3], counts(2, 0, 0, 0), "in order: both");
}
