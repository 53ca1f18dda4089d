//! `update` tests of what the [`App`] owns: read-only, quitting, panes,
//! the `:` prompt, help, toasts.

use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::{App, Connection, Overlay};
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::console::tests::panes::jobs as jobs_tests;
use crate::tui::console::tests::panes::subscriptions::fixtures as rows;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::panes::PaneId;
use crate::tui::panes::events::tasks::EventsEffect;
use crate::tui::panes::jobs::JobsResult;
use crate::tui::panes::subscriptions::Modal;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::poll::watcher::WatchEvent;

fn app(read_only: bool) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only,
        ..ConsoleConfig::default()
    });
    app.panes.subs.set_rows(rows());
    app.pane = PaneId::Subscriptions;
    app
}

#[test]
fn read_only_removes_mutating_commands_from_keys_help_and_footer() {
    let mut app = app(true);
    for c in ['n', 'p', 'R', 'D'] {
        assert!(app.update(key(c)).is_empty(), "{c} does nothing");
        assert!(app.panes.subs.modal.is_none(), "{c} opens nothing");
        // ...but says why, instead of nothing happening.
        let said = app
            .status
            .last_error
            .clone()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(said.starts_with("read-only: "), "{c}: {said}");
    }
    assert!(app.panes.subs.rows()[0].enabled);
    let keys: Vec<&str> = app.commands().iter().map(|command| command.keys).collect();
    for hidden in ["n", "p", "R", "D"] {
        assert!(
            !keys.contains(&hidden),
            "{hidden} is not a command: {keys:?}"
        );
    }
    let help = app.help_sections();
    let titles: Vec<&str> = help.iter().map(|section| section.title).collect();
    assert_eq!(
        titles,
        [
            "Subscriptions",
            "Detail",
            "Filter (typing)",
            "Global",
            "Command line (:)"
        ]
    );
    assert!(
        help.iter()
            .flat_map(|section| &section.commands)
            .all(|command| !command.mutating)
    );
    // Reading still works.
    assert_eq!(app.update(key('c')).len(), 1);
    assert_eq!(app.update(key('r')).len(), 1);

    let writable = self::app(false);
    assert!(
        writable
            .commands()
            .iter()
            .any(|command| command.keys == "D")
    );
}

#[test]
fn q_quits_at_once_when_nothing_would_be_lost() {
    let mut app = app(false);
    assert!(app.update(key('q')).is_empty());
    assert!(app.quit);
}

#[test]
fn quitting_with_a_dirty_form_asks_first() {
    let mut app = app(false);
    app.update(key('n'));
    app.update(key('h'));
    let ctrl_c = Action::Input(Event::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(app.update(ctrl_c.clone()).is_empty());
    assert!(matches!(app.overlay, Some(Overlay::ConfirmQuit)));
    assert!(app.update(key('n')).is_empty());
    assert!(app.overlay.is_none() && !app.quit);
    assert!(
        matches!(app.panes.subs.modal, Some(Modal::Create(_))),
        "the form survived"
    );

    app.update(ctrl_c);
    assert!(!app.quit);
    app.update(key('y'));
    assert!(app.quit);
}

/// `q` on a pane whose fields hold what the operator typed
/// (edit mode left with esc) asks before quitting; an empty pane quits.
#[test]
fn q_asks_before_dropping_text_typed_into_another_panes_fields() {
    let mut empty = app(false);
    empty.update(Action::Run(Command::GoTo(PaneId::Signatures)));
    empty.update(key('q'));
    assert!(empty.quit);

    let mut app = app(false);
    app.update(Action::Run(Command::GoTo(PaneId::Signatures)));
    app.update(press(KeyCode::Enter));
    assert!(app.panes.sigs.editing, "enter edits the form");
    app.update(key('t'));
    app.update(press(KeyCode::Esc));
    assert!(!app.panes.sigs.editing);
    app.update(Action::Run(Command::GoTo(PaneId::Health)));
    assert!(app.update(key('q')).is_empty(), "asks first");
    assert!(matches!(app.overlay, Some(Overlay::ConfirmQuit)));
    app.update(key('n'));
    assert!(!app.quit);
    assert_eq!(
        app.panes.sigs.header.value(),
        "t",
        "the typed text survived"
    );
}

#[test]
fn esc_on_a_dirty_form_asks_before_discarding_it() {
    let mut app = app(false);
    app.update(key('n'));
    app.update(press(KeyCode::Esc));
    assert!(app.panes.subs.modal.is_none(), "an empty form just closes");

    app.update(key('n'));
    app.update(key('x'));
    app.update(press(KeyCode::Esc));
    assert!(matches!(&app.panes.subs.modal, Some(Modal::Create(form)) if form.confirm_discard));
    app.update(key('y'));
    assert!(app.panes.subs.modal.is_none());
}

#[test]
fn tab_number_keys_and_the_prompt_switch_panes() {
    let mut app = app(false);
    app.update(press(KeyCode::Tab));
    assert_eq!(app.pane, PaneId::Deliveries);
    app.update(Action::Input(Event::Key(KeyEvent::new(
        KeyCode::BackTab,
        KeyModifiers::SHIFT,
    ))));
    assert_eq!(app.pane, PaneId::Subscriptions);
    app.update(key('6'));
    assert_eq!(app.pane, PaneId::Probe);
    app.update(key(':'));
    for c in "subs".chars() {
        app.update(key(c));
    }
    app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Subscriptions);
    assert!(app.overlay.is_none());
}

