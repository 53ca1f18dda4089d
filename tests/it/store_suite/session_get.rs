//! `earshot sessions get ID --json` through the real binary against the
//! emulator, on both backends at once: the same events filed through the
//! handle of each store, and the platform's attempts (two subscriptions'
//! receivers) shown the same, on SQLite as stored by its sweep and read
//! back, on PostgreSQL (no attempts stored there yet) as the platform
//! lists them now.

use earshot_core::api::types::agents::EventKind;
use serde_json::Value;

use super::{Backend, TestStore};
use crate::common::cli::text;
use crate::common::{self, API_KEY, Receiver};

/// The view's parts that do not change with the moment it is asked
/// (`artifacts_note` says "… ago").
const STEADY: [&str; 6] = [
    "session_id",
    "kind",
    "status",
    "events",
    "links",
    "deliveries",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_get_shows_the_same_session_on_both_backends() {
    let harness = common::start().await;
    let (first, second) = (Receiver::healthy().await, Receiver::healthy().await);
    harness.subscribe(&first.url(), &EventKind::ALL).await;
    harness.subscribe(&second.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    first.wait_count(2, "two deliveries").await;
    second.wait_count(2, "two deliveries").await;
    harness.wait_deliveries_idle().await;

    let stores = [
        TestStore::new(Backend::Sqlite).await,
        TestStore::new(Backend::Postgres).await,
    ];
    super::file_session_pair(&stores, &session, "evt-get").await;
    let mut views = Vec::new();
    for store in &stores {
        let output = store
            .earshot_with(
                &[
                    "sessions",
                    "get",
                    &session,
                    "--json",
                    "--url",
                    &harness.base,
                ],
                &[("EARSHOT_API_KEY", API_KEY)],
            )
            .await;
        assert!(output.status.success(), "{}", text(&output.stderr));
        let view: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        let steady: serde_json::Map<String, Value> = STEADY
            .iter()
            .map(|field| ((*field).to_owned(), view[*field].clone()))
            .collect();
        views.push(steady);
    }
    let events: Vec<&str> = views[0]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|event| event["event"].as_str())
        .collect();
    assert_eq!(events, ["session.started", "session.completed"]);
    assert_eq!(views[0]["deliveries"]["attempts"], 4, "{:?}", views[0]);
    assert_eq!(
        views[0]["deliveries"]["latest"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(views[0], views[1], "SQLite then PostgreSQL");
}
