//! Webhooks: the custom header, query parameters kept, errors announced,
//! no retry after a 4xx, ten attempts ten seconds apart, timeouts and
//! redirects retried, and a hook that never answers.

use std::time::Duration;

use crate::common::{Harness, eventually};
use serde_json::{Value, json};

use super::{
    Call, Hook, closed_port_url, start, submit, text_of, transcript, upload_silence, wait_done,
};

/// Submits a job for `audio_url` with `extra` fields; waits for its end.
async fn run_job(harness: &Harness, audio_url: &str, extra: Value) -> String {
    let mut body = json!({ "audio_url": audio_url });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let created = submit(harness, body).await;
    let id = text_of(&created, "id");
    wait_done(harness, &id).await;
    id
}

/// Submits a job for `audio_url` that calls `webhook_url`; waits for its
/// end.
async fn job_with_webhook(harness: &Harness, audio_url: &str, webhook_url: &str) -> String {
    run_job(harness, audio_url, json!({ "webhook_url": webhook_url })).await
}

/// Waits until `hook` has `count` calls and the emulator has no webhook
/// left to send (no attempt running, no retry waiting), and returns every
/// call: one that should not come would have come by then.
async fn calls_settled(harness: &Harness, hook: &Hook, count: usize) -> Vec<Call> {
    eventually(Duration::from_secs(10), "webhook calls", || async {
        (hook.calls().len() >= count).then_some(())
    })
    .await;
    harness.wait_deliveries_idle().await;
    hook.calls()
}

#[tokio::test]
async fn webhooks_carry_the_custom_header_exactly_when_it_is_set() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(200).await;
    let audio_url = upload_silence(&harness).await;
    let with = run_job(
        &harness,
        &audio_url,
        json!({
            "webhook_url": receiver.url("/with"),
            "webhook_auth_header_name": "X-Webhook-Token",
            "webhook_auth_header_value": "s3cret value",
        }),
    )
    .await;
    let without = job_with_webhook(&harness, &audio_url, &receiver.url("/without")).await;
    let calls = calls_settled(&harness, &receiver, 2).await;
    assert_eq!(calls.len(), 2);
    let call = |path: &str| {
        calls
            .iter()
            .find(|call| call.uri.path() == path)
            .unwrap_or_else(|| panic!("a call to {path}"))
            .clone()
    };
    let (first, second) = (call("/with"), call("/without"));
    assert_eq!(first.headers["x-webhook-token"], "s3cret value");
    assert!(second.headers.get("x-webhook-token").is_none());
    for (call, id) in [(&first, &with), (&second, &without)] {
        assert_eq!(call.headers["content-type"], "application/json");
        let body: Value = serde_json::from_slice(&call.body).unwrap();
        assert_eq!(body, json!({ "transcript_id": id, "status": "completed" }));
    }
    assert_eq!(transcript(&harness, &without).await["webhook_auth"], false);
    let record = transcript(&harness, &with).await;
    assert_eq!(record["webhook_auth"], true);
    assert_eq!(record["webhook_status_code"], 200);
    assert_eq!(record["webhook_url"], receiver.url("/with"));
    assert_eq!(record["webhook_auth_header_name"], "x-webhook-token");
    assert!(!record.to_string().contains("s3cret"), "{record}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn webhook_urls_keep_their_query_parameters_and_errors_are_announced() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(204).await;
    let url = receiver.url("/hooks/transcripts?customer=42&trace=a%2Fb");
    let id = job_with_webhook(&harness, &closed_port_url().await, &url).await;
    let calls = calls_settled(&harness, &receiver, 1).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].uri.to_string(),
        "/hooks/transcripts?customer=42&trace=a%2Fb"
    );
    let body: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert_eq!(body, json!({ "transcript_id": id, "status": "error" }));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 204);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_4xx_answer_fails_the_webhook_without_retry() {
    let harness = start(0.01).await;
    let audio_url = upload_silence(&harness).await;
    for status in [401, 429] {
        let receiver = Hook::answering(status).await;
        let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
        // A retry would come 100 ms (10 s scaled) after the answer.
        let calls = calls_settled(&harness, &receiver, 1).await;
        assert_eq!(calls.len(), 1, "{status}");
        assert_eq!(
            transcript(&harness, &id).await["webhook_status_code"],
            status
        );
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_failing_webhook_is_tried_ten_times_ten_seconds_apart() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(503).await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
    let calls = calls_settled(&harness, &receiver, 10).await;
    assert_eq!(calls.len(), 10, "ten attempts in all, then given up");
    for pair in calls.windows(2) {
        let gap = pair[1].at - pair[0].at;
        // 10 s scaled is 100 ms.
        assert!(gap >= Duration::from_millis(95), "{gap:?}");
        assert!(gap < Duration::from_millis(1000), "{gap:?}");
    }
    assert!(calls.iter().all(|call| call.body == calls[0].body));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 503);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn timeouts_and_redirects_are_retried_until_a_2xx() {
    let harness = start(0.01).await;
    // 500; then slower than the 10 s (100 ms) deadline; then a redirect
    // (not followed); then 202.
    let receiver = Hook::start(|index| match index {
        0 => (500, Duration::ZERO, Vec::new()),
        1 => (200, Duration::from_millis(400), Vec::new()),
        2 => (301, Duration::ZERO, Vec::new()),
        _ => (202, Duration::ZERO, Vec::new()),
    })
    .await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
    let calls = calls_settled(&harness, &receiver, 4).await;
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|call| call.uri.path() == "/hook"));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 202);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_never_answers_leaves_the_status_code_null() {
    let harness = start(0.001).await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &closed_port_url().await).await;
    // Every attempt is over once nothing is left to send.
    harness.wait_deliveries_idle().await;
    let record = transcript(&harness, &id).await;
    assert_eq!(record["status"], "completed");
    assert!(record["webhook_status_code"].is_null(), "{record}");
    harness.emulator.shutdown().await;
}
