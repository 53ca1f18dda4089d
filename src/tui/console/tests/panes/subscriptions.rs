//! `update` tests of the Subscriptions pane, driven through the [`App`]
//! with the keys an operator would press.

use crate::tui::kernel::ConsoleEffect;
use ratatui::crossterm::event::{Event, KeyCode};
use serde_json::Map;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::{App, Connection};
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::panes::PaneId;
use crate::tui::panes::health::tasks::HealthEffect;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use crate::tui::panes::subscriptions::{Modal, Stage, SubscriptionsPane, View};
use earshot_core::api::types::agents::{EventKind, Subscription};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::history::rotation::CheckReport;

pub(crate) fn subscription(id: &str, url: &str, events: &[&str], enabled: bool) -> Subscription {
    Subscription {
        id: id.into(),
        url: url.into(),
        events: events.iter().map(|event| (*event).to_owned()).collect(),
        agent_id: None,
        enabled,
        secret_version: 1,
        extra: Map::new(),
    }
}

pub(crate) fn fixtures() -> Vec<Subscription> {
    let mut with_agent = subscription(
        "3c1d9e2a-0000-4000-8000-000000000003",
        "https://hooks.example.com/calls",
        &["call.ended", "call.failed"],
        true,
    );
    with_agent.agent_id = Some("6f1c1a52-6a1c-4c59-b1f3-0f9e5f2d8a11".into());
    vec![
        subscription(
            "1a2b3c4d-0000-4000-8000-000000000001",
            "https://hooks.example.com/sessions",
            &["session.started", "session.completed"],
            true,
        ),
        subscription(
            "2b3c4d5e-0000-4000-8000-000000000002",
            "https://other.example.org/hook",
            &["session.completed"],
            false,
        ),
        with_agent,
    ]
}

fn fixed_secret() -> Result<String, String> {
    Ok("whsec_generated_for_tests_0123456789abcdefgh".into())
}

fn app_with(config: ConsoleConfig) -> App {
    let mut app = App::new(config);
    app.panes.subs = SubscriptionsPane::new(app.config.url_policy).with_generator(fixed_secret);
    app.panes.subs.set_rows(fixtures());
    app.pane = PaneId::Subscriptions;
    app
}

fn app() -> App {
    app_with(ConsoleConfig::default())
}

fn ids(app: &App) -> Vec<String> {
    app.panes
        .subs
        .visible_rows()
        .map(|row| crate::tui::panes::subscriptions::short_id(&row.id).to_owned())
        .collect()
}

#[test]
fn the_filter_narrows_rows_by_id_url_events_and_agent() {
    let mut app = app();
    assert_eq!(app.update(key('/')).len(), 0);
    type_text(&mut app, "other");
    assert_eq!(ids(&app), ["2b3c4d5e"]);

    app.update(press(KeyCode::Esc));
    assert_eq!(ids(&app).len(), 3, "esc clears the filter");

    app.update(key('/'));
    type_text(&mut app, "call.failed");
    assert_eq!(ids(&app), ["3c1d9e2a"]);
    app.update(press(KeyCode::Enter));
    assert!(!app.panes.subs.table.prompting(), "enter keeps the filter");
    assert_eq!(ids(&app), ["3c1d9e2a"]);

    app.update(press(KeyCode::Esc));
    app.update(key('/'));
    type_text(&mut app, "6F1C1A52");
    assert_eq!(
        ids(&app),
        ["3c1d9e2a"],
        "agent ids match case-insensitively"
    );
}

#[test]
fn typing_q_in_the_filter_filters_instead_of_quitting() {
    let mut app = app();
    app.update(key('/'));
    let effects = type_text(&mut app, "q");
    assert!(effects.is_empty());
    assert!(!app.quit);
    assert_eq!(app.panes.subs.table.filter_text(), "q");
}

