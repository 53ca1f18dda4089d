//! Reading through the real binary, on both backends: the same events
//! filed through the store handle are listed by `earshot events --json
//! --store …` newest first (ties by id in byte order), with each filter a
//! PostgreSQL store can answer (`type:`, `session:`, `since:`, free text
//! folded as Rust folds it, `--limit`), byte for byte the same on both;
//! `status:` and `sub:` answered on both (nothing before a sweep; see
//! `event_filters` for after); `earshot sessions list --json` in the same order
//! with the same counts, the attempts unknown (`null`) on PostgreSQL;
//! ties in byte order even where the database collates otherwise.

use earshot_core::store::events::ObservedEvent;
use earshot_core::store::now_ms;
use serde_json::Value;

use super::{Backend, TestStore, observed, store_test};
use crate::common::cli::text;

/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// The set, an hour ago (two pairs at one millisecond, ids that differ
/// in case, a non-ASCII letter and the Kelvin sign `K`, which Rust folds
/// to `k` and PostgreSQL's `lower()` under the C locale does not), and
/// one event three days ago, outside the default window; the base.
fn events() -> (Vec<ObservedEvent>, i64) {
    let base = now_ms() - 3_600_000;
    let set = vec![
        observed("evt-a1", "call.ended", "call_1", base + 1_000),
        observed("evt-a2", "session.ended", "ses-1", base + 2_000),
        observed("evt-b2", "session.ended", "ses-10", base + 2_000),
        observed("evt-ÜBER", "call.failed", "call_2", base + 3_000),
        observed("evt-Zed", "Call.Connected", "ses-2", base + 3_000),
        observed(
            "evt-kelvin-\u{212A}",
            "session.started",
            "ses-3",
            base + 4_000,
        ),
        observed("evt-old", "call.ended", "call_1", base - 3 * DAY_MS),
    ];
    (set, base)
}

/// Files the set through a handle of `store`; the base.
async fn file_the_set(store: &TestStore) -> i64 {
    let handle = store.replica().await;
    let (set, base) = events();
    for event in set {
        assert!(handle.file(event).await.expect("filed"), "new");
    }
    base
}

