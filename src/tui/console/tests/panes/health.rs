//! `update` tests of the Health pane, driven through the [`App`] with the
//! keys an operator would press.

use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use ratatui::crossterm::event::KeyCode;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::kernel::Pane;
use crate::tui::panes::PaneId;
use crate::tui::panes::health::HealthResult;
use crate::tui::panes::health::tasks::HealthEffect;
use crate::tui::panes::health::{Field, HealthPane, Mode, Window};
use earshot_core::history::coverage::{Coverage, CoverageState};
use earshot_core::history::incidents::Incident;
use earshot_core::history::recover::{Preview, Sent};
use earshot_core::history::report::{Board, EventTotals, FailureGroup, SubscriptionHealth};
use earshot_core::history::sweep::SweepReport;
use earshot_core::store::deliveries::FailingSession;

const BROKEN: &str = "b0000000-0000-4000-8000-00000000000b";
const FINE: &str = "f0000000-0000-4000-8000-00000000000f";
const NOW_MS: i64 = 1_800_000_000_000;

fn now() -> i64 {
    NOW_MS
}

fn row(id: &str, failed: i64) -> SubscriptionHealth {
    SubscriptionHealth {
        events: EventTotals {
            delivered: 10,
            missed: failed,
            ..EventTotals::default()
        },
        failing_since: (failed > 0).then(|| "2027-01-15T07:00:00Z".into()),
        last_success_at: Some("2027-01-15T06:00:00Z".into()),
        delivered: 10,
        failed,
        pending: 0,
        success_rate: Some(10.0 / (10.0 + failed as f64)),
        last_failure_at: (failed > 0).then(|| "2027-01-15T08:00:00Z".into()),
        failures: if failed > 0 {
            vec![FailureGroup {
                diagnosis: "401 invalid signature: …".into(),
                http_status: Some(401),
                count: failed,
                missed: failed,
                recovered: 0,
                retrying: 0,
                last_at: "2027-01-15T08:00:00Z".into(),
                example_session_id: "ses_example".into(),
            }]
        } else {
            Vec::new()
        },
        ..SubscriptionHealth::new(id.into(), format!("https://{id}.example/hook"), true)
    }
}

/// A board with the observer covering the window.
fn board(subscriptions: Vec<SubscriptionHealth>) -> Board {
    Board {
        observer: Coverage {
            state: CoverageState::Ok,
            last_event_at: Some("2027-01-15T08:00:00Z".into()),
            events_in_window: 40,
            silent_since: None,
            evidence: None,
            newest_unobserved_ms: None,
            last_event_ms: Some(NOW_MS - 30_000),
            silent_since_ms: None,
        },
        subscriptions,
    }
}

/// The console on the Health pane with `clock` as the pane's time.
pub(super) fn app_at(read_only: bool, clock: fn() -> i64) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only,
        ..ConsoleConfig::default()
    });
    app.panes.health = HealthPane::new().with_clock(clock);
    app
}

fn app(read_only: bool) -> App {
    app_at(read_only, now)
}

fn load_seq(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::Load { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a board read in {effects:?}"))
}

/// An app on the Health pane with the board loaded: broken first.
fn loaded() -> App {
    let mut app = app(false);
    let effects = app.init();
    let seq = load_seq(&effects);
    app.update(Action::Health(HealthResult::Loaded {
        seq,
        result: Ok(board(vec![row(BROKEN, 9), row(FINE, 0)])),
    }));
    app
}

#[test]
fn the_console_opens_on_the_board_which_reads_the_store_and_sweeps() {
    let mut app = app(false);
    assert_eq!(app.pane, PaneId::Health);
    assert_eq!(PaneId::ALL[0], PaneId::Health, "the first tab");
    let effects = app.init();
    let since = effects.iter().find_map(|effect| match effect {
        Effect::Health(HealthEffect::Load { since_ms, .. }) => Some(*since_ms),
        _ => None,
    });
    assert_eq!(since, Some(NOW_MS - 86_400_000), "the last 24 h by default");
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Health(HealthEffect::Sweep)))
    );
}

#[test]
fn a_stale_read_is_dropped_and_a_sweep_reloads_the_board() {
    let mut app = loaded();
    app.update(Action::Health(HealthResult::Loaded {
        seq: 0,
        result: Ok(board(Vec::new())),
    }));
    assert_eq!(
        app.panes.health.rows().len(),
        2,
        "an older read does not replace the board"
    );
    let effects = app.update(Action::Health(HealthResult::Swept(Ok(SweepReport {
        sessions_swept: 5,
        requests: 6,
        ..SweepReport::default()
    }))));
    assert!(!app.panes.health.sweeping);
    load_seq(&effects);
}