#[test]
fn toggling_include_disabled_emits_a_load_effect() {
    let mut app = app();
    assert!(
        app.panes.subs.include_disabled,
        "paused subscriptions show by default"
    );
    let effects = app.update(key('a'));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Subs(SubsEffect::Load {
            include_disabled: false,
            ..
        })]
    ));
    let effects = app.update(key('a'));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Subs(SubsEffect::Load {
            include_disabled: true,
            ..
        })]
    ));
}

#[test]
fn a_superseded_load_result_is_dropped() {
    let mut app = app();
    let first = app.update(key('r'));
    let second = app.update(key('r'));
    let seq = |effects: &[Effect]| match effects {
        [Effect::Subs(SubsEffect::Load { seq, .. })] => *seq,
        other => panic!("expected one load, got {other:?}"),
    };
    let (stale, current) = (seq(&first), seq(&second));
    assert_ne!(stale, current);
    app.update(Action::Subs(SubsResult::Loaded {
        seq: stale,
        result: Ok(Vec::new()),
    }));
    assert_eq!(
        app.panes.subs.rows().len(),
        3,
        "the stale answer changed nothing"
    );
    app.update(Action::Subs(SubsResult::Loaded {
        seq: current,
        result: Ok(fixtures()[..1].to_vec()),
    }));
    assert_eq!(app.panes.subs.rows().len(), 1);
    assert!(!app.panes.subs.list.loading());
}

#[test]
fn pause_emits_a_patch_for_the_selected_row() {
    let mut app = app();
    let effects = app.update(key('p'));
    match effects.as_slice() {
        [Effect::Subs(SubsEffect::Patch { id, patch })] => {
            assert_eq!(id, "1a2b3c4d-0000-4000-8000-000000000001");
            assert_eq!(patch.enabled, Some(false));
            assert!(patch.url.is_none() && patch.secret.is_none() && patch.events.is_none());
        }
        other => panic!("expected one patch, got {other:?}"),
    }
    assert!(
        app.panes
            .subs
            .is_pending("1a2b3c4d-0000-4000-8000-000000000001")
    );
    assert!(
        app.update(key('p')).is_empty(),
        "no second patch while one is in flight"
    );

    // The paused row (second) resumes.
    app.update(key('j'));
    match app.update(key('p')).as_slice() {
        [Effect::Subs(SubsEffect::Patch { id, patch })] => {
            assert_eq!(id, "2b3c4d5e-0000-4000-8000-000000000002");
            assert_eq!(patch.enabled, Some(true));
        }
        other => panic!("expected one patch, got {other:?}"),
    }
}

#[test]
fn a_patch_result_updates_the_row_in_place() {
    let mut app = app();
    app.update(key('p'));
    let mut paused = fixtures()[0].clone();
    paused.enabled = false;
    app.update(Action::Subs(SubsResult::Patched {
        id: paused.id.clone(),
        result: Ok(paused),
    }));
    assert!(!app.panes.subs.rows()[0].enabled);
    assert!(!app.panes.subs.is_pending(&app.panes.subs.rows()[0].id));
    assert!(
        app.toast
            .as_ref()
            .unwrap()
            .text
            .starts_with("paused 1a2b3c4d")
    );
    assert_eq!(app.status.connection, Connection::Ok);
}

#[test]
fn a_server_error_goes_to_the_status_bar_and_the_pane_keeps_working() {
    let mut app = app();
    app.update(key('p'));
    let failure = Failure::new("update subscription failed: HTTP 500: boom");
    app.update(Action::Subs(SubsResult::Patched {
        id: "1a2b3c4d-0000-4000-8000-000000000001".into(),
        result: Err(failure.clone()),
    }));
    assert_eq!(app.status.connection, Connection::Error);
    assert_eq!(app.status.last_error, Some(failure));
    assert!(app.panes.subs.rows()[0].enabled, "the row is unchanged");
    // Still answering keys: the same pause can be tried again.
    assert_eq!(app.update(key('p')).len(), 1);
}

