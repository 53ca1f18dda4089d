//! `update` tests of the Inbox pane, driven through the [`App`] with the
//! keys an operator would press.

use crate::tui::kernel::{ConsoleEffect, Handover};
use axum::body::Bytes;
use ratatui::crossterm::event::KeyCode;
use serde_json::json;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::panes::PaneId;
use crate::tui::panes::inbox::InboxResult;
use crate::tui::panes::inbox::tasks::InboxEffect;
use crate::tui::panes::inbox::{InboxCommand, Listening, View};
use earshot_core::receiver::capture::CaptureEntry;
use earshot_core::receiver::listen::Received;

const HEADER: &str = "t=1700000000,v1=5f0c2d";
const BODY: &str = "{\"event\":\"call.ended\",  \"event_id\":\"e1\"}";

fn inbox_app(read_only: bool) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only,
        ..ConsoleConfig::default()
    });
    app.update(key('7'));
    assert_eq!(app.pane, PaneId::Inbox);
    app
}

/// A signed voice-agent delivery as the receiver reports it.
fn signed(event_id: &str, delivery_id: &str, verdict: &str) -> Received {
    received(
        json!({
            "kind": "agents",
            "verdict": verdict,
            "status": if verdict == "invalid_signature" { 401 } else { 200 },
            "event": "call.ended",
            "event_id": event_id,
            "headers": [
                ["x-svc-signature", HEADER],
                ["x-svc-delivery-id", delivery_id],
            ],
        }),
        BODY,
    )
}

fn transcript(id: &str, status: &str, verdict: &str) -> Received {
    received(
        json!({
            "kind": "prerecorded",
            "verdict": verdict,
            "status": 200,
            "transcript_id": id,
            "transcript_status": status,
            "headers": [],
        }),
        "{}",
    )
}

fn received(fields: serde_json::Value, body: &str) -> Received {
    let mut entry = json!({
        "received_at": "2026-11-22T14:03:07Z",
        "received_unix": 1_795_000_000,
        "source": "127.0.0.1:50000",
        "method": "POST",
        "path": "/inbox",
        "body_base64": "",
    });
    for (name, value) in fields.as_object().into_iter().flatten() {
        entry[name] = value.clone();
    }
    let entry: CaptureEntry = serde_json::from_value(entry).expect("a capture entry");
    Received {
        entry,
        body: Bytes::from(body.as_bytes().to_vec()),
        signature: None,
        capture_error: None,
        store_error: None,
        unfiled: None,
    }
}

fn deliver(app: &mut App, request: Received) -> Vec<Effect> {
    app.update(Action::Inbox(InboxResult::Received(Box::new(request))))
}

#[test]
fn the_form_refuses_a_bad_address_or_no_secret_and_names_the_field() {
    let mut app = inbox_app(false);
    app.update(key('l'));
    assert!(app.panes.inbox.form.is_some());
    // The address field starts filled; make it wrong.
    app.update(press(KeyCode::End));
    type_text(&mut app, "x");
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    let error = app.panes.inbox.form.as_ref().and_then(|f| f.error.clone());
    assert!(
        error.as_deref().is_some_and(|e| e.starts_with("address")),
        "{error:?}"
    );
    app.update(press(KeyCode::Backspace));
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    let error = app.panes.inbox.form.as_ref().and_then(|f| f.error.clone());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.starts_with("current secret")),
        "{error:?}"
    );
}

