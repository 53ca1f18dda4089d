//! Session and call artifacts in the emulator, from the outside over HTTP:
//! the record lists them about 90 s (scaled) after `session.completed` or
//! `call.ended`, while the links in `call.ended` work at once; every link
//! expires one hour (scaled) after the event and then answers 403; a large
//! recording (the download measurement's knob) is served whole, streamed.

use std::time::{Duration, Instant};

use crate::common::{API_KEY, Harness, eventually, launch, start_at};
use earshot_core::api::types::agents::EventKind;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::redact::SecretString;
use earshot_emulator::{EmulatorConfig, TimeScale};
use serde_json::Value;

fn time_of(value: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(value.as_str().expect("a timestamp")).expect("RFC 3339")
}

/// The session's record once it lists artifacts (waits up to `within`).
async fn record_with_artifacts(harness: &Harness, id: &str, within: Duration) -> Value {
    eventually(within, "listed artifacts", || async {
        let (_, body) = harness.get(&format!("/v1/sessions/{id}")).await;
        let listed = body["artifacts"].as_array().is_some_and(|a| !a.is_empty());
        listed.then_some(body)
    })
    .await
}

fn artifacts_of(record: &Value) -> Vec<Value> {
    record["artifacts"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn call_artifacts_are_listed_about_90_s_after_call_ended_while_its_links_work_at_once() {
    // Scale 0.01: 90 s is 900 ms, one hour 36 s.
    let harness = start_at(0.01).await;
    let (receiver, _) = harness.healthy_subscriber(&[EventKind::CallEnded]).await;
    let call_id = harness.start_call("connected").await;
    let ended = Instant::now();
    harness.end_call(&call_id).await;
    let (status, body) = harness.get(&format!("/v1/sessions/{call_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["artifacts"],
        serde_json::json!([]),
        "not listed right after call.ended: {body}"
    );
    let call = receiver.first_call().await;
    let recording = call["recording_url"].as_str().unwrap().to_owned();
    let response = harness.http.get(&recording).send().await.unwrap();
    assert_eq!(response.status(), 200, "call.ended links work at once");

    let record = record_with_artifacts(&harness, &call_id, Duration::from_secs(10)).await;
    let artifacts = artifacts_of(&record);
    assert!(
        ended.elapsed() >= Duration::from_millis(890),
        "listed before 90 s (scaled): {:?}",
        ended.elapsed()
    );
    let urls: Vec<&str> = artifacts.iter().filter_map(|a| a["url"].as_str()).collect();
    assert!(urls.contains(&recording.as_str()), "{urls:?}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn session_links_expire_one_hour_after_session_completed_then_answer_403() {
    // Scale 0.01: the listing's expires_at is 36 s after ended_at, not
    // 36.9 s (an hour after the artifacts were listed).
    let harness = start_at(0.01).await;
    let session_id = harness.start_session(None).await;
    harness.complete_session(&session_id).await;
    let body = record_with_artifacts(&harness, &session_id, Duration::from_secs(10)).await;
    let ended_at = time_of(&body["ended_at"]);
    for artifact in &artifacts_of(&body) {
        let lifetime = time_of(&artifact["expires_at"]) - ended_at;
        let millis = lifetime.num_milliseconds();
        assert!(
            (35_000..=36_500).contains(&millis),
            "one scaled hour after session.completed, got {millis} ms: {artifact}"
        );
    }
    harness.emulator.shutdown().await;

    // Scale 0.0005: one hour is 1.8 s, 90 s is 45 ms.
    let harness = start_at(0.0005).await;
    let session_id = harness.start_session(None).await;
    let completed = Instant::now();
    harness.complete_session(&session_id).await;
    let record = record_with_artifacts(&harness, &session_id, Duration::from_secs(5)).await;
    let artifacts = artifacts_of(&record);
    tokio::time::sleep_until((completed + Duration::from_millis(2_000)).into()).await;
    for artifact in &artifacts {
        let url = artifact["url"].as_str().unwrap();
        let response = harness.http.get(url).send().await.unwrap();
        assert_eq!(response.status(), 403, "expired: {url}");
        let text = response.text().await.unwrap();
        assert!(text.contains("expired"), "{text}");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_large_recording_is_served_whole_with_its_length() {
    const SIZE: u64 = 5 * 1024 * 1024 + 7;
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.allow_private_urls = true;
    config.time_scale = TimeScale::new(0.01).unwrap();
    config.recording_bytes = Some(SIZE);
    let harness = launch(config, Some(UrlPolicy::AnyHttp)).await;
    let (receiver, _) = harness.healthy_subscriber(&[EventKind::CallEnded]).await;
    let call_id = harness.start_call("connected").await;
    harness.end_call(&call_id).await;
    let call = receiver.first_call().await;
    let url = call["recording_url"].as_str().unwrap();
    let response = harness.http.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.content_length(), Some(SIZE));
    let body = tokio::time::timeout(Duration::from_secs(30), response.bytes())
        .await
        .expect("served within 30 s")
        .unwrap();
    assert_eq!(body.len() as u64, SIZE);
    assert_eq!(&body[..4], b"RIFF");
    assert_eq!(&body[36..40], b"data");
    let data_len = u32::from_le_bytes([body[40], body[41], body[42], body[43]]);
    assert_eq!(u64::from(data_len), SIZE - 44);
    harness.emulator.shutdown().await;
}
