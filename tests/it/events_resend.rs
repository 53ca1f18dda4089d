//! `earshot events resend` through the real binary: the observer files a
//! session's two events; the command sends their exact bytes, oldest
//! first, to a receiver on 127.0.0.1 (your app), each signed now with the
//! secret in the file given (checked with Python's `hmac`), and says what
//! each answer was; bad input sends nothing.

use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{Observed, python_verifies, run, text};
use crate::common::{self, Receiver, eventually};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";
const APP_SECRET: &str = "whsec_the_apps_own_secret_9876543210zyxw";

/// The stored bodies of the session's events, oldest first.
fn stored_bodies(db: &std::path::Path, session: &str) -> Vec<Vec<u8>> {
    let conn = rusqlite::Connection::open(db).expect("the store");
    let mut statement = conn
        .prepare(
            "SELECT body FROM events WHERE session_id = ?1
             ORDER BY occurred_ms, received_ms, rowid",
        )
        .expect("the query");
    statement
        .query_map([session], |row| row.get(0))
        .expect("the rows")
        .collect::<rusqlite::Result<_>>()
        .expect("the bodies")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_events_reach_a_local_app_as_filed_oldest_first_signed_with_its_secret() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let session = harness.start_session(None).await;
    let db = observed.db.clone();
    // Completed once the start is filed: two events stamped in the same
    // millisecond and delivered in the other order would be "oldest
    // first" in the order received (as filed), which the lines below do
    // not expect.
    eventually(Duration::from_secs(10), "the start filed", || {
        let filed = stored_bodies(&db, &session).len() == 1;
        async move { filed.then_some(()) }
    })
    .await;
    harness.complete_session(&session).await;
    let bodies = eventually(Duration::from_secs(10), "both events filed", || {
        let bodies = stored_bodies(&db, &session);
        async move { (bodies.len() == 2).then_some(bodies) }
    })
    .await;
    // The app refuses the first event it gets, takes the rest.
    let app = Receiver::failing_first(1, 500, "boom").await;
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("app.secret");
    std::fs::write(&secret_file, format!("{APP_SECRET}\n")).unwrap();
    let resend = |extra: &[&str]| {
        let mut command = common::cli::earshot();
        command
            .args(["events", "resend", &format!("session:{session}"), "--to"])
            .arg(app.url())
            .arg("--secret-file")
            .arg(&secret_file)
            .arg("--store")
            .arg(&db)
            .args(extra);
        command
    };

    let out = run(&mut resend(&[])).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one was refused: {stdout}{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].contains("session.started")
            && lines[0].contains("not delivered to")
            && lines[0].contains("HTTP 500"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("session.completed") && lines[1].contains("HTTP 200"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("2 event(s)"),
        "{}",
        text(&out.stderr)
    );
    let received = app.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    for (request, body) in received.iter().zip(&bodies) {
        assert_eq!(&request.body[..], &body[..], "the exact bytes filed");
        let header = request.header("x-svc-signature");
        assert_eq!(python_verifies(&secret_file, header, &request.body), "ok");
    }
    assert_eq!(received[0].header("x-svc-event"), "session.started");
    assert_eq!(received[1].header("x-svc-event"), "session.completed");

    // JSON: one object per event, nothing else on stdout.
    let out = run(&mut resend(&["--json"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let objects: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(objects.len(), 2);
    assert!(
        objects
            .iter()
            .all(|object| object["delivered"] == true && object["http_status"] == 200)
    );
    assert_eq!(app.requests.lock().unwrap().len(), 4);

    // --edit: one event only, edited in the editor, the edited bytes signed.
    let mut two = resend(&["--edit"]);
    two.env("EDITOR", "true").env_remove("VISUAL");
    let out = run(&mut two).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("finds 2"),
        "{}",
        text(&out.stderr)
    );
    let first: Value = serde_json::from_slice(&bodies[0]).unwrap();
    let event_id = first["event_id"].as_str().unwrap().to_owned();
    let mut one = common::cli::earshot();
    one.args(["events", "resend", &event_id, "--edit", "--to"])
        .arg(app.url())
        .arg("--secret-file")
        .arg(&secret_file)
        .arg("--store")
        .arg(&db)
        .env("EDITOR", "sed -i s/session.started/session.edited/")
        .env_remove("VISUAL");
    let out = run(&mut one).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("- {") && stderr.contains("+ {"),
        "the change said: {stderr}"
    );
    let edited = app.requests.lock().unwrap()[4].clone();
    let sent = text(&edited.body);
    assert!(
        sent.contains("session.edited") && !sent.contains("session.started"),
        "{sent}"
    );
    let header = edited.header("x-svc-signature");
    assert_eq!(python_verifies(&secret_file, header, &edited.body), "ok");

    // Bad input sends nothing: no secret, a URL that is no receiver's, a
    // bad query; a store that is not there is not made.
    let mut no_secret = common::cli::earshot();
    no_secret
        .args(["events", "resend", &session, "--to"])
        .arg(app.url())
        .arg("--store")
        .arg(&db)
        .env_remove("EARSHOT_WEBHOOK_SECRET");
    let mut bad_url = common::cli::earshot();
    bad_url
        .args(["events", "resend", &session, "--to", "ftp://127.0.0.1/x"])
        .arg("--secret-file")
        .arg(&secret_file)
        .arg("--store")
        .arg(&db);
    for (mut command, why) in [(no_secret, "--secret-file"), (bad_url, "http://")] {
        let out = run(&mut command).await;
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
    }
    let missing = dir.path().join("none.db");
    let mut no_store = common::cli::earshot();
    no_store
        .args(["events", "resend", &session, "--to"])
        .arg(app.url())
        .arg("--secret-file")
        .arg(&secret_file)
        .arg("--store")
        .arg(&missing);
    let out = run(&mut no_store).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!missing.exists(), "no store made");
    assert_eq!(app.requests.lock().unwrap().len(), 5, "nothing more sent");
}
