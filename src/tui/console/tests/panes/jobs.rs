//! `update` tests of the Jobs pane, driven through the [`App`] with the
//! keys an operator would press and the events the watcher sends.

use crate::tui::kernel::{ConsoleEffect, Handover};
use std::time::Duration;

use ratatui::crossterm::event::KeyCode;
use serde_json::Map;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Pane;
use crate::tui::panes::PaneId;
use crate::tui::panes::jobs::JobsCommand;
use crate::tui::panes::jobs::JobsResult;
use crate::tui::panes::jobs::parse_ids;
use earshot_core::api::types::prerecorded::{Transcript, TranscriptStatus};
use earshot_core::poll::schedule::{JobProblem, JobView};
use earshot_core::poll::watcher::WatchEvent;

fn jobs_app(read_only: bool) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only,
        ..ConsoleConfig::default()
    });
    app.update(Action::Run(Command::GoTo(PaneId::Jobs)));
    app
}

pub(crate) fn view(id: &str, status: Option<TranscriptStatus>) -> JobView {
    JobView {
        id: id.into(),
        status,
        added_at: Duration::ZERO,
        last_seen: Some(Duration::from_secs(1)),
        queued_since: Some(Duration::from_secs(1)),
        queued_until: None,
        processing_since: None,
        processing_until: None,
        finished_at: None,
        next_poll: None,
        in_flight: false,
        stale: false,
        polls: 1,
        error_streak: 0,
        focused: false,
        eta: None,
        problem: None,
        retry_at: None,
    }
}

pub(crate) fn transcript(id: &str, status: TranscriptStatus, error: Option<&str>) -> Transcript {
    Transcript {
        id: id.into(),
        status,
        text: None,
        error: error.map(str::to_owned),
        webhook_status_code: Some(200),
        extra: Map::new(),
    }
}

fn watch(app: &mut App, event: WatchEvent) -> Vec<Effect> {
    app.update(Action::Jobs(JobsResult::Watch(event)))
}

#[test]
fn ids_are_split_on_commas_and_spaces_without_duplicates() {
    assert_eq!(parse_ids(" a, b  c,,a\td "), ["a", "b", "c", "d"]);
    assert!(parse_ids(" , ").is_empty());
}

#[test]
fn the_add_prompt_emits_the_watch_effect_with_the_parsed_ids() {
    let mut app = jobs_app(false);
    type_text(&mut app, "a");
    assert!(app.panes.jobs.captures_text());
    type_text(&mut app, "job1, job2 job3");
    let effects = app.update(press(KeyCode::Enter));
    assert!(!app.panes.jobs.captures_text());
    let added = effects.iter().find_map(|effect| match effect {
        Effect::Console(ConsoleEffect::WatchJobs(ids)) => Some(ids.clone()),
        _ => None,
    });
    assert_eq!(
        added,
        Some(vec!["job1".into(), "job2".into(), "job3".into()])
    );
    assert_eq!(app.panes.jobs.rows().len(), 3);
}

#[test]
fn the_focus_effect_lists_the_visible_ids_when_they_change() {
    let mut app = jobs_app(false);
    app.panes.jobs.table.state.page.set(2);
    type_text(&mut app, "a");
    type_text(&mut app, "j1 j2 j3 j4");
    let effects = app.update(press(KeyCode::Enter));
    let focus = |effects: &[Effect]| {
        effects.iter().find_map(|effect| match effect {
            Effect::Console(ConsoleEffect::FocusJobs(ids)) => Some(ids.clone()),
            _ => None,
        })
    };
    assert_eq!(focus(&effects), Some(vec!["j1".into(), "j2".into()]));
    // Moving within the page changes nothing on screen: no new focus.
    let effects = app.update(press(KeyCode::Down));
    assert_eq!(focus(&effects), None);
    // Past the page: the rows on screen scroll.
    let effects = app.update(press(KeyCode::Down));
    assert_eq!(focus(&effects), Some(vec!["j2".into(), "j3".into()]));
}

