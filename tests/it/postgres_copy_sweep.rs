//! `earshot store copy` of a store the observer made and swept (the real
//! binary throughout: `listen --store` filing what the emulator delivers,
//! `health` sweeping it over real HTTP, `store copy`, `health --json`
//! reading each side): the sweep's tables (subscriptions, attempts,
//! outcome rows) go over, the minute and hour counts come out as SQLite's
//! row for row (counted by PostgreSQL's triggers, their newest time and
//! example merged from SQLite's), and `health --json --no-sweep` says the
//! same on the file and on the database but for the keys that name the
//! backend; a second copy adds nothing; a copy killed midway in the
//! outcome rows is finished by the next run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use earshot_testkit::postgres::PgCluster;
use serde_json::Value;

use crate::common::cli::{Observed, against, earshot, run, text};
use crate::common::{self, Harness, Receiver, Reply};
use crate::postgres_copy::{
    DATABASE, cluster, copy_command, copy_json, counts, hold_copy_lock, migrate, pg_count,
    release_lock,
};
use crate::store_suite::sqlite_rows;
use crate::store_suite::sweep::COMPARED;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

/// The sweep's tables, in the order a copy takes them.
const SWEEP_TABLES: [&str; 7] = [
    "subscriptions",
    "deliveries",
    "event_outcomes",
    "delivery_counts",
    "delivery_counts_hourly",
    "event_counts",
    "event_counts_hourly",
];

/// Keys of `health --json` only PostgreSQL's has: what backend it is and
/// who holds its maintenance lease. Every other key must be equal.
const POSTGRES_ONLY: [&str; 2] = ["backend", "maintenance_lease"];

/// A store as the observer makes it: the platform, its receivers (kept
/// so retries can run) and the observer's file.
pub(crate) struct Made {
    pub(crate) harness: Harness,
    pub(crate) observed: Observed,
    _receivers: [Receiver; 3],
}

/// The observer files what the emulator delivers to four subscriptions
/// (its own; one that takes everything; one that refuses for good, 404;
/// one that fails each event's first attempt, 500, then takes it), in two
/// rounds of three sessions and a failed call, each round swept by
/// `earshot health` on the file (the observer files the second round's
/// events with an `unknown` row per subscription, which the sweep counts
/// out: SQLite keeps those buckets at zero); then two sessions of which
/// only the newer is swept.
pub(crate) async fn observed_and_swept() -> Made {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let healthy = Receiver::healthy().await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such hook")).await;
    let flaky = Receiver::busy_once_per_event().await;
    for receiver in [&healthy, &gone, &flaky] {
        harness.subscribe(&receiver.url(), &EventKind::ALL).await;
    }
    for round in 0..2 {
        for _ in 0..3 {
            let session = harness.start_session(None).await;
            harness.complete_session(&session).await;
        }
        harness.start_call("failed").await;
        harness.wait_deliveries_idle().await;
        let swept = run(&mut against(
            &harness.base,
            &observed.db,
            &["health", "--json"],
        ))
        .await;
        let report: Value = serde_json::from_slice(&swept.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}", text(&swept.stderr)));
        assert!(
            report["sessions_swept"].as_u64() >= Some(4),
            "round {round}: {report}"
        );
    }
    // Two more sessions, only the newer swept (a budget of its deliveries'
    // page and the subscriptions'): the older one's rows stay `unknown`,
    // and that bucket's newest time and example in SQLite are the newer
    // one's, whose rows were counted out of it.
    for _ in 0..2 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
        harness.wait_deliveries_idle().await;
    }
    let swept = run(&mut against(
        &harness.base,
        &observed.db,
        &["health", "--json", "--budget", "2"],
    ))
    .await;
    let report: Value = serde_json::from_slice(&swept.stdout).expect("JSON");
    assert_eq!(report["sessions_swept"], 1, "{report}");
    assert!(report["left_for_later"].as_i64() >= Some(1), "{report}");
    Made {
        harness,
        observed,
        _receivers: [healthy, gone, flaky],
    }
}

