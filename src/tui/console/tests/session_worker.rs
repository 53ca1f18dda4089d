//! The Deliveries pane's session block against the emulator over real
//! HTTP: a call ends, the observer (`earshot listen --store`) stores its
//! events, the Health pane's hand-over (`OpenInDeliveries`) opens it, and
//! the worker loads the attempts and then the session view; the pane draws
//! the status, the event times, each link's countdown (redacted) and the
//! caller's number masked.

use std::time::Duration;

use super::support::{Observed, SECRET, eventually, open_in_deliveries, start_at};
use crate::tui::console::view;
use crate::tui::theme::Theme;
use earshot_core::api::types::agents::EventKind;
use earshot_core::store::{Store, events};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_session_opened_from_health_shows_its_record_links_and_masked_number() {
    // Scale 0.05: the links work for three minutes.
    let harness = start_at(0.05).await;
    let call_events = [EventKind::CallConnected, EventKind::CallEnded];
    let observed = Observed::start(&harness, &call_events, SECRET).await;
    let db = observed.db.clone();
    let call_id = harness.start_call("connected").await;
    harness.end_call(&call_id).await;
    eventually(Duration::from_secs(10), "call.ended stored", || async {
        let store = Store::open(&db).ok()?;
        let stored = events::for_session(&store, &call_id).ok()?;
        stored
            .iter()
            .any(|event| event.event == "call.ended")
            .then_some(())
    })
    .await;

    let app = open_in_deliveries(&harness.client, db.clone().into(), &call_id).await;

    let session = app
        .panes
        .deliveries
        .session()
        .expect("the session view loaded");
    assert_eq!(session.kind.as_deref(), Some("call"));
    assert_eq!(session.links.len(), 2, "{:?}", session.links);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let theme = Theme::fallback();
    terminal
        .draw(|frame| view::draw(frame, &app, &theme))
        .unwrap();
    let screen = terminal.backend().to_string();
    assert!(screen.contains("call ended"), "{screen}");
    assert!(screen.contains("call.connected"), "{screen}");
    assert!(screen.contains("call.ended"), "{screen}");
    assert!(screen.contains("+1 •••• ••23"), "{screen}");
    assert!(!screen.contains("5555550123"), "{screen}");
    assert!(screen.contains("expires in"), "{screen}");
    assert!(!screen.contains("expires="), "links redacted: {screen}");
    assert!(app.wants_tick(), "the countdown runs while on screen");

    observed.stop().await;
    harness.emulator.shutdown().await;
}
