//! The Jobs pane: every kind of row with the budget gauge, the paused
//! banner, and the colours of error and stale rows.

use crate::tui::kernel::Handover;
use std::time::Duration;

use crate::tui::console::action::Action;
use crate::tui::console::app::App;
use crate::tui::panes::jobs::JobsResult;
use crate::tui::theme::Role;
use earshot_core::api::types::prerecorded::{Transcript, TranscriptStatus};
use earshot_core::poll::schedule::{JobProblem, JobView};
use earshot_core::poll::watcher::WatchEvent;
use serde_json::Map;

use super::{app, cells, colour, fg_at, find, keys, render, screen_text, snapshot};

pub(super) fn secs(n: u64) -> Option<Duration> {
    Some(Duration::from_secs(n))
}

pub(super) fn view(id: &str, status: TranscriptStatus) -> JobView {
    JobView {
        id: id.into(),
        status: Some(status),
        added_at: Duration::ZERO,
        last_seen: secs(90),
        queued_since: secs(1),
        queued_until: None,
        processing_since: None,
        processing_until: None,
        finished_at: None,
        next_poll: None,
        in_flight: false,
        stale: false,
        polls: 3,
        error_streak: 0,
        focused: true,
        eta: None,
        problem: None,
        retry_at: None,
    }
}

fn record(
    id: &str,
    status: TranscriptStatus,
    hook: Option<u16>,
    error: Option<&str>,
) -> Box<Transcript> {
    Box::new(Transcript {
        id: id.into(),
        status,
        text: None,
        error: error.map(str::to_owned),
        webhook_status_code: hook,
        extra: Map::new(),
    })
}

pub(super) fn watch(app: &mut App, event: WatchEvent) {
    app.update(Action::Jobs(JobsResult::Watch(event)));
}

pub(super) fn changed(app: &mut App, view: JobView, transcript: Option<Box<Transcript>>) {
    watch(app, WatchEvent::Changed { view, transcript });
}

/// `view` changed, with the job's record as the watcher read it (same
/// id and status).
fn changed_with_record(app: &mut App, view: JobView, hook: Option<u16>, error: Option<&str>) {
    let status = view.status.clone().expect("a view with a status");
    let transcript = record(&view.id, status, hook, error);
    changed(app, view, Some(transcript));
}

/// Every row added at 09:25:18 UTC, 95 s before the fixed time the
/// fixtures draw at, and the queue's buckets as of the pane's clock.
pub(super) fn fix_clock(app: &mut App) {
    let fixed_ms = super::fixed_local_time().timestamp_millis();
    for row in app.panes.jobs.rows_mut() {
        row.added_ms = fixed_ms - 95_000;
    }
    app.panes.jobs.refresh_queue();
}

pub(super) fn jobs_app() -> App {
    let mut app = app();
    app.seed(Handover::JobIds(vec![
        "5d0c7e1a-queued".into(),
        "8b2f4c9e-processing".into(),
        "c41a7d03-completed".into(),
        "e9f2b6d8-error".into(),
        "a7c3e5f1-stale".into(),
        "0f6d2b4a-new".into(),
    ]));
    let mut queued = view("5d0c7e1a-queued", TranscriptStatus::Queued);
    queued.added_at = Duration::from_secs(30);
    queued.queued_since = secs(31);
    queued.queued_until = secs(90);
    changed_with_record(&mut app, queued, None, None);
    let mut processing = view("8b2f4c9e-processing", TranscriptStatus::Processing);
    processing.processing_since = secs(12);
    processing.processing_until = secs(90);
    changed(&mut app, processing, None);
    let mut completed = view("c41a7d03-completed", TranscriptStatus::Completed);
    completed.processing_since = secs(4);
    completed.processing_until = secs(46);
    completed.finished_at = secs(47);
    changed_with_record(&mut app, completed, Some(200), None);
    let mut error = view("e9f2b6d8-error", TranscriptStatus::Error);
    error.processing_since = secs(3);
    error.processing_until = secs(8);
    error.finished_at = secs(9);
    let decode_error = "audio could not be decoded: unsupported codec";
    changed_with_record(&mut app, error, Some(500), Some(decode_error));
    changed(
        &mut app,
        view("a7c3e5f1-stale", TranscriptStatus::Processing),
        None,
    );
    watch(
        &mut app,
        WatchEvent::PollFailed {
            id: "a7c3e5f1-stale".into(),
            message: "HTTP 429: Too Many Requests".into(),
        },
    );
    let mut stale = view("a7c3e5f1-stale", TranscriptStatus::Processing);
    stale.processing_since = secs(20);
    stale.processing_until = secs(25);
    stale.stale = true;
    stale.problem = Some(JobProblem::RateLimited);
    changed(&mut app, stale, None);
    watch(
        &mut app,
        WatchEvent::Budget {
            used: 412,
            budget: 2000,
            spent: earshot_core::poll::schedule::Spent {
                on_screen: 380,
                off_screen: 30,
                other: 2,
            },
        },
    );
    app.panes.jobs.now = app.panes.jobs.epoch + Duration::from_secs(95);
    // The watcher's last report, 4 s before the fixed now.
    app.panes.jobs.reported_at = Some(app.panes.jobs.now - Duration::from_secs(4));
    fix_clock(&mut app);
    // The stale row's failed poll is in the status bar too, at a
    // fixed time.
    if let Some(error) = &mut app.status.last_error {
        error.at = super::fixed_local_time();
    }
    app.toast = None;
    keys(&mut app, "4");
    app
}

