//! Snapshots of the console at 80×24 and 120×40 under `TestBackend`, with
//! fixed fixture rows; the styles that carry meaning (selection, paused
//! rows) are asserted separately, since snapshots record symbols only.

use chrono::TimeZone;
use earshot::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};
use earshot::api::validate::UrlPolicy;
use earshot::history::session_view::{self, SessionView};
use earshot::store::events::StoredEvent;
use earshot::tui::action::{Action, Effect, Failure, SubsResult};
use earshot::tui::app::{App, AppConfig, Connection};
use earshot::tui::panes::PaneId;
use earshot::tui::panes::deliveries::DeliveriesPane;
use earshot::tui::panes::subscriptions::SubscriptionsPane;
use earshot::tui::theme::{Role, Theme};
use earshot::tui::view;
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
fn bare_app(config: AppConfig) -> App {
    App::new(AppConfig {
        profile_label: "prod".into(),
        region: "eu".into(),
        ..config
    })
}

fn app_with(config: AppConfig) -> App {
    let mut app = bare_app(config);
    app.subs.set_rows(fixtures());
    app.status.connection = Connection::Ok;
    // The fixtures are subscriptions: start where they show.
    app.pane = PaneId::Subscriptions;
    app
}

fn app() -> App {
    app_with(AppConfig::default())
}

fn key(code: KeyCode) -> Action {
    Action::Input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn keys(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(key(KeyCode::Char(c)));
    }
}

fn render(app: &App, (width, height): (u16, u16)) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    let theme = Theme::fallback();
    terminal
        .draw(|frame| view::draw(frame, app, &theme))
        .expect("draws");
    terminal
}

fn snapshot(name: &str, app: &App) {
    for size in SIZES {
        let terminal = render(app, size);
        insta::assert_snapshot!(format!("{name}_{}x{}", size.0, size.1), terminal.backend());
    }
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

#[test]
fn table_with_fixture_rows() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    snapshot("subs_table", &app);
}

#[test]
fn demo_marker_and_read_only_marker_show_in_the_tab_bar() {
    let app = app_with(AppConfig {
        demo: true,
        read_only: true,
        ..AppConfig::default()
    });
    snapshot("subs_table_demo_read_only", &app);
}

#[test]
fn detail_view() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Enter));
    snapshot("subs_detail", &app);
}

#[test]
fn create_form_with_errors() {
    let mut app = app();
    keys(&mut app, "n");
    keys(&mut app, "http://hooks.example.com/x");
    app.update(key(KeyCode::Enter));
    snapshot("subs_create_errors", &app);
}

#[test]
fn delete_confirmation() {
    let mut app = app();
    keys(&mut app, "D");
    keys(&mut app, "1a2b");
    snapshot("subs_delete_confirm", &app);
}

fn fixed_secret() -> Result<String, String> {
    Ok("whsec_Zm9yIHNuYXBzaG90cyBvbmx5LCBuZXZlciB1c2VkIGFueXdoZXJl".into())
}

#[test]
fn rotate_dialog_then_the_secret_shown_once() {
    let mut app = app();
    app.subs = SubscriptionsPane::new(UrlPolicy::PublicHttps).with_generator(fixed_secret);
    app.subs.set_rows(fixtures());
    keys(&mut app, "R");
    app.update(key(KeyCode::Tab));
    keys(&mut app, "1a2b3c4d");
    snapshot("subs_rotate_confirm", &app);

    let effects = app.update(key(KeyCode::Enter));
    assert!(matches!(effects.as_slice(), [Effect::RotateSecret { .. }]));
    let mut rotated = fixtures()[0].clone();
    rotated.secret_version = 2;
    app.update(Action::Subs(SubsResult::Rotated {
        id: rotated.id.clone(),
        result: Ok(rotated),
    }));
    snapshot("subs_secret_shown_once", &app);
}

#[test]
fn help_overlay() {
    let mut app = app();
    keys(&mut app, "?");
    snapshot("help_overlay", &app);
}