#[test]
fn the_prompt_quits_and_reports_unknown_commands() {
    let mut app = app(false);
    app.update(key(':'));
    app.update(key('x'));
    app.update(press(KeyCode::Enter));
    let error = app.status.last_error.clone().expect("an error");
    assert!(
        error.message.contains("unknown command :x"),
        "{}",
        error.message
    );
    assert!(!app.quit);
    // A notice goes at the next key.
    app.update(key('j'));
    assert!(app.status.last_error.is_none());

    app.update(key(':'));
    app.update(key('q'));
    app.update(press(KeyCode::Enter));
    assert!(app.quit);
}

#[test]
fn help_opens_with_question_mark_and_closes_with_esc() {
    let mut app = app(false);
    app.update(key('?'));
    assert!(matches!(app.overlay, Some(Overlay::Help { .. })));
    assert!(
        app.update(key('q')).is_empty(),
        "q closes help, it doesn't quit"
    );
    assert!(app.overlay.is_none() && !app.quit);
    app.update(key('?'));
    app.update(press(KeyCode::Esc));
    assert!(app.overlay.is_none());
}

#[test]
fn every_key_in_help_is_a_key_that_works() {
    let app = app(false);
    let help = app.help_sections();
    for section in &help {
        for command in &section.commands {
            assert!(!command.bindings.is_empty(), "{} has a key", command.keys);
            assert!(
                !command.description.is_empty(),
                "{} says what it does",
                command.keys
            );
        }
    }
}

#[test]
fn a_toast_stays_until_its_time_and_needs_the_tick_only_meanwhile() {
    let mut app = app(false);
    // A pane with nothing that moves with the clock.
    app.pane = PaneId::Signatures;
    assert!(!app.wants_tick());
    app.set_toast("copied".into());
    assert!(app.wants_tick());
    app.dirty = false;
    app.update(Action::Tick(Instant::now()));
    assert!(app.toast.is_some());
    assert!(!app.dirty, "a tick that changes nothing draws nothing");
    app.update(Action::Tick(Instant::now() + Duration::from_secs(60)));
    assert!(app.toast.is_none());
    assert!(app.dirty);
    assert!(!app.wants_tick());
}

/// A subscriptions load answered with these rows.
fn subs_loaded(app: &mut App) {
    let seq = match app.update(key('r')).as_slice() {
        [Effect::Subs(SubsEffect::Load { seq, .. })] => *seq,
        other => panic!("expected one load, got {other:?}"),
    };
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Ok(rows()),
    }));
}

fn job_event(app: &mut App, event: WatchEvent) {
    app.update(Action::Jobs(JobsResult::Watch(event)));
}

/// A good poll of `id` (watched from now on, if it was not).
fn job_polled(app: &mut App, id: &str) {
    app.update(Action::Jobs(JobsResult::Discovered(vec![id.to_owned()])));
    job_event(
        app,
        WatchEvent::Changed {
            view: jobs_tests::view(id, Some(TranscriptStatus::Processing)),
            transcript: Some(Box::new(jobs_tests::transcript(
                id,
                TranscriptStatus::Processing,
                None,
            ))),
        },
    );
}

/// The status bar's state is every area's latest
/// answer, not the latest answer of any area; and the error text goes
/// when its area recovers.
#[test]
fn the_status_bar_says_error_while_any_pane_fails_and_clears_on_recovery() {
    let mut app = app(false);
    subs_loaded(&mut app);
    job_polled(&mut app, "job-1");
    assert_eq!(app.status.connection, Connection::Ok);

    let unreachable = "cannot reach http://127.0.0.1:9: connection refused";
    job_event(
        &mut app,
        WatchEvent::PollFailed {
            id: "job-1".into(),
            message: unreachable.into(),
        },
    );
    assert_eq!(app.status.connection, Connection::Error);
    let shown = app.status.last_error.clone().expect("the error is shown");
    assert!(shown.message.contains(unreachable), "{}", shown.message);

    // Another pane's success does not hide the Jobs pane's failure.
    subs_loaded(&mut app);
    assert_eq!(app.status.connection, Connection::Error);
    assert!(app.status.last_error.is_some());
    assert_eq!(
        app.status.failing_areas().collect::<Vec<_>>(),
        [PaneId::Jobs]
    );

    // The Jobs pane recovers: ok, and the old error text is gone.
    job_polled(&mut app, "job-1");
    assert_eq!(app.status.connection, Connection::Ok);
    assert_eq!(app.status.last_error, None);
}

