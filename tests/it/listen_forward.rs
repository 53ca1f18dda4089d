//! `earshot listen --forward-to` through the real binary, with the
//! emulator as the platform: a verified event goes on to the app with its
//! exact bytes and the platform's headers, the app's refusal is the answer
//! the platform gets (so it retries, and the retry reaches the app), each
//! line shows earshot's verdict and the app's, and `--forward-secret-file`
//! signs anew for the app's own secret (checked with Python's `hmac`).

use std::ffi::OsString;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::cli::{earshot, listening_url_and_lines, python_verifies};
use crate::common::{self, Harness, Receiver, SECRET, eventually};
use earshot_core::api::types::agents::EventKind;

const APP_SECRET: &str = "whsec_the_apps_own_secret_9876543210zyxw";

/// `earshot listen ARGS` subscribed on the emulator to `events`, signed
/// with [`SECRET`]: the child and its lines after `listening on`.
async fn forwarding(
    harness: &Harness,
    args: &[OsString],
    events: &[EventKind],
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = earshot()
        .arg("listen")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("earshot listen starts");
    let (url, lines) = listening_url_and_lines(&mut child);
    harness.subscribe_secret(&url, events, SECRET).await;
    (child, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_gets_each_verified_event_and_its_refusal_is_retried_by_the_platform() {
    let harness = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (platform_secret, app_secret) = (dir.path().join("platform"), dir.path().join("app"));
    std::fs::write(&platform_secret, SECRET).unwrap();
    std::fs::write(&app_secret, APP_SECRET).unwrap();
    // Down for the first event it gets, then fine.
    let app = Receiver::failing_first(1, 500, "boom").await;
    let forward = [
        "--secret-file".into(),
        platform_secret.clone().into(),
        "--forward-to".into(),
        app.url().into(),
    ];
    let (mut child, lines) = forwarding(&harness, &forward, &[EventKind::SessionStarted]).await;
    harness.start_session(None).await;
    let received = eventually(
        Duration::from_secs(20),
        "the platform's retry reaches the app",
        || {
            let requests = app.requests.lock().unwrap().clone();
            async move { (requests.len() >= 2).then_some(requests) }
        },
    )
    .await;
    assert_eq!(received.len(), 2, "the refused event, then its retry");
    assert_eq!(received[0].body, received[1].body, "the same exact bytes");
    for request in &received {
        assert_eq!(request.header("x-svc-event"), "session.started");
        let header = request.header("x-svc-signature");
        assert_eq!(
            python_verifies(&platform_secret, header, &request.body),
            "ok"
        );
    }
    assert_ne!(
        received[0].header("x-svc-delivery-id"),
        received[1].header("x-svc-delivery-id"),
        "two attempts of the platform"
    );
    let shown: Vec<String> = (0..2)
        .map(|_| {
            lines
                .recv_timeout(Duration::from_secs(5))
                .expect("a line a request")
        })
        .collect();
    assert!(
        shown[0].contains("ok") && shown[0].contains("→ 500") && shown[0].contains("app: HTTP 500"),
        "{shown:?}"
    );
    assert!(shown[0].contains("\"boom\""), "{shown:?}");
    assert!(
        shown[1].contains("→ 200") && shown[1].contains("app: HTTP 200"),
        "{shown:?}"
    );
    let _ = child.kill();
    let _ = child.wait();

    // Signed anew for the app's own secret.
    let resigning = [
        forward.as_slice(),
        &["--forward-secret-file".into(), app_secret.clone().into()],
    ]
    .concat();
    let (mut child, _lines) = forwarding(&harness, &resigning, &[EventKind::SessionStarted]).await;
    harness.start_session(None).await;
    let resigned = eventually(Duration::from_secs(20), "the event reaches the app", || {
        let requests = app.requests.lock().unwrap().clone();
        async move { requests.get(2).cloned() }
    })
    .await;
    let header = resigned.header("x-svc-signature");
    assert_eq!(python_verifies(&app_secret, header, &resigned.body), "ok");
    assert_eq!(
        python_verifies(&platform_secret, header, &resigned.body),
        "bad"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_given_its_own_app_goes_there_and_the_others_to_the_default() {
    let harness = common::start().await;
    let (all, completed) = (Receiver::healthy().await, Receiver::healthy().await);
    let routes = [
        "--secret".into(),
        SECRET.into(),
        "--forward-to".into(),
        all.url().into(),
        "--forward".into(),
        format!("session.completed={}", completed.url()).into(),
    ];
    let (mut child, _lines) = forwarding(
        &harness,
        &routes,
        &[EventKind::SessionStarted, EventKind::SessionCompleted],
    )
    .await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    completed
        .wait_count(1, "session.completed at its own app")
        .await;
    all.wait_count(1, "session.started at the default app")
        .await;
    assert_eq!(
        completed.requests.lock().unwrap()[0].header("x-svc-event"),
        "session.completed"
    );
    assert_eq!(
        all.requests.lock().unwrap()[0].header("x-svc-event"),
        "session.started"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_bad_forwarding_url_or_route_exits_2() {
    for (args, why) in [
        (vec!["--forward-to", "ftp://127.0.0.1/x"], "http://"),
        (
            vec!["--forward", "call.nope=http://127.0.0.1:9/x"],
            "is not one of",
        ),
        (vec!["--forward", "call.ended"], "TYPE=URL"),
    ] {
        let out = earshot()
            .args(["listen", "--secret", SECRET])
            .args(&args)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
    }
}

/// `--json` prints only JSON lines on stdout, the first saying where it
/// listens, then one per request with earshot's verdict and the app's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_json_every_stdout_line_is_json_with_both_verdicts() {
    let harness = common::start().await;
    let app = Receiver::healthy().await;
    let args = [
        "--secret".into(),
        SECRET.into(),
        "--forward-to".into(),
        app.url().into(),
        "--json".into(),
    ];
    let (mut child, lines) = forwarding(&harness, &args, &[EventKind::SessionStarted]).await;
    harness.start_session(None).await;
    let line = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("a line for the delivery");
    let entry: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
    assert_eq!(entry["verdict"], "ok", "{line}");
    assert_eq!(entry["forwarded"]["status"], 200, "{line}");
    let _ = child.kill();
    let _ = child.wait();
    for rest in lines.try_iter() {
        assert!(
            serde_json::from_str::<serde_json::Value>(&rest).is_ok(),
            "{rest}"
        );
    }
}
