//! The sweep's figures in `/metrics` on a PostgreSQL store (the real
//! binary, the emulator, the test kit's cluster): two replicas started
//! alike with `--sweep --metrics-listen`; the one holding the maintenance
//! lease sweeps, and both `/metrics` show the same `earshot_sweep*`
//! figures (the holder's row of `earshot.sweep_figures`, read back by
//! each replica when scraped), labelled by the holder that ran them and
//! equal to what `psql` reads. Stopped, the holder gives the lease up; the
//! other sweeps, a third replica starts, and both scraped show the figures
//! moved: the new holder's run under its own label, the old holder's
//! still counted once, the last success later. Each exposition passes
//! `promtool check metrics` (when installed) and the Python checker.
//! A scrape while the table is locked waits about a second and shows the
//! figures read before; two seconds later the figures are read again.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::now_ms;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::{PG_USER, PgCluster, server_bindir};

use crate::common::cli::{line_with, postgres_observer, send_signal};
use crate::common::{self, API_KEY, Captured};
use crate::observer_metrics::checked_metrics_at;
use crate::postgres_listen_sweep::session;

/// How long a replica serves the figures it read before reading again
/// (`observer::metrics::store_sweeps::FRESH_FOR`).
const FRESH: Duration = Duration::from_secs(2);

/// Files the events `captured` (as a receiver got them) into `store`.
async fn file(store: &PgStore, captured: &[Captured]) {
    for request in captured {
        let event = common::observed_event(request, now_ms());
        store.file(&event).await.expect("filed");
    }
}

/// A replica that sweeps when it takes the lease and then an hour later
/// (so the figures stand still between two takeovers), with /metrics.
fn replica_flags(platform: &str) -> [&str; 9] {
    [
        "--sweep",
        "--sweep-every",
        "1h",
        "--url",
        platform,
        "--api-key",
        API_KEY,
        "--metrics-listen",
        "127.0.0.1:0",
    ]
}

/// A replica's stderr, keeping the lines read but not asked for yet: they
/// come in no fixed order (the lease's and the sweep's may come before the
/// endpoints', which wait for the store's first probe and figures).
struct Said {
    lines: Receiver<String>,
    kept: Vec<String>,
}

impl Said {
    fn new(lines: Receiver<String>) -> Said {
        Said {
            lines,
            kept: Vec::new(),
        }
    }

    /// The first line holding `needle`, kept or said within `within`.
    fn line_with(&mut self, needle: &str, within: Duration) -> String {
        if let Some(index) = self.kept.iter().position(|line| line.contains(needle)) {
            return self.kept.remove(index);
        }
        let (line, before) = line_with(&self.lines, needle, within);
        self.kept.extend(before);
        line.unwrap_or_else(|| panic!("`{needle}` not said: {:?}", self.kept))
    }
}

/// `http://HOST:PORT` of a replica's /metrics, from its stderr.
fn monitor_of(said: &mut Said) -> String {
    let needle = "serving /healthz and /metrics on ";
    let line = said.line_with(needle, Duration::from_secs(15));
    line.split(needle)
        .nth(1)
        .expect("an address")
        .trim()
        .to_owned()
}

/// The `HOST:PID` a replica names itself by when it starts sweeping.
fn sweeps_now(said: &mut Said, within: Duration) -> String {
    let line = said.line_with("sweeps now", within);
    let start = line.find("replica (").expect("named") + "replica (".len();
    let end = start + line[start..].find(')').expect("closed");
    line[start..end].to_owned()
}

/// The sweep's series of one scrape (checked by promtool and Python).
async fn sweep_series(monitor: &str) -> BTreeMap<String, f64> {
    let samples = checked_metrics_at(monitor).await;
    samples
        .as_object()
        .expect("samples")
        .iter()
        .filter(|(series, _)| series.starts_with("earshot_sweep"))
        .map(|(series, value)| (series.clone(), value.as_f64().expect("a number")))
        .collect()
}

