//! The type index (`events_by_type`, schema version 12,
//! `store/postgres/type_index.rs`) on a store too large to build it in
//! the migration's transaction: `earshot store migrate` (the real binary)
//! makes it on the parent only, builds it concurrently on each partition
//! and attaches each (the partition's index carries the build's own name,
//! which the in-migration build would not give it), says so, and `events
//! type:` then lists along it the events a type term is contained in.
//! Version 14's text index (`text_index.rs`) is built the same way.

use earshot_core::store::now_ms;
use earshot_core::store::postgres::type_index::BUILD_IN_MIGRATION;
use earshot_core::store::postgres::{PG_SCHEMA_VERSION, PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{isolated, run, text};

const DATABASE: &str = "large";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_store_gets_the_type_index_built_per_partition_after_the_migration() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(DATABASE).expect("database made");
    let url = cluster.url(DATABASE);
    // Today's and tomorrow's partitions, at version 12; then back to 11,
    // as an earlier earshot left it.
    let store = PgStore::connect(
        PgTarget::parse(&url).expect("a URL"),
        &cluster.password_sources(),
    )
    .await
    .expect("connects");
    drop(store);
    let now = now_ms();
    let lo = (now - now.rem_euclid(86_400_000)).max(now - 60_000);
    let events = BUILD_IN_MIGRATION + 500;
    cluster
        .psql(
            DATABASE,
            &format!(
                "DROP INDEX earshot.events_by_type; DROP INDEX earshot.sessions_unswept;
                 DROP INDEX earshot.events_by_text; DROP INDEX earshot.event_outcomes_unsettled;
                 DELETE FROM earshot.schema_version WHERE version >= 12;
                 INSERT INTO earshot.events
                     (event_id, event, session_id, occurred_ms, received_ms, headers, body)
                 SELECT 'evt-' || g,
                        CASE WHEN g % 1000 = 0 THEN 'call.Transferred' ELSE 'session.started' END,
                        'ses-' || g, {lo} + g % 50000, {lo} + g % 50000, '[]', ''::bytea
                 FROM generate_series(1, {events}) AS g"
            ),
        )
        .expect("an older, larger store");

    let home = tempfile::tempdir().expect("temp dir");
    let migrate = run(isolated(home.path())
        .args(["store", "migrate", "--json", "--store", &url])
        .env("PGPASSWORD", cluster.password()))
    .await;
    assert_eq!(migrate.status.code(), Some(0), "{}", text(&migrate.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&migrate.stdout).expect("JSON");
    assert_eq!(
        (answer["from"].as_i64(), answer["to"].as_i64()),
        (Some(11), Some(i64::from(PG_SCHEMA_VERSION)))
    );
    assert_eq!(answer["type_index"], "built", "{answer}");
    // Version 14's text index the same way (`text_index.rs`).
    assert_eq!(answer["text_index"], "built", "{answer}");

    let psql = |sql: &str| cluster.psql(DATABASE, sql).expect("psql");
    assert_eq!(
        psql(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'earshot.events_by_type'::regclass"
        ),
        "t"
    );
    // Each partition's index is the concurrent build's, attached.
    let attached = psql(
        "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits AS i
         JOIN pg_class AS c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'earshot.events_by_type'::regclass",
    );
    let partitions = psql(
        "SELECT string_agg(c.relname || '_by_type', ',' ORDER BY c.relname) FROM pg_inherits AS i
         JOIN pg_class AS c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'earshot.events'::regclass",
    );
    assert_eq!(attached, partitions);
    assert!(attached.contains("_by_type"), "{attached}");
    let attached_text = psql(
        "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits AS i
         JOIN pg_class AS c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'earshot.events_by_text'::regclass",
    );
    assert_eq!(attached_text, partitions.replace("_by_type", "_by_text"));
    assert_eq!(
        psql(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'earshot.events_by_text'::regclass"
        ),
        "t"
    );

    // `type:` reads the matching stored types along it: any case, contained.
    for term in ["type:transferred", "type:CALL.T"] {
        let listed = run(isolated(home.path())
            .args(["events", "--json", "--no-sweep", "--limit", "1000", term])
            .args(["--store", &url])
            .env("PGPASSWORD", cluster.password()))
        .await;
        assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("JSON");
        assert_eq!(rows.len() as i64, events / 1000, "{term}");
        assert!(rows.iter().all(|row| row["type"] == "call.Transferred"));
    }
    let none = run(isolated(home.path())
        .args([
            "events",
            "--json",
            "--no-sweep",
            "type:nothing",
            "--store",
            &url,
        ])
        .env("PGPASSWORD", cluster.password()))
    .await;
    assert_eq!(text(&none.stdout).trim(), "[]", "{}", text(&none.stderr));
}