#[test]
fn with_two_panes_failing_the_other_error_shows_when_one_recovers() {
    let mut app = app(false);
    job_event(
        &mut app,
        WatchEvent::PollFailed {
            id: "job-1".into(),
            message: "HTTP 503".into(),
        },
    );
    let seq = match app.update(key('r')).as_slice() {
        [Effect::Subs(SubsEffect::Load { seq, .. })] => *seq,
        other => panic!("expected one load, got {other:?}"),
    };
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Err(Failure::new("list subscriptions failed: HTTP 500")),
    }));
    assert!(
        app.status
            .last_error
            .as_ref()
            .unwrap()
            .message
            .contains("HTTP 500")
    );

    subs_loaded(&mut app);
    assert_eq!(app.status.connection, Connection::Error);
    let shown = app.status.last_error.clone().expect("the jobs error");
    assert!(shown.message.contains("HTTP 503"), "{}", shown.message);
}

#[test]
fn a_local_notice_is_not_a_platform_error_and_stays_after_a_success() {
    let mut app = app(false);
    let seq = match app.update(key('r')).as_slice() {
        [Effect::Subs(SubsEffect::Load { seq, .. })] => *seq,
        other => panic!("expected one load, got {other:?}"),
    };
    app.notice("theme \"nope\" not found: using the default");
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Ok(rows()),
    }));
    assert_eq!(app.status.connection, Connection::Ok);
    let shown = app.status.last_error.clone().expect("the notice stays");
    assert!(shown.message.contains("theme"), "{}", shown.message);
}

/// The command line jumps with an argument.
#[test]
fn the_prompt_opens_a_subscription_a_session_and_an_event() {
    let mut app = app(false);
    app.panes.subs.set_rows(rows());
    type_text(&mut app, ":sub 1a2b");
    app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Subscriptions);
    assert_eq!(
        app.panes.subs.selected().map(|row| row.id.as_str()),
        Some("1a2b3c4d-0000-4000-8000-000000000001")
    );
    assert_eq!(
        app.panes.subs.view,
        crate::tui::panes::subscriptions::View::Detail
    );

    type_text(&mut app, ":session call_4f2a");
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Deliveries);
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Deliveries(DeliveriesEffect::Load { id, .. }) if id == "call_4f2a")),
        "{effects:?}"
    );

    type_text(&mut app, ":event 9c1e7b");
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Events);
    assert!(
        effects.iter().any(
            |effect| matches!(effect, Effect::Events(EventsEffect::Load { query, .. }) if query.words == ["9c1e7b"])
        ),
        "{effects:?}"
    );

    type_text(&mut app, ":session");
    app.update(press(KeyCode::Enter));
    let said = app
        .status
        .last_error
        .clone()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(said.contains("needs ID"), "{said}");
}

/// Help lists `/` and `S` on every pane with a table,
/// from the same lists keys are found in; and in no section (one mode of
/// a pane, or the global keys) does a key mean two things.
#[test]
fn help_lists_filter_and_sort_on_every_table_and_no_key_means_two_things() {
    use crate::tui::keymap::Key;
    for pane in PaneId::ALL {
        let mut app = App::new(ConsoleConfig::default());
        app.pane = pane;
        let sections = app.help_sections();
        let keys: Vec<&str> = sections
            .iter()
            .flat_map(|section| &section.commands)
            .map(|command| command.keys)
            .collect();
        // Filter and sort go together, on every pane that has a table.
        assert_eq!(
            keys.contains(&"/"),
            keys.contains(&"S"),
            "{pane:?}: {keys:?}"
        );
        let table = match pane {
            PaneId::Signatures | PaneId::Probe | PaneId::Pulse => Some(false),
            PaneId::Health
            | PaneId::Subscriptions
            | PaneId::Deliveries
            | PaneId::Jobs
            | PaneId::Inbox
            | PaneId::Events => Some(true),
            #[allow(unreachable_patterns, reason = "a pane added later says its own")]
            _ => None,
        };
        if let Some(table) = table {
            assert_eq!(keys.contains(&"/"), table, "{pane:?}: {keys:?}");
        }
        for section in &sections {
            if section.title == "Command line (:)" {
                // Lines of the `:` prompt, all reached by `:`.
                continue;
            }
            let mut seen: Vec<Key> = Vec::new();
            for command in &section.commands {
                for key in command.bindings {
                    assert!(
                        !seen.contains(key),
                        "{pane:?}, {}: {:?} is bound twice",
                        section.title,
                        key
                    );
                    seen.push(*key);
                }
            }
        }
    }
}