#[test]
fn delete_requires_the_exact_short_id() {
    let mut app = app();
    assert!(app.update(key('D')).is_empty());
    assert!(matches!(app.panes.subs.modal, Some(Modal::Delete(_))));

    type_text(&mut app, "1a2b3c4");
    assert!(
        app.update(press(KeyCode::Enter)).is_empty(),
        "a prefix is not enough"
    );
    type_text(&mut app, "d ");
    assert!(
        app.update(press(KeyCode::Enter)).is_empty(),
        "a trailing space is not exact"
    );
    app.update(press(KeyCode::Backspace));
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        matches!(effects.as_slice(), [Effect::Subs(SubsEffect::Delete { id })] if id == "1a2b3c4d-0000-4000-8000-000000000001"),
        "{effects:?}"
    );

    app.update(Action::Subs(SubsResult::Deleted {
        id: "1a2b3c4d-0000-4000-8000-000000000001".into(),
        result: Ok(()),
    }));
    assert!(app.panes.subs.modal.is_none());
    assert_eq!(ids(&app), ["2b3c4d5e", "3c1d9e2a"]);
}

#[test]
fn the_create_form_shows_errors_per_field_and_sends_nothing_until_valid() {
    let mut app = app();
    app.update(key('n'));
    assert!(matches!(app.panes.subs.modal, Some(Modal::Create(_))));
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    let errors = |app: &App| match &app.panes.subs.modal {
        Some(Modal::Create(form)) => form.errors.clone(),
        _ => panic!("the form is open"),
    };
    assert_eq!(errors(&app).url.as_deref(), Some("required"));
    assert!(errors(&app).events.is_some());

    type_text(&mut app, "http://hooks.example.com/x");
    assert!(errors(&app).url.as_deref().unwrap().contains("https://"));
    assert!(app.update(press(KeyCode::Enter)).is_empty());

    // Fix the URL, tick one event, a bad agent id.
    for _ in 0.."http://hooks.example.com/x".len() {
        app.update(press(KeyCode::Backspace));
    }
    type_text(&mut app, "https://93.184.216.34/hook");
    assert_eq!(errors(&app).url, None);
    app.update(press(KeyCode::Tab));
    app.update(key(' '));
    assert_eq!(errors(&app).events, None);
    for _ in 0..5 {
        app.update(press(KeyCode::Tab));
    }
    type_text(&mut app, "agent-7");
    assert!(errors(&app).agent.as_deref().unwrap().contains("UUID"));
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    for _ in 0..7 {
        app.update(press(KeyCode::Backspace));
    }
    let effects = app.update(press(KeyCode::Enter));
    match effects.as_slice() {
        [Effect::Subs(SubsEffect::Create(request))] => {
            assert_eq!(request.url, "https://93.184.216.34/hook");
            assert_eq!(request.events, vec![EventKind::SessionStarted]);
            assert_eq!(request.agent_id, None);
            assert_eq!(
                request.secret.expose(),
                "whsec_generated_for_tests_0123456789abcdefgh"
            );
        }
        other => panic!("expected one create, got {other:?}"),
    }
}

#[test]
fn a_created_subscription_with_a_generated_secret_shows_it_once() {
    let mut app = app_with(ConsoleConfig {
        url_policy: UrlPolicy::AnyHttp,
        ..ConsoleConfig::default()
    });
    app.update(key('n'));
    type_text(&mut app, "http://127.0.0.1:9/hook");
    app.update(press(KeyCode::Tab));
    app.update(key(' '));
    assert_eq!(app.update(press(KeyCode::Enter)).len(), 1);
    let created = subscription(
        "9f9f9f9f-0000-4000-8000-000000000009",
        "http://127.0.0.1:9/hook",
        &["session.started"],
        true,
    );
    app.update(Action::Subs(SubsResult::Created {
        result: Ok(created),
    }));
    match &app.panes.subs.modal {
        Some(Modal::Secret(shown)) => {
            assert_eq!(
                shown.secret.expose(),
                "whsec_generated_for_tests_0123456789abcdefgh"
            );
        }
        other => panic!("expected the secret, got {other:?}"),
    }
    assert_eq!(
        ids(&app)[0],
        "9f9f9f9f",
        "the new row is first and selected"
    );
    assert_eq!(
        app.panes.subs.selected().unwrap().id,
        "9f9f9f9f-0000-4000-8000-000000000009"
    );
}