#[test]
fn a_changed_event_updates_the_row_and_keeps_the_transcript() {
    let mut app = jobs_app(false);
    app.panes.jobs.seed(vec!["job1".into()]);
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("job1", Some(TranscriptStatus::Error)),
            transcript: Some(Box::new(transcript(
                "job1",
                TranscriptStatus::Error,
                Some("audio could not be decoded"),
            ))),
        },
    );
    let row = &app.panes.jobs.rows()[0];
    assert_eq!(row.status(), Some(&TranscriptStatus::Error));
    assert!(row.is_error());
    let record = row.transcript.as_ref().expect("kept");
    assert_eq!(record.error.as_deref(), Some("audio could not be decoded"));
    assert_eq!(record.webhook_status_code, Some(200));
    // A change without a record (a webhook) keeps the last record.
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("job1", Some(TranscriptStatus::Error)),
            transcript: None,
        },
    );
    assert!(app.panes.jobs.rows()[0].transcript.is_some());
}

#[test]
fn a_failed_poll_marks_the_row_stale_with_its_message() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec!["job1".into()])));
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("job1", Some(TranscriptStatus::Queued)),
            transcript: None,
        },
    );
    watch(
        &mut app,
        WatchEvent::PollFailed {
            id: "job1".into(),
            message: "HTTP 429: Too Many Requests".into(),
        },
    );
    let row = &app.panes.jobs.rows()[0];
    assert!(row.stale());
    assert_eq!(
        row.poll_error.as_deref(),
        Some("HTTP 429: Too Many Requests")
    );
    // The scheduler's own view then says why it backs off.
    let mut backing_off = view("job1", Some(TranscriptStatus::Queued));
    backing_off.stale = true;
    backing_off.problem = Some(JobProblem::RateLimited);
    watch(
        &mut app,
        WatchEvent::Changed {
            view: backing_off,
            transcript: None,
        },
    );
    let row = &app.panes.jobs.rows()[0];
    assert!(row.stale());
    assert_eq!(
        row.poll_error.as_deref(),
        Some("HTTP 429: Too Many Requests")
    );
}

#[test]
fn paused_shows_the_banner_and_resumed_clears_it() {
    let mut app = jobs_app(false);
    watch(
        &mut app,
        WatchEvent::Paused {
            resume_in: Duration::from_secs(30),
        },
    );
    assert_eq!(app.panes.jobs.paused_for(), Some(Duration::from_secs(30)));
    assert!(app.wants_tick(), "the banner counts down");
    let later = app.panes.jobs.now + Duration::from_secs(12);
    app.update(Action::Tick(later));
    assert_eq!(app.panes.jobs.paused_for(), Some(Duration::from_secs(18)));
    app.update(Action::Tick(later + Duration::from_secs(60)));
    assert_eq!(app.panes.jobs.paused_for(), Some(Duration::ZERO));
    watch(&mut app, WatchEvent::Resumed);
    assert_eq!(app.panes.jobs.paused_for(), None);
}

#[test]
fn the_budget_event_fills_the_gauge_and_the_status_bar() {
    let mut app = jobs_app(false);
    watch(
        &mut app,
        WatchEvent::Budget {
            used: 37,
            budget: 2000,
            spent: earshot_core::poll::schedule::Spent {
                on_screen: 30,
                off_screen: 5,
                other: 2,
            },
        },
    );
    assert_eq!(app.panes.jobs.budget, Some((37, 2000)));
    assert_eq!(app.status.budget.as_deref(), Some("37/2000"));
}

#[test]
fn submit_is_hidden_in_read_only() {
    let submit = |app: &App| {
        app.commands()
            .iter()
            .any(|info| info.command == Command::Jobs(JobsCommand::Submit))
    };
    let mut app = jobs_app(true);
    assert!(!submit(&app));
    type_text(&mut app, "s");
    assert!(!app.panes.jobs.captures_text());
    assert!(
        !app.help_sections()
            .iter()
            .flat_map(|section| &section.commands)
            .any(|info| info.command == Command::Jobs(JobsCommand::Submit))
    );
    assert!(submit(&jobs_app(false)));
}

