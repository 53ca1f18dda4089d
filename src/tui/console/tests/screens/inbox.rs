//! The Inbox pane: every verdict in the table, a request's detail, the
//! start form's masked secrets, and the colours of rejected and duplicate
//! requests.

use crate::tui::console::action::Action;
use crate::tui::console::app::App;
use crate::tui::panes::inbox::InboxResult;
use crate::tui::theme::Role;
use axum::body::Bytes;
use earshot_core::receiver::capture::CaptureEntry;
use earshot_core::receiver::listen::Received;
use ratatui::crossterm::event::KeyCode;
use serde_json::{Value, json};

use super::{app, cells, colour, fg_at, find, key, keys, render, screen_text, snapshot};

const BODY: &str = r#"{"event_id":"7d1c0b8e-4a5f-4c3e-9b2d-1e0f6a7b8c9d","event":"call.ended","timestamp":"2026-11-22T14:03:05Z","call":{"call_id":"call_9f8e7d","status":"completed"}}"#;

fn received(at: &str, fields: Value, body: &str) -> Action {
    let received_at = format!("2026-11-22T{at}Z");
    let received_unix = chrono::DateTime::parse_from_rfc3339(&received_at)
        .expect("a time")
        .timestamp();
    let mut entry = json!({
        "received_at": received_at,
        "received_unix": received_unix,
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
        store_error: None,
        unfiled: None,
    })))
}

fn inbox_app() -> App {
    let mut app = app();
    app.panes
        .inbox
        .set_listening("http://127.0.0.1:8787".into());
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

/// The detail masks secret header values (as fingerprints) and
/// personal data in the body, as every other pane does; `n` shows them.
#[test]
fn inbox_detail_masks_secret_headers_and_personal_data_until_n() {
    let mut app = inbox_app();
    let body = r#"{"transcript_id":"5d0c","call":{"from_number":"+15555550123"}}"#;
    app.update(received(
        "14:03:10",
        json!({"kind": "prerecorded", "verdict": "ok", "status": 200,
               "transcript_id": "5d0c", "transcript_status": "completed",
               "headers": [["x-demo-token", "whsec_R6gDvisible_nowhere_0123456789"],
                           ["content-type", "application/json"]]}),
        body,
    ));
    app.update(key(KeyCode::Char('g')));
    app.update(key(KeyCode::Enter));
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(!screen.contains("visible_nowhere"), "{screen}");
    assert!(screen.contains("whse…"), "a fingerprint: {screen}");
    assert!(!screen.contains("5555550123"), "{screen}");
    assert!(screen.contains("+1 •••• ••23"), "{screen}");
    keys(&mut app, "n");
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("whsec_R6gDvisible_nowhere"), "{screen}");
    assert!(screen.contains("+15555550123"), "{screen}");
}

/// On the real terminal's backend, a request arriving in the Inbox costs
/// a scroll of the table and about a row, not the table: the terminal (a
/// model of one) shows every frame exactly; without decoration
/// (`--low-bandwidth`) the same frame costs less again.
#[test]
fn a_new_request_costs_a_scroll_and_a_row_on_the_terminal() {
    use crate::tui::console::view;
    use crate::tui::screen::vt::{Sink, Vt};
    use crate::tui::screen::{Flusher, ScreenBackend};
    use crate::tui::theme::Theme;
    use ratatui::Terminal;
    use ratatui::layout::Size;

    let (width, height) = (120, 40);
    let mut costs = Vec::new();
    for theme in [Theme::fallback(), Theme::fallback().without_decoration()] {
        let mut app = inbox_app();
        let sink = Sink::default();
        let backend =
            ScreenBackend::with_size(sink.clone(), Flusher::Scroll, Size { width, height });
        let mut terminal = Terminal::new(backend).expect("a terminal");
        let mut vt = Vt::new(width, height);
        let mut frame = |app: &App, vt: &mut Vt| {
            let drawn = terminal
                .draw(|frame| view::draw(frame, app, &theme))
                .expect("drawn")
                .buffer
                .clone();
            let written = sink.take();
            vt.feed(&written);
            assert_eq!(vt.mismatch(&drawn), None);
            written.len()
        };
        frame(&app, &mut vt);
        for second in 10..20 {
            app.update(received(
                &format!("14:03:{second}"),
                json!({"kind": "agents", "verdict": "ok", "status": 200,
                       "event": "session.started",
                       "event_id": format!("{second}1c0b8e-4a5f-4c3e-9b2d-1e0f6a7b8c9d")}),
                BODY,
            ));
            costs.push(frame(&app, &mut vt));
        }
    }
    let (full, plain) = costs.split_at(10);
    let (full, plain): (usize, usize) = (full.iter().sum(), plain.iter().sum());
    // A row of 120 cells and its colours, the counts in the title (about
    // 170 bytes; ratatui's own diff writes the whole table, thousands).
    assert!(full / 10 < 300, "{full} bytes for ten requests");
    assert!(plain < full, "without decoration {plain}, with {full}");
}

/// The title says how long ago the last request arrived, and the tick
/// moves it: a receiver gone quiet shows as such.
#[test]
fn the_title_says_when_the_last_request_arrived() {
    use crate::tui::kernel::Pane;
    let mut app = inbox_app();
    let now = std::time::Instant::now();
    app.panes.inbox.last_in = now.checked_sub(std::time::Duration::from_secs(75));
    app.panes.inbox.ticked = now;
    let text = screen_text(&render(&app, (160, 40)));
    assert!(text.contains("· last in 1 min 15 s ago"), "{text}");
    let mut out = crate::tui::panes::inbox::Outcome::default();
    assert!(
        app.panes
            .inbox
            .on_tick(now + std::time::Duration::from_secs(1), &mut out),
        "a second later the words moved: redraw"
    );
}
