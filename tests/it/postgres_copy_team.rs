//! `earshot store copy` of what a team shares (the real binary
//! throughout): a store the observer made and swept (as
//! `postgres_copy_sweep`) is copied once; then, in the file, its incident
//! is acknowledged by alice with a note, the subscription that refuses
//! for good gets a recover run, and carol pauses and resumes it (which
//! resolves the incident, `subscription paused`). The next `store copy`
//! brings the changes and recover runs and merges the acknowledgement and
//! the resolution into the incident copied before; then `incidents --json
//! --all` and `changes --json` print the same from PostgreSQL as from the
//! file, whole, with the same exit code: no field is left out, since the
//! database keeps the times the file recorded (an acknowledgement's, a
//! change's, a recover run's) and stamps none of its own; the recover
//! runs' rows are equal too. A further copy copies nothing and changes no
//! count.

use std::path::Path;

use earshot_testkit::postgres::PgCluster;
use serde_json::Value;

use crate::common::SECRET;
use crate::common::cli::{against, earshot, run, text};
use crate::postgres_copy::{DATABASE, cluster, copy_json, counts, pg_count};
use crate::postgres_copy_sweep::{observed_and_swept, stopped};
use crate::store_suite::sqlite_rows;

/// The tables this slice copies.
const TEAM_TABLES: [&str; 3] = ["incidents", "changes", "recoveries"];

/// `earshot ARGS --store STORE` (the password in PGPASSWORD): exit code,
/// stdout, stderr.
async fn on(store: &str, cluster: &PgCluster, args: &[&str]) -> (Option<i32>, String, String) {
    let output = run(earshot()
        .args(args)
        .args(["--store", store])
        .env("PGPASSWORD", cluster.password())
        .env("USER", "alice"))
    .await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// `incidents --json --all --no-sweep` (its exit code: 1 while an
/// incident is unresolved, 3 once the observer's last event is old enough
/// to call it silent, which a slow run reaches) and `changes --json` on
/// `store`.
async fn listings(store: &str, cluster: &PgCluster) -> (Option<i32>, Value, Value) {
    let mut out = Vec::new();
    let mut incidents_code = None;
    for args in [
        &["incidents", "--json", "--all", "--no-sweep"][..],
        &["changes", "--json"],
    ] {
        let (code, stdout, stderr) = on(store, cluster, args).await;
        if args[0] == "incidents" {
            assert!(
                matches!(code, Some(0 | 1 | 3)),
                "{args:?} on {store}: {stderr}"
            );
            incidents_code = code;
        } else {
            assert_eq!(code, Some(0), "{args:?} on {store}: {stderr}");
        }
        out.push(
            serde_json::from_str::<Value>(&stdout)
                .unwrap_or_else(|error| panic!("{error}: {stdout}")),
        );
    }
    let changes = out.pop().expect("two");
    (incidents_code, out.pop().expect("two"), changes)
}

/// The listings of the file and of the database are equal; the file's.
async fn same_listings(source: &Path, cluster: &PgCluster) -> (Value, Value) {
    let sqlite = listings(&source.display().to_string(), cluster).await;
    let postgres = listings(&cluster.url(DATABASE), cluster).await;
    assert_eq!(
        sqlite.0, postgres.0,
        "incidents' exit code: SQLite, then PostgreSQL"
    );
    assert_eq!(sqlite.1, postgres.1, "incidents: SQLite, then PostgreSQL");
    assert_eq!(sqlite.2, postgres.2, "changes: SQLite, then PostgreSQL");
    let recoveries = "SELECT subscription_id, event_id, session_id, started_ms, finished_ms,
                             http_status_code, error, latency_ms,
                             CASE WHEN delivered THEN 1 ELSE 0 END
                      FROM {t}recoveries ORDER BY id";
    let sqlite_rows = sqlite_rows(source, recoveries);
    let postgres_rows: Vec<String> = cluster
        .psql(DATABASE, &recoveries.replace("{t}", "earshot."))
        .expect("psql")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        sqlite_rows, postgres_rows,
        "recoveries: SQLite, then PostgreSQL"
    );
    (sqlite.1, sqlite.2)
}