#[test]
fn submitting_a_file_uploads_then_watches_the_new_job() {
    let mut app = jobs_app(false);
    type_text(&mut app, "s");
    type_text(&mut app, "/tmp/call.wav");
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Console(ConsoleEffect::SubmitFile { path }) if path.to_str() == Some("/tmp/call.wav")))
    );
    assert!(app.busy());
    app.update(Action::Jobs(JobsResult::Uploading {
        sent: 50,
        total: 100,
    }));
    assert_eq!(
        app.panes.jobs.upload.as_ref().map(|upload| upload.sent),
        Some(50)
    );
    let effects = app.update(Action::Jobs(JobsResult::Submitted {
        result: Ok("job9".into()),
    }));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Console(ConsoleEffect::WatchJobs(ids)) if ids == &["job9".to_owned()]))
    );
    assert!(!app.busy());
    assert!(
        app.toast
            .as_ref()
            .is_some_and(|toast| toast.text.contains("job9"))
    );
}

#[test]
fn seeded_ids_are_watched_at_start() {
    let mut app = App::new(ConsoleConfig::default());
    app.seed(Handover::JobIds(vec!["job1".into(), "job2".into()]));
    let effects = app.init();
    assert!(effects.iter().any(
        |effect| matches!(effect, Effect::Console(ConsoleEffect::WatchJobs(ids)) if ids.len() == 2)
    ));
}

#[test]
fn jobs_discovered_elsewhere_are_watched_quietly_and_only_once() {
    let mut app = jobs_app(false);
    let effects = app.update(Action::Jobs(JobsResult::Discovered(vec![
        "job-new-1".into(),
        "job-new-2".into(),
    ])));
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Console(ConsoleEffect::WatchJobs(ids)) if ids == &["job-new-1".to_owned(), "job-new-2".to_owned()]
        )),
        "{effects:?}"
    );
    assert!(app.toast.is_none(), "no toast for background discoveries");
    let again = app.update(Action::Jobs(JobsResult::Discovered(vec![
        "job-new-1".into(),
    ])));
    assert!(
        !again
            .iter()
            .any(|effect| matches!(effect, Effect::Console(ConsoleEffect::WatchJobs(_)))),
        "{again:?}"
    );
    assert!(app.toast.is_none());
}

/// The demo discovers jobs forever; the pane holds at
/// most `ROWS_MAX` rows, finished jobs making room first.
#[test]
fn the_pane_holds_at_most_rows_max_jobs_and_forgets_finished_ones_first() {
    let mut app = jobs_app(false);
    let max = crate::tui::panes::jobs::ROWS_MAX;
    app.update(Action::Jobs(JobsResult::Discovered(vec!["running".into()])));
    app.update(Action::Jobs(JobsResult::Discovered(vec!["watched".into()])));
    // Newest first: "watched" is on top, and the cursor, on the top row,
    // followed it; the operator moves down to "running".
    assert_eq!(app.panes.jobs.rows()[0].id, "watched");
    assert_eq!(
        app.panes.jobs.selected().map(|row| row.id.as_str()),
        Some("watched")
    );
    app.update(key('j'));
    let mut unwatched = Vec::new();
    for n in 0..max + 200 {
        let id = format!("job-{n}");
        let effects = app.update(Action::Jobs(JobsResult::Discovered(vec![id.clone()])));
        for effect in effects {
            if let Effect::Console(ConsoleEffect::UnwatchJobs(ids)) = effect {
                unwatched.extend(ids);
            }
        }
        watch(
            &mut app,
            WatchEvent::Changed {
                view: view(&id, Some(TranscriptStatus::Completed)),
                transcript: None,
            },
        );
    }
    let rows = app.panes.jobs.rows();
    assert_eq!(rows.len(), max);
    assert!(
        rows.iter().any(|row| row.id == "running"),
        "the unfinished job stays"
    );
    assert_eq!(rows.first().map(|row| row.id.as_str()), Some("job-1199"));
    assert_eq!(
        unwatched.len(),
        202,
        "every forgotten job leaves the watcher too"
    );
    assert!(
        unwatched
            .iter()
            .all(|id| !rows.iter().any(|row| &row.id == id)),
        "only jobs the table no longer shows are unwatched"
    );
    assert_eq!(unwatched[0], "job-0", "the oldest finished job goes first");
    assert_eq!(
        app.panes
            .jobs
            .selected_index()
            .and_then(|at| app.panes.jobs.rows().get(at))
            .map(|row| row.id.as_str()),
        Some("running"),
        "the selection stays on its job as older rows go"
    );
}