/// Prepare (nothing sent), check the receiver, apply only after
/// a passed check or an explicit skip, then watch.
#[test]
fn rotate_walks_prepare_check_apply_watch() {
    let mut app = app();
    app.update(key('R'));
    let stage = |app: &App| match &app.panes.subs.modal {
        Some(Modal::Rotate(dialog)) => Some(dialog.stage),
        _ => None,
    };
    assert_eq!(stage(&app), Some(Stage::Prepare));
    // Prepare generates the secret; nothing goes to the platform.
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    assert_eq!(stage(&app), Some(Stage::Check));
    let secret = match &app.panes.subs.modal {
        Some(Modal::Rotate(dialog)) => dialog.new_secret.clone().expect("prepared"),
        _ => unreachable!(),
    };
    let copy = app.update(key('c'));
    assert!(
        matches!(copy.as_slice(), [Effect::Console(ConsoleEffect::Copy { what: "secret", text })] if *text == secret)
    );
    // The current secret is optional; the check carries both.
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "whsec_current_one_0123456789");
    let effects = app.update(press(KeyCode::Enter));
    match effects.as_slice() {
        [Effect::Subs(SubsEffect::CheckRotation { new, current, .. })] => {
            assert_eq!(*new, secret);
            assert_eq!(
                current.as_ref().map(|c| c.expose().to_owned()).as_deref(),
                Some("whsec_current_one_0123456789")
            );
        }
        other => panic!("expected the check, got {other:?}"),
    }
    let failed = CheckReport {
        event_id: "evt-1".into(),
        synthetic: false,
        answers: Vec::new(),
        passed: false,
    };
    app.update(Action::Subs(SubsResult::Checked {
        id: "1a2b3c4d-0000-4000-8000-000000000001".into(),
        result: Ok(failed),
    }));
    assert_eq!(
        stage(&app),
        Some(Stage::Check),
        "a failed check does not lead on"
    );
    // Typing the short id here is not a way past the check.
    type_text(&mut app, "1a2b3c4d");
    assert_eq!(stage(&app), Some(Stage::Check));
    app.update(key('S'));
    assert_eq!(stage(&app), Some(Stage::Apply));
    type_text(&mut app, "1a2b3c4d");
    let effects = app.update(press(KeyCode::Enter));
    match effects.as_slice() {
        [Effect::Subs(SubsEffect::Rotate { id, secret: sent })] => {
            assert_eq!(id, "1a2b3c4d-0000-4000-8000-000000000001");
            assert_eq!(*sent, secret, "the prepared secret, not another");
        }
        other => panic!("expected one rotation, got {other:?}"),
    }
    assert!(app.update(press(KeyCode::Esc)).is_empty());
    assert!(
        matches!(app.panes.subs.modal, Some(Modal::Rotate(_))),
        "esc can't lose a secret that is on its way"
    );
    let mut rotated = fixtures()[0].clone();
    rotated.secret_version = 2;
    let effects = app.update(Action::Subs(SubsResult::Rotated {
        id: rotated.id.clone(),
        result: Ok(rotated),
    }));
    assert_eq!(stage(&app), Some(Stage::Watch));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Subs(SubsEffect::WatchRotation { .. }))),
        "{effects:?}"
    );
    assert_eq!(app.panes.subs.rows()[0].secret_version, 2);
    let effects = app.update(press(KeyCode::Esc));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Subs(SubsEffect::StopRotationWatch)]
    ));
    assert!(app.panes.subs.modal.is_none(), "closing drops the secret");
}

