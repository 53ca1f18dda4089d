//! Retention on a PostgreSQL store (the test kit's throwaway cluster):
//! `earshot store prune --older-than D --store postgres://…` (the real
//! binary) drops the whole days that ended before the cutoff, keeps today's
//! rows, reports the bytes freed in SQLite's JSON shape, and a second run
//! is a no-op; a prune while another task files events loses none of the
//! events acked on the days it keeps; a fenced prune whose lease is not
//! held drops nothing; a day an open incident needs is kept one more
//! period, and the sweep's tables lose their old rows by SQLite's rules.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use earshot_core::store::events::ObservedEvent;
use earshot_core::store::postgres::days::{DAY_MS, partition_name};
use earshot_core::store::postgres::{Fence, PasswordSources, PgError, PgStore, PgTarget};
use earshot_core::store::retention::Period;
use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{isolated, run, text};
use crate::store_suite::event;

/// Days back (from now) the old events occurred on.
const OLD_DAYS: [i64; 3] = [2, 3, 5];

fn cluster_with(name: &str) -> (PgCluster, PasswordSources) {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(name).expect("database made");
    let sources = cluster.password_sources();
    (cluster, sources)
}

async fn connect(cluster: &PgCluster, name: &str, sources: &PasswordSources) -> PgStore {
    let target = PgTarget::parse(&cluster.url(name)).expect("a store URL");
    PgStore::connect(target, sources).await.expect("connects")
}

fn count(cluster: &PgCluster, database: &str, sql: &str) -> i64 {
    let text = cluster.psql(database, sql).expect("psql");
    text.parse()
        .unwrap_or_else(|_| panic!("not a count: {text:?}"))
}