/// Long key descriptions wrap within their own column, under their
/// first line, not back to the box's left edge (issue 14, item 8).
#[test]
fn help_overlay_on_deliveries_wraps_within_each_column() {
    let mut app = app();
    keys(&mut app, "3?");
    let size = (120, 40);
    let terminal = render(&app, size);
    insta::assert_snapshot!("help_overlay_deliveries_120x40", terminal.backend());
    // Every row of the overlay that holds text is either a section title,
    // a key with its description, or a continuation indented to the
    // description column: never text starting at a column's left edge
    // that is not a title.
    let sections = app.help_sections();
    let titles: Vec<&str> = sections.iter().map(|section| section.title).collect();
    let buffer = terminal.backend().buffer();
    let row = |y: u16, from: u16, to: u16| -> String {
        (from..to).map(|x| buffer[(x, y)].symbol()).collect()
    };
    // The box is 104 wide, centred; two columns of 51 inside its border.
    let left = (size.0 - 104) / 2 + 1;
    let mut checked = 0;
    for y in 0..size.1 {
        if buffer[(left - 1, y)].symbol() != "│" {
            continue; // outside the box
        }
        for start in [left, left + 51] {
            let text = row(y, start, start + 51);
            let trimmed = text.trim_end();
            if trimmed.is_empty() || trimmed.starts_with(' ') {
                continue;
            }
            assert!(
                titles.iter().any(|title| trimmed.starts_with(title)),
                "row {y} starts a column with {trimmed:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "the overlay did not draw its sections");
}

#[test]
fn filtered_table_with_the_filter_line_open() {
    let mut app = app();
    keys(&mut app, "/call");
    snapshot("subs_filter", &app);
}

fn fixed_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc
        .with_ymd_and_hms(2025, 3, 14, 9, 30, 0)
        .single()
        .expect("a valid time")
}

/// The status bar's fixed time of a failure (local time: the bar's own).
fn fixed_local_time() -> chrono::DateTime<chrono::Local> {
    chrono::Local
        .with_ymd_and_hms(2025, 3, 14, 9, 26, 53)
        .single()
        .expect("a valid local time")
}

fn at(seconds_after_now: i64) -> chrono::DateTime<chrono::FixedOffset> {
    (fixed_now() + chrono::Duration::seconds(seconds_after_now)).fixed_offset()
}

const SESSION: &str = "sess_01JQ4F2A9C1E7B";

fn delivery(
    id: &str,
    subscription: &str,
    status: DeliveryStatus,
    attempt: u32,
    http: Option<u16>,
    error: Option<&str>,
    created: i64,
) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        subscription_id: subscription.into(),
        session_id: SESSION.into(),
        delivered_at: (status == DeliveryStatus::Delivered).then(|| at(created + 1)),
        status,
        attempt_count: attempt,
        http_status_code: http,
        error: error.map(str::to_owned),
        next_retry_at: None,
        created_at: at(created),
        extra: Map::new(),
    }
}

fn deliveries() -> Vec<DeliveryRecord> {
    let mut pending = delivery(
        "b7e2c9d4-1f3a-4b5c-8d6e-7f8091a2b3c4",
        "4d5e6f70-8192-4d3e-9f4a-5b6c7d8e9fa0",
        DeliveryStatus::Pending,
        2,
        Some(503),
        Some("HTTP 503: Service Unavailable"),
        -20,
    );
    pending.next_retry_at = Some(at(12));
    vec![
        delivery(
            "a1f0e9d8-2c3b-4a59-9687-1a2b3c4d5e6f",
            "2b3c4d5e-6f70-4b1c-9d2e-3f4a5b6c7d8e",
            DeliveryStatus::Failed,
            1,
            Some(401),
            Some("HTTP 401: invalid signature"),
            -90,
        ),
        pending,
        delivery(
            "c8f3d0e5-2a4b-4c6d-9e7f-8091a2b3c4d5",
            "1a2b3c4d-5e6f-4a0b-8c1d-2e3f4a5b6c7d",
            DeliveryStatus::Delivered,
            1,
            Some(200),
            None,
            -60,
        ),
    ]
}

fn deliveries_app() -> App {
    let mut app = app();
    app.deliveries = DeliveriesPane::new().with_clock(fixed_now);
    app.seed_recent_ids(vec![
        SESSION.into(),
        "call_01JQ4E8B2D6F0A".into(),
        "sess_01JQ4D1C9E3B5F".into(),
    ]);
    app.deliveries.set_rows(SESSION, deliveries());
    keys(&mut app, "3");
    app
}

const CALL: &str = "call_01JQ4E8B2D6F0A";
const RECORDING: &str =
    "https://files.example.com/acct/4242/call_01JQ4E8B2D6F0A/recording.wav?X-Amz-Signature=0f1e2d";