#[test]
fn a_pasted_rotation_secret_is_checked_with_the_client_rules() {
    let mut app = app();
    app.update(key('R'));
    app.update(Action::Input(Event::Paste("too short\n".into())));
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    match &app.panes.subs.modal {
        Some(Modal::Rotate(dialog)) => {
            assert!(dialog.error.as_deref().unwrap().contains("whitespace"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn enter_opens_the_detail_and_esc_returns() {
    let mut app = app();
    app.update(key('j'));
    app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.subs.view, View::Detail);
    assert_eq!(
        app.panes.subs.selected().unwrap().id,
        "2b3c4d5e-0000-4000-8000-000000000002"
    );
    app.update(press(KeyCode::Esc));
    assert_eq!(app.panes.subs.view, View::Table);
}

#[test]
fn copy_id_asks_for_an_osc_52_copy() {
    let mut app = app();
    let effects = app.update(key('c'));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Console(ConsoleEffect::Copy { what: "id", text })] if text.expose() == "1a2b3c4d-0000-4000-8000-000000000001"
    ));
}

#[test]
fn a_failed_first_load_is_explained_and_r_tries_again() {
    let mut app = App::new(ConsoleConfig::default());
    let first = app.init();
    app.pane = PaneId::Subscriptions;
    let seq = match first.as_slice() {
        [
            Effect::Health(HealthEffect::Load { .. }),
            Effect::Health(HealthEffect::LoadIncidents { .. }),
            Effect::Health(HealthEffect::Sweep),
            Effect::Subs(SubsEffect::Load { seq, .. }),
            Effect::Subs(SubsEffect::NewestChange),
        ] => *seq,
        other => panic!(
            "expected the board and incidents reads, the sweep, the first load and the change log's baseline, got {other:?}"
        ),
    };
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Err(Failure::new("list subscriptions failed: HTTP 401")),
    }));
    assert_eq!(
        app.panes.subs.list.error(),
        Some("list subscriptions failed: HTTP 401")
    );
    assert_eq!(app.status.connection, Connection::Error);
    assert!(matches!(
        app.update(key('r')).as_slice(),
        [Effect::Subs(SubsEffect::Load { .. })]
    ));
}

/// `e` edits the URL and events with the id, secret and history
/// kept, the change shown and the short id typed.
#[test]
fn e_edits_the_url_after_the_short_id_and_keeps_the_id() {
    let mut app = app();
    app.update(key('e'));
    assert!(matches!(app.panes.subs.modal, Some(Modal::Edit(_))));
    // The cursor is at the end of the current URL.
    type_text(&mut app, "/v2");
    for _ in 0..6 {
        app.update(press(KeyCode::Tab));
    }
    assert!(
        app.update(press(KeyCode::Enter)).is_empty(),
        "no short id yet"
    );
    type_text(&mut app, "1a2b3c4d");
    let effects = app.update(press(KeyCode::Enter));
    let (id, patch) = match effects.as_slice() {
        [Effect::Subs(SubsEffect::Patch { id, patch })] => (id.clone(), patch.clone()),
        other => panic!("one PATCH, got {other:?}"),
    };
    assert_eq!(id, "1a2b3c4d-0000-4000-8000-000000000001");
    assert_eq!(
        patch.url.as_deref(),
        Some("https://hooks.example.com/sessions/v2")
    );
    assert!(patch.events.is_none() && patch.secret.is_none() && patch.enabled.is_none());
    let mut updated = fixtures()[0].clone();
    updated.url = "https://hooks.example.com/sessions/v2".into();
    app.update(Action::Subs(SubsResult::Patched {
        id,
        result: Ok(updated),
    }));
    assert!(app.panes.subs.modal.is_none());
    assert_eq!(
        app.panes.subs.rows()[0].url,
        "https://hooks.example.com/sessions/v2"
    );
    assert!(
        app.toast
            .as_ref()
            .is_some_and(|t| t.text.contains("updated"))
    );
}

