//! The Jobs pane's background side against the emulator over real HTTP:
//! the worker uploads a file, creates the job, and its watcher (started on
//! first use) reports the job to the end, with the request budget.

use crate::tui::kernel::ConsoleEffect;
use std::time::Duration;

use super::support::{NoClipboard, start, wav};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::worker::Worker;
use crate::tui::panes::jobs::JobsResult;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::poll::watcher::WatchEvent;
use tokio::sync::mpsc;

#[tokio::test]
async fn a_submitted_file_is_uploaded_created_and_watched_to_the_end() {
    let harness = start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("call.wav");
    std::fs::write(&path, wav(1.0, Some("hello from the jobs pane"))).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard));
    worker.start(Effect::Console(ConsoleEffect::SubmitFile { path }));

    let (mut uploading, mut budget, mut completed) = (false, false, false);
    let mut last_spent = None;
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(action) = rx.recv().await {
            match action {
                Action::Jobs(JobsResult::Uploading { .. }) => uploading = true,
                Action::Jobs(JobsResult::Submitted { result }) => {
                    let id = result.expect("submitted");
                    worker.start(Effect::Console(ConsoleEffect::WatchJobs(vec![id.clone()])));
                    worker.start(Effect::Console(ConsoleEffect::FocusJobs(vec![id])));
                }
                Action::Jobs(JobsResult::Watch(WatchEvent::Budget {
                    used,
                    budget: of,
                    spent,
                })) => {
                    assert!(used >= 1 && of == 2_000, "{used}/{of}");
                    assert_eq!(
                        spent.on_screen + spent.off_screen + spent.other,
                        used,
                        "every request of the share has a spender: {spent:?}"
                    );
                    last_spent = Some(spent);
                    budget = true;
                }
                Action::Jobs(JobsResult::Watch(WatchEvent::Changed { view, .. }))
                    if view.status == Some(TranscriptStatus::Completed) =>
                {
                    completed = true;
                }
                Action::Jobs(JobsResult::Watch(WatchEvent::AllDone)) => break,
                _ => {}
            }
        }
    })
    .await
    .expect("the job finishes within 30 s");
    assert!(uploading, "upload progress was reported");
    assert!(budget, "the budget was reported");
    assert!(completed, "the job completed");
    let spent = last_spent.expect("a breakdown");
    assert_eq!(spent.other, 2, "the upload and the creation: {spent:?}");
    assert!(
        spent.on_screen + spent.off_screen >= 1,
        "the job was polled: {spent:?}"
    );
}

/// The console's own submissions count against the account budget its
/// status bar shows: upload and create are two requests, before any poll.
#[tokio::test]
async fn a_submission_counts_its_two_requests_in_the_budget() {
    let harness = start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("call.wav");
    std::fs::write(&path, wav(1.0, None)).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard));
    worker.start(Effect::Console(ConsoleEffect::SubmitFile { path }));

    let (mut submitted, mut used) = (false, 0);
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(action) = rx.recv().await {
            match action {
                Action::Jobs(JobsResult::Submitted { result }) => {
                    result.expect("submitted");
                    submitted = true;
                }
                Action::Jobs(JobsResult::Watch(WatchEvent::Budget { used: now, .. })) => {
                    used = now;
                }
                _ => {}
            }
            if submitted && used == 2 {
                break;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no budget of 2 after the submission (last: {used})"));
    assert_eq!(used, 2, "no job is watched: only the submission counts");
}