/// Enter opens a job's record, y copies its whole id.
#[test]
fn enter_opens_a_job_and_y_copies_its_whole_id() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec![
        "5d0c7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6".into(),
    ])));
    app.update(press(KeyCode::Enter));
    assert!(app.panes.jobs.detail);
    let effects = app.update(key('y'));
    assert!(
        matches!(effects.as_slice(), [Effect::Console(ConsoleEffect::Copy { what: "job id", text })]
            if text.expose() == "5d0c7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6"),
        "{effects:?}"
    );
    app.update(press(KeyCode::Esc));
    assert!(!app.panes.jobs.detail);
}

/// A job the pane forgot is gone for good; a late report of the
/// watcher does not bring it back as an empty row.
#[test]
fn a_forgotten_job_does_not_come_back_as_an_empty_row() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec!["kept".into()])));
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("gone", Some(TranscriptStatus::Processing)),
            transcript: None,
        },
    );
    watch(
        &mut app,
        WatchEvent::PollFailed {
            id: "gone-too".into(),
            message: "HTTP 500".into(),
        },
    );
    let ids: Vec<&str> = app
        .panes
        .jobs
        .rows()
        .iter()
        .map(|row| row.id.as_str())
        .collect();
    assert_eq!(ids, ["kept"]);
}

/// The ids the table shows (8 characters) open their job on the
/// command line; an ambiguous or unknown short id says what to do.
#[test]
fn a_short_id_on_the_command_line_opens_the_watched_job() {
    let mut app = jobs_app(false);
    let ids = [
        "efe33b63-0000-4000-8000-000000000001",
        "abc00000-0000-4000-8000-000000000001",
        "abc00000-0000-4000-8000-000000000002",
    ];
    app.update(Action::Jobs(JobsResult::Discovered(
        ids.iter().map(|id| (*id).to_owned()).collect(),
    )));
    type_text(&mut app, ":job efe33b63");
    let effects = app.update(press(KeyCode::Enter));
    assert!(app.panes.jobs.detail, "the job's record is open");
    assert_eq!(
        app.panes.jobs.selected().map(|row| row.id.as_str()),
        Some(ids[0])
    );
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::Console(ConsoleEffect::WatchJobs(_)))),
        "nothing new to watch: {effects:?}"
    );

    app.update(press(KeyCode::Esc));
    type_text(&mut app, ":job abc00000");
    app.update(press(KeyCode::Enter));
    assert!(!app.panes.jobs.detail);
    assert!(
        app.toast
            .as_ref()
            .is_some_and(|toast| toast.text.contains("2 watched jobs")),
        "{:?}",
        app.toast
    );

    type_text(&mut app, ":job 12345678");
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        app.toast
            .as_ref()
            .is_some_and(|toast| toast.text.contains("whole id")),
        "{:?}",
        app.toast
    );
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::Console(ConsoleEffect::WatchJobs(_))))
    );
}

