//! The Deliveries pane: the id prompt, the table of failed, pending and
//! delivered attempts, their detail and colours, and the session block
//! (masked caller number, link countdown, copying a link).

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::kernel::ConsoleEffect;
use crate::tui::kernel::Handover;
use crate::tui::panes::deliveries::DeliveriesPane;
use crate::tui::theme::Role;
use chrono::TimeZone;
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::history::session_view::{self, SessionView};
use earshot_core::store::events::StoredEvent;
use ratatui::crossterm::event::KeyCode;
use serde_json::{Map, json};

use super::{app, colour, fg_at, find, key, keys, render, screen_text, snapshot};

fn fixed_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc
        .with_ymd_and_hms(2025, 3, 14, 9, 30, 0)
        .single()
        .expect("a valid time")
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
    app.panes.deliveries = DeliveriesPane::new().with_clock(fixed_now);
    app.seed(Handover::RecentSessions(vec![
        SESSION.into(),
        "call_01JQ4E8B2D6F0A".into(),
        "sess_01JQ4D1C9E3B5F".into(),
    ]));
    app.panes.deliveries.set_rows(SESSION, deliveries());
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
    let record: earshot_core::api::types::agents::SessionRecord = serde_json::from_value(json!({
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
    app.panes.deliveries.set_rows(CALL, deliveries());
    app.panes.deliveries.set_session(ended_call_view());
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
        matches!(effects.as_slice(), [Effect::Console(ConsoleEffect::Copy { what: "link", text })] if text.expose() == RECORDING),
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
    app.panes.deliveries.set_rows(CALL, Vec::new());
    app.panes.deliveries.set_session(ended_call_view());
    assert!(app.wants_tick(), "counting down on screen");
    keys(&mut app, "5");
    // Let any toast run out: then nothing on the Signatures pane ticks.
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

/// A retrying attempt's detail says how its retries end: the attempt
/// number, the retry relative to the pane's clock with its time, and when
/// this account's platform gave up before (read from the store).
#[test]
fn deliveries_detail_of_a_retry_says_when_and_the_accounts_history() {
    let mut app = deliveries_app();
    app.panes.deliveries.give_up =
        "on this account the platform gave up after 8 attempts (seen 14 times)".into();
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Enter));
    let text = screen_text(&render(&app, (160, 40)));
    assert!(
        text.contains(
            "attempt 2 · retry in 12 s (09:30:12) · on this account the platform gave up after 8 \
             attempts (seen 14 times)"
        ),
        "{text}"
    );
}