/// A call that ended 19 minutes before the fixed clock: its links expire
/// in 41 minutes; the record lists both artifacts.
fn ended_call_view() -> SessionView {
    let event = |name: &str, seconds: i64, call: serde_json::Value| StoredEvent {
        event_id: format!("ev_{name}"),
        event: name.into(),
        session_id: CALL.into(),
        occurred_ms: at(seconds).timestamp_millis(),
        body: serde_json::to_vec(&json!({
            "event_id": format!("ev_{name}"), "event": name,
            "timestamp": at(seconds).to_rfc3339(), "call": call,
        }))
        .unwrap(),
    };
    let events = [
        event(
            "call.connected",
            -1_500,
            json!({"status": "connected", "from_number": "+15555550189", "recording_url": null}),
        ),
        event(
            "call.ended",
            -19 * 60,
            json!({"status": "ended", "from_number": "+15555550189",
                "recording_url": RECORDING,
                "transcript_url": "https://files.example.com/acct/4242/call_01JQ4E8B2D6F0A/transcript.json?X-Amz-Signature=9a8b"}),
        ),
    ];
    let record: earshot::api::types::agents::SessionRecord = serde_json::from_value(json!({
        "session_id": CALL, "status": "ended",
        "artifacts": [
            {"kind": "recording", "url": RECORDING},
            {"kind": "transcript", "url": "https://files.example.com/acct/4242/call_01JQ4E8B2D6F0A/transcript.json?X-Amz-Signature=9a8b"},
        ],
    }))
    .unwrap();
    session_view::build(CALL, Some(record), &events, &[], fixed_now())
}

fn deliveries_with_session() -> App {
    let mut app = deliveries_app();
    app.deliveries.set_rows(CALL, deliveries());
    app.deliveries.set_session(ended_call_view());
    app
}

#[test]
fn deliveries_session_block_counts_down_the_links() {
    let app = deliveries_with_session();
    snapshot("deliveries_session", &app);
    let text = screen_text(&render(&app, (120, 40)));
    assert!(text.contains("expires in 41 min"), "{text}");
    assert!(
        !text.contains("X-Amz-Signature"),
        "URLs are redacted: {text}"
    );
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

#[test]
fn the_callers_number_is_masked_and_muted_until_revealed() {
    let mut app = deliveries_with_session();
    let terminal = render(&app, (120, 40));
    let text = screen_text(&terminal);
    assert!(!text.contains("5555550189"), "{text}");
    let (x, y) = find(&terminal, "+1 •••• ••89");
    assert_eq!(fg_at(&terminal, (x, y)), colour(Role::Muted));
    assert_eq!(fg_at(&terminal, (x + 11, y)), colour(Role::Muted));

    keys(&mut app, "n");
    let terminal = render(&app, (120, 40));
    let revealed = find(&terminal, "+15555550189");
    assert_eq!(fg_at(&terminal, revealed), colour(Role::Warn));

    keys(&mut app, "n");
    let text = screen_text(&render(&app, (120, 40)));
    assert!(!text.contains("5555550189"), "masked again: {text}");
}

#[test]
fn c_copies_the_recording_link_with_osc_52_and_says_so() {
    let mut app = deliveries_with_session();
    let effects = app.update(key(KeyCode::Char('c')));
    assert!(
        matches!(effects.as_slice(), [Effect::Copy { what: "link", text }] if text.expose() == RECORDING),
        "{effects:?}"
    );
    let text = screen_text(&render(&app, (120, 40)));
    assert!(text.contains("copied the recording link"), "{text}");
    assert!(!text.contains("X-Amz-Signature"), "{text}");
}

#[test]
fn the_countdown_ticks_only_while_the_pane_is_on_screen() {
    let mut app = deliveries_with_session();
    // Nothing pending: only the links' countdown keeps the tick.
    app.deliveries.set_rows(CALL, Vec::new());
    app.deliveries.set_session(ended_call_view());
    assert!(app.wants_tick(), "counting down on screen");
    keys(&mut app, "2");
    // Let any toast run out: then nothing on the Subscriptions pane ticks.
    app.update(Action::Tick(
        std::time::Instant::now() + std::time::Duration::from_secs(3_600),
    ));
    assert!(app.toast.is_none());
    assert!(!app.wants_tick(), "no tick while the pane is hidden");
    keys(&mut app, "3");
    assert!(app.wants_tick(), "counting down again once back on screen");
}

#[test]
fn deliveries_id_prompt_with_recent_ids() {
    let mut app = deliveries_app();
    keys(&mut app, "i");
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    snapshot("deliveries_prompt", &app);
}

#[test]
fn deliveries_table_with_failed_pending_and_delivered_attempts() {
    let app = deliveries_app();
    snapshot("deliveries_table", &app);
}

#[test]
fn deliveries_detail_of_the_401_failure() {
    let mut app = deliveries_app();
    app.update(key(KeyCode::Enter));
    snapshot("deliveries_detail_401", &app);
}

#[test]
fn failed_attempts_stand_out_and_pending_ones_warn() {
    let mut app = deliveries_app();
    // Select the delivered row so the failed and pending rows keep their colours.
    app.update(key(KeyCode::End));
    let terminal = render(&app, (120, 40));
    // Row 0 tabs, 1 title, 2 header, 3 failed, 4 pending, 5 delivered.
    for x in [0, 40, 80] {
        let failed = fg_at(&terminal, (x, 3));
        assert_eq!(failed, colour(Role::Error), "failed cell ({x}, 3)");
        let pending = fg_at(&terminal, (x, 4));
        assert_eq!(pending, colour(Role::Warn), "pending cell ({x}, 4)");
    }
}

#[test]
fn a_failed_load_explains_itself_in_the_pane_and_the_status_bar() {
    let mut app = bare_app(AppConfig::default());
    let seq = match app.init().as_slice() {
        [
            Effect::LoadHealth { .. },
            Effect::SweepHistory,
            Effect::LoadSubscriptions { seq, .. },
        ] => *seq,
        other => panic!("expected the board read, the sweep and the first load, got {other:?}"),
    };
    app.pane = PaneId::Subscriptions;
    let at = fixed_local_time();
    let message = "list subscriptions failed: HTTP 401: Unauthorized: invalid API key — \
                   check the API key (`earshot config show`)";
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Err(Failure {
            message: message.into(),
            status: Some(401),
            at,
        }),
    }));
    let terminal = render(&app, (80, 24));
    insta::assert_snapshot!("subs_load_failed_80x24", terminal.backend());
}

