//! `earshot health` on both backends (the real binary): the same sweep
//! (`sweep::swept_once`) gives the same `health --json` on SQLite and on
//! PostgreSQL but for what names the backend (`backend`,
//! `maintenance_lease`, PostgreSQL's alone) and the same exit status; on
//! PostgreSQL the maintenance lease's holder is shown, in JSON and in the
//! table's output; `--chart` gives the same timeline on both.

use std::time::Duration;

use earshot_core::store::postgres::{PgStore, PgTarget};
use serde_json::Value;

use super::sweep::{Swept, swept_once};

/// By this after the sweep, every retry scheduled before it is due.
const RETRIES_DUE_BY: Duration = Duration::from_secs(6);
use crate::common::cli::text;

/// `earshot health --no-sweep ARGS` on the store, its exit code, stdout
/// and stderr.
async fn health(store: &super::TestStore, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["health", "--no-sweep"];
    all.extend_from_slice(args);
    let output = store.earshot(&all).await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_json_is_the_same_on_both_backends_and_postgresql_names_the_lease_holder() {
    let Swept {
        harness,
        stores,
        missed,
        retried,
        _receivers,
        ..
    } = swept_once().await;
    // The retries are scheduled 5 s after their first attempts (held back
    // by the test's clock, but due by the real one): past that, both runs
    // count none due, whichever second each runs in.
    tokio::time::sleep(RETRIES_DUE_BY).await;
    let mut reports = Vec::new();
    for store in &stores {
        let (code, stdout, stderr) = health(store, &["--json"]).await;
        assert_eq!(code, Some(1), "an event was missed: {stdout}{stderr}");
        let mut report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("{error}: {stdout}{stderr}"));
        reports.push(report.take());
    }
    let [sqlite, mut postgres] = <[Value; 2]>::try_from(reports).expect("two reports");
    assert_eq!(sqlite.get("backend"), None, "SQLite's JSON is unchanged");
    assert_eq!(postgres["backend"], "postgres");
    assert_eq!(postgres["maintenance_lease"], Value::Null, "nobody took it");
    let object = postgres.as_object_mut().expect("an object");
    object.remove("backend");
    object.remove("maintenance_lease");
    assert_eq!(sqlite, postgres, "SQLite, then PostgreSQL");
    let row = |id: &str| {
        sqlite["subscriptions"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|row| row["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {sqlite}"))
    };
    assert_eq!(row(&missed)["events"]["missed"], 3);
    assert_eq!(row(&retried)["events"]["pending"], 3);
    assert_eq!(row(&retried)["retries_due"], 0);
    assert_eq!(sqlite["observer"]["events_in_window"], 3);

    // A replica holding the lease is named, in JSON and in words.
    let super::Place::Postgres { url, cluster, .. } = &stores[1].place else {
        panic!("the second store is PostgreSQL");
    };
    let sources = cluster.password_sources();
    let pg = PgStore::connect(PgTarget::parse(url).expect("a URL"), &sources)
        .await
        .expect("the store opens");
    assert!(
        pg.take_lease("maintenance", "host-a:4242", Duration::from_secs(60))
            .await
            .expect("taken")
    );
    let (_, stdout, _) = health(&stores[1], &["--json"]).await;
    let report: Value = serde_json::from_str(&stdout).expect("JSON");
    let lease = &report["maintenance_lease"];
    assert_eq!(lease["holder"], "host-a:4242", "{report}");
    let expires = lease["expires_in_ms"].as_i64().expect("a number");
    assert!((50_000..=60_000).contains(&expires), "{lease}");
    assert!(
        lease["since"]
            .as_str()
            .is_some_and(|since| since.ends_with('Z'))
    );
    let (code, stdout, _) = health(&stores[1], &[]).await;
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("maintenance lease (sweep, retention): held by host-a:4242 since "),
        "{stdout}"
    );
    let (_, stdout, _) = health(&stores[0], &[]).await;
    assert!(
        !stdout.contains("maintenance lease"),
        "not on SQLite: {stdout}"
    );

    // The chart: the same buckets from the same counts on both.
    let (sqlite, postgres) = same_timeline(&stores).await;
    let missed_charted: i64 = sqlite["subscriptions"][&missed]
        .as_array()
        .unwrap_or_else(|| panic!("{missed} charted: {sqlite}"))
        .iter()
        .filter_map(|bucket| bucket["missed"].as_i64())
        .sum();
    assert_eq!(missed_charted, 3, "{sqlite}");
    assert_eq!(sqlite, postgres, "SQLite's timeline, then PostgreSQL's");
    let (code, stdout, stderr) = health(&stores[1], &["--chart"]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.contains("\nevents per "), "{stdout}");
    harness.emulator.shutdown().await;
}

/// `health --json --chart`'s timeline on each store, read again when a
/// bucket's edge passed between the two runs.
async fn same_timeline(stores: &[super::TestStore]) -> (Value, Value) {
    let mut last = Vec::new();
    for _ in 0..3 {
        let mut timelines = Vec::new();
        for store in stores {
            let (code, stdout, stderr) = health(store, &["--json", "--chart"]).await;
            assert_eq!(code, Some(1), "{stdout}{stderr}");
            let report: Value = serde_json::from_str(&stdout).expect("JSON");
            timelines.push(report["timeline"].clone());
        }
        if timelines[0]["start_ms"] == timelines[1]["start_ms"] {
            let postgres = timelines.pop().expect("two");
            let sqlite = timelines.pop().expect("two");
            return (sqlite, postgres);
        }
        last = timelines;
    }
    panic!("the two timelines never had one window: {last:?}");
}