/// A pre-recorded webhook the Inbox answered fills the job's
/// HOOK before any poll says so.
#[test]
fn a_webhook_the_inbox_answered_fills_the_jobs_hook() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec!["job-1".into()])));
    assert_eq!(app.panes.jobs.rows()[0].hook(), None);
    app.panes.jobs.note_webhook("job-1", 200, 1_000);
    app.panes.jobs.note_webhook("not-watched", 200, 1_000);
    assert_eq!(app.panes.jobs.rows()[0].hook(), Some(200));
    assert_eq!(app.panes.jobs.rows().len(), 1);
}

/// Every attempt of a job's webhook the Inbox answered counts, refused or
/// not: the job's detail says which attempt of ten it is and when the
/// platform gives up, and a refused attempt does not move the job.
#[test]
fn a_refused_webhook_counts_its_attempts_of_ten() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec!["job-1".into()])));
    let first = 1_796_479_509_000; // 14:05:09
    for n in 0..3 {
        let effects = app.update(Action::Handover(Handover::WebhookForJob {
            id: "job-1".into(),
            status: None,
            answered: 401,
            at_ms: first + n * 10_000,
        }));
        assert!(
            effects.is_empty(),
            "a refused webhook moves no job: {effects:?}"
        );
    }
    let line = earshot_core::api::delivery_verdict::job_webhook_line(
        &app.panes.jobs.rows()[0].hook_attempts,
    );
    assert_eq!(
        line.as_deref(),
        Some("attempt 3 of 10 · answered 401: a 4xx is final, no retry")
    );
    app.update(Action::Handover(Handover::WebhookForJob {
        id: "job-1".into(),
        status: None,
        answered: 503,
        at_ms: first + 30_000,
    }));
    assert_eq!(
        earshot_core::api::delivery_verdict::job_webhook_line(
            &app.panes.jobs.rows()[0].hook_attempts
        )
        .as_deref(),
        Some("attempt 4 of 10 · answered 503 · gives up at 14:06:39 (10 attempts, 10 s apart)")
    );
}

/// The jobs in the order the table shows them.
fn shown(app: &App) -> Vec<String> {
    let rows = app.panes.jobs.rows();
    (0..app.panes.jobs.table.len())
        .filter_map(|position| app.panes.jobs.table.row_at(rows, position))
        .map(|row| row.id.clone())
        .collect()
}

fn selected_id(app: &App) -> Option<String> {
    app.panes.jobs.selected().map(|row| row.id.clone())
}

/// Sorted by STATUS, the selection stays on its job when
/// a report moves it to another place in the order; a filter set while
/// reports arrive keeps only what matches, and the selection stays on
/// its job while it is shown.
#[test]
fn the_selection_follows_its_job_through_reports_while_sorted_and_filtered() {
    use TranscriptStatus::{Completed, Processing, Queued};
    let mut app = jobs_app(false);
    type_text(&mut app, "a");
    type_text(&mut app, "j1 j2 j3");
    app.update(press(KeyCode::Enter));
    for (id, status) in [("j1", Queued), ("j2", Processing), ("j3", Queued)] {
        let view = view(id, Some(status));
        watch(
            &mut app,
            WatchEvent::Changed {
                view,
                transcript: None,
            },
        );
    }
    // JOB ▲, JOB ▼, STATUS ▲: processing before queued, ties in order.
    type_text(&mut app, "SSS");
    assert_eq!(shown(&app), ["j2", "j1", "j3"]);
    app.update(key('G'));
    assert_eq!(selected_id(&app).as_deref(), Some("j3"));
    // j3 completes: it moves to the top, the selection with it.
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("j3", Some(Completed)),
            transcript: None,
        },
    );
    assert_eq!(shown(&app), ["j3", "j2", "j1"]);
    assert_eq!(selected_id(&app).as_deref(), Some("j3"));
    assert_eq!(app.panes.jobs.selected_index(), Some(0));
    // Only the queued ones: j1.
    type_text(&mut app, "/status:queued");
    app.update(press(KeyCode::Enter));
    assert_eq!(shown(&app), ["j1"]);
    app.update(press(KeyCode::Esc));
    assert_eq!(shown(&app), ["j3", "j2", "j1"], "esc clears the filter");
    assert!(!app.panes.jobs.table.filtering());
}