#[test]
fn enter_lists_failing_sessions_and_enter_again_opens_one_in_deliveries() {
    let mut app = loaded();
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.health.mode, Mode::Sessions);
    let (seq, of) = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadFailingSessions {
                seq,
                subscription_id,
                ..
            }) => Some((*seq, subscription_id.clone())),
            _ => None,
        })
        .expect("the failing sessions are read");
    assert_eq!(of, BROKEN);
    app.update(Action::Health(HealthResult::Sessions {
        seq,
        subscription_id: BROKEN.into(),
        result: Ok(vec![FailingSession {
            session_id: "call_1234".into(),
            failed_attempts: 2,
            last_failure_ms: NOW_MS - 1_000,
            http_status_code: Some(401),
            error: Some("HTTP 401: invalid signature".into()),
            event_types: vec!["call.ended".into()],
            missed: 1,
        }]),
    }));
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Deliveries);
    assert_eq!(app.panes.deliveries.id.as_deref(), Some("call_1234"));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Deliveries(DeliveriesEffect::Load { id, .. }) if id == "call_1234"))
    );
}

#[test]
fn a_subscription_with_no_failures_has_no_sessions_to_list() {
    let mut app = loaded();
    app.update(key('j'));
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.health.mode, Mode::Board);
    assert!(effects.is_empty());
}

#[test]
fn recover_needs_the_secret_and_the_short_id_typed_and_forgets_the_secret() {
    let mut app = loaded();
    let effects = app.update(key('R'));
    assert_eq!(app.panes.health.mode, Mode::Recover);
    // The preview is read first, and shown when it comes.
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Health(HealthEffect::PlanRecover { subscription_id, .. }) if subscription_id == BROKEN
        )),
        "{effects:?}"
    );
    let preview = Preview {
        to_send: 9,
        by_type: vec![("call.ended".into(), 9)],
        first_ms: Some(NOW_MS - 3_600_000),
        last_ms: Some(NOW_MS - 60_000),
        left_out: String::new(),
    };
    app.update(Action::Health(HealthResult::Planned {
        subscription_id: BROKEN.into(),
        result: Ok(preview.clone()),
    }));
    assert_eq!(
        app.panes
            .health
            .recover
            .as_ref()
            .and_then(|form| form.preview.clone()),
        Some(Ok(preview))
    );
    for c in "whsec_the_secret_0123456789abcdefghijk".chars() {
        app.update(key(c));
    }
    let effects = app.update(press(KeyCode::Enter));
    assert!(effects.is_empty(), "no confirmation yet");
    assert_eq!(
        app.panes.health.recover.as_ref().unwrap().field,
        Field::Confirm
    );
    for c in "b0000000".chars() {
        app.update(key(c));
    }
    let effects = app.update(press(KeyCode::Enter));
    let recover = effects
        .iter()
        .find(|effect| matches!(effect, Effect::Health(HealthEffect::Recover { .. })))
        .expect("recover starts");
    match recover {
        Effect::Health(HealthEffect::Recover {
            subscription_id,
            since_ms,
            secret,
            ..
        }) => {
            assert_eq!(subscription_id, BROKEN);
            assert_eq!(*since_ms, NOW_MS - 86_400_000);
            assert_eq!(secret.expose(), "whsec_the_secret_0123456789abcdefghijk");
        }
        _ => unreachable!(),
    }
    assert!(
        !format!("{effects:?}").contains("the_secret"),
        "masked in Debug"
    );
    let form = app.panes.health.recover.as_ref().unwrap();
    assert!(
        form.secret.value().is_empty(),
        "the form does not keep the secret"
    );
    assert!(app.panes.health.busy());
    let sent = Sent {
        event_id: "evt-1".into(),
        event: "call.ended".into(),
        session_id: "call_1".into(),
        http_status: Some(200),
        latency_ms: 12,
        delivered: true,
        error: None,
    };
    app.update(Action::Health(HealthResult::RecoverProgress {
        done: 3,
        total: 9,
        sent: Some(Box::new(sent.clone())),
    }));
    let form = app.panes.health.recover.as_ref().unwrap();
    assert_eq!(form.progress, Some((3, 9)));
    assert_eq!(form.sent, [sent], "each event's answer is listed");
    // `esc` while sending stops the run after the event being sent.
    let effects = app.update(press(KeyCode::Esc));
    assert!(effects.is_empty(), "{effects:?}");
    let stop = &app.panes.health.recover.as_ref().unwrap().stop;
    assert!(
        stop.load(std::sync::atomic::Ordering::Relaxed),
        "the run's stop flag is set"
    );
    assert_eq!(
        app.panes.health.mode,
        Mode::Recover,
        "the form stays for the result"
    );
    app.update(Action::Health(HealthResult::Recovered(Ok(
        "3 of 9 delivered; cancelled; 6 not attempted".into(),
    ))));
    let form = app.panes.health.recover.as_ref().unwrap();
    assert_eq!(
        form.result,
        Some(Ok("3 of 9 delivered; cancelled; 6 not attempted".into()))
    );
    app.update(press(KeyCode::Esc));
    assert_eq!(app.panes.health.mode, Mode::Board);
}