/// `earshot health --json --no-sweep --store STORE`: its exit code and
/// JSON.
pub(crate) async fn health(store: &str, cluster: &PgCluster) -> (Option<i32>, Value) {
    let output = run(earshot()
        .args(["health", "--json", "--no-sweep", "--store", store])
        .env("PGPASSWORD", cluster.password()))
    .await;
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("{error}: {}{}", text(&output.stdout), text(&output.stderr))
    });
    (output.status.code(), report)
}

/// Every path where `a` and `b` differ (`subscriptions[1].events.missed:
/// 3 != 2`), to say which count a failure is about.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let (x, y) = (&x.get(key), &y.get(key));
                let (x, y) = (x.unwrap_or(&Value::Null), y.unwrap_or(&Value::Null));
                differences(&format!("{path}.{key}"), x, y, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{index}]"), x, y, out);
            }
        }
        // The observer's evidence counts time since its last event, which
        // moves between the two reads on a slow machine.
        (Value::String(x), Value::String(y))
            if path.ends_with(".evidence") && without_digits(x) == without_digits(y) => {}
        _ if a != b => out.push(format!("{path}: {a} (SQLite) != {b} (PostgreSQL)")),
        _ => {}
    }
}

/// `text` with its figures taken out.
fn without_digits(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// The health of the file and of the database after a copy: the same
/// exit code and JSON but [`POSTGRES_ONLY`]; the SQLite report.
async fn same_health(source: &Path, cluster: &PgCluster) -> Value {
    let (sqlite_code, sqlite) = health(&source.display().to_string(), cluster).await;
    let (postgres_code, mut postgres) = health(&cluster.url(DATABASE), cluster).await;
    assert_eq!(sqlite.get("backend"), None);
    assert_eq!(postgres["backend"], "postgres");
    let object = postgres.as_object_mut().expect("an object");
    for key in POSTGRES_ONLY {
        object.remove(key);
    }
    let mut differ = Vec::new();
    differences("health", &sqlite, &postgres, &mut differ);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert_eq!(sqlite_code, postgres_code, "the same verdict");
    sqlite
}

/// Every compared table of the sweep ([`COMPARED`]) and each count
/// table's rows counted down to zero too, on both sides.
fn same_tables(source: &Path, cluster: &PgCluster) {
    let postgres = |sql: &str| -> Vec<String> {
        let out = cluster
            .psql(DATABASE, &sql.replace("{t}", "earshot."))
            .expect("psql");
        out.lines().map(str::to_owned).collect()
    };
    for (table, sql) in COMPARED {
        let expected = sqlite_rows(source, sql);
        assert_eq!(expected, postgres(sql), "{table}: SQLite, then PostgreSQL");
    }
    for table in &SWEEP_TABLES[3..] {
        let sql = format!(
            "SELECT count(*), coalesce(sum(count), 0), coalesce(max(last_ms), 0) FROM {{t}}{table}"
        );
        assert_eq!(
            sqlite_rows(source, &sql),
            postgres(&sql),
            "{table}: SQLite, then PostgreSQL"
        );
    }
}

/// Stops the observer, so nothing changes the file while it is compared.
pub(crate) fn stopped(made: &mut Made) -> std::path::PathBuf {
    made.observed.stop();
    made.observed.db.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swept_store_copied_gives_the_same_health_json_and_counts_and_a_second_copy_adds_nothing()
{
    let mut made = observed_and_swept().await;
    let source = stopped(&mut made);
    let cluster = cluster();

    let first = copy_json(&cluster, &source, &["--batch", "7"]).await;
    for table in SWEEP_TABLES {
        let (rows, copied, already, earlier) = counts(&first, table);
        assert!(rows > 0, "{table}: {first}");
        assert_eq!(earlier, 0, "{table}: {first}");
        assert_eq!(copied + already, rows, "{table}: {first}");
        if SWEEP_TABLES[..3].contains(&table) {
            assert_eq!(copied, rows, "{table}: all new: {first}");
        }
    }
    let left: Vec<&str> = first["not_copied"]
        .as_array()
        .expect("not_copied")
        .iter()
        .filter_map(|table| table["table"].as_str())
        .collect();
    for table in SWEEP_TABLES {
        assert!(!left.contains(&table), "{table} is copied now: {left:?}");
    }
    for table in ["incidents", "changes", "recoveries"] {
        assert!(
            !left.contains(&table),
            "{table} is copied since pg14: {left:?}"
        );
    }
    same_tables(&source, &cluster);
    let sqlite = same_health(&source, &cluster).await;
    // What the scenario made, so the equality above is about counts.
    let rows = sqlite["subscriptions"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "{sqlite}");
    let events = |state: &str| -> u64 {
        rows.iter()
            .map(|row| row["events"][state].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(events("delivered") >= 2 * 14, "{sqlite}");
    assert!(events("missed") >= 14, "{sqlite}");
    assert!(sqlite["observer"]["events_in_window"].as_u64() >= Some(14));

    // Again: nothing new, every row already there, nothing doubled.
    let held = |table: &str| pg_count(&cluster, &format!("SELECT count(*) FROM earshot.{table}"));
    let before: Vec<u64> = SWEEP_TABLES.iter().map(|table| held(table)).collect();
    let second = copy_json(&cluster, &source, &[]).await;
    for table in SWEEP_TABLES {
        let (rows, copied, already, earlier) = counts(&second, table);
        assert_eq!(copied, 0, "{table}: {second}");
        assert_eq!(already + earlier, rows, "{table}: {second}");
    }
    let after: Vec<u64> = SWEEP_TABLES.iter().map(|table| held(table)).collect();
    assert_eq!(before, after, "{SWEEP_TABLES:?}");
    same_tables(&source, &cluster);
    same_health(&source, &cluster).await;
    made.harness.emulator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_in_the_outcome_rows_is_finished_by_the_next_run_without_doubling() {
    let mut made = observed_and_swept().await;
    let source = stopped(&mut made);
    let cluster = cluster();
    let outcome_rows = sqlite_rows(&source, "SELECT count(*) FROM event_outcomes")[0]
        .parse::<u64>()
        .expect("a count");
    migrate(&cluster).await;

    // The server made slow at outcome rows (a trigger of the test's own
    // sleeps 50 ms a row), so the copy is surely among them when, once
    // some are over, a psql of the test's own holds the copy's lock (the
    // next batch stalls) and the copy is killed with a batch in flight.
    let slow = "CREATE FUNCTION earshot.slow() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN PERFORM pg_sleep(0.05); RETURN NULL; END $$;
                CREATE TRIGGER slow AFTER INSERT ON earshot.event_outcomes
                FOR EACH ROW EXECUTE FUNCTION earshot.slow()";
    cluster.psql(DATABASE, slow).expect("the slow trigger");
    let mut copy = copy_command(&cluster, &source, &["--batch", "1"]);
    copy.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = copy.spawn().expect("the copy starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let kept =
        |cluster: &PgCluster| pg_count(cluster, "SELECT count(*) FROM earshot.event_outcomes");
    while kept(&cluster) < 3 {
        assert!(Instant::now() < deadline, "no outcome row within 60 s");
        assert!(child.try_wait().expect("waits").is_none(), "ended too soon");
        std::thread::sleep(Duration::from_millis(5));
    }
    let holder = hold_copy_lock(&cluster, deadline);
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    release_lock(&cluster, holder);
    let kept_rows = kept(&cluster);
    cluster
        .psql(DATABASE, "DROP TRIGGER slow ON earshot.event_outcomes")
        .expect("dropped");
    assert!(
        kept_rows >= 3 && kept_rows < outcome_rows,
        "{kept_rows} of {outcome_rows}"
    );

    let resumed = copy_json(&cluster, &source, &["--batch", "5"]).await;
    let (rows, copied, already, earlier) = counts(&resumed, "event_outcomes");
    assert_eq!(rows, outcome_rows);
    assert_eq!(
        earlier, kept_rows,
        "after the last committed batch: {resumed}"
    );
    assert_eq!(copied, outcome_rows - kept_rows, "{resumed}");
    assert_eq!(already, 0, "{resumed}");
    let (rows, copied, _, earlier) = counts(&resumed, "deliveries");
    assert_eq!((copied, earlier), (0, rows), "done before: {resumed}");
    same_tables(&source, &cluster);
    same_health(&source, &cluster).await;
    made.harness.emulator.shutdown().await;
}
