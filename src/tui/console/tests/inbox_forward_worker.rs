//! The Inbox passing events on to a developer's app, over real HTTP: the
//! start form's `forward to` field makes the Inbox's receiver forward each
//! verified event (its exact bytes, the platform's signature passed on) to
//! the app, answer the platform with the app's answer, and show the app's
//! verdict beside earshot's on the row.

use std::time::Duration;

use super::support::{NoClipboard, Receiver, SECRET, start};
use crate::tui::console::action::Action;
use crate::tui::console::app::App;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::console::worker::Worker;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::inbox::view::verdict_text;
use crate::tui::panes::inbox::{InboxResult, Listening};
use earshot_core::api::types::agents::EventKind;
use earshot_testkit::verifies_with;
use ratatui::crossterm::event::KeyCode;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_forwards_each_verified_event_and_shows_the_apps_answer() {
    let harness = start().await;
    let app_under_test = Receiver::failing_first(1, 500, "boom").await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard));
    let mut app = App::new(ConsoleConfig::default());
    app.update(key('7'));
    app.update(key('l'));
    app.update(press(KeyCode::End));
    for _ in 0.."8787".len() {
        app.update(press(KeyCode::Backspace));
    }
    type_text(&mut app, "0");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, SECRET);
    app.update(press(KeyCode::Tab));
    app.update(press(KeyCode::Tab));
    type_text(&mut app, &app_under_test.url());
    let effects = app.update(press(KeyCode::Enter));
    worker.start_all(effects);
    let mut forwarded = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut subscribed = false;
    while forwarded.len() < 2 {
        let action = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("the inbox's answers within 30 s")
            .expect("the worker is alive");
        if let Action::Inbox(InboxResult::Received(request)) = &action {
            forwarded.push((**request).clone());
        }
        let effects = app.update(action);
        worker.start_all(effects);
        if let (false, Listening::On { url }) = (subscribed, &app.panes.inbox.listening) {
            harness
                .subscribe_secret(url, &[EventKind::SessionStarted], SECRET)
                .await;
            harness.start_session(None).await;
            subscribed = true;
        }
    }
    // Refused by the app, so by the platform's receiver: retried, then taken.
    let answers: Vec<Option<u16>> = forwarded
        .iter()
        .map(|request| request.entry.forwarded.as_ref().and_then(|f| f.status))
        .collect();
    assert_eq!(answers, [Some(500), Some(200)]);
    assert_eq!(
        forwarded[0].entry.status, 500,
        "the platform got the app's 500"
    );
    assert!(verdict_text(&forwarded[0]).ends_with("app: HTTP 500"));
    let received = app_under_test.captured();
    assert_eq!(received.len(), 2);
    assert!(
        verifies_with(&received[1], SECRET),
        "the signature passed on"
    );
    assert_eq!(received[1].header("x-svc-event"), "session.started");
}