#[test]
fn a_valid_form_starts_the_receiver_and_a_stale_answer_is_dropped() {
    let mut app = inbox_app(false);
    app.update(key('l'));
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "whsec_current_secret_0123456789abcdef");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "whsec_previous_secret_0123456789abcdef");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "ftp://127.0.0.1/app");
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    let error = app.panes.inbox.form.as_ref().and_then(|f| f.error.clone());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.starts_with("forward to")),
        "{error:?}"
    );
    for _ in 0.."ftp".len() {
        app.update(press(KeyCode::Home));
        app.update(press(KeyCode::Delete));
    }
    type_text(&mut app, "http");
    let effects = app.update(press(KeyCode::Enter));
    let seq = match effects.as_slice() {
        [Effect::Inbox(InboxEffect::Listen { seq, request })] => {
            let (bind, secrets) = (&request.bind, &request.secrets);
            assert_eq!(
                request.forward_to.as_ref().map(url::Url::as_str),
                Some("http://127.0.0.1/app")
            );
            assert_eq!(bind.to_string(), crate::tui::panes::inbox::DEFAULT_ADDRESS);
            let labels: Vec<&str> = secrets.iter().map(|(label, _)| label.as_str()).collect();
            assert_eq!(labels, ["current", "previous"]);
            assert_eq!(
                secrets[1].1.expose(),
                "whsec_previous_secret_0123456789abcdef"
            );
            assert!(
                !format!("{effects:?}").contains("whsec_"),
                "secrets masked in Debug"
            );
            *seq
        }
        other => panic!("expected one InboxEffect::Listen, got {other:?}"),
    };
    assert!(app.panes.inbox.form.is_none());
    assert!(app.busy());
    app.update(Action::Inbox(InboxResult::Started {
        seq: seq + 1,
        result: Err(Failure::new("stale")),
    }));
    assert!(matches!(app.panes.inbox.listening, Listening::Starting(_)));
    app.update(Action::Inbox(InboxResult::Started {
        seq,
        result: Ok("http://127.0.0.1:8787".into()),
    }));
    assert_eq!(
        app.panes.inbox.listening,
        Listening::On {
            url: "http://127.0.0.1:8787".into()
        }
    );
}

#[test]
fn a_bind_failure_shows_in_the_pane_and_the_status_bar() {
    let mut app = inbox_app(false);
    app.update(key('l'));
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "whsec_current_secret_0123456789abcdef");
    let seq = match app.update(press(KeyCode::Enter)).as_slice() {
        [Effect::Inbox(InboxEffect::Listen { seq, .. })] => *seq,
        other => panic!("{other:?}"),
    };
    app.update(Action::Inbox(InboxResult::Started {
        seq,
        result: Err(Failure::new(
            "cannot listen on 127.0.0.1:8787: address in use",
        )),
    }));
    assert!(
        matches!(app.panes.inbox.listening, Listening::Failed(ref why) if why.contains("in use"))
    );
    assert!(app.status.last_error.is_some());
}

#[test]
fn requests_arrive_newest_first_counted_and_the_open_one_stays_selected() {
    let mut app = inbox_app(false);
    deliver(&mut app, signed("e1", "d1", "ok"));
    deliver(&mut app, signed("e1", "d2", "duplicate"));
    assert_eq!(app.panes.inbox.rows().len(), 2);
    assert_eq!(app.panes.inbox.rows()[0].entry.verdict.code(), "duplicate");
    app.update(press(KeyCode::Down));
    app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.inbox.view, View::Detail);
    deliver(&mut app, signed("e2", "d3", "invalid_signature"));
    let open = app
        .panes
        .inbox
        .selected()
        .map(|row| row.entry.header("x-svc-delivery-id"));
    assert_eq!(
        open,
        Some(Some("d1")),
        "the detail keeps showing the same request"
    );
    let counts = app.panes.inbox.counts;
    assert_eq!(
        (
            counts.received,
            counts.accepted,
            counts.duplicates,
            counts.rejected
        ),
        (3, 1, 1, 1)
    );
}

#[test]
fn at_the_top_the_list_follows_and_below_it_counts_what_arrives_above() {
    let mut app = inbox_app(false);
    deliver(&mut app, signed("e1", "d1", "ok"));
    deliver(&mut app, signed("e2", "d2", "ok"));
    assert!(app.panes.inbox.following());
    deliver(&mut app, signed("e3", "d3", "ok"));
    let selected = |app: &App| {
        app.panes
            .inbox
            .selected()
            .and_then(|row| row.entry.header("x-svc-delivery-id").map(str::to_owned))
    };
    assert_eq!(
        selected(&app).as_deref(),
        Some("d3"),
        "following the newest"
    );
    app.update(key('j'));
    assert!(!app.panes.inbox.following());
    deliver(&mut app, signed("e4", "d4", "ok"));
    deliver(&mut app, signed("e5", "d5", "ok"));
    assert_eq!(
        selected(&app).as_deref(),
        Some("d2"),
        "paused on its request"
    );
    assert_eq!(app.panes.inbox.new_above, 2);
    app.update(key('g'));
    assert!(app.panes.inbox.following());
    assert_eq!(app.panes.inbox.new_above, 0);
    deliver(&mut app, signed("e6", "d6", "ok"));
    assert_eq!(selected(&app).as_deref(), Some("d6"));
}

