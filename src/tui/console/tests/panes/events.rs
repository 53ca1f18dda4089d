//! `update` tests of the Events pane, driven through the [`App`] with the
//! keys an operator would press.

use ratatui::crossterm::event::KeyCode;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::PaneId;
use crate::tui::panes::events::tasks::{EventsEffect, ResendTarget};
use crate::tui::panes::events::{EventsPane, Mode};
use crate::tui::panes::events::{EventsResult, Resent};
use crate::tui::panes::signatures::Field as SigField;
use earshot_core::history::event_list::{
    EventDetail, EventRow, SubscriptionOutcome, SubscriptionTimeline,
};
use earshot_core::store::outcomes::{EventState, Outcome};

const SUB: &str = "db318dee-0000-4000-8000-000000000001";
const NOW_MS: i64 = 1_800_000_000_000;

fn now() -> i64 {
    NOW_MS
}

fn event(n: i64) -> EventRow {
    EventRow {
        event_id: format!("evt-{n}"),
        event: "call.ended".into(),
        session_id: format!("call_{n}"),
        occurred_at: String::new(),
        occurred_ms: NOW_MS - 1_000_000 + n * 1_000,
        received_ms: 0,
        subscriptions: vec![SubscriptionOutcome {
            id: SUB.into(),
            state: EventState::Missed,
            attempts: 4,
            observer: false,
        }],
        outcomes_known: true,
    }
}

/// Events `newest` down to `oldest`, newest first (as the store lists).
fn events(newest: i64, oldest: i64) -> Vec<EventRow> {
    (oldest..=newest).rev().map(event).collect()
}

fn app(read_only: bool) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only,
        ..ConsoleConfig::default()
    });
    app.panes.events = EventsPane::new().with_clock(now);
    app.pane = PaneId::Events;
    app
}