#[test]
fn jobs_table_with_every_kind_of_row_and_the_budget_gauge() {
    snapshot("jobs_table", &jobs_app());
}

#[test]
fn jobs_paused_banner() {
    let mut app = jobs_app();
    watch(
        &mut app,
        WatchEvent::Paused {
            resume_in: Duration::from_secs(42),
        },
    );
    snapshot("jobs_paused", &app);
    watch(&mut app, WatchEvent::Resumed);
    let screen = cells(&render(&app, (80, 24)));
    assert!(!screen.contains("polling paused"), "{screen}");
}

/// `b` shows what spent the request budget.
#[test]
fn jobs_budget_breakdown() {
    let mut app = jobs_app();
    keys(&mut app, "b");
    snapshot("jobs_budget", &app);
    keys(&mut app, "b");
    let screen = cells(&render(&app, (120, 40)));
    assert!(!screen.contains("polls on screen"), "{screen}");
}

#[test]
fn error_rows_stand_out_and_stale_rows_are_muted() {
    let terminal = render(&jobs_app(), (120, 40));
    let (_, error) = find(&terminal, "e9f2b6d8");
    assert_eq!(fg_at(&terminal, (0, error)), colour(Role::Error));
    let (_, stale) = find(&terminal, "a7c3e5f1");
    assert_eq!(fg_at(&terminal, (0, stale)), colour(Role::Muted));
}

/// Enter opens a job's record: its error, the webhook's answer,
/// what it cost in polls.
#[test]
fn jobs_record_of_a_failed_job() {
    let mut app = jobs_app();
    keys(&mut app, "jjj");
    app.update(super::key(ratatui::crossterm::event::KeyCode::Enter));
    snapshot("jobs_record", &app);
    let screen = super::screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("e9f2b6d8-error"), "{screen}");
    assert!(screen.contains("audio could not be decoded"), "{screen}");
    assert!(
        screen.contains("webhook answer") && screen.contains("500"),
        "{screen}"
    );
}

/// `/status:processing` keeps the two processing jobs
/// (the title says so), `S` six times sorts by AGE descending (the header
/// marks it), and the selected job stays selected through both.
#[test]
fn jobs_filtered_and_sorted_by_age() {
    let mut app = jobs_app();
    // The stale one (row 5), processing too.
    keys(&mut app, "jjjj");
    assert_eq!(selected_job(&app), "a7c3e5f1-stale");
    keys(&mut app, "/status:processing");
    app.update(super::key(ratatui::crossterm::event::KeyCode::Enter));
    assert_eq!(selected_job(&app), "a7c3e5f1-stale");
    keys(&mut app, "SSSSSS");
    assert_eq!(selected_job(&app), "a7c3e5f1-stale");
    snapshot("jobs_filtered_sorted", &app);
    let screen = super::screen_text(&render(&app, (120, 40)));
    assert!(
        screen.contains("filter: status:processing · 2 of 6"),
        "{screen}"
    );
    assert!(screen.contains("AGE ▼"), "{screen}");
    // Both were added at the start: equal ages keep the watch order.
    let (_, processing) = find(&render(&app, (120, 40)), "8b2f4c9e");
    let (_, stale) = find(&render(&app, (120, 40)), "a7c3e5f1");
    assert!(processing < stale, "{screen}");
    assert!(
        !screen.contains("5d0c7e1a"),
        "the queued job is filtered out"
    );
}

fn selected_job(app: &App) -> String {
    app.panes
        .jobs
        .selected()
        .map(|row| row.id.clone())
        .unwrap_or_default()
}

/// The watcher's last word is old while a job still runs: the title says
/// so, in the warn role.
#[test]
fn an_old_poll_reads_stale_while_a_job_runs() {
    let mut app = jobs_app();
    app.panes.jobs.reported_at = Some(app.panes.jobs.now - Duration::from_secs(185));
    let terminal = render(&app, (120, 40));
    let text = screen_text(&terminal);
    assert!(text.contains("· stale: polled 3 min 5 s ago"), "{text}");
    let (x, y) = find(&terminal, "stale: polled");
    assert_eq!(fg_at(&terminal, (x, y)), colour(Role::Warn));
}