#[test]
fn read_only_has_no_edit() {
    let mut app = App::new(ConsoleConfig {
        read_only: true,
        ..ConsoleConfig::default()
    });
    app.panes.subs.set_rows(fixtures());
    app.pane = PaneId::Subscriptions;
    app.update(key('e'));
    assert!(app.panes.subs.modal.is_none());
}

#[test]
fn a_newer_change_in_the_log_reads_the_list_again_and_the_first_is_the_baseline() {
    let mut app = App::new(ConsoleConfig::default());
    app.pane = PaneId::Subscriptions;
    app.panes.subs.set_rows(fixtures());
    let asks = |effects: &[Effect]| {
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Subs(SubsEffect::NewestChange)))
    };
    let reloads = |effects: &[Effect]| {
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Subs(SubsEffect::Load { .. })))
    };
    let start = std::time::Instant::now();
    assert!(asks(&app.update(Action::Tick(start))), "the log is watched");
    let baseline = app.update(Action::Subs(SubsResult::NewestChange(Ok(Some(7)))));
    assert!(!reloads(&baseline), "the first answer is the baseline");
    let same = app.update(Action::Subs(SubsResult::NewestChange(Ok(Some(7)))));
    assert!(!reloads(&same), "nothing new, nothing read");
    let newer = app.update(Action::Subs(SubsResult::NewestChange(Ok(Some(8)))));
    assert!(
        reloads(&newer),
        "a change made elsewhere reads the list again"
    );
}

#[test]
fn the_lists_age_redraws_when_its_words_change_not_every_tick() {
    let mut app = App::new(ConsoleConfig::default());
    app.pane = PaneId::Subscriptions;
    app.panes.subs.set_rows(fixtures());
    let loaded = std::time::Instant::now();
    let tick = |app: &mut App, after_ms: u64| {
        app.dirty = false;
        app.update(Action::Tick(
            loaded + std::time::Duration::from_millis(after_ms),
        ));
        app.dirty
    };
    let words = |app: &App| app.panes.subs.age_words().map(|(text, _)| text);
    tick(&mut app, 1_000);
    assert_eq!(words(&app).as_deref(), Some("as of < 30 s ago"));
    tick(&mut app, 29_000);
    assert_eq!(
        words(&app).as_deref(),
        Some("as of < 30 s ago"),
        "within its period the words hold still"
    );
    assert!(tick(&mut app, 30_000), "'< 30 s ago' becomes '30 s ago'");
    assert_eq!(
        app.panes.subs.age_words().map(|(text, _)| text),
        Some("as of 30 s ago".to_owned())
    );
    assert!(tick(&mut app, 31_000), "past its period it counts");
    tick(&mut app, 59_000);
    assert_eq!(
        app.panes.subs.age_words().map(|(_, role)| role),
        Some(crate::tui::theme::Role::Muted)
    );
    // A reread was asked at 30 s; its answer has not come.
    tick(&mut app, 61_000);
    let (text, role) = app.panes.subs.age_words().expect("loaded");
    assert_eq!(
        text, "stale: as of 1 min 1 s ago",
        "older than twice the period"
    );
    assert_eq!(role, crate::tui::theme::Role::Warn);
}

#[test]
fn the_list_is_read_again_every_30_s_with_no_change_recorded() {
    let mut app = App::new(ConsoleConfig::default());
    app.pane = PaneId::Subscriptions;
    app.panes.subs.set_rows(fixtures());
    let listed = std::time::Instant::now();
    let reloads = |effects: &[Effect]| {
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Subs(SubsEffect::Load { .. })))
    };
    let at = |secs| Action::Tick(listed + std::time::Duration::from_secs(secs));
    assert!(!reloads(&app.update(at(10))));
    assert!(
        reloads(&app.update(at(31))),
        "a change made outside earshot"
    );
    assert!(!reloads(&app.update(at(32))), "one reread at a time");
}
