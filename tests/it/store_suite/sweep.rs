//! The sweep on both backends at once: one platform (the emulator, on a
//! clock the test moves, so no retry runs between the two sweeps), three
//! subscriptions whose receivers deliver, refuse for good (404) and fail
//! each event's first attempt (500, retried), one session and one failed
//! call. The same
//! events are filed into a SQLite and a PostgreSQL store, each is swept
//! (real HTTP), and the two must hold the same subscriptions, attempts,
//! outcome rows, sessions' sweep bookkeeping and minute and hour counts;
//! then the retry is let run and both are swept again (rows rebuilt,
//! counts moved) and compared again.

use std::time::Duration;

use earshot_core::api::types::agents::EventKind;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::redact::SecretString;
use earshot_core::store::now_ms;
use earshot_emulator::EmulatorConfig;

use super::{Backend, TestStore};
use crate::common::{self, API_KEY, Harness, Receiver, Reply, eventually};

/// What is compared, table by table (`{t}`: the schema on PostgreSQL);
/// every order is a total order in byte order.
pub(crate) const COMPARED: [(&str, &str); 8] = [
    (
        "subscriptions",
        "SELECT id, url, events, CASE WHEN enabled THEN 1 ELSE 0 END, secret_version
         FROM {t}subscriptions ORDER BY id",
    ),
    (
        "deliveries",
        "SELECT id, subscription_id, session_id, status, attempt_count, http_status_code,
                error, created_ms, next_retry_ms, delivered_ms
         FROM {t}deliveries ORDER BY id",
    ),
    (
        "event_outcomes",
        "SELECT session_id, subscription_id, event_key, event_id, event, occurred_ms, state,
                attempts, http_status_code, error_class, first_failure_ms, last_failure_ms,
                settled_ms
         FROM {t}event_outcomes ORDER BY session_id, subscription_id, event_key",
    ),
    (
        "sessions swept",
        "SELECT session_id, CASE WHEN last_swept_ms IS NULL THEN 0 ELSE 1 END
         FROM {t}sessions ORDER BY session_id",
    ),
    (
        "delivery_counts",
        "SELECT minute, subscription_id, status, http_status_code, error_class, count, last_ms,
                example_session_id
         FROM {t}delivery_counts WHERE count <> 0
         ORDER BY minute, subscription_id, status, http_status_code, error_class",
    ),
    (
        "delivery_counts_hourly",
        "SELECT hour, subscription_id, status, http_status_code, error_class, count, last_ms,
                example_session_id
         FROM {t}delivery_counts_hourly WHERE count <> 0
         ORDER BY hour, subscription_id, status, http_status_code, error_class",
    ),
    (
        "event_counts",
        "SELECT minute, subscription_id, state, event, http_status_code, error_class, count,
                last_ms, example_session_id
         FROM {t}event_counts WHERE count <> 0
         ORDER BY minute, subscription_id, state, event, http_status_code, error_class",
    ),
    (
        "event_counts_hourly",
        "SELECT hour, subscription_id, state, event, http_status_code, error_class, count,
                last_ms, example_session_id
         FROM {t}event_counts_hourly WHERE count <> 0
         ORDER BY hour, subscription_id, state, event, http_status_code, error_class",
    ),
];

/// Every compared table of `store`, as text.
fn snapshot(store: &TestStore) -> Vec<(&'static str, Vec<String>)> {
    COMPARED
        .iter()
        .map(|(table, sql)| (*table, store.rows(sql)))
        .collect()
}

/// An emulator whose scheduled work (the retries) waits for the test.
pub(crate) async fn platform() -> Harness {
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.allow_private_urls = true;
    config.manual_clock = true;
    common::launch(config, Some(UrlPolicy::AnyHttp)).await
}

/// Waits until no record of `session_id` is in flight (every attempt made
/// so far has its answer).
async fn answered(harness: &Harness, session_id: &str, records: usize) {
    eventually(
        Duration::from_secs(10),
        "every attempt answered",
        || async {
            let listed = harness.records(session_id).await;
            (listed.len() == records && listed.iter().all(|record| record["status"] != "pending"))
                .then_some(())
        },
    )
    .await;
}

/// The outcome rows' states of one subscription, as the store holds them.
fn states(store: &TestStore, subscription_id: &str) -> Vec<String> {
    store.rows(&format!(
        "SELECT state || ':' || attempts || ':' || http_status_code FROM {{t}}event_outcomes
         WHERE subscription_id = '{subscription_id}' ORDER BY session_id, event_key"
    ))
}

/// The platform and both stores after the first sweep of one scenario:
/// three subscriptions (delivered, refused for good, retried), a session
/// and a failed call, their events filed into a SQLite and a PostgreSQL
/// store and both swept. The receivers are kept so the retries can run.
pub(crate) struct Swept {
    pub(crate) harness: Harness,
    pub(crate) stores: [TestStore; 2],
    pub(crate) delivered: String,
    pub(crate) missed: String,
    pub(crate) retried: String,
    pub(crate) session: String,
    pub(crate) call: String,
    pub(crate) _receivers: [Receiver; 3],
}

