//! `status:` and `sub:` in `earshot events` through the real binary
//! against the emulator, on both backends at once: the same events are
//! listed from a SQLite file and from PostgreSQL, before the sweep (none
//! on either), after it (the outcome rows the sweep wrote), and for an
//! event filed after the sweep, which SQLite's observer files with an
//! `unknown` row per listening subscription and PostgreSQL holds no row
//! for: it is listed by `status:unknown` and `sub:` on both, and only its
//! outcomes differ (`unknown` rows on SQLite, `null` on PostgreSQL).

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::events::ObservedEvent;
use serde_json::Value;

use super::{Backend, TestStore};
use crate::common::cli::text;
use crate::common::{self, API_KEY, Receiver};

/// `events QUERY --json` on `store` (swept first from `base` unless
/// `None`): its rows (exit 0).
async fn listed(store: &TestStore, query: &[&str], base: Option<&str>) -> Vec<Value> {
    let mut args = vec!["events", "--json"];
    match base {
        Some(base) => args.extend(["--url", base]),
        None => args.push("--no-sweep"),
    }
    args.extend_from_slice(query);
    let output = store
        .earshot_with(&args, &[("EARSHOT_API_KEY", API_KEY)])
        .await;
    assert!(
        output.status.success(),
        "{query:?} on {:?}: {}",
        store.backend(),
        text(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON list")
}

/// The ids `events QUERY --json --no-sweep` lists on each of `stores`,
/// which must be the same; those ids.
async fn same_ids(stores: &[TestStore; 2], query: &[&str]) -> Vec<String> {
    let mut each = Vec::new();
    for store in stores {
        let ids: Vec<String> = listed(store, query, None)
            .await
            .iter()
            .map(|row| row["event_id"].as_str().expect("an id").to_owned())
            .collect();
        each.push(ids);
    }
    assert_eq!(each[0], each[1], "{query:?}: SQLite then PostgreSQL");
    each.swap_remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_sub_list_the_same_events_on_both_backends_before_and_after_the_sweep() {
    let harness = common::start().await;
    let healthy = Receiver::healthy().await;
    let gone = Receiver::failing_first(usize::MAX, 404, "gone").await;
    let healthy_id = harness.subscribe(&healthy.url(), &EventKind::ALL).await.id;
    let gone_id = harness.subscribe(&gone.url(), &EventKind::ALL).await.id;
    // The stores first (a cluster takes seconds to start under load): the
    // pair is filed as soon as the session ends, so its times stay within
    // the sweep's 5 s skew of the platform's attempts.
    let stores = [
        TestStore::new(Backend::Sqlite).await,
        TestStore::new(Backend::Postgres).await,
    ];
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    super::file_session_pair(&stores, &session, "evt-f").await;
    healthy.wait_count(2, "two deliveries").await;
    gone.wait_count(2, "two refusals").await;
    harness.wait_deliveries_idle().await;

    assert_eq!(stores[1].backend(), Backend::Postgres);
    let gone_sub = format!("sub:{}", &gone_id[..8]);
    let healthy_sub = format!("sub:{}", &healthy_id[..8]);
    let pair = ["evt-f-1", "evt-f-0"];

    // Before any sweep neither store knows a subscription: nothing passes.
    for query in [&["status:missed"][..], &["status:unknown"], &[&gone_sub]] {
        assert!(same_ids(&stores, query).await.is_empty(), "{query:?}");
    }

    // The sweep (each store's own, by `events --url`).
    for store in &stores {
        assert_eq!(listed(store, &[], Some(&harness.base)).await.len(), 2);
    }
    let cases: [(&[&str], &[&str]); 8] = [
        (&["status:missed"], &pair),
        (&["status:delivered"], &pair),
        (&["status:unknown"], &[]),
        (&["status:pending"], &[]),
        (&[&gone_sub], &pair),
        (&[&gone_sub, "status:missed"], &pair),
        (&[&healthy_sub, "status:missed"], &[]),
        (&["sub:zz"], &[]),
    ];
    for (query, expected) in cases {
        assert_eq!(same_ids(&stores, query).await, expected, "{query:?}");
    }
    assert_eq!(
        same_ids(&stores, &["status:missed", "type:completed"]).await,
        ["evt-f-1"]
    );
    assert_eq!(
        same_ids(&stores, &["status:missed", "--limit", "1"]).await,
        ["evt-f-1"]
    );

    // An event filed after the sweep: SQLite files an `unknown` row for
    // each subscription listening to its type; PostgreSQL has none, its
    // session not swept since.
    let late = earshot_core::store::now_ms();
    for store in &stores {
        let filed = store
            .replica()
            .await
            .file(ObservedEvent {
                event_id: "evt-late".into(),
                event: "session.started".into(),
                session_id: "ses-late".into(),
                kind: "session",
                occurred_ms: late,
                received_ms: late + 100,
                delivery_id: None,
                headers: Vec::new(),
                body: b"{}".to_vec(),
            })
            .await
            .expect("filed");
        assert!(filed);
    }
    let cases: [(&[&str], &[&str]); 6] = [
        (&["status:unknown"], &["evt-late"]),
        (&[&gone_sub, "status:unknown"], &["evt-late"]),
        (&[&gone_sub], &["evt-late", "evt-f-1", "evt-f-0"]),
        (&[&healthy_sub], &["evt-late", "evt-f-1", "evt-f-0"]),
        (&["status:missed"], &pair),
        (&["sub:zz"], &[]),
    ];
    for (query, expected) in cases {
        assert_eq!(same_ids(&stores, query).await, expected, "{query:?}");
    }
    // What is listed is the same; what is said of it is each store's.
    let rows = [
        listed(&stores[0], &["status:unknown"], None).await,
        listed(&stores[1], &["status:unknown"], None).await,
    ];
    let states: Vec<&str> = rows[0][0]["subscriptions"]
        .as_array()
        .expect("SQLite's rows")
        .iter()
        .filter_map(|outcome| outcome["state"].as_str())
        .collect();
    assert_eq!(states, ["unknown", "unknown"], "{}", rows[0][0]);
    assert_eq!(rows[1][0]["subscriptions"], Value::Null, "{}", rows[1][0]);
}
