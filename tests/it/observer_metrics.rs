//! The observer's monitoring through the real binary: `earshot listen
//! --store --sweep --metrics-listen 127.0.0.1:0` against the emulator.
//! Deliveries from the platform and signed requests sent here are counted
//! on `/metrics`, and after a sweep each subscription's events show as
//! delivered or missed; the exposition passes `promtool check metrics`
//! (the Prometheus text format) and a strict OpenMetrics line check in
//! Python (tests/it/data/metrics_check.py, standard library only, also the
//! fallback when promtool is absent), which is also what reads the values.
//! `/healthz` is 200, 503 once the store's directory cannot be written,
//! and 200 again once it can; without a store it is 200 and says so. The
//! example alert rules (docs/alerts.yml) pass `promtool check rules` and
//! their unit tests (tests/it/data/alerts_test.yml).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use serde_json::{Value, json};

use crate::common::cli::{earshot, post_signed, run, text};
use crate::common::{self, API_KEY, Receiver, Reply};

const OBSERVER_SECRET: &str = "whsec_observer_metrics_0123456789abcdefgh";
const CHECKER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/data/metrics_check.py"
);
const ALERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/alerts.yml");
const ALERT_TESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/data/alerts_test.yml");
const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;q=0.3";

/// `earshot listen --secret … --metrics-listen 127.0.0.1:0 ARGS`, running.
struct Observer {
    child: Child,
    /// The webhook URL.
    url: String,
    /// `http://HOST:PORT` of /healthz and /metrics.
    monitor: String,
    stderr: mpsc::Receiver<String>,
}

impl Observer {
    fn start(args: &[&str], envs: &[(&str, &str)]) -> Observer {
        let mut child = earshot()
            .args(["listen", "--secret", OBSERVER_SECRET])
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("earshot listen starts");
        let lines = crate::common::cli::stderr_lines(&mut child);
        let url = crate::common::cli::listening_url(&mut child);
        let mut said = Vec::new();
        let monitor = loop {
            let line = lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no metrics address on stderr: {said:?}"));
            if let Some(at) = line.strip_prefix("serving /healthz and /metrics on ") {
                break at.to_owned();
            }
            said.push(line);
        };
        Observer {
            child,
            url,
            monitor,
            stderr: lines,
        }
    }