#[test]
fn s_opens_a_signed_request_in_signatures_with_its_exact_bytes() {
    let mut app = inbox_app(false);
    deliver(&mut app, signed("e1", "d1", "invalid_signature"));
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    assert_eq!(app.panes.sigs.header.value(), HEADER);
    let opened = app.panes.sigs.loaded().and_then(|l| l.result.clone().ok());
    assert_eq!(opened.as_deref(), Some(BODY.as_bytes()));
}

#[test]
fn a_401_in_deliveries_comes_with_the_inbox_capture_of_that_attempt() {
    let mut app = inbox_app(false);
    deliver(
        &mut app,
        signed(
            "e1",
            "a1000000-0000-4000-8000-000000000001",
            "invalid_signature",
        ),
    );
    app.update(Action::Handover(Handover::OpenInSignatures {
        header: None,
        body: None,
        secret_hint: Some("subscription 2b3c4d5e".into()),
        delivery_id: Some("a1000000-0000-4000-8000-000000000001".into()),
        refused: None,
    }));
    assert_eq!(app.pane, PaneId::Signatures);
    assert_eq!(app.panes.sigs.header.value(), HEADER);
    let unknown = {
        let mut app = inbox_app(false);
        app.update(Action::Handover(Handover::OpenInSignatures {
            header: None,
            body: None,
            secret_hint: None,
            delivery_id: Some("never-captured".into()),
            refused: None,
        }));
        app.panes.sigs.header.value().to_owned()
    };
    assert_eq!(unknown, "", "nothing captured: the operator pastes it");
}

#[test]
fn a_transcript_webhook_updates_a_watched_job_at_once_and_only_once() {
    let mut app = inbox_app(false);
    app.seed(Handover::JobIds(vec!["job-1".into()]));
    let effects = deliver(&mut app, transcript("job-1", "completed", "ok"));
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Console(ConsoleEffect::JobWebhook { id, status }) if id == "job-1" && status.as_str() == "completed"
        )),
        "{effects:?}"
    );
    let repeat = deliver(&mut app, transcript("job-1", "completed", "duplicate"));
    assert!(
        !repeat
            .iter()
            .any(|e| matches!(e, Effect::Console(ConsoleEffect::JobWebhook { .. })))
    );
    let unwatched = deliver(&mut app, transcript("job-2", "completed", "ok"));
    assert!(
        !unwatched
            .iter()
            .any(|e| matches!(e, Effect::Console(ConsoleEffect::JobWebhook { .. })))
    );
}

#[test]
fn clear_empties_the_list_but_keeps_the_counts() {
    let mut app = inbox_app(false);
    deliver(&mut app, signed("e1", "d1", "ok"));
    app.update(key('x'));
    assert!(app.panes.inbox.rows().is_empty());
    assert_eq!(app.panes.inbox.counts.received, 1);
}

#[test]
fn read_only_keeps_every_inbox_command() {
    let mut full = inbox_app(false);
    let mut read_only = inbox_app(true);
    for app in [&mut full, &mut read_only] {
        deliver(app, signed("e1", "d1", "ok"));
    }
    let inbox_commands = |app: &App| -> Vec<Command> {
        app.commands()
            .into_iter()
            .map(|c| c.command)
            .filter(|c| matches!(c, Command::Inbox(_)))
            .collect()
    };
    assert_eq!(inbox_commands(&full), inbox_commands(&read_only));
    assert!(inbox_commands(&full).contains(&Command::Inbox(InboxCommand::Listen)));
}

/// A signed request whose capture entry carries the body three times, as
/// the receiver reports it (exact bytes, `body_base64`, text).
fn signed_with_body(delivery_id: &str, body: &str) -> Received {
    let mut request = signed("e1", delivery_id, "invalid_signature");
    request.body = Bytes::from(body.as_bytes().to_vec());
    request.entry.body_base64 = "A".repeat(body.len().div_ceil(3) * 4);
    request.entry.body = Some(body.to_owned());
    request
}

