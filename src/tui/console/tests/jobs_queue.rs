//! The Jobs chart against the emulator over real HTTP: 200 jobs staged on
//! an account that processes 40 at once, watched by the job watcher, whose
//! reports (every poll's) the pane turns into the chart's buckets. The
//! chart must follow the queue draining at the account's concurrency, and
//! never count more jobs processing than the account runs.

use std::time::{Duration, Instant};

use super::support::{Options, start_with, wav};
use crate::tui::kernel::Pane;
use crate::tui::panes::jobs::Outcome;
use crate::tui::panes::jobs::{JobsPane, JobsResult};
use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::poll::schedule::{JobHint, SchedulerConfig};
use earshot_core::poll::watcher::{self, Command, WatchEvent};

const JOBS: usize = 200;
const CONCURRENCY: u32 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_chart_follows_200_jobs_draining_at_the_accounts_concurrency() {
    let harness = start_with(Options {
        time_scale: 1.0,
        concurrency: CONCURRENCY,
        http_limit: 100_000,
        ..Options::default()
    })
    .await;
    // Audio of 8 to 12 s: a quarter of it processing (2 to 3 s), so
    // the jobs do not all finish at once (a slot frees now and then, as in
    // production) and the watcher polls each running job more than once
    // (a job seen processing by one poll only proves no moment of it).
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut audio_urls = Vec::new();
    for (at, seconds) in [8.0, 9.0, 10.0, 11.0, 12.0].into_iter().enumerate() {
        let path = dir.path().join(format!("job{at}.wav"));
        std::fs::write(&path, wav(seconds, None)).expect("the audio file");
        let upload = harness.client.upload_file(&path, |_| {}).await;
        audio_urls.push(upload.expect("the upload").upload_url);
    }
    let mut ids = Vec::with_capacity(JOBS);
    for at in 0..JOBS {
        let request = NewTranscript {
            audio_url: audio_urls[at * 3 % audio_urls.len()].clone(),
            ..NewTranscript::default()
        };
        let job = harness.client.create_transcript(&request).await;
        ids.push(job.expect("the job is created").id);
    }

    let mut pane = JobsPane::new();
    let mut out = Outcome::default();
    pane.add_ids(ids.clone(), &mut out);
    // The console's watcher, with a share this emulator's account allows
    // (the default 2,000 per 5 min would take minutes over 200 jobs).
    let mut watcher = watcher::spawn(
        harness.client.clone(),
        SchedulerConfig {
            account_budget: 60_000,
            account_burst: 200,
            ..SchedulerConfig::default()
        },
    );
    for id in ids {
        let hint = JobHint::default();
        watcher
            .commands
            .send(Command::Add { id, hint })
            .expect("watching");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, watcher.events.recv())
            .await
            .expect("every job finishes within 60 s")
            .expect("the watcher runs");
        // Said once the jobs the watcher has are done: it may not have
        // taken every id yet.
        let done = matches!(event, WatchEvent::AllDone);
        pane.on_tick(Instant::now(), &mut out);
        pane.on_result(JobsResult::Watch(event), &mut out);
        if done && pane.rows().iter().all(|row| row.is_terminal()) {
            break;
        }
    }
    let _ = watcher.commands.send(Command::Stop);

    let series = &pane.queue;
    let counts = &series.counts;
    let text: Vec<String> = counts
        .iter()
        .map(|c| {
            format!(
                "{}q {}p {}c {}e",
                c.queued, c.processing, c.completed, c.error
            )
        })
        .collect();
    let said = format!("one per {:?}: {text:?}", series.bucket);
    assert!(counts.len() >= 3, "the drain spans buckets: {said}");
    let peak = counts.iter().map(|c| c.queued).max().unwrap_or(0);
    assert!(
        peak >= JOBS as u32 / 2,
        "most jobs were seen waiting: {said}"
    );
    // At the account's concurrency while the queue waits, never above it:
    // a job counts as processing only between two polls that saw it so,
    // however late a poll sees it finish.
    assert!(
        counts.iter().all(|c| c.processing <= CONCURRENCY),
        "never more processing than the account's concurrency: {said}"
    );
    assert!(
        counts
            .iter()
            .any(|c| c.queued > 0 && c.processing >= CONCURRENCY),
        "the slots full while jobs wait: {said}"
    );
    let from_peak = counts.iter().skip_while(|c| c.queued < peak);
    assert!(
        from_peak
            .clone()
            .zip(from_peak.skip(1))
            .all(|(before, after)| after.queued <= before.queued),
        "the queue only drains after its peak: {said}"
    );
    assert!(
        counts
            .windows(2)
            .all(|pair| pair[1].completed >= pair[0].completed),
        "completed only grows: {said}"
    );
    // The last bucket may still hold the last jobs' processing (a
    // bucket's most); at its end every job is seen completed.
    let last = counts.last().copied().unwrap_or_default();
    assert_eq!(
        (last.queued, last.completed, last.error, last.unknown),
        (0, JOBS as u32, 0, 0),
        "{said}"
    );
    assert!(
        series.seen_limit.is_some_and(|seen| seen == CONCURRENCY),
        "the full bar is the account's concurrency: {said}"
    );
}
