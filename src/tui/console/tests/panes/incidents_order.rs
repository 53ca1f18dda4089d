//! The Health pane's incidents list holds still while the operator works
//! in it: a refresh whose incidents were seen again (their last-seen
//! times moved, so the store lists them in another order) keeps each row
//! where it was, puts a new incident on top and drops a gone one; `a`
//! acknowledges the incident under the cursor when it was pressed. The
//! store's order comes back once no key was pressed for the hold, with
//! `o`, and with `v`.

use std::cell::Cell;

use super::health::{app_at, incident};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::panes::health::HealthResult;
use crate::tui::panes::health::incidents::HOLD_MS;
use crate::tui::panes::health::tasks::HealthEffect;
use earshot_core::history::incidents::{Incident, IncidentState};
use ratatui::crossterm::event::KeyCode;

const START_MS: i64 = 1_800_000_000_000;

thread_local! {
    /// The pane's clock in these tests (each test runs on its own thread).
    static NOW_MS: Cell<i64> = const { Cell::new(START_MS) };
}

fn now() -> i64 {
    NOW_MS.with(Cell::get)
}

fn pass(ms: i64) {
    NOW_MS.with(|now| now.set(now.get() + ms));
}

/// An open incident last seen `ago_s` seconds ago.
fn seen(id: &str, ago_s: i64) -> Incident {
    let mut incident = incident(id, IncidentState::Open);
    incident.last_seen_ms = now() - ago_s * 1_000;
    incident
}

/// Answers the incidents read among `effects` with `rows` (the store's
/// order); panics when none was asked for.
fn answer(app: &mut App, effects: &[Effect], rows: Vec<Incident>) {
    let seq = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadIncidents { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the incidents are read: {effects:?}"));
    app.update(Action::Health(HealthResult::Incidents {
        seq,
        result: Ok(rows),
    }));
}

/// The pane's refresh (every 5 s on screen, after its sweep) answered
/// with `rows`.
fn refresh(app: &mut App, rows: Vec<Incident>) {
    let effects = app.update(Action::Health(HealthResult::Swept(Ok(Default::default()))));
    answer(app, &effects, rows);
}

/// The ids in the order shown, and the selected one.
fn shown(app: &App) -> (Vec<String>, Option<String>) {
    let incidents = &app.panes.health.incidents;
    let rows = incidents.rows();
    let order = (0..incidents.table.len())
        .filter_map(|position| incidents.table.row_at(rows, position))
        .map(|incident| incident.id.clone())
        .collect();
    (
        order,
        incidents.selected().map(|incident| incident.id.clone()),
    )
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

/// The console on the incidents list of a, b, c (latest activity first),
/// `b` selected.
fn on_b() -> App {
    NOW_MS.with(|now| now.set(START_MS));
    let mut app = app_at(false, now);
    app.init();
    let effects = app.update(key('i'));
    answer(
        &mut app,
        &effects,
        vec![seen("a0", 10), seen("b0", 20), seen("c0", 30)],
    );
    app.update(key('j'));
    assert_eq!(shown(&app), (ids(&["a0", "b0", "c0"]), Some("b0".into())));
    app
}

/// The acknowledgement `enter` asks for.
fn acked(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|effect| match effect {
        Effect::Health(HealthEffect::AckIncident { id, .. }) => Some(id.clone()),
        _ => None,
    })
}

#[test]
fn a_refresh_that_moves_last_seen_times_keeps_each_row_where_it_was() {
    let mut app = on_b();
    pass(2_000);
    // c failed again, then a new incident d: the store lists d, c, a, b;
    // a0 is gone (resolved).
    refresh(&mut app, vec![seen("d0", 0), seen("c0", 1), seen("b0", 22)]);
    assert_eq!(
        shown(&app),
        (ids(&["d0", "b0", "c0"]), Some("b0".into())),
        "the new one on top, the others where they were"
    );
    let rows = app.panes.health.incidents.rows();
    let c = rows
        .iter()
        .find(|incident| incident.id == "c0")
        .expect("c0");
    assert_eq!(
        c.last_seen_ms,
        now() - 1_000,
        "its row shows the fresh read"
    );
    // A quick ↓ a lands on the row shown under b: c.
    app.update(key('j'));
    app.update(key('a'));
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(acked(&effects).as_deref(), Some("c0"));
}

#[test]
fn a_acknowledges_the_incident_under_the_cursor_when_pressed() {
    let mut app = on_b();
    app.update(key('a'));
    type_text(&mut app, "on it");
    // While the note is typed, b resolves and leaves the list: the
    // selection moves to another row, the acknowledgement does not.
    pass(2_000);
    refresh(&mut app, vec![seen("a0", 1), seen("c0", 2)]);
    assert_ne!(shown(&app).1.as_deref(), Some("b0"));
    assert_eq!(app.panes.health.incidents.acknowledging(), Some("b0"));
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(acked(&effects).as_deref(), Some("b0"));
}

#[test]
fn the_stores_order_returns_after_the_hold_with_o_and_with_v() {
    let mut app = on_b();
    let by_activity = || vec![seen("c0", 1), seen("a0", 2), seen("b0", 3)];
    pass(HOLD_MS - 1);
    refresh(&mut app, by_activity());
    assert_eq!(shown(&app).0, ids(&["a0", "b0", "c0"]), "still held");
    assert!(
        app.panes.health.incidents.held(now()),
        "the heading says so"
    );
    pass(1);
    assert!(!app.panes.health.incidents.held(now()));
    refresh(&mut app, by_activity());
    assert_eq!(
        shown(&app),
        (ids(&["c0", "a0", "b0"]), Some("b0".into())),
        "no key for the hold: the store's order, the selection on its incident"
    );
    // A key holds it again; `o` takes the store's order at once.
    app.update(key('k'));
    refresh(&mut app, vec![seen("b0", 0), seen("c0", 1), seen("a0", 2)]);
    assert_eq!(shown(&app).0, ids(&["c0", "a0", "b0"]));
    let effects = app.update(key('o'));
    answer(
        &mut app,
        &effects,
        vec![seen("b0", 0), seen("c0", 1), seen("a0", 2)],
    );
    assert_eq!(
        shown(&app).0,
        ids(&["b0", "c0", "a0"]),
        "o: the store's order"
    );
    // So does `v` (another list: the resolved ones too).
    let effects = app.update(key('v'));
    answer(
        &mut app,
        &effects,
        vec![seen("a0", 0), seen("b0", 1), seen("c0", 2)],
    );
    assert_eq!(
        shown(&app).0,
        ids(&["a0", "b0", "c0"]),
        "v: the store's order"
    );
}