#[test]
fn the_selected_row_has_the_selection_style() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    let terminal = render(&app, (80, 24));
    let buffer = terminal.backend().buffer();
    let theme = Theme::fallback();
    let selection = theme.selection().bg;
    // Row 0 tabs, 1 title, 2 header, 3 first row, 4 second (selected).
    for x in 0..80 {
        assert_eq!(
            buffer[(x, 4)].bg,
            selection.unwrap(),
            "selected cell ({x}, 4)"
        );
        assert_ne!(
            buffer[(x, 3)].bg,
            selection.unwrap(),
            "unselected cell ({x}, 3)"
        );
    }
}

#[test]
fn a_paused_row_is_muted() {
    let terminal = render(&app(), (80, 24));
    let muted = colour(Role::Muted);
    // The third fixture (row y = 5) is paused: id, URL and state are muted.
    let screen = screen_text(&terminal);
    let paused_row = screen.lines().nth(5).unwrap_or_default();
    assert!(paused_row.contains("paused"), "{paused_row}");
    for x in [0, 12, 70] {
        assert_eq!(fg_at(&terminal, (x, 5)), muted, "paused cell ({x}, 5)");
    }
    assert_ne!(
        fg_at(&terminal, (0, 3)),
        muted,
        "an enabled row is not muted"
    );
}

#[test]
fn a_tiny_terminal_says_so_and_does_not_panic() {
    let app = app();
    for size in [(20, 5), (1, 1), (59, 30), (200, 3)] {
        let text = cells(&render(&app, size));
        assert!(text.contains("too") || size == (1, 1), "{size:?}: {text}");
    }
    let terminal = render(&app, (20, 5));
    insta::assert_snapshot!("too_small_20x5", terminal.backend());
}

#[test]
fn only_the_rows_on_screen_are_drawn_and_the_selection_stays_visible() {
    let mut app = app();
    let many: Vec<Subscription> = (0..10_000)
        .map(|n| {
            subscription(
                &format!("{n:08x}-0000-4000-8000-000000000000"),
                &format!("https://hooks.example.com/{n}"),
                &["call.ended"],
                None,
                true,
                1,
            )
        })
        .collect();
    app.subs.set_rows(many);
    app.update(key(KeyCode::End));
    let started = std::time::Instant::now();
    let terminal = render(&app, (120, 40));
    let elapsed = started.elapsed();
    let screen = terminal.backend().to_string();
    assert!(
        screen.contains("0000270f"),
        "the last row (9999) is on screen"
    );
    assert!(!screen.contains("00000000-"), "the first row scrolled away");
    assert!(elapsed.as_millis() < 500, "one frame took {elapsed:?}");
}