fn list_seq(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Events(EventsEffect::Load { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a list read in {effects:?}"))
}

/// Reloads (`r`) and answers the read with `rows`.
fn arrive(app: &mut App, rows: Vec<EventRow>) {
    let seq = list_seq(&app.update(key('r')));
    app.update(Action::Events(EventsResult::Loaded {
        seq,
        result: Ok(rows),
        mark: None,
    }));
}

fn selected_id(app: &App) -> String {
    app.panes
        .events
        .selected()
        .map(|row| row.event_id.clone())
        .unwrap_or_default()
}

fn detail() -> EventDetail {
    let outcome = Outcome {
        subscription_id: SUB.into(),
        event_key: "evt-3".into(),
        event_id: Some("evt-3".into()),
        event: Some("call.ended".into()),
        session_id: "call_3".into(),
        occurred_ms: NOW_MS,
        state: EventState::Missed,
        attempts: 4,
        http_status_code: 401,
        error_class: String::new(),
        first_failure_ms: Some(NOW_MS),
        last_failure_ms: Some(NOW_MS),
        settled_ms: None,
    };
    EventDetail {
        row: event(3),
        headers: vec![("X-SVC-Signature".into(), "t=1,v1=abc".into())],
        body: br#"{"event":"call.ended"}"#.to_vec(),
        subscriptions: vec![SubscriptionTimeline {
            outcome,
            url: Some("https://hooks.example/call".into()),
            attempts: Vec::new(),
        }],
        outcomes_unknown: None,
        give_up: "on this account the platform gave up after 8 attempts (seen 14 times)".into(),
    }
}

/// On the list with events 5..1, the third (evt-3) opened in full.
fn opened() -> App {
    let mut app = app(false);
    arrive(&mut app, events(5, 1));
    app.update(key('j'));
    app.update(key('j'));
    let effects = app.update(press(KeyCode::Enter));
    let seq = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Events(EventsEffect::Detail { seq, event_id }) if event_id == "evt-3" => {
                Some(*seq)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("evt-3 read in full: {effects:?}"));
    app.update(Action::Events(EventsResult::Detail {
        seq,
        result: Ok(Some(Box::new(detail()))),
    }));
    assert_eq!(app.panes.events.mode, Mode::Detail);
    app
}

#[test]
fn at_the_top_the_list_follows_the_newest_event() {
    let mut app = app(false);
    arrive(&mut app, events(3, 1));
    assert!(app.panes.events.following());
    arrive(&mut app, events(6, 1));
    assert_eq!(selected_id(&app), "evt-6", "the newest is selected");
    assert!(app.panes.events.following());
}

#[test]
fn moving_down_pauses_and_the_selection_stays_on_its_event_while_rows_arrive() {
    let mut app = app(false);
    arrive(&mut app, events(5, 1));
    app.update(key('j'));
    assert_eq!(selected_id(&app), "evt-4");
    assert!(!app.panes.events.following(), "moving the cursor pauses");
    arrive(&mut app, events(8, 1));
    assert_eq!(
        selected_id(&app),
        "evt-4",
        "the same event, three rows lower"
    );
    assert_eq!(app.panes.events.new_above, 3);
    // `g` goes back to the top, and following resumes.
    app.update(key('g'));
    assert!(app.panes.events.following());
    arrive(&mut app, events(9, 1));
    assert_eq!(selected_id(&app), "evt-9");
}

#[test]
fn a_stale_read_is_dropped() {
    let mut app = app(false);
    arrive(&mut app, events(2, 1));
    app.update(Action::Events(EventsResult::Loaded {
        seq: 0,
        result: Ok(Vec::new()),
        mark: None,
    }));
    assert_eq!(app.panes.events.rows().len(), 2);
}

#[test]
fn slash_filters_in_the_query_language_and_a_bad_term_says_why() {
    let mut app = app(false);
    app.update(key('/'));
    assert_eq!(app.panes.events.mode, Mode::Filter);
    // Typed keys go to the filter, not to the global commands.
    type_text(&mut app, "type:call.ended status:missed q");
    assert!(!app.quit);
    let effects = app.update(press(KeyCode::Enter));
    let query = effects.iter().find_map(|effect| match effect {
        Effect::Events(EventsEffect::Load { query, .. }) => Some(query.clone()),
        _ => None,
    });
    let query = query.unwrap_or_else(|| panic!("a filtered read in {effects:?}"));
    assert_eq!(query.event_type.as_deref(), Some("call.ended"));
    assert_eq!(query.state, Some(EventState::Missed));
    assert_eq!(query.words, ["q"]);
    assert_eq!(app.panes.events.mode, Mode::List);

    app.update(key('/'));
    type_text(&mut app, " colour:red");
    let effects = app.update(press(KeyCode::Enter));
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(
        app.panes.events.mode,
        Mode::Filter,
        "the typed filter is kept"
    );
    let why = app.panes.events.filter_error.clone().unwrap_or_default();
    assert!(why.contains("unknown field `colour`"), "{why}");

    // esc cancels typing; esc on the list clears the filter in force.
    app.update(press(KeyCode::Esc));
    assert_eq!(app.panes.events.filter, "type:call.ended status:missed q");
    let effects = app.update(press(KeyCode::Esc));
    assert!(app.panes.events.filter.is_empty());
    let cleared = effects
        .iter()
        .any(|effect| matches!(effect, Effect::Events(EventsEffect::Load { query, .. }) if query.is_empty()));
    assert!(cleared, "{effects:?}");
}

#[test]
fn an_open_event_keeps_its_place_in_the_list_when_rows_arrive() {
    let mut app = opened();
    arrive(&mut app, events(7, 1));
    app.update(press(KeyCode::Esc));
    assert_eq!(app.panes.events.mode, Mode::List);
    assert_eq!(selected_id(&app), "evt-3");
}

#[test]
fn s_on_a_401_subscription_hands_the_observers_bytes_without_its_header() {
    let mut app = opened();
    let effects = app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    // The observer's header was signed with the observer's secret: it
    // proves nothing about the receiver that refused the event.
    assert_eq!(app.panes.sigs.input(SigField::Header).value(), "");
    let body = br#"{"event":"call.ended"}"#.len();
    assert_eq!(
        app.panes.sigs.input(SigField::Body).value(),
        format!("<the observer's copy of event evt-3, {body} bytes>")
    );
    let refused = app.panes.sigs.refused.as_ref().expect("a refused delivery");
    assert_eq!(refused.target.subscription_id, SUB);
    assert_eq!(refused.event_id.as_deref(), Some("evt-3"));
    assert!(effects.is_empty(), "the bytes came along: {effects:?}");
}

#[test]
fn s_on_a_delivered_subscription_hands_the_observed_header_and_body() {
    let mut app = opened();
    let mut delivered = detail();
    delivered.subscriptions[0].outcome.http_status_code = 0;
    delivered.subscriptions[0].outcome.state = EventState::Delivered;
    app.panes.events.detail = Some(Box::new(delivered));
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    assert_eq!(app.panes.sigs.input(SigField::Header).value(), "t=1,v1=abc");
    assert!(app.panes.sigs.refused.is_none());
    let hint = app.panes.sigs.secret_hint.clone().unwrap_or_default();
    assert!(hint.contains("the observer's secret"), "{hint}");
}

#[test]
fn resend_needs_the_secret_and_the_short_id_typed() {
    let mut app = opened();
    app.update(key('R'));
    assert_eq!(app.panes.events.mode, Mode::Resend);
    assert!(
        app.update(press(KeyCode::Enter)).is_empty(),
        "no secret, no confirmation"
    );
    type_text(&mut app, "whsec_test_secret");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "nope");
    assert!(
        app.update(press(KeyCode::Enter)).is_empty(),
        "a wrong short id"
    );
    for _ in 0..4 {
        app.update(press(KeyCode::Backspace));
    }
    type_text(&mut app, "db318dee");
    let effects = app.update(press(KeyCode::Enter));
    let sent = effects.iter().find_map(|effect| match effect {
        Effect::Events(EventsEffect::Resend {
            event_id,
            target,
            secret,
        }) => Some((event_id.clone(), target.clone(), secret.expose().to_owned())),
        _ => None,
    });
    assert_eq!(
        sent,
        Some((
            "evt-3".into(),
            ResendTarget::Subscription(SUB.into()),
            "whsec_test_secret".into()
        ))
    );
    let form = app
        .panes
        .events
        .resend
        .as_ref()
        .map(|form| form.secret.value().to_owned());
    assert_eq!(
        form.as_deref(),
        Some(""),
        "the secret leaves the form once sent"
    );
    let effects = app.update(Action::Events(EventsResult::Resent(Ok(Resent {
        delivered: true,
        summary: "delivered".into(),
    }))));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Events(EventsEffect::Load { .. }))),
        "the list shows the recovery"
    );
}

#[test]
fn sending_to_a_url_takes_only_http_urls() {
    let mut app = opened();
    app.update(key('u'));
    type_text(&mut app, "ftp://example.com/hook");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "whsec_dev");
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    // The refused URL has the keyboard again.
    for _ in 0.."ftp://example.com/hook".len() {
        app.update(press(KeyCode::Backspace));
    }
    type_text(&mut app, "http://127.0.0.1:9/hook");
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Events(EventsEffect::Resend { target: ResendTarget::Url(url), .. }) if url == "http://127.0.0.1:9/hook"
        )),
        "{effects:?}"
    );
}

#[test]
fn read_only_hides_both_sends() {
    let mut app = opened();
    app.config.read_only = true;
    assert!(app.update(key('R')).is_empty());
    assert!(app.update(key('u')).is_empty());
    assert_eq!(app.panes.events.mode, Mode::Detail);
    // The signature check reads only.
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
}

#[test]
fn n_shows_personal_data_and_shows_it_masked_again() {
    let mut app = opened();
    assert!(!app.panes.events.reveal);
    app.update(key('n'));
    assert!(app.panes.events.reveal);
    app.update(key('n'));
    assert!(!app.panes.events.reveal);
}