    /// What it said on stderr since the last call.
    fn said(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::Client {
    earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTP client")
}

/// GET `url` (with `accept`): status, content type, body.
async fn get(url: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut request = http().get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (status, content_type, response.text().await.expect("a body"))
}

/// `python3 metrics_check.py MODE` over `exposition`: the samples, or the
/// violation it found.
fn python_check(exposition: &str, mode: &str) -> Result<Value, String> {
    let mut child = Command::new("python3")
        .args([CHECKER, mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run python3 ({error}); CI installs it"));
    let mut stdin = child.stdin.take().expect("stdin piped");
    let input = exposition.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("python3 ran");
    writer.join().expect("the writer").expect("written");
    if !output.status.success() {
        return Err(text(&output.stderr));
    }
    Ok(serde_json::from_slice::<Value>(&output.stdout).expect("JSON")["samples"].clone())
}

/// Whether `promtool` can be run.
fn promtool() -> bool {
    Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `promtool ARGS` with `input` on stdin: success, and what it printed.
fn run_promtool(args: &[&str], input: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    let mut stdin = child.stdin.take().expect("stdin piped");
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("promtool ran");
    writer.join().expect("the writer").expect("written");
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    (output.status.success(), said)
}

/// /metrics in both formats, each checked strictly (promtool on the
/// Prometheus text format when it is installed); the samples, as the
/// OpenMetrics check read them.
async fn checked_metrics(observer: &Observer) -> Value {
    checked_metrics_at(&observer.monitor).await
}

/// [`checked_metrics`] of the observer serving /metrics at `monitor`
/// (`http://HOST:PORT`).
pub(crate) async fn checked_metrics_at(monitor: &str) -> Value {
    let url = format!("{monitor}/metrics");
    let (status, content_type, prometheus) = get(&url, None).await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    if promtool() {
        let (passed, said) = run_promtool(&["check", "metrics"], &prometheus);
        assert!(passed, "promtool check metrics: {said}\n{prometheus}");
    } else {
        eprintln!("promtool not found: the Prometheus text format checked in Python only");
    }
    python_check(&prometheus, "prometheus")
        .unwrap_or_else(|why| panic!("the Prometheus text format: {why}\n{prometheus}"));
    let (status, content_type, openmetrics) = get(&url, Some(OPENMETRICS)).await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    // The checker tells the two formats apart: each fails the other.
    assert!(python_check(&openmetrics, "prometheus").is_err());
    assert!(python_check(&prometheus, "openmetrics").is_err());
    python_check(&openmetrics, "openmetrics")
        .unwrap_or_else(|why| panic!("OpenMetrics: {why}\n{openmetrics}"))
}

fn value(samples: &Value, series: &str) -> Option<f64> {
    samples.get(series).and_then(Value::as_f64)
}

fn events(subscription: &str, state: &str) -> String {
    format!(r#"earshot_subscription_events{{subscription="{subscription}",state="{state}"}}"#)
}

/// Polls the checked metrics every 250 ms until `done` holds, or panics
/// after `within` with the last samples.
async fn metrics_until(
    observer: &Observer,
    within: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let samples = checked_metrics(observer).await;
        if done(&samples) {
            return samples;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; stderr {:?}; samples {samples:#}",
            observer.said()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn session_started(event_id: &str) -> Vec<u8> {
    json!({ "event_id": event_id, "event": "session.started",
            "timestamp": "2026-11-25T01:00:00Z",
            "session": { "session_id": "ses_metrics_direct", "status": "created" } })
    .to_string()
    .into_bytes()
}

/// `body` POSTed to `url` with a signature made with `secret` at `t`.
async fn post_signed_at(url: &str, secret: &str, t: i64, body: &[u8]) -> u16 {
    let header = earshot_core::signature::sign(secret.as_bytes(), t, body);
    http()
        .post(url)
        .header("content-type", "application/json")
        .header("x-svc-signature", header)
        .body(body.to_vec())
        .send()
        .await
        .expect("an answer")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_arrived_and_what_each_subscription_got() {
    let harness = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let db_arg = db.to_str().unwrap();
    let observer = Observer::start(
        &[
            "--store",
            db_arg,
            "--sweep",
            "--sweep-every",
            "1s",
            "--url",
            &harness.base,
        ],
        &[("EARSHOT_API_KEY", API_KEY)],
    );
    let all = EventKind::ALL;
    let own = harness
        .subscribe_secret(&observer.url, &all, OBSERVER_SECRET)
        .await;
    let (_healthy, fine) = harness.healthy_subscriber(&all).await;
    let failing = Receiver::start(|_, _| Reply::status(401, "invalid signature")).await;
    let broken = harness.subscribe(&failing.url(), &all).await;

    // The platform delivers a session's two events to all three.
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    // Sent here: one event twice, a forged signature, a stale one.
    let body = session_started("00000000-0000-4000-8000-00000000e701");
    assert_eq!(
        post_signed(&observer.url, OBSERVER_SECRET, &body).await.0,
        200
    );
    assert_eq!(
        post_signed(&observer.url, OBSERVER_SECRET, &body).await.0,
        200
    );
    let forged = session_started("00000000-0000-4000-8000-00000000e702");
    assert_eq!(
        post_signed(&observer.url, "whsec_not_the_secret_0123456789", &forged)
            .await
            .0,
        401
    );
    let an_hour_ago = chrono::Utc::now().timestamp() - 3600;
    let stale = post_signed_at(&observer.url, OBSERVER_SECRET, an_hour_ago, &forged).await;
    assert_eq!(stale, 401);

    let samples = metrics_until(
        &observer,
        Duration::from_secs(45),
        "the sweep to settle every subscription's two events",
        |samples| {
            value(samples, &events(&own.id, "delivered")) == Some(2.0)
                && value(samples, &events(&fine.id, "delivered")) == Some(2.0)
                && value(samples, &events(&broken.id, "missed")) == Some(2.0)
        },
    )
    .await;
    let expect = [
        (
            r#"earshot_events_received_total{event="session.started"}"#,
            2.0,
        ),
        (
            r#"earshot_events_received_total{event="session.completed"}"#,
            1.0,
        ),
        (r#"earshot_events_received_total{event="call.ended"}"#, 0.0),
        ("earshot_duplicate_deliveries_total", 1.0),
        (
            r#"earshot_requests_rejected_total{reason="bad_signature"}"#,
            1.0,
        ),
        (r#"earshot_requests_rejected_total{reason="stale"}"#, 1.0),
        (
            r#"earshot_requests_rejected_total{reason="malformed"}"#,
            0.0,
        ),
        ("earshot_store_write_failures_total", 0.0),
        ("earshot_store_writable", 1.0),
        ("earshot_subscriptions_enabled", 3.0),
        ("earshot_sweep_errors_total", 0.0),
        // Receiving and filing: not silent.
        ("earshot_observer_silent", 0.0),
        ("earshot_observer_silent_since_timestamp_seconds", 0.0),
        (&events(&own.id, "missed"), 0.0),
        (&events(&broken.id, "delivered"), 0.0),
    ];
    for (series, expected) in expect {
        assert_eq!(
            value(&samples, series),
            Some(expected),
            "{series}: {samples:#}"
        );
    }
    // Three new events and a repeat went to the writer.
    let writes = value(&samples, "earshot_store_write_seconds_count").unwrap();
    assert!(writes >= 4.0, "{samples:#}");
    let at_least_one = [
        "earshot_sweeps_total",
        "earshot_sweep_requests_total",
        "earshot_store_size_bytes",
    ];
    for series in at_least_one {
        assert!(
            value(&samples, series).unwrap_or(0.0) >= 1.0,
            "{series}: {samples:#}"
        );
    }
    let now = chrono::Utc::now().timestamp() as f64;
    for series in [
        "earshot_last_event_timestamp_seconds",
        "earshot_sweep_last_success_timestamp_seconds",
    ] {
        let at = value(&samples, series).unwrap_or(0.0);
        assert!(
            (now - 120.0..=now + 1.0).contains(&at),
            "{series} {at}, now {now}"
        );
    }
    // The sweep wrote beside the receiver's writer: the store has the
    // records it fetched.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let records: i64 = conn
        .query_row("SELECT count(*) FROM deliveries", [], |row| row.get(0))
        .unwrap();
    assert_eq!(records, 6, "two events × three subscriptions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sweep_is_counted_and_said_while_receiving_goes_on() {
    // Nothing listens at this origin: every sweep fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let observer = Observer::start(
        &[
            "--store",
            db.to_str().unwrap(),
            "--sweep",
            "--sweep-every",
            "1s",
            "--url",
            &origin,
        ],
        &[("EARSHOT_API_KEY", API_KEY)],
    );
    let samples = metrics_until(
        &observer,
        Duration::from_secs(30),
        "two failed sweeps",
        |s| value(s, "earshot_sweep_errors_total").unwrap_or(0.0) >= 2.0,
    )
    .await;
    assert_eq!(
        value(&samples, "earshot_sweep_last_success_timestamp_seconds"),
        Some(0.0)
    );
    let body = session_started("00000000-0000-4000-8000-00000000e703");
    let (status, _) = post_signed(&observer.url, OBSERVER_SECRET, &body).await;
    assert_eq!(status, 200, "receiving goes on");
    let said = observer.said().join("\n");
    assert!(said.contains("the sweep failed ("), "{said}");
    assert!(
        said.contains("receiving goes on, next try in 1 s"),
        "{said}"
    );
    let failures = said.matches("the sweep failed (").count();
    assert_eq!(failures, 1, "the same failure is said once: {said}");
}

/// The store's directory made unwritable the first way that works here:
/// read-only (0500); as root, whom modes do not stop, immutable (`chattr
/// +i`); failing that, moved away, so no file can be made at the store's
/// path. Each leaves the open database file writable: only the health
/// probe notices. Undone when dropped.
struct Unwritable {
    dir: PathBuf,
    how: How,
}

#[derive(Debug, Clone, PartialEq)]
enum How {
    ReadOnly,
    Immutable,
    Moved(PathBuf),
    Undone,
}

fn set_mode(dir: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Whether a file can be made in `dir` (by this process, as the observer).
fn can_create_in(dir: &Path) -> bool {
    let probe = dir.join(".can-create");
    let made = std::fs::File::create(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    made
}

fn chattr(flag: &str, dir: &Path) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

impl Unwritable {
    fn make(dir: &Path) -> Unwritable {
        let dir = dir.to_owned();
        set_mode(&dir, 0o500);
        if !can_create_in(&dir) {
            return Unwritable {
                dir,
                how: How::ReadOnly,
            };
        }
        set_mode(&dir, 0o700);
        eprintln!("mode 0500 does not stop this user (root): trying chattr +i");
        if chattr("+i", &dir) {
            if !can_create_in(&dir) {
                return Unwritable {
                    dir,
                    how: How::Immutable,
                };
            }
            chattr("-i", &dir);
        }
        eprintln!("chattr +i is not available here: moving the store's directory away");
        let moved = dir.with_extension("moved");
        std::fs::rename(&dir, &moved).unwrap();
        Unwritable {
            dir,
            how: How::Moved(moved),
        }
    }

    fn undo(&mut self) {
        match std::mem::replace(&mut self.how, How::Undone) {
            How::ReadOnly => set_mode(&self.dir, 0o700),
            How::Immutable => {
                chattr("-i", &self.dir);
            }
            How::Moved(moved) => std::fs::rename(moved, &self.dir).unwrap(),
            How::Undone => {}
        }
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        self.undo();
    }
}

/// GET /healthz: status and JSON body.
async fn healthz(observer: &Observer) -> (u16, Value) {
    let (status, _, body) = get(&format!("{}/healthz", observer.monitor), None).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn healthz_until(observer: &Observer, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (now, body) = healthz(observer).await;
        if now == status {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "/healthz still {now} {body}, not {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_is_503_while_the_store_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let db = store_dir.join("earshot.db");
    let observer = Observer::start(&["--store", db.to_str().unwrap()], &[]);
    let (status, body) = healthz(&observer).await;
    assert_eq!(
        (status, body.clone()),
        (200, json!({ "status": "ok", "store": "writable" }))
    );
    let event = session_started("00000000-0000-4000-8000-00000000e704");
    assert_eq!(
        post_signed(&observer.url, OBSERVER_SECRET, &event).await.0,
        200
    );

    let mut blocked = Unwritable::make(&store_dir);
    eprintln!("the store's directory made unwritable: {:?}", blocked.how);
    let body = healthz_until(&observer, 503).await;
    assert_eq!(body["status"], "unavailable", "{body}");
    assert_eq!(body["reason"], "store_not_writable", "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("no file can be written beside the store"),
        "{body}"
    );
    assert!(
        !detail.contains(dir.path().to_str().unwrap()),
        "no path shown: {body}"
    );
    let samples = checked_metrics(&observer).await;
    assert_eq!(value(&samples, "earshot_store_writable"), Some(0.0));

    blocked.undo();
    let body = healthz_until(&observer, 200).await;
    assert_eq!(body["store"], "writable", "{body}");
    let samples = checked_metrics(&observer).await;
    assert_eq!(value(&samples, "earshot_store_writable"), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_store_is_served_at_once_and_its_background_check_turns_healthz_503() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    crate::store_files::store_with_damaged_events(&db).await;
    let observer = Observer::start(&["--store", db.to_str().unwrap()], &[]);
    let body = healthz_until(&observer, 503).await;
    assert_eq!(body["reason"], "store_damaged", "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("earshot store check"), "{body}");
    assert!(
        !detail.contains(dir.path().to_str().unwrap()),
        "no path shown: {body}"
    );
    let samples = checked_metrics(&observer).await;
    assert_eq!(value(&samples, "earshot_store_check_sound"), Some(0.0));
    assert!(
        value(&samples, "earshot_store_check_last_timestamp_seconds").is_some_and(|at| at > 0.0)
    );
}

/// A store damaged while the observer runs, with no event arriving and
/// after the background check found it sound: the probe reads the pages
/// an event write goes through from the file, so `/healthz` turns 503
/// at the next probe (every 5 s), and stays so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_damaged_under_a_quiet_observer_turns_healthz_503() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    crate::store_files::store_with_events(&db, 50).await;
    let observer = Observer::start(&["--store", db.to_str().unwrap()], &[]);
    healthz_until(&observer, 200).await;
    let checked = Instant::now() + Duration::from_secs(30);
    loop {
        let samples = checked_metrics(&observer).await;
        if value(&samples, "earshot_store_check_sound") == Some(1.0) {
            break;
        }
        assert!(Instant::now() < checked, "no background check: {samples}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    crate::store_files::damage_root_page(&db, "events");
    let damaged = Instant::now();
    let body = healthz_until(&observer, 503).await;
    // Measured, not asserted (a shared machine): one probe period apart.
    eprintln!("/healthz 503 {:?} after the damage", damaged.elapsed());
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("the store cannot be read"), "{body}");
    assert!(
        !detail.contains(dir.path().to_str().unwrap()),
        "no path shown: {body}"
    );
    tokio::time::sleep(earshot_core::observer::health::PROBE_EVERY).await;
    assert_eq!(healthz(&observer).await.0, 503, "it stays down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_store_healthz_is_up_and_the_webhook_port_is_unchanged() {
    let observer = Observer::start(&[], &[]);
    let (status, body) = healthz(&observer).await;
    assert_eq!(status, 200);
    assert_eq!(body["store"], "none", "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("no --store"),
        "{body}"
    );
    let samples = checked_metrics(&observer).await;
    let names: Vec<&String> = samples.as_object().unwrap().keys().collect();
    assert!(
        names.iter().all(|name| !name.starts_with("earshot_store_")),
        "{names:?}"
    );
    assert!(
        names.iter().all(|name| !name.starts_with("earshot_sweep")),
        "{names:?}"
    );

    // Only GET on the two paths; anything else keeps its answer.
    let monitor = &observer.monitor;
    let post = http()
        .post(format!("{monitor}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status().as_u16(), 405);
    assert_eq!(post.headers()["allow"], "GET,HEAD");
    assert_eq!(get(&format!("{monitor}/other"), None).await.0, 404);
    // The webhook port serves neither: a GET there is still 405.
    for path in ["/healthz", "/metrics"] {
        let (status, _, body) = get(&format!("{}{path}", observer.url), None).await;
        assert_eq!(status, 405, "{path}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["reason"], "post_only", "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_flags_that_cannot_work_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let no_store = run(earshot().args(["listen", "--secret", OBSERVER_SECRET, "--sweep"])).await;
    assert_eq!(
        no_store.status.code(),
        Some(2),
        "{}",
        text(&no_store.stderr)
    );
    assert!(
        text(&no_store.stderr).contains("--store"),
        "{}",
        text(&no_store.stderr)
    );
    let no_key = run(earshot()
        .args(["listen", "--secret", OBSERVER_SECRET, "--sweep", "--store"])
        .arg(&db))
    .await;
    let said = text(&no_key.stderr);
    assert_eq!(no_key.status.code(), Some(2), "{said}");
    assert!(said.contains("--sweep asks the platform"), "{said}");
    let too_often = run(earshot()
        .args([
            "listen",
            "--secret",
            OBSERVER_SECRET,
            "--sweep",
            "--sweep-every",
            "0",
            "--store",
        ])
        .arg(&db))
    .await;
    assert_eq!(
        too_often.status.code(),
        Some(2),
        "{}",
        text(&too_often.stderr)
    );
}

#[test]
fn the_example_alert_rules_pass_promtool() {
    // No fallback checks alert rules: a machine without promtool fails
    // here, saying how to get it, rather than passing unchecked.
    assert!(
        promtool(),
        "promtool is not installed (Debian: apt-get install prometheus); it checks docs/alerts.yml"
    );
    let (passed, said) = run_promtool(&["check", "rules", ALERTS], "");
    assert!(passed, "promtool check rules: {said}");
    assert!(said.contains("SUCCESS: 5 rules found"), "{said}");
    // Each rule fires on what it should, and not before.
    let (passed, said) = run_promtool(&["test", "rules", ALERT_TESTS], "");
    assert!(passed, "promtool test rules: {said}");
}