/// `earshot events QUERY --json --no-sweep` on `store`: its exit code,
/// stdout and stderr.
async fn events_json(store: &TestStore, query: &[&str]) -> (i32, String, String) {
    let mut args = vec!["events", "--json", "--no-sweep"];
    args.extend_from_slice(query);
    let output = store.earshot(&args).await;
    (
        output.status.code().unwrap_or(-1),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The ids `earshot events QUERY --json` lists, in order (exit 0).
async fn listed_ids(store: &TestStore, query: &[&str]) -> Vec<String> {
    let (code, stdout, stderr) = events_json(store, query).await;
    assert_eq!(code, 0, "{query:?}: {stderr}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).expect("a JSON list");
    rows.iter()
        .map(|row| row["event_id"].as_str().expect("an id").to_owned())
        .collect()
}

store_test! {
    async fn events_are_listed_newest_first_with_ties_by_id(store) {
        file_the_set(&store).await;
        assert_eq!(
            listed_ids(&store, &[]).await,
            ["evt-kelvin-\u{212A}", "evt-ÜBER", "evt-Zed", "evt-b2", "evt-a2", "evt-a1"]
        );
        assert_eq!(listed_ids(&store, &["--limit", "2"]).await, ["evt-kelvin-\u{212A}", "evt-ÜBER"]);
        assert_eq!(listed_ids(&store, &["--since", "7d"]).await.last().map(String::as_str), Some("evt-old"));
        // Each row as the JSON of `events` has it; no outcomes stored
        // (none on SQLite, where the sweep would store them; unknown on
        // PostgreSQL, which does not hold them yet).
        let (_, stdout, _) = events_json(&store, &["type:call.failed"]).await;
        let rows: Value = serde_json::from_str(&stdout).expect("JSON");
        let row = rows.as_array().and_then(|rows| rows.first()).expect("one row");
        let keys: Vec<&str> = row.as_object().expect("an object").keys().map(String::as_str).collect();
        // (serde_json's map sorts its keys.)
        assert_eq!(keys, ["event_id", "occurred_at", "session_id", "subscriptions", "type"]);
        assert_eq!(row["session_id"], "call_2");
        let outcomes = match store.backend() {
            Backend::Sqlite => Value::Array(Vec::new()),
            Backend::Postgres => Value::Null,
        };
        assert_eq!(row["subscriptions"], outcomes);
    }
}

store_test! {
    async fn each_filter_a_postgresql_store_answers_lists_the_same_events(store) {
        let base = file_the_set(&store).await;
        let cases: [(&[&str], &[&str]); 11] = [
            (&["type:call"], &["evt-ÜBER", "evt-Zed", "evt-a1"]),
            (&["type:CALL.ENDED"], &["evt-a1"]),
            (&["type:call.ended", "since:7d"], &["evt-a1", "evt-old"]),
            (&["session:ses-1"], &["evt-b2", "evt-a2"]),
            (&["session:call_", "type:failed"], &["evt-ÜBER"]),
            (&["ÜBER"], &["evt-ÜBER"]),
            // The Kelvin sign folds to an ASCII k, as SQLite's fold() does.
            (&["kelvin-k"], &["evt-kelvin-\u{212A}"]),
            (&["ses-1", "ENDED"], &["evt-b2", "evt-a2"]),
            (&["call", "ended"], &["evt-a1"]),
            (&["type:session", "--limit", "1"], &["evt-kelvin-\u{212A}"]),
            (&["type:nothing"], &[]),
        ];
        for (query, expected) in cases {
            assert_eq!(listed_ids(&store, query).await, expected, "{query:?}");
        }
        let since = chrono::DateTime::from_timestamp_millis(base + 2_500)
            .expect("a time")
            .to_rfc3339();
        let since = format!("since:{since}");
        assert_eq!(
            listed_ids(&store, &[&since]).await,
            ["evt-kelvin-\u{212A}", "evt-ÜBER", "evt-Zed"]
        );
    }
}

store_test! {
    async fn filters_on_outcomes_are_answered_on_both_backends_and_find_nothing_before_a_sweep(store) {
        file_the_set(&store).await;
        // No subscription is known before a sweep: SQLite filed no
        // `unknown` row, PostgreSQL has no row and no listener to infer one.
        for query in [
            &["status:missed"][..],
            &["status:unknown"],
            &["sub:db318dee"],
            &["type:call", "state:pending"],
            &["sub:db318dee", "status:unknown", "ÜBER"],
        ] {
            let (code, stdout, stderr) = events_json(&store, query).await;
            assert_eq!(code, 0, "{query:?}: {stderr}");
            assert_eq!(stdout.trim(), "[]", "{query:?}");
        }
    }
}

store_test! {
    async fn known_sessions_are_listed_in_the_same_order_with_their_events(store) {
        file_the_set(&store).await;
        let output = store.earshot(&["sessions", "list", "--json"]).await;
        assert!(output.status.success(), "{}", text(&output.stderr));
        let sessions: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
        let listed: Vec<(&str, i64, &str)> = sessions
            .iter()
            .map(|session| {
                (
                    session["session_id"].as_str().expect("an id"),
                    session["events"].as_i64().expect("a count"),
                    session["kind"].as_str().expect("a kind"),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("ses-3", 1, "session"),
                ("call_2", 1, "call"),
                ("ses-2", 1, "session"),
                ("ses-1", 1, "session"),
                ("ses-10", 1, "session"),
                ("call_1", 2, "call"),
            ]
        );
        let unknown = match store.backend() {
            // Attempts are the sweep's, which stores none on PostgreSQL.
            Backend::Postgres => Value::Null,
            Backend::Sqlite => Value::from(0),
        };
        for session in &sessions {
            assert_eq!(session["attempts"], unknown, "{session}");
            assert_eq!(session["failed_attempts"], unknown, "{session}");
            assert_eq!(session["source"], "observer");
            assert_eq!(session["unsettled"], true);
        }
        let table = store.earshot(&["sessions", "list"]).await;
        let table = text(&table.stdout);
        let row = table.lines().find(|line| line.starts_with("call_1")).expect("a row");
        match store.backend() {
            Backend::Postgres => assert!(row.contains("unknown"), "{row}"),
            Backend::Sqlite => assert!(!row.contains("unknown"), "{row}"),
        }
    }
}

/// The same events on both backends are listed byte for byte the same,
/// for the plain list and for filtered ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_json_is_the_same_on_both_backends_but_outcomes_unknown_on_postgresql_before_the_sweep()
 {
    let sqlite = TestStore::new(Backend::Sqlite).await;
    let postgres = TestStore::new(Backend::Postgres).await;
    let handles = [sqlite.replica().await, postgres.replica().await];
    let (set, _) = events();
    for event in set {
        for handle in &handles {
            assert!(handle.file(event.clone()).await.expect("filed"));
        }
    }
    for query in [
        &[][..],
        &["--since", "7d"],
        &["type:call", "--limit", "2"],
        &["session:ses-1"],
        &["über"],
    ] {
        let (sqlite_code, sqlite_out, sqlite_err) = events_json(&sqlite, query).await;
        let (postgres_code, postgres_out, postgres_err) = events_json(&postgres, query).await;
        assert_eq!(
            (sqlite_code, postgres_code),
            (0, 0),
            "{sqlite_err} {postgres_err}"
        );
        assert!(sqlite_out.len() > 10, "{query:?}: {sqlite_out}");
        // The same rows; the outcomes per subscription, which on
        // PostgreSQL only the sweep writes and none has run, are unknown
        // (null) there, never an empty list (after a sweep:
        // `event_outcomes`).
        let sqlite_rows: Vec<serde_json::Value> = serde_json::from_str(&sqlite_out).expect("json");
        let mut postgres_rows: Vec<serde_json::Value> =
            serde_json::from_str(&postgres_out).expect("json");
        for row in &mut postgres_rows {
            assert_eq!(
                row["subscriptions"],
                serde_json::Value::Null,
                "{query:?}: {row}"
            );
            row["subscriptions"] = serde_json::json!([]);
        }
        assert_eq!(sqlite_rows, postgres_rows, "{query:?}");
    }
}

/// A PostgreSQL store's URL with a password is refused (exit 2) and the
/// password never said; without `--no-sweep` the list is swept first, as
/// on a file, so with no platform to sweep from it stops and says how to
/// name one; with `--no-sweep` it lists what the store holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_read_refuses_a_password_in_the_url_and_sweeps_first_as_on_a_file() {
    let mut command = crate::common::cli::earshot();
    command.args([
        "events",
        "--no-sweep",
        "--store",
        "postgres://earshot:hunter2-secret@127.0.0.1:1/earshot",
    ]);
    let output = crate::common::cli::run(&mut command).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("password") && !stderr.contains("hunter2"),
        "{stderr}"
    );

    let store = TestStore::new(Backend::Postgres).await;
    file_the_set(&store).await;
    let output = store.earshot(&["events", "--json"]).await;
    assert!(!output.status.success(), "listed without the sweep");
    assert!(
        text(&output.stderr).contains("--url URL --api-key KEY"),
        "{}",
        text(&output.stderr)
    );
    let output = store.earshot(&["events", "--json", "--no-sweep"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(rows.len(), 6);
}

/// On a database whose collation is not byte order (ICU's root locale,
/// where `Ü` sorts before `Z`), events of one millisecond are still
/// listed by id in byte order, as SQLite lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ties_sort_in_byte_order_on_a_database_with_a_linguistic_collation() {
    use earshot_core::store::postgres::{PgStore, PgTarget};

    let cluster = earshot_testkit::postgres::PgCluster::start().expect("a cluster");
    cluster
        .psql(
            "postgres",
            "CREATE DATABASE icu TEMPLATE template0 ENCODING 'UTF8' \
             LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C'",
        )
        .expect("an ICU database");
    // The database's own order puts evt-Zed first; bytes put evt-ÜBER first.
    let own_order = cluster
        .psql(
            "icu",
            "SELECT string_agg(id, ',' ORDER BY id DESC) FROM (VALUES ('evt-ÜBER'), ('evt-Zed')) v(id)",
        )
        .expect("psql");
    assert_eq!(own_order, "evt-Zed,evt-ÜBER");
    let sources = cluster.password_sources();
    let url = cluster.url("icu");
    let store = PgStore::connect(PgTarget::parse(&url).expect("a URL"), &sources)
        .await
        .expect("the store opens");
    let handle = earshot_core::store::StoreHandle::from(store);
    for event in events().0 {
        handle.file(event).await.expect("filed");
    }
    let listed = |query: &'static [&'static str]| listed_at(&cluster, &url, query);
    assert_eq!(
        listed(&[]).await,
        [
            "evt-kelvin-\u{212A}",
            "evt-ÜBER",
            "evt-Zed",
            "evt-b2",
            "evt-a2",
            "evt-a1"
        ]
    );
    // A prefix is a byte range there too, and folding is Rust's.
    assert_eq!(listed(&["session:ses-1"]).await, ["evt-b2", "evt-a2"]);
    assert_eq!(listed(&["über"]).await, ["evt-ÜBER"]);
    assert_eq!(listed(&["kelvin-k"]).await, ["evt-kelvin-\u{212A}"]);
}

/// The ids `earshot events QUERY --json --no-sweep` lists from the
/// database at `url` of `cluster`.
async fn listed_at(
    cluster: &earshot_testkit::postgres::PgCluster,
    url: &str,
    query: &[&str],
) -> Vec<String> {
    let mut command = crate::common::cli::earshot();
    command
        .args(["events", "--json", "--no-sweep", "--store", url])
        .args(query)
        .env("PGPASSWORD", cluster.password());
    let output = crate::common::cli::run(&mut command).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    rows.iter()
        .filter_map(|row| row["event_id"].as_str().map(str::to_owned))
        .collect()
}