// ---- Signatures pane ------------------------------------------------------

#[test]
fn signatures_empty_form() {
    let mut app = app();
    keys(&mut app, "5");
    snapshot("sigs_empty", &app);
}

#[test]
fn signatures_failing_diagnosis() {
    use earshot::tui::panes::signatures::Field;
    let secret = "~!@#$%^&*()_+{}|:<>?`-=[]\\;',./0123456789AB";
    let mut app = app();
    keys(&mut app, "5");
    // Shared vector `valid-4`, pasted through a terminal that dropped the
    // CR of its CRLF body, and checked 301 s late.
    app.sigs.set(
        Field::Header,
        "t=1795300004,v1=9a928240ac8edcb8b8409e2ed771db207345e5dd606f1fed3cc53b42048f8b64",
    );
    app.sigs.set(Field::Body, "{\"a\":1}\n");
    app.sigs.set(Field::Current, secret);
    app.sigs.set(Field::Now, "1795300305");
    for size in SIZES {
        let screen = render(&app, size).backend().to_string();
        assert!(!screen.contains(secret), "the secret is masked");
    }
    snapshot("sigs_failing", &app);
}

// ---- Jobs pane -----------------------------------------------------------

mod jobs {
    use std::time::Duration;

    use earshot::api::types::prerecorded::{Transcript, TranscriptStatus};
    use earshot::poll::schedule::{JobProblem, JobView};
    use earshot::poll::watcher::WatchEvent;
    use earshot::tui::action::{Action, JobsResult};
    use earshot::tui::app::App;
    use earshot::tui::theme::Role;
    use serde_json::Map;

    use super::{app, cells, colour, fg_at, find, keys, render, snapshot};

