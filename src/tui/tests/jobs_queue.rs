//! The Jobs chart against the emulator over real HTTP: 200 jobs staged on
//! an account that processes 20 at once, watched by the job watcher, whose
//! reports the pane turns into the chart's buckets. The chart must follow
//! the queue draining at the account's concurrency.

use std::time::{Duration, Instant};

use super::support::{Options, start_with, wav};
use crate::tui::app::Outcome;
use crate::tui::panes::Pane;
use crate::tui::panes::jobs::{JobsPane, JobsResult};
use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::poll::schedule::{JobHint, SchedulerConfig};
use earshot_core::poll::watcher::{self, Command, WatchEvent};

const JOBS: usize = 200;
const CONCURRENCY: u32 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_chart_follows_200_jobs_draining_at_the_accounts_concurrency() {
    // Two seconds of audio: half a second of processing in real time.
    let harness = start_with(Options {
        time_scale: 1.0,
        concurrency: CONCURRENCY,
        http_limit: 100_000,
        ..Options::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("job.wav");
    std::fs::write(&path, wav(2.0, None)).expect("the audio file");
    let audio_url = harness
        .client
        .upload_file(&path, |_| {})
        .await
        .expect("the upload")
        .upload_url;
    let mut ids = Vec::with_capacity(JOBS);
    for _ in 0..JOBS {
        let request = NewTranscript {
            audio_url: audio_url.clone(),
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
        let done = matches!(event, WatchEvent::AllDone);
        pane.on_tick(Instant::now(), &mut out);
        pane.on_result(JobsResult::Watch(event), &mut out);
        if done {
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
    assert!(
        counts.iter().all(|c| c.processing <= CONCURRENCY),
        "never more processing than the account's concurrency: {said}"
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
    let last = counts.last().copied().unwrap_or_default();
    assert_eq!(
        (last.queued, last.processing, last.completed, last.error),
        (0, 0, JOBS as u32, 0),
        "{said}"
    );
    let seen = series.seen_limit.unwrap_or(0);
    assert!(
        (1..=CONCURRENCY).contains(&seen),
        "the limit as seen ({seen}) is at most the account's: {said}"
    );
}
