//! Rate limits and authentication: the per-transcript poll limit (429
//! with `Retry-After`), the HTTP limit (403, keyed requests only), and the
//! raw key in `Authorization`.

use crate::common::{API_KEY, Options, start_with};
use reqwest::Method;
use serde_json::{Value, json};

use super::{assert_error, get_status, post, start, submit, submit_url, upload_silence};

/// The API path of a created job.
fn path_of(created: &Value) -> String {
    format!("/v2/transcript/{}", created["id"].as_str().unwrap())
}

/// `stats` counted `count` answers with `status` on `route`.
fn assert_route_count(stats: &Value, route: &str, status: &str, count: u64) {
    assert_eq!(stats["by_route"][route][status], count, "{stats}");
}

#[tokio::test]
async fn the_poll_limit_refuses_the_next_get_of_one_transcript_with_retry_after() {
    let harness = start_with(Options {
        poll_limit: 5,
        ..Options::default()
    })
    .await;
    let audio_url = upload_silence(&harness).await;
    let first = submit_url(&harness, &audio_url).await;
    let other = submit_url(&harness, &audio_url).await;
    let path = path_of(&first);
    for _ in 0..5 {
        assert_eq!(get_status(&harness, &path).await, 200);
    }
    let refused = harness.authed(Method::GET, &path, None).await;
    let message = assert_error(&refused, 429);
    let retry_after: u64 = refused
        .headers
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .expect("Retry-After in whole seconds");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    // The Node SDK shows only the message: it carries the wait too.
    assert!(
        message.contains(&format!("retry after {retry_after} s")),
        "{message}"
    );
    // Another transcript has its own allowance.
    let other_path = path_of(&other);
    assert_eq!(get_status(&harness, &other_path).await, 200);
    let stats = harness.stats().await;
    assert_route_count(&stats, "GET /v2/transcript/{id}", "429", 1);
    assert_route_count(&stats, "GET /v2/transcript/{id}", "200", 6);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_request_over_the_http_limit_gets_403_and_only_keyed_requests_count() {
    let harness = start_with(Options {
        http_limit: 4,
        ..Options::default()
    })
    .await;
    // Refused for the key: not the account's requests, not counted.
    for _ in 0..3 {
        let answer = harness
            .raw(Method::GET, "/v2/transcript/x", Some("wrong"), None)
            .await;
        assert_eq!(answer.status, 401);
    }
    // Control routes are not part of the API.
    harness.stats().await;
    let audio_url = upload_silence(&harness).await; // 1
    let created = submit_url(&harness, &audio_url).await; // 2
    let path = path_of(&created);
    assert_eq!(get_status(&harness, &path).await, 200); // 3
    let invalid = post(&harness, "/v2/transcript", json!({})).await; // 4
    assert_eq!(invalid.status, 400);
    let refused = harness.authed(Method::GET, &path, None).await;
    assert_error(&refused, 403);
    let refused = post(
        &harness,
        "/v2/transcript",
        json!({ "audio_url": audio_url }),
    )
    .await;
    assert_error(&refused, 403);
    let stats = harness.stats().await;
    assert_route_count(&stats, "GET /v2/transcript/{id}", "403", 1);
    assert_route_count(&stats, "POST /v2/transcript", "403", 1);
    assert_eq!(stats["by_status"]["403"], 2, "{stats}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_poll_refused_with_429_still_counts_toward_the_http_limit() {
    let harness = start_with(Options {
        http_limit: 3,
        poll_limit: 1,
        ..Options::default()
    })
    .await;
    let created = submit(
        &harness,
        json!({ "audio_url": "http://127.0.0.1:9/none.wav" }),
    )
    .await; // 1
    let path = path_of(&created);
    assert_eq!(get_status(&harness, &path).await, 200); // 2
    assert_eq!(get_status(&harness, &path).await, 429); // 3
    let refused = harness
        .authed(Method::GET, "/v2/transcript/another", None)
        .await;
    assert_error(&refused, 403);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_api_wants_the_raw_key_in_authorization() {
    let harness = start(0.01).await;
    let paths = [
        (Method::GET, "/v2/transcript/x"),
        (Method::POST, "/v2/transcript"),
        (Method::POST, "/v2/upload"),
    ];
    for (method, path) in paths {
        for key in [None, Some("wrong-key"), Some(&*format!("Bearer {API_KEY}"))] {
            let answer = harness.raw(method.clone(), path, key, Some("{}")).await;
            let message = assert_error(&answer, 401);
            assert!(message.contains("API key"), "{message}");
        }
    }
    let bearer = harness
        .raw(
            Method::GET,
            "/v2/transcript/x",
            Some(&format!("Bearer {API_KEY}")),
            None,
        )
        .await;
    assert!(bearer.json()["error"].as_str().unwrap().contains("Bearer"));
    let raw = harness.authed(Method::GET, "/v2/transcript/x", None).await;
    assert_eq!(raw.status, 404);
    harness.emulator.shutdown().await;
}
