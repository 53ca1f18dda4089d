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

/// Without `--to` the event goes to the emulator, which delivers it as the
/// platform does: to its subscription for that type, signed with that
/// subscription's secret, retried after a 500; with no subscription for
/// the type, or at a URL that is no emulator, it exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_to_the_emulator_delivers_it_to_its_subscriptions_with_retries() {
    let harness = crate::common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("subscription.secret");
    std::fs::write(&secret, APP_SECRET).unwrap();
    let app = Receiver::failing_first(1, 500, "not yet").await;
    harness
        .subscribe_secret(
            &app.url(),
            &[earshot_core::api::types::agents::EventKind::CallFailed],
            APP_SECRET,
        )
        .await;
    let trigger = |event: &str, url: &str| {
        let mut command = earshot();
        command
            .args(["trigger", event, "--set", "call.from_number=+15550100"])
            .env("EARSHOT_URL", url);
        command
    };

    let out = run(&mut trigger("call.failed", &harness.base)).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("delivers it to 1 subscription"), "{stdout}");
    let received = crate::common::eventually(
        std::time::Duration::from_secs(10),
        "the platform's retry",
        || async { (app.count() >= 2).then(|| app.captured()) },
    )
    .await;
    assert_eq!(
        received[0].body, received[1].body,
        "the same event, retried"
    );
    for request in &received {
        assert_eq!(request.header("x-svc-event"), "call.failed");
        assert_eq!(
            python_verifies(&secret, request.header("x-svc-signature"), &request.body),
            "ok"
        );
    }
    assert_eq!(received[0].json()["call"]["from_number"], "+15550100");

    let out = run(&mut trigger("call.ended", &harness.base)).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no enabled subscription"),
        "{}",
        text(&out.stderr)
    );
    let not_an_emulator = Receiver::start(|_, _| crate::common::Reply::status(404, "")).await;
    let origin = format!("http://{}/", not_an_emulator.addr);
    let out = run(&mut trigger("call.failed", &origin)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("HTTP 404") && stderr.contains("--to URL"),
        "{stderr}"
    );
    assert_eq!(app.count(), 2, "nothing more delivered");
}