/// Event `index` of a day `back` days ago, received then, of a session of
/// that day alone.
fn old_event(index: usize, back: i64) -> ObservedEvent {
    let occurred_ms = earshot_core::store::now_ms() - back * DAY_MS;
    ObservedEvent {
        received_ms: occurred_ms,
        session_id: format!("old-{back}-{}", index % 3),
        ..event(index, occurred_ms)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_prune_drops_the_old_days_of_a_postgres_store_and_keeps_today() {
    let (cluster, sources) = cluster_with("prune");
    let store = connect(&cluster, "prune", &sources).await;
    let mut index = 0;
    for back in OLD_DAYS {
        for _ in 0..40 {
            index += 1;
            assert!(store.file(&old_event(index, back)).await.expect("filed"));
        }
    }
    let now = earshot_core::store::now_ms();
    let today: Vec<ObservedEvent> = (index + 1..=index + 25).map(|i| event(i, now)).collect();
    for event in &today {
        assert!(store.file(event).await.expect("filed"));
    }
    let today: Vec<String> = today.into_iter().map(|event| event.event_id).collect();
    // Deliveries `events` could not file: three old, one new.
    let old_ms = now - 3 * DAY_MS;
    cluster
        .psql(
            "prune",
            &format!(
                "INSERT INTO earshot.unfiled_events (received_ms, headers, body, reason) \
                 SELECT {old_ms}, '[]', '\\x00', 'test' FROM generate_series(1, 3); \
                 INSERT INTO earshot.unfiled_events (received_ms, headers, body, reason) \
                 VALUES ({now}, '[]', '\\x00', 'test')"
            ),
        )
        .expect("unfiled rows");
    // A day a dead run detached and did not drop is dropped too.
    let oldest = partition_name(now - 5 * DAY_MS);
    cluster
        .psql(
            "prune",
            &format!("ALTER TABLE earshot.events DETACH PARTITION earshot.{oldest}"),
        )
        .expect("detached by hand");

    let home = tempfile::tempdir().expect("temp dir");
    let url = cluster.url("prune");
    let prune = |extra: &[&str]| {
        let mut command = isolated(home.path());
        command
            .args(["store", "prune", "--older-than", "1d", "--store", &url])
            .args(extra)
            .env("PGPASSWORD", cluster.password());
        command
    };
    let first = run(&mut prune(&["--json"])).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let report: serde_json::Value = serde_json::from_slice(&first.stdout).expect("JSON");
    // SQLite's keys, all there.
    for key in [
        "older_than",
        "cutoff_ms",
        "removed",
        "total",
        "kept_rows",
        "held_sessions",
        "batches",
        "longest_hold_ms",
        "seconds",
        "stopped",
    ] {
        assert!(report.get(key).is_some(), "{key} in {report}");
    }
    assert_eq!(report["older_than"], "1d");
    assert_eq!(report["backend"], "postgres");
    assert_eq!(report["removed"]["events"], 120, "{report}");
    assert_eq!(report["removed"]["unfiled_events"], 3, "{report}");
    assert_eq!(report["removed"]["sessions"], 9, "three a day: {report}");
    assert_eq!(report["total"], 132);
    assert_eq!(report["stopped"], false);
    let dropped: Vec<&str> = report["days_dropped"]
        .as_array()
        .expect("days_dropped")
        .iter()
        .map(|day| day["partition"].as_str().expect("a name"))
        .collect();
    let mut expected: Vec<String> = OLD_DAYS
        .iter()
        .map(|back| partition_name(now - back * DAY_MS))
        .collect();
    expected.sort();
    assert_eq!(dropped, expected, "oldest first");
    assert!(
        report["bytes_freed"].as_u64().expect("bytes") > 0,
        "{report}"
    );
    for day in &expected {
        assert_eq!(
            cluster
                .psql("prune", &format!("SELECT to_regclass('earshot.{day}')"))
                .expect("psql"),
            "",
            "{day} is gone"
        );
    }
    let kept: HashSet<String> = cluster
        .psql("prune", "SELECT event_id FROM earshot.events")
        .expect("psql")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(kept, today.iter().cloned().collect(), "today's rows, all");
    assert_eq!(
        count(
            &cluster,
            "prune",
            "SELECT count(*) FROM earshot.unfiled_events"
        ),
        1
    );

    // Again: nothing left to do.
    let second = run(&mut prune(&[])).await;
    let said = text(&second.stdout);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(said.starts_with("removed 0 rows older than 1d"), "{said}");
    assert!(said.contains("dropped no day of events"), "{said}");
    assert_eq!(
        count(&cluster, "prune", "SELECT count(*) FROM earshot.events"),
        25
    );
    // --erase is for a store file: refused before anything is done.
    let erase = run(&mut prune(&["--erase"])).await;
    assert_eq!(erase.status.code(), Some(2), "{}", text(&erase.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_while_events_are_filed_loses_none_of_the_days_it_keeps() {
    let (cluster, sources) = cluster_with("busy");
    let store = connect(&cluster, "busy", &sources).await;
    let filer = connect(&cluster, "busy", &sources).await;
    let now = earshot_core::store::now_ms();
    // Two old days of 20,000 rows each, written straight in.
    for back in [3, 4] {
        let day = now - back * DAY_MS;
        store.file(&old_event(0, back)).await.expect("day made");
        cluster
            .psql(
                "busy",
                &format!(
                    "INSERT INTO earshot.events (event_id, event, session_id, occurred_ms, \
                     received_ms, headers, body) SELECT 'bulk-{back}-' || n, 'session.ended', \
                     'bulk', {day} + n, {day} + n, '[]', '\\x00' FROM generate_series(1, 20000) n"
                ),
            )
            .expect("bulk rows");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let filing = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut index = 100_000;
            while !stop.load(Ordering::Relaxed) {
                index += 1;
                // Every fifth on an old day, which the prune may drop.
                let back = if index % 5 == 0 { 3 } else { 0 };
                let event = if back == 0 {
                    event(index, earshot_core::store::now_ms())
                } else {
                    old_event(index, back)
                };
                filer.file(&event).await.expect("filed");
                acked.push((event.event_id, back));
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let never = AtomicBool::new(false);
    let report = store
        .prune(
            Period::parse("1d").expect("period"),
            earshot_core::store::now_ms(),
            None,
            &never,
        )
        .await
        .expect("pruned");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let acked = filing.await.expect("filer");
    assert_eq!(report.days.len(), 2, "{report:?}");
    assert!(report.report.removed.total() >= 40_002, "{report:?}");
    let kept: HashSet<String> = cluster
        .psql("busy", "SELECT event_id FROM earshot.events")
        .expect("psql")
        .lines()
        .map(str::to_owned)
        .collect();
    let today: Vec<&String> = acked
        .iter()
        .filter(|(_, back)| *back == 0)
        .map(|(id, _)| id)
        .collect();
    assert!(today.len() > 20, "filing went on: {} acked", today.len());
    let lost: Vec<&&String> = today.iter().filter(|id| !kept.contains(**id)).collect();
    assert!(lost.is_empty(), "acked and lost: {lost:?}");
    eprintln!(
        "{} events filed during the prune ({} today), {} days dropped, {} bytes freed in {:?}",
        acked.len(),
        today.len(),
        report.days.len(),
        report.bytes_freed(),
        report.report.elapsed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_prune_drops_nothing_without_the_lease() {
    let (cluster, sources) = cluster_with("fenced");
    let store = connect(&cluster, "fenced", &sources).await;
    store.file(&old_event(1, 3)).await.expect("filed");
    assert!(
        store
            .take_lease("maintenance", "someone-else", Duration::from_secs(30))
            .await
            .expect("taken")
    );
    let fence = Fence {
        lease: "maintenance".into(),
        holder: "me".into(),
    };
    let never = AtomicBool::new(false);
    let refused = store
        .prune(
            Period::parse("1d").expect("period"),
            earshot_core::store::now_ms(),
            Some(&fence),
            &never,
        )
        .await
        .expect_err("not the holder");
    assert!(matches!(refused, PgError::LeaseLost { .. }), "{refused:?}");
    assert_eq!(
        count(&cluster, "fenced", "SELECT count(*) FROM earshot.events"),
        1,
        "nothing dropped"
    );
    // Its holder prunes.
    let fence = Fence {
        lease: "maintenance".into(),
        holder: "someone-else".into(),
    };
    let report = store
        .prune(
            Period::parse("1d").expect("period"),
            earshot_core::store::now_ms(),
            Some(&fence),
            &never,
        )
        .await
        .expect("pruned");
    assert_eq!(report.days.len(), 1);
    assert_eq!(
        count(&cluster, "fenced", "SELECT count(*) FROM earshot.events"),
        0
    );
}

/// `earshot store prune --older-than PERIOD --json` of `database`, run
/// from `home`: its report (exit 0).
async fn prune_json(
    cluster: &PgCluster,
    database: &str,
    home: &std::path::Path,
    period: &str,
) -> serde_json::Value {
    let url = cluster.url(database);
    let mut command = isolated(home);
    command
        .args([
            "store",
            "prune",
            "--older-than",
            period,
            "--json",
            "--store",
            &url,
        ])
        .env("PGPASSWORD", cluster.password());
    let output = run(&mut command).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// `event(index)` of `session`, occurred and received at `at_ms`.
fn event_of(index: usize, session: &str, at_ms: i64) -> ObservedEvent {
    ObservedEvent {
        session_id: session.to_owned(),
        received_ms: at_ms,
        ..event(index, at_ms)
    }
}

/// SQLite's hold on PostgreSQL: a day holding an event of a session that
/// an open incident (or an unfinished recovery) needs is kept whole for
/// one more period, and the sweep's tables lose their old rows by SQLite's
/// rules (attempts and outcome rows unless held, an observed event's rows
/// with its day, recoveries, changes, resolved incidents, sessions with
/// nothing left, counts that count nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_keeps_the_day_an_open_incident_needs_and_the_sweeps_old_rows_go() {
    let (cluster, sources) = cluster_with("held");
    let store = connect(&cluster, "held", &sources).await;
    let now = earshot_core::store::now_ms();
    // With `--older-than 2d`: three days back is past the cutoff but not
    // the hold limit (four days back); five days back is past both.
    let (three, five) = (now - 3 * DAY_MS, now - 5 * DAY_MS);
    for (index, session, at) in [
        (1, "ses_held", three),
        (2, "ses_held", three + 1_000),
        (3, "ses_free", three),
        (4, "ses_old", five),
        (5, "ses_old", five + 1_000),
        (6, "ses_held", five),
        (7, "ses_now", now),
    ] {
        assert!(
            store
                .file(&event_of(index, session, at))
                .await
                .expect("filed")
        );
    }
    let class = "invalid signature";
    let sql = format!(
        "INSERT INTO earshot.event_outcomes (session_id, subscription_id, event_key, event_id,
             event, occurred_ms, state, attempts, http_status_code, error_class,
             first_failure_ms, last_failure_ms) VALUES
           ('ses_held', 'sub_a', 'evt-0001', 'evt-0001', 'session.ended', {three}, 'missed',
            3, 401, '{class}', {three}, {three}),
           ('ses_old', 'sub_a', 'evt-0004', 'evt-0004', 'session.ended', {five}, 'delivered',
            1, 200, '', NULL, NULL),
           ('ses_unseen', 'sub_a', 'k-unseen', NULL, NULL, {three}, 'missed',
            3, 500, 'server error', {three}, {three});
         INSERT INTO earshot.incidents (id, subscription_id, http_status_code, error_class,
             first_seen_ms, last_seen_ms, resolved_ms) VALUES
           ('inc_open', 'sub_a', 401, '{class}', {three} - 1000, {three} + 1000, NULL),
           ('inc_done', 'sub_a', 500, 'server error', {five}, {five} + 1000, {five} + 2000);
         INSERT INTO earshot.deliveries (id, subscription_id, session_id, status, attempt_count,
             http_status_code, created_ms, record) VALUES
           ('d_held', 'sub_a', 'ses_held', 'failed', 3, 401, {three}, '{{}}'),
           ('d_old', 'sub_a', 'ses_old', 'delivered', 1, 200, {five}, '{{}}'),
           ('d_free', 'sub_a', 'ses_free', 'delivered', 1, 200, {three}, '{{}}');
         INSERT INTO earshot.recoveries (subscription_id, event_id, session_id, started_ms,
             finished_ms) VALUES
           ('sub_a', 'evt-0001', 'ses_held', {three}, NULL),
           ('sub_a', 'evt-0004', 'ses_old', {five}, {five} + 5);
         INSERT INTO earshot.changes (at_ms, operator, subscription_id, action, detail) VALUES
           ({five}, 'op', 'sub_a', 'pause', ''), ({now}, 'op', 'sub_a', 'resume', '')"
    );
    cluster.psql("held", &sql).expect("the sweep's rows");

    let home = tempfile::tempdir().expect("temp dir");
    let report = prune_json(&cluster, "held", home.path(), "2d").await;
    let removed = &report["removed"];
    for (table, expected) in [
        ("events", 3),
        ("deliveries", 2),
        ("event_outcomes", 2),
        ("recoveries", 1),
        ("changes", 1),
        ("incidents", 1),
        ("sessions", 1),
    ] {
        assert_eq!(removed[table], expected, "{table}: {report}");
    }
    assert_eq!(report["held_sessions"], 1, "{report}");
    assert_eq!(report["kept_rows"], 3, "the held day's rows: {report}");
    let dropped: Vec<&str> = report["days_dropped"]
        .as_array()
        .expect("days_dropped")
        .iter()
        .map(|day| day["partition"].as_str().expect("a name"))
        .collect();
    assert_eq!(dropped, [partition_name(five).as_str()], "{report}");

    let left = |sql: &str| cluster.psql("held", sql).expect("psql");
    assert_eq!(
        left("SELECT string_agg(event_id, ' ' ORDER BY event_id) FROM earshot.events"),
        "evt-0001 evt-0002 evt-0003 evt-0007"
    );
    assert_eq!(
        left("SELECT string_agg(id, ' ' ORDER BY id) FROM earshot.deliveries"),
        "d_held"
    );
    assert_eq!(
        left("SELECT string_agg(event_key, ' ' ORDER BY event_key) FROM earshot.event_outcomes"),
        "evt-0001"
    );
    assert_eq!(
        left("SELECT string_agg(session_id, ' ') FROM earshot.recoveries"),
        "ses_held"
    );
    assert_eq!(
        left("SELECT string_agg(id, ' ') FROM earshot.incidents"),
        "inc_open"
    );
    assert_eq!(
        left("SELECT string_agg(action, ' ') FROM earshot.changes"),
        "resume"
    );
    assert_eq!(
        left("SELECT string_agg(session_id, ' ' ORDER BY session_id) FROM earshot.sessions"),
        "ses_free ses_held ses_now"
    );
    // The counts: only the kept rows are counted, and no row counts none.
    for (table, kept) in [
        ("delivery_counts", 1),
        ("delivery_counts_hourly", 1),
        ("event_counts", 1),
        ("event_counts_hourly", 1),
    ] {
        assert_eq!(
            count(
                &cluster,
                "held",
                &format!("SELECT coalesce(sum(count), 0) FROM earshot.{table}")
            ),
            kept,
            "{table}"
        );
        assert_eq!(
            count(
                &cluster,
                "held",
                &format!("SELECT count(*) FROM earshot.{table} WHERE count <= 0")
            ),
            0,
            "{table}"
        );
    }

    // Once the held day's end is past the hold limit it goes too (a
    // shorter period moves the limit).
    let report = prune_json(&cluster, "held", home.path(), "1d").await;
    assert_eq!(report["removed"]["events"], 3, "{report}");
    assert_eq!(report["kept_rows"], 0, "{report}");
}
