//! `earshot listen --store postgres://… --retention 1d --metrics-listen …`
//! on two replicas of one database: only the replica holding the
//! maintenance lease runs the retention (its stderr says so, naming it;
//! the other's says nothing of it), and `/metrics` of each shows whether it
//! holds the lease, who does, and the retention's last run and bytes freed
//! (checked by promtool when installed and by the Python checker). Killing
//! the holder with SIGKILL lets the other take the lease and prune within
//! 10 s plus its first run, and make tomorrow's partition (dropped by
//! hand meanwhile).

use std::time::{Duration, Instant};

use earshot_core::store::postgres::days::{DAY_MS, partition_name};
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;
use serde_json::Value;

use crate::common::cli::{line_with, postgres_observer};
use crate::observer_metrics::checked_metrics_at;
use crate::store_suite::event;

/// A dead holder's lease changes hands within 10 s; the new holder's first
/// run comes 2 s later.
const PRUNED_WITHIN: Duration = Duration::from_secs(14);

/// The `http://HOST:PORT` of /metrics a replica says on stderr.
fn monitor_of(lines: &std::sync::mpsc::Receiver<String>) -> String {
    let (line, before) = line_with(
        lines,
        "serving /healthz and /metrics on ",
        Duration::from_secs(15),
    );
    let line = line.unwrap_or_else(|| panic!("no metrics address: {before:?}"));
    line.split("serving /healthz and /metrics on ")
        .nth(1)
        .expect("an address")
        .trim()
        .to_owned()
}

fn sample(samples: &Value, series: &str) -> Option<f64> {
    samples.get(series).and_then(Value::as_f64)
}

fn holder_series(holder: &str) -> String {
    format!("earshot_maintenance_lease_holder{{holder=\"{holder}\"}}")
}

/// Files 30 events on the day `back` days ago.
async fn file_old_day(store: &PgStore, back: i64, first: usize) {
    let occurred_ms = earshot_core::store::now_ms() - back * DAY_MS;
    for index in first..first + 30 {
        store.file(&event(index, occurred_ms)).await.expect("filed");
    }
}

fn exists(cluster: &PgCluster, partition: &str) -> bool {
    !cluster
        .psql(
            "observers",
            &format!("SELECT to_regclass('earshot.{partition}')"),
        )
        .expect("psql")
        .is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_runs_the_retention_and_another_takes_it_over_when_it_dies() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let sources = cluster.password_sources();
    let store = PgStore::connect(PgTarget::parse(&url).expect("URL"), &sources)
        .await
        .expect("connects");
    let now = earshot_core::store::now_ms();
    file_old_day(&store, 3, 0).await;
    file_old_day(&store, 4, 100).await;
    let flags = ["--retention", "1d", "--metrics-listen", "127.0.0.1:0"];

    let (mut first, _, first_err) = postgres_observer(&cluster, &url, &flags);
    let first_pid = first.id().expect("running");
    let first_monitor = monitor_of(&first_err);
    let (ran, before) = line_with(&first_err, "ran the retention", Duration::from_secs(20));
    let ran = ran.unwrap_or_else(|| panic!("the holder prunes: {before:?}"));
    assert!(
        ran.contains(&format!(":{first_pid})")) && ran.contains("dropped 2 days of events"),
        "{ran}"
    );
    assert!(!exists(&cluster, &partition_name(now - 3 * DAY_MS)));
    assert!(!exists(&cluster, &partition_name(now - 4 * DAY_MS)));
    let first_holder = cluster
        .psql(
            "observers",
            "SELECT holder FROM earshot.leases WHERE name = 'maintenance'",
        )
        .expect("psql");
    assert!(
        first_holder.ends_with(&format!(":{first_pid}")),
        "{first_holder}"
    );

    let (second, _, second_err) = postgres_observer(&cluster, &url, &flags);
    let second_pid = second.id().expect("running");
    let second_monitor = monitor_of(&second_err);
    let (said, before) = line_with(&second_err, "maintenance lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the lease is said: {before:?}"));
    assert!(
        said.contains("does not hold the maintenance lease"),
        "{said}"
    );

    // /metrics: the holder says it holds it and what it freed; the other
    // names the holder.
    let samples = checked_metrics_at(&first_monitor).await;
    assert_eq!(
        sample(&samples, "earshot_maintenance_lease_held"),
        Some(1.0)
    );
    assert_eq!(sample(&samples, &holder_series(&first_holder)), Some(1.0));
    assert_eq!(sample(&samples, "earshot_retention_runs_total"), Some(1.0));
    assert!(
        sample(&samples, "earshot_retention_last_freed_bytes").unwrap_or_default() > 0.0,
        "{samples}"
    );
    let last_run =
        sample(&samples, "earshot_retention_last_run_timestamp_seconds").unwrap_or_default();
    assert!(
        (last_run * 1000.0 - now as f64).abs() < 60_000.0,
        "ran just now: {last_run}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let samples = loop {
        let samples = checked_metrics_at(&second_monitor).await;
        if sample(&samples, &holder_series(&first_holder)).is_some() || Instant::now() > deadline {
            break samples;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        sample(&samples, "earshot_maintenance_lease_held"),
        Some(0.0)
    );
    assert_eq!(
        sample(&samples, &holder_series(&first_holder)),
        Some(1.0),
        "{samples}"
    );
    assert_eq!(sample(&samples, "earshot_retention_runs_total"), Some(0.0));

    // Another old day: the holder's next run is an hour away, the other
    // replica does not prune.
    file_old_day(&store, 5, 200).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let five = partition_name(now - 5 * DAY_MS);
    assert!(exists(&cluster, &five), "nobody pruned it yet");

    // Tomorrow's partition gone (made at connect): the next holder makes
    // it again when it takes the lease.
    let tomorrow = partition_name(earshot_core::store::now_ms() + DAY_MS);
    cluster
        .psql("observers", &format!("DROP TABLE earshot.{tomorrow}"))
        .expect("dropped by hand");
    assert!(!exists(&cluster, &tomorrow));

    first.start_kill().expect("SIGKILL sent");
    first.wait().await.expect("reaped");
    let killed_at = Instant::now();
    let (ran, before) = line_with(&second_err, "ran the retention", PRUNED_WITHIN);
    let ran = ran.unwrap_or_else(|| panic!("the other prunes within 14 s: {before:?}"));
    eprintln!(
        "the other replica pruned {:?} after the holder was killed",
        killed_at.elapsed()
    );
    assert!(
        ran.contains(&format!(":{second_pid})")) && ran.contains("dropped 1 day of events"),
        "{ran}"
    );
    assert!(
        before
            .iter()
            .any(|line| line.contains(&format!(":{second_pid}) holds the maintenance lease"))),
        "it took the lease first: {before:?}"
    );
    assert!(!exists(&cluster, &five));
    assert!(
        exists(&cluster, &tomorrow),
        "the new holder made tomorrow's day"
    );
    let samples = checked_metrics_at(&second_monitor).await;
    assert_eq!(
        sample(&samples, "earshot_maintenance_lease_held"),
        Some(1.0)
    );
    assert_eq!(sample(&samples, "earshot_retention_runs_total"), Some(1.0));
    assert!(
        samples
            .as_object()
            .expect("samples")
            .keys()
            .filter(|series| series.starts_with("earshot_maintenance_lease_holder{"))
            .all(|series| series.contains(&format!(":{second_pid}\""))),
        "one holder, the new one: {samples}"
    );
}