    fn secs(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    fn view(id: &str, status: TranscriptStatus) -> JobView {
        JobView {
            id: id.into(),
            status: Some(status),
            added_at: Duration::ZERO,
            last_seen: secs(90),
            queued_since: secs(1),
            processing_since: None,
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

    fn watch(app: &mut App, event: WatchEvent) {
        app.update(Action::Jobs(JobsResult::Watch(event)));
    }

    fn changed(app: &mut App, view: JobView, transcript: Option<Box<Transcript>>) {
        watch(app, WatchEvent::Changed { view, transcript });
    }

    /// `view` changed, with the job's record as the watcher read it (same
    /// id and status).
    fn changed_with_record(app: &mut App, view: JobView, hook: Option<u16>, error: Option<&str>) {
        let status = view.status.clone().expect("a view with a status");
        let transcript = record(&view.id, status, hook, error);
        changed(app, view, Some(transcript));
    }

    pub(super) fn jobs_app() -> App {
        let mut app = app();
        app.seed_job_ids(vec![
            "5d0c7e1a-queued".into(),
            "8b2f4c9e-processing".into(),
            "c41a7d03-completed".into(),
            "e9f2b6d8-error".into(),
            "a7c3e5f1-stale".into(),
            "0f6d2b4a-new".into(),
        ]);
        let mut queued = view("5d0c7e1a-queued", TranscriptStatus::Queued);
        queued.added_at = Duration::from_secs(30);
        queued.queued_since = secs(31);
        changed_with_record(&mut app, queued, None, None);
        let mut processing = view("8b2f4c9e-processing", TranscriptStatus::Processing);
        processing.processing_since = secs(12);
        changed(&mut app, processing, None);
        let mut completed = view("c41a7d03-completed", TranscriptStatus::Completed);
        completed.processing_since = secs(4);
        completed.finished_at = secs(47);
        changed_with_record(&mut app, completed, Some(200), None);
        let mut error = view("e9f2b6d8-error", TranscriptStatus::Error);
        error.processing_since = secs(3);
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
        stale.stale = true;
        stale.problem = Some(JobProblem::RateLimited);
        changed(&mut app, stale, None);
        watch(
            &mut app,
            WatchEvent::Budget {
                used: 412,
                budget: 2000,
            },
        );
        app.jobs.now = app.jobs.epoch + Duration::from_secs(95);
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

    #[test]
    fn error_rows_stand_out_and_stale_rows_are_muted() {
        let terminal = render(&jobs_app(), (120, 40));
        let (_, error) = find(&terminal, "e9f2b6d8");
        assert_eq!(fg_at(&terminal, (0, error)), colour(Role::Error));
        let (_, stale) = find(&terminal, "a7c3e5f1");
        assert_eq!(fg_at(&terminal, (0, stale)), colour(Role::Muted));
    }
}

// ---- Probe pane ------------------------------------------------------------

mod probe {
    use earshot::api::Region;
    use earshot::api::types::dictation::{Dictation, SyncTranscript};
    use earshot::tui::action::{Action, Effect, Failure, ProbeResult};
    use earshot::tui::app::App;
    use earshot::tui::theme::Role;
    use ratatui::crossterm::event::KeyCode;
    use serde_json::{Map, json};

    use super::{app, colour, fg_at, find, key, keys, render, snapshot};

    fn dictation(rewrite: Option<&str>, llm_error: Option<&str>) -> Box<Dictation> {
        Box::new(Dictation {
            text: "um send the report to Dana, no, to Alex by Friday".into(),
            words: Vec::new(),
            confidence: 0.93,
            llm_response: rewrite.map(str::to_owned),
            llm_error: llm_error.map(str::to_owned),
            audio_duration_ms: 2000.0,
            session_id: "0b7f3f5e-9c1a-4c8e-8a52-3f1d2e4b5a69".into(),
            request_time_ms: Some(142.5),
            auth_time_ms: Some(3.1),
            sync_time_ms: Some(120.4),
            extra: Map::new(),
        })
    }

    fn sync() -> SyncTranscript {
        let mut extra = Map::new();
        extra.insert("request_time_ms".into(), json!(88.0));
        SyncTranscript {
            text: "um send the report to Dana, no, to Alex by Friday".into(),
            extra,
        }
    }

    fn probe_app() -> App {
        let mut app = app();
        app.seed_probe_file(std::path::Path::new(
            "/tmp/earshot-demo-x1/probe-sample.wav",
        ));
        keys(&mut app, "6");
        app
    }

    /// A run with every kind of answer: global all well, us a rewrite
    /// timeout and sync still running, eu a refused dictation.
    fn results_app() -> App {
        let mut app = probe_app();
        let effects = app.update(key(KeyCode::Enter));
        let Some(Effect::RunProbe { seq, .. }) = effects.first() else {
            panic!("{effects:?}");
        };
        let seq = *seq;
        let answers = vec![
            ProbeResult::Dictation {
                seq,
                region: Region::Global,
                latency_ms: 161.25,
                result: Ok(dictation(Some("Send the report to Alex by Friday."), None)),
            },
            ProbeResult::Sync {
                seq,
                region: Region::Global,
                latency_ms: 97.5,
                result: Ok(sync()),
            },
            ProbeResult::Dictation {
                seq,
                region: Region::Us,
                latency_ms: 5210.0,
                result: Ok(dictation(None, Some("timeout"))),
            },
            ProbeResult::Dictation {
                seq,
                region: Region::Eu,
                latency_ms: 31.0,
                result: Err(Failure {
                    status: Some(503),
                    ..Failure::new(
                        "dictation (eu, /v1/transcribe/live) failed: HTTP 503: Service \
                         Unavailable — the platform is overloaded; retry shortly",
                    )
                }),
            },
            ProbeResult::Sync {
                seq,
                region: Region::Eu,
                latency_ms: 102.0,
                result: Ok(sync()),
            },
        ];
        for answer in answers {
            app.update(Action::Probe(answer));
        }
        app
    }

    #[test]
    fn probe_empty_form() {
        let mut app = app();
        keys(&mut app, "6");
        snapshot("probe_empty", &app);
    }

    #[test]
    fn probe_seeded_file_waits_for_enter() {
        snapshot("probe_seeded", &probe_app());
    }

    #[test]
    fn probe_results_side_by_side_or_stacked() {
        let mut app = results_app();
        snapshot("probe_results", &app);
        // At 80×24 the regions are stacked: page down to the last one.
        app.update(key(KeyCode::PageDown));
        let terminal = render(&app, (80, 24));
        insta::assert_snapshot!("probe_results_scrolled_80x24", terminal.backend());
    }

    #[test]
    fn probe_llm_error_warns_and_a_failed_call_is_an_error() {
        let terminal = render(&results_app(), (120, 40));
        let colour_of = |needle: &str| fg_at(&terminal, find(&terminal, needle));
        assert_eq!(colour_of("llm_error timeout"), colour(Role::Warn));
        assert_eq!(colour_of("HTTP 503 ·"), colour(Role::Error));
        assert_eq!(colour_of("200 ok"), colour(Role::Ok));
    }
}

mod inbox {
    use axum::body::Bytes;
    use earshot::receiver::capture::CaptureEntry;
    use earshot::receiver::listen::Received;
    use earshot::tui::action::{Action, InboxResult};
    use earshot::tui::app::App;
    use earshot::tui::theme::Role;
    use ratatui::crossterm::event::KeyCode;
    use serde_json::{Value, json};

    use super::{app, cells, colour, fg_at, find, key, keys, render, snapshot};

    const BODY: &str = r#"{"event_id":"7d1c0b8e-4a5f-4c3e-9b2d-1e0f6a7b8c9d","event":"call.ended","timestamp":"2026-11-22T14:03:05Z","call":{"call_id":"call_9f8e7d","status":"completed"}}"#;

    fn received(at: &str, fields: Value, body: &str) -> Action {
        let mut entry = json!({
            "received_at": format!("2026-11-22T{at}Z"),
            "received_unix": 1_795_000_000,
            "source": "127.0.0.1:50412",
            "method": "POST",
            "path": "/hooks/svc",
            "body_base64": "",
            "headers": [
                ["content-type", "application/json"],
                ["x-svc-signature", "t=1795000000,v1=4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c"],
                ["x-svc-event", "call.ended"],
                ["x-svc-delivery-id", "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b"],
            ],
        });
        for (name, value) in fields.as_object().into_iter().flatten() {
            entry[name] = value.clone();
        }
        let entry: CaptureEntry = serde_json::from_value(entry).expect("a capture entry");
        Action::Inbox(InboxResult::Received(Box::new(Received {
            entry,
            body: Bytes::from(body.as_bytes().to_vec()),
            signature: None,
            capture_error: None,
        })))
    }

    fn inbox_app() -> App {
        let mut app = app();
        app.inbox.set_listening("http://127.0.0.1:8787".into());
        let agents = |verdict: &str, status: u16, extra: Value| {
            let mut fields = json!({
                "kind": "agents", "verdict": verdict, "status": status,
                "event": "call.ended", "event_id": "7d1c0b8e-4a5f-4c3e-9b2d-1e0f6a7b8c9d",
            });
            for (name, value) in extra.as_object().into_iter().flatten() {
                fields[name] = value.clone();
            }
            fields
        };
        for action in [
            received(
                "14:03:05",
                agents("ok", 200, json!({"matched": "previous"})),
                BODY,
            ),
            received(
                "14:03:06",
                agents("duplicate", 200, json!({"duplicate": true})),
                BODY,
            ),
            received(
                "14:03:07",
                json!({"kind": "prerecorded", "verdict": "ok", "status": 200,
                       "transcript_id": "5d0c7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
                       "transcript_status": "completed", "untrusted_source": true, "headers": []}),
                r#"{"transcript_id":"5d0c7e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6","status":"completed"}"#,
            ),
            received(
                "14:03:09",
                agents(
                    "invalid_signature",
                    401,
                    json!({"reason": "timestamp_too_old"}),
                ),
                BODY,
            ),
        ] {
            app.update(action);
        }
        keys(&mut app, "7");
        app.toast = None;
        app
    }

    #[test]
    fn inbox_table_with_every_verdict() {
        snapshot("inbox_table", &inbox_app());
    }

    #[test]
    fn inbox_request_detail() {
        let mut app = inbox_app();
        app.update(key(KeyCode::Enter));
        snapshot("inbox_detail", &app);
    }

    #[test]
    fn inbox_start_form_masks_the_secrets() {
        let mut app = app();
        keys(&mut app, "7l");
        app.update(key(KeyCode::Tab));
        keys(&mut app, "whsec_visible_nowhere_0123456789abcdef");
        snapshot("inbox_form", &app);
        let screen = cells(&render(&app, (120, 40)));
        assert!(!screen.contains("whsec_"), "the secret is masked");
    }

    #[test]
    fn rejected_requests_stand_out_and_duplicates_are_muted() {
        let mut app = inbox_app();
        let terminal = render(&app, (120, 40));
        // Newest first under the title and header: the 401, the job, the
        // duplicate, the first delivery.
        let (_, rejected) = find(&terminal, "invalid signature");
        let (_, duplicate) = find(&terminal, "duplicate: already");
        assert_eq!(fg_at(&terminal, (30, duplicate)), colour(Role::Muted));
        // The selected row (the 401 on top) carries the selection style;
        // move off it to see its own colour.
        app.update(key(KeyCode::Down));
        let terminal = render(&app, (120, 40));
        assert_eq!(fg_at(&terminal, (30, rejected)), colour(Role::Error));
    }
}

/// Wrapped descriptions count: scrolling the help reaches the last key of
/// every section of every pane, in one column and in two.
#[test]
fn help_scrolls_to_every_key_of_every_pane() {
    for size in [(80, 24), (120, 40), (200, 70)] {
        for pane in ["1", "2", "3", "4", "5", "6", "7"] {
            let mut app = app();
            keys(&mut app, pane);
            let sections = app.help_sections();
            keys(&mut app, "?");
            let mut seen = String::new();
            for _ in 0..60 {
                let terminal = render(&app, size);
                let buffer = terminal.backend().buffer();
                for y in 0..size.1 {
                    seen.extend((0..size.0).map(|x| buffer[(x, y)].symbol()));
                    seen.push('\n');
                }
                app.update(key(KeyCode::Down));
            }
            for section in sections {
                let last = section.commands.last().expect("a section has keys");
                let start: String = last.description.chars().take(14).collect();
                assert!(
                    seen.contains(section.title) && seen.contains(&start),
                    "pane {pane} at {size:?}: help never shows {:?} / {start:?}",
                    section.title
                );
            }
        }
    }
}

// ---- Health pane ----------------------------------------------------------

mod health {
    use super::*;
    use earshot::history::report::{FailureGroup, SubscriptionHealth};

    fn row(id: &str, url: &str, delivered: i64, failed: i64, pending: i64) -> SubscriptionHealth {
        SubscriptionHealth {
            id: id.into(),
            url: url.into(),
            enabled: true,
            delivered,
            failed,
            pending,
            success_rate: (delivered + failed > 0)
                .then(|| delivered as f64 / (delivered + failed) as f64),
            last_failure_at: (failed > 0).then(|| "2025-03-14T09:26:53Z".into()),
            retries_due: 0,
            next_retry_at: None,
            failures: Vec::new(),
        }
    }

    fn board() -> App {
        let mut app = app();
        let mut broken = row(
            "1a2b3c4d-0000-4000-8000-000000000001",
            "https://hooks.example.com/voice",
            120,
            37,
            0,
        );
        broken.failures = vec![
            FailureGroup {
                diagnosis: "401 invalid signature: the receiver re-serialises the body, drops \
                            the `<t>.` prefix, has another secret, or its clock is off by more \
                            than 300 s"
                    .into(),
                http_status: Some(401),
                count: 31,
                last_at: "2025-03-14T09:26:53Z".into(),
                example_session_id: "call_4f2a9c1e7b".into(),
            },
            FailureGroup {
                diagnosis: "timeout: slower than 15 s; answer 2xx first, then work (retried)"
                    .into(),
                http_status: None,
                count: 6,
                last_at: "2025-03-14T09:20:00Z".into(),
                example_session_id: "ses_01JQ4D1C9E3B5F".into(),
            },
        ];
        broken.retries_due = 2;
        broken.next_retry_at = Some("2025-03-14T09:31:00Z".into());
        let mut paused = row(
            "3c4d5e6f-0000-4000-8000-000000000003",
            "https://legacy.example.net/hook",
            0,
            0,
            0,
        );
        paused.enabled = false;
        app.health.set_rows(vec![
            broken,
            row(
                "2b3c4d5e-0000-4000-8000-000000000002",
                "https://ops.example.com/alerts/failed-calls",
                88,
                0,
                3,
            ),
            paused,
        ]);
        keys(&mut app, "1");
        app
    }

    #[test]
    fn health_board_with_a_failing_subscription() {
        snapshot("health_board", &board());
    }

    #[test]
    fn health_recover_form_masks_the_secret() {
        let mut app = board();
        keys(&mut app, "R");
        keys(&mut app, "whsec_visible_nowhere_0123456789abcdef");
        let terminal = render(&app, (120, 40));
        let screen = format!("{:?}", terminal.backend());
        assert!(!screen.contains("visible_nowhere"), "the secret is masked");
        snapshot("health_recover", &app);
    }
}