#[test]
fn read_only_hides_recover() {
    let mut app = app(true);
    let seq = load_seq(&app.init());
    app.update(Action::Health(HealthResult::Loaded {
        seq,
        result: Ok(board(vec![row(BROKEN, 9)])),
    }));
    app.update(key('R'));
    assert_eq!(app.panes.health.mode, Mode::Board);
    let help = format!("{:?}", app.help_sections());
    assert!(!help.contains("recover: re-send"), "{help}");
}

#[test]
fn w_cycles_the_window_and_reads_again() {
    let mut app = loaded();
    let effects = app.update(key('w'));
    assert_eq!(app.panes.health.window, Window::Week);
    let since = effects.iter().find_map(|effect| match effect {
        Effect::Health(HealthEffect::Load { since_ms, .. }) => Some(*since_ms),
        _ => None,
    });
    assert_eq!(since, Some(NOW_MS - 604_800_000));
    app.update(key('w'));
    assert_eq!(app.panes.health.window, Window::Hour);
}

#[test]
fn a_store_that_cannot_be_read_is_shown_not_fatal() {
    let mut app = app(false);
    let seq = load_seq(&app.init());
    app.update(Action::Health(HealthResult::Loaded {
        seq,
        result: Err(Failure::new("earshot.db is not an earshot store")),
    }));
    assert_eq!(
        app.panes.health.board.error(),
        Some("earshot.db is not an earshot store")
    );
    assert!(!app.quit);
}

/// The seq of the incidents read among `effects`.
fn incidents_seq(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadIncidents { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the incidents are read: {effects:?}"))
}

#[test]
fn a_failed_incidents_read_says_the_store_failed() {
    let mut app = loaded();
    let effects = app.update(Action::Health(HealthResult::Swept(Ok(Default::default()))));
    app.update(Action::Health(HealthResult::Incidents {
        seq: incidents_seq(&effects),
        result: Err(Failure::new("database is locked")),
    }));
    assert_eq!(app.panes.health.board.error(), Some("database is locked"));
}

#[test]
fn the_failing_sessions_error_is_said_in_their_view_until_a_read_works() {
    let mut app = loaded();
    let effects = app.update(press(KeyCode::Enter));
    let seq = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadFailingSessions { seq, .. }) => Some(*seq),
            _ => None,
        })
        .expect("the failing sessions are read");
    app.update(Action::Health(HealthResult::Sessions {
        seq,
        subscription_id: BROKEN.into(),
        result: Err(Failure::new("database is locked")),
    }));
    assert_eq!(
        app.panes.health.sessions_error.as_deref(),
        Some("database is locked"),
        "said in their view, not 'loading' for ever"
    );
    // A read that works clears it.
    let effects = app.update(key('r'));
    answer_sessions(&mut app, &effects, &["call_a"]);
    assert_eq!(app.panes.health.sessions_error, None);
    assert_eq!(app.panes.health.sessions().len(), 1);
}

#[test]
fn no_store_is_shown_in_the_pane_and_is_no_platform_error() {
    let mut app = app(false);
    app.init();
    app.update(Action::Health(HealthResult::NoStore(
        "no state directory for the incident-history store: set EARSHOT_STORE".into(),
    )));
    assert!(!app.panes.health.sweeping);
    assert!(
        app.panes
            .health
            .board
            .error()
            .unwrap()
            .contains("EARSHOT_STORE")
    );
    assert_ne!(
        app.status.connection,
        crate::tui::console::app::Connection::Error
    );
}

fn failing(id: &str) -> FailingSession {
    FailingSession {
        session_id: id.into(),
        failed_attempts: 3,
        last_failure_ms: NOW_MS - 1_000,
        http_status_code: Some(401),
        error: Some("HTTP 401: invalid signature".into()),
        event_types: vec!["call.ended".into()],
        missed: 1,
    }
}

