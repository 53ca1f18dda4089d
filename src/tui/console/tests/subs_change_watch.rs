//! A change made elsewhere (the CLI records it in the store's change log,
//! as `earshot subs update` does) while a console is open on the same
//! store: the Subscriptions pane, watching the newest change on its tick,
//! reads the list again and shows the new URL without `r`.

use std::time::{Duration, Instant};

use super::support::{NoClipboard, start};
use crate::tui::console::action::Action;
use crate::tui::console::app::App;
use crate::tui::console::view;
use crate::tui::console::worker::Worker;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::PaneId;
use crate::tui::panes::subscriptions::freshness::WATCH_EVERY;
use crate::tui::theme::Theme;
use earshot_core::api::types::agents::{EventKind, SubscriptionPatch};
use earshot_core::store::{Store, changes};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;

const NEW_URL: &str = "https://hooks.example.com/moved-by-the-cli";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_recorded_elsewhere_refreshes_the_subscriptions_pane() {
    let harness = start().await;
    let subscription = harness
        .subscribe_with("https://hooks.example.com/a", &[EventKind::CallEnded], None)
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("earshot.db");
    drop(Store::open(&db).expect("a new store"));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard))
        .with_store(Ok(db.clone().into()));
    let mut app = App::new(ConsoleConfig::default());
    app.pane = PaneId::Subscriptions;
    worker.start_all(app.init());

    // Pumps the worker's answers into the app, ticking the clock on,
    // until `done` holds (or the deadline).
    let mut clock = Instant::now();
    let mut pump = async |app: &mut App, done: &dyn Fn(&App) -> bool| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
        while !done(app) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not within 8 s: {:?}",
                app.panes.subs.rows()
            );
            clock += WATCH_EVERY;
            worker.start_all(app.update(Action::Tick(clock)));
            // Every answer that arrives before the next tick is due.
            while let Ok(Some(action)) =
                tokio::time::timeout(Duration::from_millis(250), rx.recv()).await
            {
                worker.start_all(app.update(action));
            }
        }
    };
    pump(&mut app, &|app| {
        app.panes
            .subs
            .rows()
            .iter()
            .any(|row| row.id == subscription.id)
    })
    .await;

    // Elsewhere: the platform changed, and the change recorded, as the
    // CLI does it.
    let patch = SubscriptionPatch {
        url: Some(NEW_URL.to_owned()),
        ..SubscriptionPatch::default()
    };
    harness
        .client
        .update_subscription(&subscription.id, &patch)
        .await
        .expect("the platform takes the new URL");
    let change = changes::Change::now(
        "cli".into(),
        &subscription.id,
        "update",
        format!("url → {NEW_URL}"),
    );
    changes::record(&Store::open(&db).expect("the store"), &change).expect("recorded");

    pump(&mut app, &|app| {
        app.panes.subs.rows().iter().any(|row| row.url == NEW_URL)
    })
    .await;
    let mut terminal = Terminal::new(TestBackend::new(160, 30)).expect("terminal");
    terminal
        .draw(|frame| view::draw(frame, &app, &Theme::fallback()))
        .expect("drawn");
    let screen = terminal.backend().to_string();
    assert!(screen.contains("moved-by-the-cli"), "{screen}");
    assert!(screen.contains("as of"), "the list says its age: {screen}");
}
