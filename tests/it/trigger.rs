//! `earshot trigger` through the real binary: one realistic event reaches
//! a receiver on 127.0.0.1 with the platform's headers, signed with the
//! receiver's secret (checked with Python's `hmac`), the fields given with
//! `--set` in place and the platform's field order kept; a field the event
//! does not have, a value of the wrong type or an unknown event type exits
//! 2 and sends nothing.

use serde_json::Value;

use crate::common::Receiver;
use crate::common::cli::{earshot, python_verifies, run, text};

const APP_SECRET: &str = "whsec_the_apps_own_secret_9876543210zyxw";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_triggered_event_reaches_the_receiver_signed_with_the_fields_given() {
    let app = Receiver::healthy().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("app.secret");
    std::fs::write(&secret, APP_SECRET).unwrap();
    let trigger = |event: &str, sets: &[&str]| {
        let mut command = earshot();
        command
            .args(["trigger", event, "--to"])
            .arg(app.url())
            .arg("--secret-file")
            .arg(&secret);
        for set in sets {
            command.args(["--set", set]);
        }
        command
    };

    let out = run(&mut trigger(
        "call.failed",
        &["call.from_number=+15550100", "call.direction=outbound"],
    ))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with("call.failed ") && stdout.contains("HTTP 200"),
        "{stdout}"
    );
    let received = app.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.header("x-svc-event"), "call.failed");
    assert!(!request.header("x-svc-delivery-id").is_empty());
    assert_eq!(
        python_verifies(&secret, request.header("x-svc-signature"), &request.body),
        "ok"
    );
    let body: Value = request.json();
    assert_eq!(body["event"], "call.failed");
    assert_eq!(body["call"]["from_number"], "+15550100");
    assert_eq!(body["call"]["direction"], "outbound");
    assert_eq!(body["call"]["session_id"], body["call"]["call_id"]);
    let raw = text(&request.body);
    let at = |key: &str| raw.find(&format!("\"{key}\"")).expect(key);
    assert!(
        at("event_id") < at("event") && at("call_id") < at("account_id"),
        "{raw}"
    );

    for (event, sets, why) in [
        ("call.nope", vec![], "one of session.started"),
        (
            "call.ended",
            vec!["call.nope=1"],
            "its fields: call.account_id",
        ),
        (
            "call.ended",
            vec!["call.account_id=abc"],
            "cannot take that value",
        ),
        ("session.started", vec!["session"], "PATH=VALUE"),
    ] {
        let out = run(&mut trigger(event, &sets)).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{event} {sets:?}: {stderr}");
        assert!(stderr.contains(why), "{stderr}");
    }
    assert_eq!(app.requests.lock().unwrap().len(), 1, "nothing more sent");
}