/// Answers the failing-sessions read among `effects` with `ids`.
fn answer_sessions(app: &mut App, effects: &[Effect], ids: &[&str]) {
    let seq = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadFailingSessions { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the failing sessions are read: {effects:?}"));
    app.update(Action::Health(HealthResult::Sessions {
        seq,
        subscription_id: BROKEN.into(),
        result: Ok(ids.iter().map(|id| failing(id)).collect()),
    }));
}

#[test]
fn the_selection_stays_on_its_session_while_newer_failures_arrive() {
    let mut app = loaded();
    let effects = app.update(press(KeyCode::Enter));
    answer_sessions(&mut app, &effects, &["call_c", "call_b", "call_a"]);
    app.update(key('j'));
    let effects = app.update(key('r'));
    answer_sessions(
        &mut app,
        &effects,
        &["call_e", "call_d", "call_c", "call_b", "call_a"],
    );
    app.update(press(KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Deliveries);
    assert_eq!(
        app.panes.deliveries.id.as_deref(),
        Some("call_b"),
        "the call aimed at, not the row number"
    );
}

pub(super) fn incident(
    id: &str,
    state: earshot_core::history::incidents::IncidentState,
) -> Incident {
    Incident {
        id: id.into(),
        subscription_id: BROKEN.into(),
        diagnosis: "401 invalid signature: …".into(),
        first_seen_at: "2027-01-15T07:00:00Z".into(),
        last_seen_at: "2027-01-15T08:00:00Z".into(),
        missed: 9,
        recovered: 0,
        retrying: 0,
        state,
        acknowledged_by: None,
        acknowledged_at: None,
        note: None,
        resolved_at: None,
        resolved_reason: None,
        first_seen_ms: NOW_MS - 3_600_000,
        last_seen_ms: NOW_MS - 60_000,
        acknowledged_ms: None,
    }
}

#[test]
fn i_lists_incidents_and_a_acknowledges_one_with_a_note() {
    use earshot_core::history::incidents::IncidentState;
    let mut app = loaded();
    let effects = app.update(key('i'));
    assert_eq!(app.panes.health.mode, Mode::Incidents);
    let (seq, all) = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadIncidents { seq, all, .. }) => Some((*seq, *all)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the incidents are read: {effects:?}"));
    assert!(!all, "open and acknowledged ones first");
    app.update(Action::Health(HealthResult::Incidents {
        seq,
        result: Ok(vec![
            incident("0badcafe", IncidentState::Open),
            incident("1eadbeef", IncidentState::Open),
        ]),
    }));
    assert_eq!(app.panes.health.incidents.open_count(), 2);
    app.update(key('j'));
    app.update(key('a'));
    // The note is typed: `q` is a letter here, not quit.
    let typed = type_text(&mut app, "deploying fix, q soon");
    assert!(typed.is_empty() && !app.quit);
    let effects = app.update(press(KeyCode::Enter));
    let acked = effects.iter().find_map(|effect| match effect {
        Effect::Health(HealthEffect::AckIncident { id, note }) => Some((id.clone(), note.clone())),
        _ => None,
    });
    assert_eq!(
        acked,
        Some(("1eadbeef".into(), Some("deploying fix, q soon".into())))
    );
    let effects = app.update(Action::Health(HealthResult::Acknowledged(Ok(
        "acknowledged incident 1eadbeef as alice".into(),
    ))));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Health(HealthEffect::LoadIncidents { .. }))),
        "the list shows the acknowledgement"
    );
    assert!(app.toast.as_ref().is_some_and(|t| t.text.contains("alice")));
    // `v` asks for the resolved ones too.
    let effects = app.update(key('v'));
    assert!(effects.iter().any(|effect| matches!(
        effect,
        Effect::Health(HealthEffect::LoadIncidents { all: true, .. })
    )));
}

/// The newest change the board reads reaches the Subscriptions
/// detail too.
#[test]
fn the_boards_newest_change_reaches_the_subscriptions_detail() {
    use earshot_core::history::report::LatestChange;
    let mut app = app(false);
    let seq = load_seq(&app.init());
    let mut broken = row(BROKEN, 9);
    broken.latest_change = Some(LatestChange {
        action: "rotate".into(),
        at: "2027-01-15T07:00:00Z".into(),
        operator: "alice".into(),
        detail: "secret version 3".into(),
        at_ms: NOW_MS - 3_600_000,
    });
    app.update(Action::Health(HealthResult::Loaded {
        seq,
        result: Ok(board(vec![broken, row(FINE, 0)])),
    }));
    let change = app
        .panes
        .subs
        .latest_change(BROKEN)
        .map(|c| c.operator.clone());
    assert_eq!(change.as_deref(), Some("alice"));
    assert!(app.panes.subs.latest_change(FINE).is_none());
}

#[test]
fn s_hands_the_401_groups_example_to_signatures_to_ask_the_receiver() {
    let mut app = loaded();
    assert_eq!(
        app.panes.health.selected().map(|row| row.id.as_str()),
        Some(BROKEN)
    );
    let effects = app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    let form = app.panes.sigs.refused.clone().expect("a refused delivery");
    assert_eq!(form.target.subscription_id, BROKEN);
    assert_eq!(form.target.session_id, "ses_example");
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Sigs(_))),
        "the store is read for its event: {effects:?}"
    );

    // A subscription with no 401 group has no `s`.
    let mut app = loaded();
    app.update(press(KeyCode::Down));
    assert_eq!(
        app.panes.health.selected().map(|row| row.id.as_str()),
        Some(FINE)
    );
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Health);
}