fn held(cluster: &PgCluster) -> Vec<u64> {
    TEAM_TABLES
        .iter()
        .map(|table| pg_count(cluster, &format!("SELECT count(*) FROM earshot.{table}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incidents_acks_changes_and_recover_runs_are_copied_once_and_list_the_same() {
    let mut made = observed_and_swept().await;
    let source = stopped(&mut made);
    let file = source.display().to_string();
    let cluster = cluster();
    let base = made.harness.base.clone();
    let dir = tempfile::tempdir().expect("a temp dir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).expect("the secret written");

    // Copied once as the observer left it: its incidents, no change yet.
    let zeroth = copy_json(&cluster, &source, &[]).await;
    assert!(counts(&zeroth, "incidents").1 > 0, "{zeroth}");
    assert_eq!(counts(&zeroth, "changes").0, 0, "{zeroth}");

    // The incident of the subscription that refuses for good (404).
    let (_, incidents, _) = listings(&file, &cluster).await;
    let rows = incidents.as_array().expect("a list");
    let gone = rows
        .iter()
        .find(|row| {
            row["diagnosis"]
                .as_str()
                .is_some_and(|d| d.starts_with("404"))
        })
        .unwrap_or_else(|| panic!("an incident of the 404s: {incidents}"));
    let gone_id = gone["id"].as_str().expect("an id").to_owned();
    let subscription = gone["subscription_id"]
        .as_str()
        .expect("a subscription")
        .to_owned();
    let (code, _, stderr) = on(
        &file,
        &cluster,
        &["incidents", "ack", &gone_id[..8], "--note", "on it"],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    // A recover run: the receiver still refuses, so each send is logged
    // failed.
    let output = run(against(
        &base,
        &source,
        &[
            "redeliver",
            &subscription,
            "--no-sweep",
            "--json",
            "--secret-file",
            &secret.display().to_string(),
        ],
    )
    .env("USER", "alice"))
    .await;
    let recovered = sqlite_rows(&source, "SELECT count(*) FROM recoveries");
    assert_ne!(
        recovered,
        ["0"],
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    for action in ["pause", "resume"] {
        let output =
            run(against(&base, &source, &["subs", action, &subscription]).env("USER", "carol"))
                .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{action}: {}",
            text(&output.stderr)
        );
    }
    let (_, incidents, changes) = listings(&file, &cluster).await;
    let acked = incidents
        .as_array()
        .expect("a list")
        .iter()
        .find(|row| row["id"] == gone_id.as_str())
        .expect("still listed");
    assert_eq!(acked["acknowledged_by"], "alice", "{acked}");
    assert_eq!(acked["resolved_reason"], "subscription paused", "{acked}");
    let actions: Vec<&str> = changes
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|change| change["action"].as_str())
        .collect();
    assert_eq!(actions, ["resume", "pause", "recover"], "{changes}");

    // The incidents were there: merged (counted "already there"); the
    // changes and recover runs are new.
    let first = copy_json(&cluster, &source, &["--batch", "1"]).await;
    let (rows, copied, already, _) = counts(&first, "incidents");
    assert_eq!((copied, already), (0, rows), "{first}");
    for table in &TEAM_TABLES[1..] {
        let (rows, copied, already, earlier) = counts(&first, table);
        assert!(rows > 0, "{table}: {first}");
        assert_eq!((copied, already, earlier), (rows, 0, 0), "{table}: {first}");
    }
    let left: Vec<&str> = first["not_copied"]
        .as_array()
        .expect("not_copied")
        .iter()
        .filter_map(|table| table["table"].as_str())
        .collect();
    for table in TEAM_TABLES {
        assert!(!left.contains(&table), "{table}: {left:?}");
    }
    same_listings(&source, &cluster).await;

    // Again: nothing copied, no count changed.
    let before = held(&cluster);
    let second = copy_json(&cluster, &source, &[]).await;
    for table in TEAM_TABLES {
        let (rows, copied, already, earlier) = counts(&second, table);
        assert_eq!(copied, 0, "{table}: {second}");
        assert_eq!(already + earlier, rows, "{table}: {second}");
    }
    // The incidents are read again every run (merged, none written); the
    // changes and recover runs resume after their cursor, read no row.
    let (rows, _, already, _) = counts(&second, "incidents");
    assert_eq!(already, rows, "{second}");
    for table in &TEAM_TABLES[1..] {
        let (rows, _, already, earlier) = counts(&second, table);
        assert_eq!((already, earlier), (0, rows), "{table}: {second}");
    }
    assert_eq!(held(&cluster), before, "{TEAM_TABLES:?}");
    same_listings(&source, &cluster).await;

    made.harness.emulator.shutdown().await;
}