/// [`Swept`]: the scenario set up, filed and swept once on both backends.
pub(crate) async fn swept_once() -> Swept {
    let harness = platform().await;
    let healthy = Receiver::healthy().await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such hook")).await;
    let flaky = Receiver::busy_once_per_event().await;
    let delivered = harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    let missed = harness.subscribe(&gone.url(), &EventKind::ALL).await;
    let retried = harness.subscribe(&flaky.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    let call = harness.start_call("failed").await;
    let events = healthy.wait_count(3, "three events delivered").await;
    answered(&harness, &session, 6).await;
    answered(&harness, &call, 3).await;

    // The same events, as the observer would have filed them, in both.
    let stores = [
        TestStore::new(Backend::Sqlite).await,
        TestStore::new(Backend::Postgres).await,
    ];
    let received_ms = now_ms();
    for store in &stores {
        let handle = store.replica().await;
        for captured in &events {
            let event = common::observed_event(captured, received_ms);
            assert!(handle.file(event).await.expect("filed"));
        }
    }
    // First sweep: delivered, missed for good (404), retrying (500, a
    // retry scheduled that the clock holds back).
    for store in &stores {
        let report = store.sweep(&harness.client).await;
        assert_eq!(
            report.sessions_swept,
            2,
            "{:?}: {report:?}",
            store.backend()
        );
        assert_eq!(report.stopped, None);
    }
    Swept {
        harness,
        stores,
        delivered: delivered.id,
        missed: missed.id,
        retried: retried.id,
        session,
        call,
        _receivers: [healthy, gone, flaky],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_stores_the_same_outcome_rows_and_counts_on_sqlite_and_postgres() {
    let Swept {
        harness,
        stores,
        delivered,
        missed,
        retried,
        session,
        call,
        _receivers,
    } = swept_once().await;
    let first = snapshot(&stores[0]);
    assert_eq!(first, snapshot(&stores[1]), "SQLite, then PostgreSQL");
    assert_eq!(states(&stores[0], &delivered), ["delivered:1:0"; 3]);
    assert_eq!(states(&stores[0], &missed), ["missed:1:404"; 3]);
    assert_eq!(states(&stores[0], &retried), ["pending:1:500"; 3]);
    let counted = |snapshot: &[(&str, Vec<String>)], table: &str| {
        snapshot
            .iter()
            .find(|(name, _)| *name == table)
            .map(|(_, rows)| rows.len())
            .unwrap_or(0)
    };
    assert_eq!(counted(&first, "deliveries"), 9);
    assert!(counted(&first, "delivery_counts") >= 3, "{first:?}");
    assert!(counted(&first, "event_counts_hourly") >= 3, "{first:?}");

    // The retries run and deliver; the second sweep rebuilds the rows and
    // moves their counts, on both alike.
    harness
        .emulator
        .advance(Duration::from_secs(5))
        .await
        .expect("a manual clock");
    answered(&harness, &session, 8).await;
    answered(&harness, &call, 4).await;
    for store in &stores {
        let report = store.sweep(&harness.client).await;
        assert_eq!(
            report.sessions_swept,
            2,
            "{:?}: {report:?}",
            store.backend()
        );
    }
    let second = snapshot(&stores[0]);
    assert_eq!(second, snapshot(&stores[1]), "SQLite, then PostgreSQL");
    assert_ne!(first, second, "the retry changed what is stored");
    assert_eq!(states(&stores[1], &retried), ["delivered:2:500"; 3]);
    assert_eq!(states(&stores[1], &missed), ["missed:1:404"; 3]);
    let pending_counted = stores[1]
        .rows("SELECT coalesce(sum(count), 0) FROM {t}event_counts_hourly WHERE state = 'pending'");
    assert_eq!(pending_counted, ["0"], "the pending rows were counted out");
    harness.emulator.shutdown().await;
}

/// The stored subscriptions and incidents of `store`, as text.
fn subscriptions_and_incidents(store: &TestStore) -> Vec<String> {
    let mut rows = store.rows("SELECT id FROM {t}subscriptions ORDER BY id");
    rows.extend(store.rows(
        "SELECT id || ':' || coalesce(resolved_reason, 'open') FROM {t}incidents ORDER BY id",
    ));
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_another_account_changes_nothing_on_either_store() {
    let swept = swept_once().await;
    let before: Vec<_> = swept
        .stores
        .iter()
        .map(|store| (snapshot(store), subscriptions_and_incidents(store)))
        .collect();
    assert_eq!(before[0].1.len(), before[1].1.len());
    assert!(before[0].1.len() >= 3, "{:?}", before[0].1);
    // Another account: a platform with a subscription of its own.
    let other = platform().await;
    let receiver = Receiver::healthy().await;
    other.subscribe(&receiver.url(), &EventKind::ALL).await;
    for store in &swept.stores {
        let report = store.sweep(&other.client).await;
        let why = report.stopped.as_deref().unwrap_or_default();
        assert!(
            why.contains("this key lists none of the store's 3 subscriptions"),
            "{:?}: {report:?}",
            store.backend()
        );
        assert_eq!(report.sessions_swept, 0, "{:?}", store.backend());
    }
    let after: Vec<_> = swept
        .stores
        .iter()
        .map(|store| (snapshot(store), subscriptions_and_incidents(store)))
        .collect();
    assert_eq!(before, after, "nothing deleted, resolved or swept");
    // The store's own account sweeps as before.
    for store in &swept.stores {
        let report = store.sweep(&swept.harness.client).await;
        assert_eq!(report.stopped, None, "{:?}", store.backend());
    }
    other.emulator.shutdown().await;
    swept.harness.emulator.shutdown().await;
}