/// The scrapes of `monitors` once `ready` holds for each; they must be
/// equal (read again when a run landed between two scrapes).
async fn equal_everywhere(
    monitors: &[&str],
    ready: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let mut last = Vec::new();
    for _ in 0..40 {
        let mut scrapes = Vec::new();
        for monitor in monitors {
            scrapes.push(sweep_series(monitor).await);
        }
        if scrapes.iter().all(&ready) && scrapes.windows(2).all(|pair| pair[0] == pair[1]) {
            return scrapes.swap_remove(0);
        }
        last = scrapes;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the replicas never showed the same sweep figures: {last:#?}");
}

fn series(name: &str, holder: &str) -> String {
    format!("{name}{{holder=\"{holder}\"}}")
}

/// `runs|errors|requests|sessions_due|last_success_ms` of `holder`'s row,
/// read with psql.
fn row(cluster: &PgCluster, holder: &str) -> Vec<i64> {
    let text = cluster
        .psql(
            "observers",
            &format!(
                "SELECT runs, errors, requests, sessions_due, last_success_ms \
                 FROM earshot.sweep_figures WHERE holder = '{holder}'"
            ),
        )
        .expect("psql");
    text.split('|')
        .map(|cell| cell.trim().parse().expect("a number"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_shows_the_holders_sweep_figures_and_they_move_after_a_takeover() {
    let harness = common::start().await;
    let (receiver, _) = harness.healthy_subscriber(&EventKind::ALL).await;
    session(&harness, &receiver, 0).await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let store = PgStore::connect(
        PgTarget::parse(&url).expect("a URL"),
        &cluster.password_sources(),
    )
    .await
    .expect("the store opens");
    file(&store, &receiver.captured()).await;

    let flags = replica_flags(harness.base.as_str());
    let (first, _, first_err) = postgres_observer(&cluster, &url, &flags);
    let mut first_err = Said::new(first_err);
    let first_monitor = monitor_of(&mut first_err);
    let first_holder = sweeps_now(&mut first_err, Duration::from_secs(15));
    let (second, _, second_err) = postgres_observer(&cluster, &url, &flags);
    let mut second_err = Said::new(second_err);
    let second_monitor = monitor_of(&mut second_err);
    let said = second_err.line_with("maintenance lease", Duration::from_secs(15));
    assert!(said.contains("does not hold"), "{said}");

    let runs = series("earshot_sweeps_total", &first_holder);
    let shown = equal_everywhere(&[&first_monitor, &second_monitor], |scrape| {
        scrape.get(&runs) == Some(&1.0)
    })
    .await;
    let [runs_row, errors, requests, due, last_success_ms] = row(&cluster, &first_holder)[..]
    else {
        panic!("one row of five figures for {first_holder}");
    };
    assert_eq!(runs_row, 1);
    assert_eq!(errors, 0, "the sweep worked");
    assert!(requests > 0, "it asked the platform");
    assert!(
        (last_success_ms - now_ms()).abs() < 60_000,
        "a success just now: {last_success_ms}"
    );
    let last_success = last_success_ms as f64 / 1000.0;
    let expected = BTreeMap::from([
        (runs.clone(), 1.0),
        (series("earshot_sweep_errors_total", &first_holder), 0.0),
        (
            series("earshot_sweep_requests_total", &first_holder),
            requests as f64,
        ),
        (
            series("earshot_sweep_last_run_timestamp_seconds", &first_holder),
            last_success,
        ),
        (
            "earshot_sweep_last_success_timestamp_seconds".to_owned(),
            last_success,
        ),
        ("earshot_sweep_sessions_due".to_owned(), due as f64),
    ]);
    assert_eq!(
        shown, expected,
        "the holder's figures, on the replica that does not sweep too"
    );

    // Another session, then the holder stops (giving the lease up): the
    // other replica sweeps it.
    session(&harness, &receiver, 2).await;
    file(&store, &receiver.captured()[2..]).await;
    send_signal(&first, "TERM").await;
    let second_holder = sweeps_now(&mut second_err, Duration::from_secs(15));
    assert_ne!(second_holder, first_holder);
    drop(first);
    let (third, _, third_err) = postgres_observer(&cluster, &url, &flags);
    let third_monitor = monitor_of(&mut Said::new(third_err));

    let second_runs = series("earshot_sweeps_total", &second_holder);
    let moved = equal_everywhere(&[&second_monitor, &third_monitor], |scrape| {
        scrape.get(&second_runs) == Some(&1.0)
    })
    .await;
    let [_, _, second_requests, _, second_success_ms] = row(&cluster, &second_holder)[..] else {
        panic!("one row of five figures for {second_holder}");
    };
    assert!(second_requests > 0, "the new holder asked the platform");
    assert_eq!(
        moved.get(&runs),
        Some(&1.0),
        "the first holder's run still counted once: {moved:#?}"
    );
    assert_eq!(
        moved.get(&series("earshot_sweep_requests_total", &second_holder)),
        Some(&(second_requests as f64))
    );
    let newest = moved["earshot_sweep_last_success_timestamp_seconds"];
    assert_eq!(newest, second_success_ms as f64 / 1000.0);
    assert!(newest > last_success, "{newest} after {last_success}");
    let holders = moved
        .keys()
        .filter(|series| series.starts_with("earshot_sweeps_total{"))
        .count();
    assert_eq!(holders, 2, "a series per holder that swept: {moved:#?}");
    drop((second, third));
    harness.emulator.shutdown().await;
}

/// A psql of the test's own holding `earshot.sweep_figures` locked
/// (ACCESS EXCLUSIVE: no read gets through) until ended, once it holds it.
fn lock_figures(cluster: &PgCluster) -> std::process::Child {
    let mut holder = std::process::Command::new(server_bindir().expect("bindir").join("psql"));
    holder
        .args(["--no-psqlrc", "-h"])
        .arg(cluster.socket_dir())
        .args(["-p", &cluster.port().to_string(), "-U", PG_USER])
        .args(["-d", "observers", "-c"])
        .arg(
            "BEGIN; LOCK TABLE earshot.sweep_figures IN ACCESS EXCLUSIVE MODE; \
             SELECT pg_sleep(60);",
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .env("PGPASSWORD", cluster.password());
    let holder = holder.spawn().expect("psql starts");
    let held = "SELECT count(*) FROM pg_locks WHERE relation = 'earshot.sweep_figures'::regclass \
                AND mode = 'AccessExclusiveLock' AND granted";
    let deadline = Instant::now() + Duration::from_secs(15);
    while cluster.psql("observers", held).expect("psql") != "1" {
        assert!(Instant::now() < deadline, "the lock was not taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    holder
}

/// GET /metrics once: the body, and how long the answer took.
async fn scrape_timed(monitor: &str) -> (String, Duration) {
    let client = earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client");
    let started = Instant::now();
    let response = client
        .get(format!("{monitor}/metrics"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("a body");
    (body, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_waits_at_most_a_second_for_the_figures_and_reads_them_again_after_two() {
    let harness = common::start().await;
    let (receiver, _) = harness.healthy_subscriber(&EventKind::ALL).await;
    session(&harness, &receiver, 0).await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let flags = replica_flags(harness.base.as_str());
    let (replica, _, replica_err) = postgres_observer(&cluster, &url, &flags);
    let mut replica_err = Said::new(replica_err);
    let monitor = monitor_of(&mut replica_err);
    let holder = sweeps_now(&mut replica_err, Duration::from_secs(15));
    let runs = series("earshot_sweeps_total", &holder);
    let shown = equal_everywhere(&[&monitor], |scrape| scrape.get(&runs) == Some(&1.0)).await;

    tokio::time::sleep(FRESH + Duration::from_millis(300)).await;
    let (_, read) = scrape_timed(&monitor).await;
    let (_, served) = scrape_timed(&monitor).await;
    eprintln!("a scrape that read the figures took {read:?}, the next, served as read, {served:?}");

    // Another holder's row (as a replica before a takeover left it), then
    // the table locked: the next read cannot get through.
    cluster
        .psql(
            "observers",
            "INSERT INTO earshot.sweep_figures VALUES ('elsewhere:1', 5, 0, 9, 0, 1000, 1000)",
        )
        .expect("a row of another holder");
    let lock = lock_figures(&cluster);
    tokio::time::sleep(FRESH + Duration::from_millis(300)).await;
    let (body, took) = scrape_timed(&monitor).await;
    eprintln!("a scrape while the figures were locked took {took:?}");
    assert!(
        took >= Duration::from_millis(900),
        "it waited for the read: {took:?}"
    );
    assert!(took < Duration::from_secs(4), "bounded: {took:?}");
    assert!(
        body.lines().any(|line| line == format!("{runs} 1")),
        "the last figures kept: {body}"
    );
    assert!(!body.contains("elsewhere:1"), "{body}");
    // Within two seconds of that read, a scrape does not ask again.
    let (_, again) = scrape_timed(&monitor).await;
    assert!(
        again < Duration::from_millis(900),
        "served as read: {again:?}"
    );

    let _ = cluster.psql(
        "observers",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()",
    );
    let mut lock = lock;
    let _ = lock.wait();
    tokio::time::sleep(FRESH + Duration::from_millis(300)).await;
    let now = sweep_series(&monitor).await;
    assert_eq!(
        now.get(&series("earshot_sweeps_total", "elsewhere:1")),
        Some(&5.0)
    );
    assert_eq!(now.get(&runs), shown.get(&runs));
    drop(replica);
    harness.emulator.shutdown().await;
}