/// Bytes the rows keep of their bodies, counted from the outside.
fn body_bytes_held(app: &App) -> usize {
    app.panes
        .inbox
        .rows()
        .iter()
        .map(|row| {
            row.body.len()
                + row.entry.body_base64.len()
                + row.entry.body.as_ref().map_or(0, String::len)
        })
        .sum()
}

/// Large bodies are not kept whole for every row (60
/// requests of 10 MB held 2.1 GB). Here 60 of 1 MiB: every row stays, each
/// with a preview of its body.
#[test]
fn sixty_large_requests_keep_every_row_but_only_a_preview_of_each_body() {
    let mut app = inbox_app(false);
    let body = "x".repeat(1024 * 1024);
    for n in 0..60 {
        deliver(&mut app, signed_with_body(&format!("d{n}"), &body));
    }
    assert_eq!(app.panes.inbox.rows().len(), 60);
    let held = body_bytes_held(&app);
    assert!(
        held <= 60 * crate::tui::panes::inbox::PREVIEW_BYTES,
        "60 requests of 1 MiB hold {held} bytes of bodies"
    );
    assert!(app.panes.inbox.held_bytes() <= crate::tui::panes::inbox::HELD_MAX);
    let row = &app.panes.inbox.rows()[0];
    assert_eq!(row.body_len, 1024 * 1024);
    assert!(!row.body_whole());
}

#[test]
fn the_rows_together_hold_at_most_the_total_cap_and_the_oldest_go_first() {
    let mut app = inbox_app(false);
    // Under the per-row cap, so kept exactly: 200 × 200 KiB = 40 MiB.
    let body = "y".repeat(200 * 1024);
    for n in 0..200 {
        deliver(&mut app, signed_with_body(&format!("d{n}"), &body));
    }
    let rows = app.panes.inbox.rows();
    assert!(rows.len() < 200, "{} rows kept", rows.len());
    assert!(app.panes.inbox.held_bytes() <= crate::tui::panes::inbox::HELD_MAX);
    assert!(body_bytes_held(&app) <= crate::tui::panes::inbox::HELD_MAX);
    assert!(rows.iter().all(|row| row.body_whole()));
    assert_eq!(
        rows[0].entry.delivery_id(),
        Some("d199"),
        "the newest stays"
    );
    assert_eq!(
        app.panes.inbox.counts.received, 200,
        "every request is counted"
    );
}

#[test]
fn s_on_a_body_too_large_to_keep_says_so_instead_of_checking_a_preview() {
    let mut app = inbox_app(false);
    let body = "z".repeat(crate::tui::panes::inbox::BODY_KEEP_MAX + 1);
    deliver(&mut app, signed_with_body("d-big", &body));
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Inbox, "no handover of a partial body");
    let notice = app.status.last_error.clone().expect("a notice");
    assert!(
        notice.message.contains("larger than the Inbox keeps")
            && notice.message.contains("--capture"),
        "{}",
        notice.message
    );

    // From the Deliveries pane: the header and body are not filled in.
    app.update(Action::Handover(Handover::OpenInSignatures {
        header: None,
        body: None,
        secret_hint: None,
        delivery_id: Some("d-big".into()),
        refused: None,
    }));
    assert_eq!(app.pane, PaneId::Signatures);
    assert_eq!(app.panes.sigs.header.value(), "");
    let notice = app.status.last_error.clone().expect("a notice");
    assert!(notice.message.contains("larger than the Inbox keeps"));

    // Just under the cap: the exact bytes go over.
    let mut app = inbox_app(false);
    let body = "w".repeat(crate::tui::panes::inbox::BODY_KEEP_MAX);
    deliver(&mut app, signed_with_body("d-ok", &body));
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    let opened = app.panes.sigs.loaded().and_then(|l| l.result.clone().ok());
    assert_eq!(
        opened.map(|bytes| bytes.len()),
        Some(crate::tui::panes::inbox::BODY_KEEP_MAX)
    );
}