/// On the top row the selection follows the newest job; moved off it, it
/// stays on its job.
#[test]
fn on_the_top_row_the_selection_follows_new_jobs() {
    let mut app = jobs_app(false);
    app.update(Action::Jobs(JobsResult::Discovered(vec!["first".into()])));
    app.update(Action::Jobs(JobsResult::Discovered(vec!["second".into()])));
    assert_eq!(
        app.panes.jobs.selected().map(|row| row.id.as_str()),
        Some("second")
    );
    app.update(key('j'));
    app.update(Action::Jobs(JobsResult::Discovered(vec!["third".into()])));
    assert_eq!(
        app.panes.jobs.selected().map(|row| row.id.as_str()),
        Some("first")
    );
}

/// A job that finished before the first tick kept `AGE 0 s`: the clock
/// stopped with the last running job. AGE counts up for finished jobs too,
/// redrawing once the whole second turns, not every tick.
#[test]
fn a_finished_jobs_age_counts_up() {
    let mut app = jobs_app(false);
    type_text(&mut app, "a");
    type_text(&mut app, "job1");
    app.update(press(KeyCode::Enter));
    watch(
        &mut app,
        WatchEvent::Changed {
            view: view("job1", Some(TranscriptStatus::Completed)),
            transcript: None,
        },
    );
    assert!(app.panes.jobs.rows()[0].is_terminal());
    assert!(app.wants_tick(), "the AGE still moves");
    let epoch = app.panes.jobs.epoch;
    app.dirty = false;
    app.update(Action::Tick(epoch + Duration::from_millis(5_200)));
    assert!(app.dirty, "a second turned: redraw");
    assert_eq!(app.panes.jobs.now_tick().as_secs(), 5);
    let age = crate::tui::panes::jobs::view::short_duration(app.panes.jobs.now_tick());
    assert_eq!(age, "5 s");
    app.dirty = false;
    app.update(Action::Tick(epoch + Duration::from_millis(5_600)));
    assert!(!app.dirty, "the same second: no redraw");
}

/// The chart's buckets are built on the tick, not on every report (a
/// draining queue reports hundreds a second), and only when a job changed
/// or the newest bucket's time is over: otherwise the chart stays as drawn.
#[test]
fn the_queue_chart_is_rebuilt_on_the_tick_only_when_a_bucket_can_change() {
    use crate::tui::panes::jobs::JobsPane;
    use crate::tui::panes::jobs::Outcome;
    let mut pane = JobsPane::new();
    let mut out = Outcome::default();
    pane.add_ids(vec!["job-a".into(), "job-b".into()], &mut out);
    let epoch = pane.epoch;
    pane.now = epoch + Duration::from_millis(1_500);
    assert!(pane.queue_on_tick(), "the first build");
    let mut queued = view("job-a", Some(TranscriptStatus::Queued));
    queued.queued_since = Some(Duration::from_millis(1_200));
    queued.queued_until = Some(Duration::from_millis(1_200));
    pane.on_result(
        JobsResult::Watch(WatchEvent::Changed {
            view: queued,
            transcript: None,
        }),
        &mut out,
    );
    let before = pane.queue.clone();
    assert_eq!(before.counts.last().map(|c| c.queued), Some(0), "not yet");
    assert!(pane.queue_on_tick(), "a job changed");
    assert_eq!(
        pane.queue.counts.last().map(|c| c.queued),
        Some(2),
        "job-a seen queued, job-b behind it"
    );
    pane.now = epoch + Duration::from_millis(1_900);
    assert!(!pane.queue_on_tick(), "same bucket, nothing changed");
    pane.now = epoch + Duration::from_millis(2_100);
    assert!(pane.queue_on_tick(), "a new bucket");
    assert_eq!(pane.queue.counts.len(), 3, "0 s, 1 s and 2 s");
}
