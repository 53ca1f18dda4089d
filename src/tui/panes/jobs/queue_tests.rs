use super::*;

fn secs(s: u64) -> Tick {
    Duration::from_secs(s)
}

/// A job as the watcher's polls proved it: queued until `queued`,
/// processing from the first to the last poll in `processing`, finished
/// at `finished`.
fn span(queued: Option<u64>, processing: Option<(u64, u64)>, finished: Option<u64>) -> JobSpan {
    JobSpan {
        added: Tick::ZERO,
        queued_until: queued.map(secs),
        processing: processing.map(|(from, _)| secs(from)),
        processing_until: processing.map(|(_, until)| secs(until)),
        finished: finished.map(secs),
        error: false,
    }
}

/// Six jobs at a concurrency of 2, each 10 s, polled every second: two
/// start at once, the rest wait their turn, one fails.
fn drained() -> Vec<JobSpan> {
    let mut spans = vec![
        span(None, Some((0, 9)), Some(10)),
        span(None, Some((0, 9)), Some(10)),
        span(Some(9), Some((10, 19)), Some(20)),
        span(Some(9), Some((10, 19)), Some(20)),
        span(Some(19), Some((20, 29)), Some(30)),
        span(Some(19), Some((20, 29)), Some(30)),
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
        unknown: 0,
        failed: 0,
    }
}

fn unknown(unknown: u32, counts: QueueCounts) -> QueueCounts {
    QueueCounts { unknown, ..counts }
}

#[test]
fn each_bucket_counts_the_states_polls_proved_in_it() {
    let series = series(&drained(), secs(0), secs(35), 60);
    assert_eq!(series.bucket, secs(1), "36 s fit in 60 one-second buckets");
    assert_eq!(series.counts.len(), 36);
    assert_eq!(series.counts[0], counts(4, 2, 0, 0));
    assert_eq!(
        series.counts[9],
        unknown(2, counts(4, 2, 0, 0)),
        "the last polls at 9 s: at 9.999 s the two running are between polls"
    );
    assert_eq!(series.counts[10], counts(2, 2, 2, 0), "the changes at 10 s");
    assert_eq!(series.counts[20], counts(0, 2, 4, 0));
    assert_eq!(series.counts[29], unknown(2, counts(0, 2, 4, 0)));
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

/// One slot; the first job's finish is seen 5 s late. The second job
/// started in the meantime: it counts only from the poll that saw it, so
/// no moment counts two jobs processing, and the limit reads 1.
#[test]
fn a_finish_seen_late_never_counts_two_jobs_in_one_slot() {
    let spans = vec![
        span(None, Some((0, 4)), Some(9)),
        span(Some(4), Some((6, 8)), Some(10)),
    ];
    let series = series_of(&spans, secs(11), 60);
    assert!(
        series.counts.iter().all(|counts| counts.processing <= 1),
        "{:?}",
        series.counts
    );
    assert_eq!(series.seen_limit, Some(1));
    assert_eq!(
        series.counts[5],
        unknown(1, counts(1, 0, 0, 0)),
        "the first between its last poll and its finish, the second queued until seen started"
    );
    assert_eq!(series.counts[6], unknown(1, counts(0, 1, 0, 0)));
    assert_eq!(series.counts[10], counts(0, 0, 2, 0));
}

#[test]
fn a_longer_watch_takes_longer_buckets_and_keeps_the_newest() {
    let series = series(&drained(), secs(0), secs(35), 10);
    assert_eq!(series.bucket, secs(5), "36 s in at most 10 buckets");
    assert_eq!(series.counts.len(), 8);
    assert_eq!(series.counts[1], unknown(2, counts(4, 2, 0, 0)), "5..10 s");
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
fn one_poll_proves_no_span_and_no_limit_without_processing() {
    // The second job's only poll was sent at 5 s and answered at 6 s: it
    // was processing at some moment between, none is proven.
    let spans = vec![
        span(None, Some((0, 9)), Some(10)),
        span(None, Some((6, 5)), None),
    ];
    let series = series_of(&spans, secs(12), 60);
    assert_eq!(series.counts[6], unknown(1, counts(0, 1, 0, 0)));
    assert_eq!(series.counts[12], unknown(1, counts(0, 0, 1, 0)));
    assert_eq!(series.seen_limit, Some(1));
    // A job never seen processing counts queued, then once finished;
    // nothing says the limit.
    let jumped = vec![span(Some(3), None, Some(4))];
    let series = series_of(&jumped, secs(5), 60);
    assert_eq!(series.counts[3], counts(1, 0, 0, 0));
    assert_eq!(series.counts[4], counts(0, 0, 1, 0));
    assert_eq!(series.seen_limit, None, "nothing seen processing");
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
/// while it waited (last at 8 s) and saw the others first later. A job
/// seen queued was queued since it was added, and so was every job behind
/// it (FIFO) added before that sighting; each until seen started.
#[test]
fn jobs_behind_one_seen_queued_count_as_queued() {
    let mut spans = vec![span(None, Some((0, 9)), Some(10)); 4];
    spans.push(span(Some(8), Some((10, 19)), Some(20)));
    spans.extend(vec![span(None, Some((10, 19)), Some(20)); 3]);
    // Not polled yet at all: queued behind it too.
    spans.extend(vec![span(None, None, None); 4]);
    // One added later: queued from when it was added.
    spans[11].added = secs(5);
    let series = series_of(&spans, secs(12), 60);
    assert_eq!(
        series.counts[2],
        counts(7, 4, 0, 0),
        "since they were added"
    );
    assert_eq!(
        series.counts[5],
        counts(8, 4, 0, 0),
        "the late one from 5 s"
    );
    assert_eq!(
        series.counts[9],
        unknown(4, counts(8, 4, 0, 0)),
        "the running four between their last poll and their finish"
    );
    assert_eq!(
        series.counts[10],
        counts(4, 4, 4, 0),
        "queued until seen started"
    );
    assert_eq!(series.seen_limit, Some(4));
    // Out of order (a later job seen queued first) says nothing of the
    // jobs ahead of it.
    let mut reversed = vec![span(None, Some((6, 6)), None), span(Some(2), None, None)];
    let series = series_of(&reversed, secs(7), 60);
    assert_eq!(series.counts[2], unknown(1, counts(1, 0, 0, 0)));
    reversed.swap(0, 1);
    let series = series_of(&reversed, secs(7), 60);
    assert_eq!(series.counts[2], counts(2, 0, 0, 0), "in order: both");
}
