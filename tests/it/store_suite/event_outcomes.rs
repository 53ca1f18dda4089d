//! `earshot events --json` through the real binary against the emulator,
//! on both backends at once: the per-subscription outcomes of each listed
//! event. PostgreSQL holds only what its sweep wrote, so before the
//! session's sweep they are unknown (`null`, never an empty list), and
//! after it they are SQLite's: a healthy receiver's `delivered`, a 404's
//! `missed`.

use earshot_core::api::types::agents::EventKind;
use serde_json::Value;

use super::{Backend, TestStore};
use crate::common::cli::text;
use crate::common::{self, API_KEY, Receiver};

/// `events --json` on `store` (swept first from `base` unless `None`).
async fn listed(store: &TestStore, base: Option<&str>) -> Vec<Value> {
    let mut args = vec!["events", "--json"];
    match base {
        Some(base) => args.extend(["--url", base]),
        None => args.push("--no-sweep"),
    }
    let output = store
        .earshot_with(&args, &[("EARSHOT_API_KEY", API_KEY)])
        .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON list")
}

/// Each row's id and outcomes, the outcomes as (subscription, state).
fn outcomes(rows: &[Value]) -> Vec<(String, Value)> {
    rows.iter()
        .map(|row| (row["event_id"].to_string(), row["subscriptions"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_show_the_outcomes_postgresql_swept_and_unknown_before() {
    let harness = common::start().await;
    let healthy = Receiver::healthy().await;
    let gone = Receiver::failing_first(usize::MAX, 404, "gone").await;
    harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    harness.subscribe(&gone.url(), &EventKind::ALL).await;
    // The stores first (a cluster takes seconds to start under load): the
    // pair is filed as soon as the session ends, so its times stay within
    // the sweep's 5 s skew of the platform's attempts.
    let stores = [
        TestStore::new(Backend::Sqlite).await,
        TestStore::new(Backend::Postgres).await,
    ];
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    super::file_session_pair(&stores, &session, "evt-out").await;
    healthy.wait_count(2, "two deliveries").await;
    gone.wait_count(2, "two refusals").await;
    harness.wait_deliveries_idle().await;

    // Before any sweep: nothing learned on PostgreSQL, so unknown.
    for row in listed(&stores[1], None).await {
        assert_eq!(row["subscriptions"], Value::Null, "{row}");
    }

    let sqlite = listed(&stores[0], Some(&harness.base)).await;
    let postgres = listed(&stores[1], Some(&harness.base)).await;
    assert_eq!(sqlite.len(), 2);
    assert_eq!(
        outcomes(&sqlite),
        outcomes(&postgres),
        "SQLite then PostgreSQL"
    );
    for row in &postgres {
        let states: Vec<&str> = row["subscriptions"]
            .as_array()
            .unwrap_or_else(|| panic!("known after the sweep: {row}"))
            .iter()
            .filter_map(|outcome| outcome["state"].as_str())
            .collect();
        let mut states = states;
        states.sort_unstable();
        assert_eq!(states, ["delivered", "missed"], "{row}");
    }
}
