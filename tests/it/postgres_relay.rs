//! `earshot listen --store postgres://… --forward-to APP` on two replicas
//! (the real binary, the test kit's throwaway cluster, a loopback app
//! that logs what it takes): one holds the forwarding lease and forwards
//! what both file, each event once, in the order it was filed, signed
//! anew; an event whose filing transaction took its id before later ones
//! and committed after they were forwarded is forwarded at its commit,
//! not skipped; the forwarder killed with SIGKILL, the other takes the
//! lease over and forwards what was filed meanwhile, from where the dead
//! one stopped, nothing twice. A replica that starts while a dead
//! forwarder's lease has not lapsed yet forwards, once it takes it, what
//! it filed meanwhile (the app's place is made before it receives).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use earshot_testkit::postgres::PgCluster;
use serde_json::json;
use tokio::net::TcpListener;

use crate::common::cli::{line_with, post_signed, postgres_observer, python_verifies};
use crate::common::{SECRET, eventually};

/// A dead forwarder's lease is taken over within 8 s (6 s lease, 2 s
/// renewal); what was filed meanwhile then arrives within a poll or two.
const TAKEOVER_WITHIN: Duration = Duration::from_secs(15);

/// What the app took: the event's id, its signature header and its body.
type Taken = (String, String, Vec<u8>);

