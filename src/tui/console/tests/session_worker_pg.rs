//! The Deliveries pane's session block on a PostgreSQL store, as the
//! worker runs it: an observer (`listen --store postgres://…` in-process)
//! files a session's events over real HTTP into the test kit's throwaway
//! cluster; the block lists those events, read from PostgreSQL. When the
//! read fails (the events table gone), the block says the events are
//! unknown, with why, never "none".

use std::time::Duration;

use super::support::{SECRET, eventually, observe, open_in_deliveries, start};
use crate::tui::console::app::App;
use crate::tui::console::view;
use crate::tui::kernel::store::StoreAt;
use crate::tui::theme::Theme;
use earshot_core::api::types::agents::EventKind;
use earshot_core::store::events;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::Harness;
use earshot_testkit::postgres::PgCluster;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Opens `id` in the Deliveries pane with the console on `store`, runs
/// the worker until the session block arrives; the app and its screen.
async fn open_session(harness: &Harness, store: &PgStore, id: &str) -> (App, String) {
    let app = open_in_deliveries(&harness.client, StoreAt::Postgres(store.clone()), id).await;
    let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap();
    let theme = Theme::fallback();
    terminal
        .draw(|frame| view::draw(frame, &app, &theme))
        .unwrap();
    let screen = terminal.backend().to_string();
    (app, screen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_block_lists_the_events_filed_into_postgresql_and_unknown_when_unread() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("console").expect("database made");
    let target = PgTarget::parse(&cluster.url("console")).expect("a store URL");
    let sources = cluster.password_sources();
    let store = PgStore::connect(target, &sources)
        .await
        .expect("the store opens");
    let observer = observe(&harness, store.clone().into(), &EventKind::ALL, SECRET).await;

    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    let other = harness.start_session(None).await;
    harness.complete_session(&other).await;
    let filed = eventually(Duration::from_secs(10), "the events filed", || async {
        let filed = events::for_session_postgres(&store, &session).await.ok()?;
        let others = events::for_session_postgres(&store, &other).await.ok()?;
        (filed.len() >= 2 && !others.is_empty()).then_some(filed)
    })
    .await;

    let (app, screen) = open_session(&harness, &store, &session).await;
    let view = app.panes.deliveries.session().expect("the session block");
    assert_eq!(view.events_unknown, None, "{view:?}");
    let names: Vec<&str> = view.events.iter().map(|e| e.event.as_str()).collect();
    let expected: Vec<&str> = filed.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, expected, "the session's own events, oldest first");
    let ids: Vec<&str> = view.events.iter().map(|e| e.event_id.as_str()).collect();
    let expected_ids: Vec<&str> = filed.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids, expected_ids);
    for name in &expected {
        assert!(screen.contains(name), "{name} on screen: {screen}");
    }
    assert!(!screen.contains("none stored"), "{screen}");
    assert!(!screen.contains("unknown: not read"), "{screen}");

    // A read that fails says unknown, with why, never none.
    observer.stop().await;
    cluster
        .psql(
            "console",
            "ALTER TABLE earshot.events RENAME TO events_gone",
        )
        .expect("the events table renamed");
    let (app, screen) = open_session(&harness, &store, &session).await;
    let view = app.panes.deliveries.session().expect("the session block");
    assert!(view.events.is_empty());
    assert!(view.events_unknown.is_some(), "{view:?}");
    assert!(
        screen.contains("unknown: not read from the store"),
        "{screen}"
    );
    assert!(!screen.contains("none stored"), "{screen}");
}
