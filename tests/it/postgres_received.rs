//! The events received per hour a PostgreSQL store keeps for `health`
//! (schema version 11, `store/postgres/received.rs`): the window's count
//! read by `events::received_since_postgres` equals a count of the
//! events themselves after filing (repeats included, from several
//! connections at once), a bulk insert of many rows in one statement (as
//! a copy's batch), a retention that drops a day, and the migration from
//! version 7 of a store that holds events already.

use earshot_core::store::events::{self, ObservedEvent};
use earshot_core::store::postgres::days::DAY_MS;
use earshot_core::store::postgres::{PG_SCHEMA_VERSION, PasswordSources, PgStore, PgTarget};
use earshot_core::store::retention::Period;
use earshot_testkit::postgres::PgCluster;

use crate::store_suite::event;

const HOUR_MS: i64 = 3_600_000;

async fn connect(cluster: &PgCluster, name: &str, sources: &PasswordSources) -> PgStore {
    let target = PgTarget::parse(&cluster.url(name)).expect("a store URL");
    PgStore::connect(target, sources).await.expect("connects")
}

/// Event `index` received `ago_ms` before now. It occurred then too, or,
/// with `back` > 0, `ago_ms` before noon (UTC) of the day `back` days ago:
/// on that day whatever the hour now (before 05:00 UTC, `ago_ms` back from
/// now would reach the day before it).
fn received(index: usize, ago_ms: i64, back: i64) -> ObservedEvent {
    let now = earshot_core::store::now_ms();
    let occurred = if back == 0 {
        now - ago_ms
    } else {
        (now - back * DAY_MS).div_euclid(DAY_MS) * DAY_MS + DAY_MS / 2 - ago_ms
    };
    ObservedEvent {
        received_ms: now - ago_ms,
        ..event(index, occurred)
    }
}

/// For windows starting at several times, the count the board reads and
/// a count of `events` by psql: they must be equal.
async fn windows_agree(store: &PgStore, cluster: &PgCluster, database: &str, what: &str) {
    let now = earshot_core::store::now_ms();
    let hour = now.div_euclid(HOUR_MS) * HOUR_MS;
    for since in [
        -5,
        0,
        now - 3 * DAY_MS,
        hour - 5 * HOUR_MS,
        hour - 2 * HOUR_MS - 1_234,
        hour,
        now - 10,
        now + HOUR_MS,
    ] {
        let (counted, newest) = events::received_since_postgres(store, since)
            .await
            .expect("reads");
        let text = cluster
            .psql(
                database,
                &format!("SELECT count(*) FROM earshot.events WHERE received_ms >= {since}"),
            )
            .expect("psql");
        assert_eq!(counted.to_string(), text, "{what}: since {since}");
        let newest_text = cluster
            .psql(
                database,
                "SELECT coalesce(max(received_ms), -1) FROM earshot.events",
            )
            .expect("psql");
        assert_eq!(newest.unwrap_or(-1).to_string(), newest_text, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_received_counts_agree_with_the_events_through_filing_bulk_inserts_and_a_drop() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("received").expect("database made");
    let sources = cluster.password_sources();
    let store = connect(&cluster, "received", &sources).await;
    windows_agree(&store, &cluster, "received", "empty").await;

    // Events over six hours of today and on a day three days ago, filed
    // by eight tasks at once on the pool's connections, each twice.
    let planned: Vec<ObservedEvent> = (0..120)
        .map(|index| {
            let ago = (index as i64 % 6) * HOUR_MS + index as i64 * 997;
            received(index, ago, if index % 5 == 0 { 3 } else { 0 })
        })
        .collect();
    let mut filing = Vec::new();
    for task in 0..8 {
        let store = store.clone();
        let mine: Vec<ObservedEvent> = planned.iter().skip(task).step_by(8).cloned().collect();
        filing.push(tokio::spawn(async move {
            let mut new = 0;
            for event in mine.iter().chain(mine.iter()) {
                new += usize::from(store.file(event).await.expect("files"));
            }
            new
        }));
    }
    let mut new = 0;
    for task in filing {
        new += task.await.expect("task");
    }
    assert_eq!(new, 120, "each event new once");
    windows_agree(&store, &cluster, "received", "filed").await;

    // A thousand rows in one statement, as a copy's batch inserts them,
    // some of them already there.
    let now = earshot_core::store::now_ms();
    cluster
        .psql(
            "received",
            &format!(
                "INSERT INTO earshot.events (event_id, event, session_id, occurred_ms, \
                 received_ms, delivery_id, headers, body) \
                 SELECT 'bulk-' || g, 'call.ended', 'call-' || (g % 10), {now} - g * 7000, \
                 {now} - g * 7000 + 50, NULL, '[]', '\\x7b7d'::bytea \
                 FROM generate_series(1, 1000) AS g \
                 ON CONFLICT (event_id, occurred_ms) DO NOTHING"
            ),
        )
        .expect("bulk insert");
    windows_agree(&store, &cluster, "received", "bulk").await;

    // The retention drops the day three days ago, and its counts.
    let never = std::sync::atomic::AtomicBool::new(false);
    let pruned = store
        .prune(Period::parse("1d").expect("period"), now, None, &never)
        .await
        .expect("prunes");
    assert_eq!(pruned.days.len(), 1, "one old day");
    windows_agree(&store, &cluster, "received", "after a drop").await;
    let left = cluster
        .psql(
            "received",
            &format!(
                "SELECT count(*) FROM earshot.events_received_hourly WHERE day = {}",
                (now - 3 * DAY_MS).div_euclid(DAY_MS)
            ),
        )
        .expect("psql");
    assert_eq!(left, "0", "no count left of the dropped day");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_to_version_11_counts_the_events_a_store_holds_already() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("older").expect("database made");
    let sources = cluster.password_sources();
    let store = connect(&cluster, "older", &sources).await;
    for index in 0..40 {
        store
            .file(&received(index, index as i64 * 600_000, 0))
            .await
            .expect("files");
    }
    // Back to version 10, as an earlier earshot left the store (version
    // 12's index gone too).
    cluster
        .psql(
            "older",
            "DROP INDEX earshot.events_by_type; DROP INDEX earshot.sessions_unswept; \
             DROP TABLE earshot.events_received_hourly; \
             DROP TRIGGER events_received_counted ON earshot.events; \
             DROP FUNCTION earshot.events_received_counted(); \
             DELETE FROM earshot.schema_version WHERE version >= 11",
        )
        .expect("back to version 10");
    drop(store);
    let store = connect(&cluster, "older", &sources).await;
    assert_eq!(
        store.schema_version().await.expect("version"),
        PG_SCHEMA_VERSION
    );
    const { assert!(PG_SCHEMA_VERSION >= 11) };
    windows_agree(&store, &cluster, "older", "migrated").await;
}