/// The app: takes every event with 200, logging it.
async fn serve_app(log: Arc<Mutex<Vec<Taken>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/hooks", listener.local_addr().expect("address"));
    let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let log = log.clone();
        async move {
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = json["event_id"].as_str().unwrap_or_default().to_owned();
            let signature = headers
                .get("x-svc-signature")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            log.lock().unwrap().push((id, signature, body.to_vec()));
            StatusCode::OK
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// A platform event's body with the id `id`.
pub(crate) fn event(id: &str) -> Vec<u8> {
    json!({
        "event_id": id,
        "event": "call.failed",
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "call": { "call_id": format!("call-{id}") },
    })
    .to_string()
    .into_bytes()
}

/// Sends `ids` one after another (each answered before the next goes),
/// to `urls` in turn.
async fn send(urls: &[&str], ids: &[String]) {
    for (index, id) in ids.iter().enumerate() {
        let url = urls[index % urls.len()];
        let (status, answer) = post_signed(url, SECRET, &event(id)).await;
        assert_eq!(status, 200, "{id}: {answer}");
    }
}

fn ids(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|index| format!("{prefix}-{index:03}")).collect()
}

/// The ids the app took, in the order it took them.
fn taken(log: &Arc<Mutex<Vec<Taken>>>) -> Vec<String> {
    log.lock().unwrap().iter().map(|t| t.0.clone()).collect()
}

async fn until_taken(log: &Arc<Mutex<Vec<Taken>>>, wanted: &[String], within: Duration) {
    let what = format!(
        "the app to take {} to {}",
        wanted[0],
        wanted[wanted.len() - 1]
    );
    eventually(within, &what, || {
        let have = taken(log);
        async move { wanted.iter().all(|id| have.contains(id)).then_some(()) }
    })
    .await;
}

/// A filing held open: `psql` inserted `id` in a transaction (which took
/// its id then) and commits when told.
struct HeldFiling(std::process::Child);

impl HeldFiling {
    async fn start(cluster: &PgCluster, id: &str) -> HeldFiling {
        let bindir = earshot_testkit::postgres::server_bindir().expect("the server's bin");
        let mut psql = std::process::Command::new(bindir.join("psql"))
            .args(["--no-psqlrc", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(cluster.socket_dir())
            .args(["-p", &cluster.port().to_string()])
            .args(["-U", earshot_testkit::postgres::PG_USER, "-d", "observers"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("psql starts");
        let body = String::from_utf8(event(id)).expect("text");
        let now = chrono::Utc::now().timestamp_millis();
        let insert = format!(
            "BEGIN;\nINSERT INTO earshot.events (event_id, event, session_id, occurred_ms, \
             received_ms, headers, body) VALUES ('{id}', 'call.failed', 'call-{id}', {now}, \
             {now}, '[]', convert_to('{}', 'UTF8'));\n",
            body.replace('\'', "''")
        );
        psql.stdin
            .as_mut()
            .expect("psql's input")
            .write_all(insert.as_bytes())
            .expect("sent to psql");
        eventually(Duration::from_secs(10), "the row inserted", || async {
            let open = cluster
                .psql(
                    "observers",
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL",
                )
                .expect("psql");
            (open == "1").then_some(())
        })
        .await;
        HeldFiling(psql)
    }

    fn commit(mut self) {
        let mut input = self.0.stdin.take().expect("psql's input");
        input.write_all(b"COMMIT;\n").expect("sent to psql");
        drop(input);
        let status = self.0.wait().expect("psql ends");
        assert!(status.success(), "the held filing commits");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_forward_every_event_once_in_filing_order_and_the_other_takes_over_when_the_forwarder_dies()
 {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store = cluster.url("observers");
    let log: Arc<Mutex<Vec<Taken>>> = Arc::default();
    let app = serve_app(log.clone()).await;
    let forward = ["--forward-to", app.as_str()];

    let (mut first, first_url, first_err) = postgres_observer(&cluster, &store, &forward);
    let first_pid = first.id().expect("running");
    let (said, before) = line_with(&first_err, "forwarding lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the forwarding lease is said: {before:?}"));
    assert!(
        said.contains(&format!(":{first_pid})")) && said.contains("holds the forwarding lease"),
        "the first replica forwards: {said}"
    );
    let (_second, second_url, second_err) = postgres_observer(&cluster, &store, &forward);
    let (said, before) = line_with(&second_err, "forwarding lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the forwarding lease is said: {before:?}"));
    assert!(
        said.contains("does not hold the forwarding lease")
            && said.contains(&format!(":{first_pid} holds it")),
        "the second files only: {said}"
    );

    // Both file; the holder forwards what either filed, in filing order.
    let urls = [first_url.as_str(), second_url.as_str()];
    let early = ids("early", 0..20);
    send(&urls, &early).await;
    // A filing that took its transaction id now and commits later.
    let held = HeldFiling::start(&cluster, "late-commit").await;
    let after_held = ids("after-held", 0..6);
    send(&urls, &after_held).await;
    until_taken(&log, &after_held, Duration::from_secs(20)).await;
    assert!(
        !taken(&log).contains(&"late-commit".to_owned()),
        "not forwarded before its commit"
    );
    held.commit();
    until_taken(&log, &["late-commit".to_owned()], Duration::from_secs(20)).await;
    // A moment for a duplicate to show, were one coming.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut expected: Vec<String> = early.iter().chain(&after_held).cloned().collect();
    expected.push("late-commit".to_owned());
    assert_eq!(
        taken(&log),
        expected,
        "every event once, in the order filed, the late commit at its commit"
    );
    let secret = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(secret.path(), SECRET).expect("written");
    let (_, header, body) = log.lock().unwrap()[3].clone();
    assert_eq!(python_verifies(secret.path(), &header, &body), "ok");

    // The forwarder dies; the other takes the lease over and forwards
    // what it files meanwhile, from where the dead one stopped.
    first.start_kill().expect("SIGKILL sent");
    first.wait().await.expect("reaped");
    let killed_at = Instant::now();
    let meanwhile = ids("meanwhile", 0..10);
    send(&[second_url.as_str()], &meanwhile).await;
    let (said, before) = line_with(&second_err, "holds the forwarding lease", TAKEOVER_WITHIN);
    said.unwrap_or_else(|| panic!("taken over within 15 s: {before:?}"));
    let took_over = killed_at.elapsed();
    until_taken(&log, &meanwhile, TAKEOVER_WITHIN).await;
    let all_in = killed_at.elapsed();
    eprintln!("lease taken over {took_over:?} after the kill; all forwarded after {all_in:?}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    expected.extend(meanwhile);
    assert_eq!(taken(&log), expected, "nothing lost, nothing twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_replica_files_before_it_can_take_the_forwarding_lease_is_forwarded_once_it_does() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store = cluster.url("observers");
    let log: Arc<Mutex<Vec<Taken>>> = Arc::default();
    let app = serve_app(log.clone()).await;
    let migrated = crate::common::cli::run(
        crate::common::cli::earshot()
            .args(["store", "migrate", "--store", &store])
            .env("PGPASSWORD", cluster.password()),
    )
    .await;
    assert!(migrated.status.success(), "{migrated:?}");
    // A forwarder elsewhere holds the lease and dies: its row lapses in 6 s.
    cluster
        .psql(
            "observers",
            &format!(
                "INSERT INTO earshot.leases (name, holder, expires_at, since) \
                 VALUES ('forward:{app}', 'elsewhere:1', now() + interval '6 seconds', now())"
            ),
        )
        .expect("a lease held elsewhere");

    let (_replica, url, said) = postgres_observer(&cluster, &store, &["--forward-to", &app]);
    let (line, before) = line_with(&said, "forwarding lease", Duration::from_secs(15));
    let line = line.unwrap_or_else(|| panic!("the forwarding lease is said: {before:?}"));
    assert!(line.contains("elsewhere:1 holds it"), "{line}");
    // Filed while it cannot forward: forwarded once it can.
    let before_lease = ids("before-lease", 0..5);
    send(&[url.as_str()], &before_lease).await;
    let (line, before) = line_with(&said, "holds the forwarding lease", TAKEOVER_WITHIN);
    line.unwrap_or_else(|| panic!("taken once lapsed: {before:?}"));
    until_taken(&log, &before_lease, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(taken(&log), before_lease, "each once, in the order filed");
}
