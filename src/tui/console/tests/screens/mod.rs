//! Snapshots of the console at 80×24 and 120×40 under `TestBackend`, with
//! fixed fixture rows; the styles that carry meaning (selection, paused
//! rows) are asserted separately, since snapshots record symbols only.
//! This module holds the shared fixtures (the subscription rows, the app,
//! rendering and reading the screen); each pane's tests are a submodule.

mod deliveries;
mod events;
mod frame;
mod health;
mod help;
mod inbox;
mod jobs;
mod jobs_chart;
mod probe;
mod pulse;
mod signatures;
mod subscriptions;

use crate::tui::console::action::Action;
use crate::tui::console::app::{App, Connection};
use crate::tui::console::view;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::PaneId;
use crate::tui::theme::{Role, Theme};
use chrono::TimeZone;
use earshot_core::api::types::agents::Subscription;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use serde_json::{Map, json};

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

fn subscription(
    id: &str,
    url: &str,
    events: &[&str],
    agent: Option<&str>,
    enabled: bool,
    version: u32,
) -> Subscription {
    let mut extra = Map::new();
    extra.insert("created_at".into(), json!("2025-03-14T09:26:53Z"));
    Subscription {
        id: id.into(),
        url: url.into(),
        events: events.iter().map(|event| (*event).to_owned()).collect(),
        agent_id: agent.map(str::to_owned),
        enabled,
        secret_version: version,
        extra,
    }
}

fn fixtures() -> Vec<Subscription> {
    vec![
        subscription(
            "1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d",
            "https://hooks.example.com/earshot/sessions",
            &["session.started", "session.completed"],
            None,
            true,
            1,
        ),
        subscription(
            "2b3c4d5e-6f70-4b1c-9d2e-3f4a5b6c7d8e",
            "https://billing.example.org/webhooks/voice-agent/calls?tenant=acme",
            &["call.connected", "call.ended", "call.failed"],
            Some("6f1c1a52-6a1c-4c59-b1f3-0f9e5f2d8a11"),
            true,
            3,
        ),
        subscription(
            "3c4d5e6f-7081-4c2d-8e3f-4a5b6c7d8e9f",
            "https://legacy.example.net/hook",
            &["session.completed"],
            None,
            false,
            2,
        ),
        subscription(
            "4d5e6f70-8192-4d3e-9f4a-5b6c7d8e9fa0",
            "https://ops.example.com/alerts/failed-calls",
            &["call.failed"],
            Some("0d9c8b7a-6f5e-4d3c-8b2a-190817263544"),
            true,
            1,
        ),
    ]
}

/// A console for profile `prod` in region `eu`, nothing loaded yet.
fn bare_app(config: ConsoleConfig) -> App {
    App::new(ConsoleConfig {
        profile_label: "prod".into(),
        region: "eu".into(),
        ..config
    })
}

fn app_with(config: ConsoleConfig) -> App {
    let mut app = bare_app(config);
    app.panes.subs.set_rows(fixtures());
    app.status.connection = Connection::Ok;
    // The fixtures are subscriptions: start where they show.
    app.pane = PaneId::Subscriptions;
    app
}

fn app() -> App {
    app_with(ConsoleConfig::default())
}

fn key(code: KeyCode) -> Action {
    Action::Input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn keys(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(key(KeyCode::Char(c)));
    }
}

fn render(app: &App, size: (u16, u16)) -> Terminal<TestBackend> {
    render_with(app, size, &Theme::fallback())
}

/// The whole frame at `size`, drawn with `theme`.
fn render_with(app: &App, (width, height): (u16, u16), theme: &Theme) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal
        .draw(|frame| view::draw(frame, app, theme))
        .expect("draws");
    terminal
}

/// The theme without colour (`NO_COLOR`).
fn mono() -> Theme {
    crate::tui::theme::load(&crate::tui::theme::ThemeRequest {
        no_color: true,
        ..crate::tui::theme::ThemeRequest::default()
    })
    .theme
}

/// Snapshots the pane's area of the whole frame at each size
/// ([`pane_area`]).
fn snapshot(name: &str, app: &App) {
    for size in SIZES {
        let terminal = render(app, size);
        insta::assert_snapshot!(
            format!("{name}_{}x{}", size.0, size.1),
            pane_area(&terminal)
        );
    }
}

/// The pane's area of the screen, between the tab bar and the footer (with
/// what an overlay draws over it), row after row as `TestBackend` prints a
/// screen: what a snapshot holds, so that a new pane, which adds a tab,
/// changes none. The help's "go to pane" key range (`1–8`), which names the
/// number of panes, reads `1–N` (its count is checked in
/// `the_tab_bar_and_the_go_to_keys_follow_the_registry`). The tab bar
/// itself is checked there, and the footer and status bar in
/// `the_footer_and_status_bar_frame_every_pane`.
fn pane_area(terminal: &Terminal<TestBackend>) -> String {
    let height = terminal.backend().buffer().area.height;
    rows(terminal, 1..height.saturating_sub(2)).replace(&go_to_range(), "1–N")
}

/// The screen's rows `range`, as `TestBackend` prints them: each quoted,
/// a wide symbol covering the cells after it.
fn rows(terminal: &Terminal<TestBackend>, range: std::ops::Range<u16>) -> String {
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in range {
        text.push('"');
        let mut skip = 0;
        for x in 0..buffer.area.width {
            let symbol = buffer[(x, y)].symbol();
            if skip == 0 {
                text.push_str(symbol);
            }
            skip = std::cmp::max(skip, crate::tui::widgets::width(symbol)).saturating_sub(1);
        }
        text.push_str("\"\n");
    }
    text
}

/// The help's label for the number keys: `1–8` with eight panes.
fn go_to_range() -> String {
    format!("1–{}", PaneId::ALL.len())
}

/// The colour the fallback theme gives `role`.
fn colour(role: Role) -> Color {
    Theme::fallback()
        .style(role)
        .fg
        .expect("the role has a colour")
}

/// The foreground colour of the cell at `(x, y)`.
fn fg_at(terminal: &Terminal<TestBackend>, (x, y): (u16, u16)) -> Color {
    terminal.backend().buffer()[(x, y)].fg
}

/// Every cell's symbol, row after row with no line break between rows (so
/// a secret cut at a row's end still shows).
fn cells(terminal: &Terminal<TestBackend>) -> String {
    terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|cell| cell.symbol())
        .collect()
}

/// The status bar's fixed time of a failure, 09:26:53 UTC (the bar says
/// it in UTC whatever the machine's zone).
fn fixed_local_time() -> chrono::DateTime<chrono::Local> {
    chrono::Utc
        .with_ymd_and_hms(2025, 3, 14, 9, 26, 53)
        .single()
        .expect("a valid time")
        .with_timezone(&chrono::Local)
}

fn screen_text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

/// Where `needle` starts on screen: (x, y) of its first cell (panics, with
/// the screen, when it is not there).
fn find(terminal: &Terminal<TestBackend>, needle: &str) -> (u16, u16) {
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    for y in 0..area.height {
        let line: String = (0..area.width).map(|x| buffer[(x, y)].symbol()).collect();
        if let Some(byte) = line.find(needle) {
            let column = line[..byte].chars().count();
            return (u16::try_from(column).expect("a column on screen"), y);
        }
    }
    panic!("{needle:?} is not on screen:\n{}", screen_text(terminal))
}
