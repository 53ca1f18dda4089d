//! Every error the emulator sends has the documented shape of its area,
//! over real HTTP, including the answers no handler writes: an unknown
//! route (404), a wrong method (405), a JSON body over the limit (413), a
//! path that does not percent-decode (400) and a request target too long
//! to read (414). Under `/v2` the shape is `{"error"}` (the pre-recorded
//! SDKs'); everywhere else `{status, title, detail}`.

use crate::common::{Harness, RawAnswer, start};
use reqwest::Method;

/// A `/v2` error: `status` and `{"error": "<message>"}` alone.
fn assert_v2_error(answer: &RawAnswer, status: u16, what: &str) -> String {
    assert_eq!(answer.status, status, "{what}: {}", answer.text);
    assert_json(answer, what);
    let body = answer.json();
    let keys: Vec<&String> = body
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["error"], "{what}: {}", answer.text);
    let message = body["error"].as_str().unwrap_or_default().to_owned();
    assert!(!message.is_empty(), "{what}: {}", answer.text);
    message
}

/// Any other area's error: `{status, title, detail}` with this status.
fn assert_problem(answer: &RawAnswer, status: u16, what: &str) -> String {
    assert_eq!(answer.status, status, "{what}: {}", answer.text);
    assert_json(answer, what);
    let body = answer.json();
    assert_eq!(body["status"], status, "{what}: {body}");
    assert!(
        body["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{what}: {body}"
    );
    let detail = body["detail"].as_str().unwrap_or_default().to_owned();
    assert!(!detail.is_empty(), "{what}: {body}");
    detail
}

fn assert_json(answer: &RawAnswer, what: &str) {
    let content_type = answer.content_type();
    assert_eq!(content_type, "application/json", "{what}: {}", answer.text);
}

/// A JSON body just over axum's 2 MB default limit.
fn oversized_json() -> String {
    format!("{{\"padding\": \"{}\"}}", "x".repeat(2 * 1024 * 1024 + 16))
}

/// A path of `len` bytes under `prefix`.
fn long_path(prefix: &str, len: usize) -> String {
    format!("{prefix}{}", "a".repeat(len))
}

async fn shutdown(harness: Harness) {
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn unknown_routes_are_404_in_their_areas_shape() {
    let harness = start().await;
    let v2 = harness.authed(Method::GET, "/v2/nope", None).await;
    let message = assert_v2_error(&v2, 404, "/v2/nope");
    assert!(message.contains("/v2/nope"), "{message}");
    for path in [
        "/nope",
        "/v1/nope",
        "/v1/transcribe/nope",
        "/_emulator/nope",
    ] {
        let answer = harness.authed(Method::GET, path, None).await;
        let detail = assert_problem(&answer, 404, path);
        assert!(detail.contains(path), "{detail}");
    }
    shutdown(harness).await;
}

#[tokio::test]
async fn a_wrong_method_is_405_with_allow_in_its_areas_shape() {
    let harness = start().await;
    let v2 = harness.authed(Method::DELETE, "/v2/upload", None).await;
    let message = assert_v2_error(&v2, 405, "DELETE /v2/upload");
    assert!(message.contains("DELETE"), "{message}");
    assert_eq!(v2.headers["allow"], "POST");
    for (method, path) in [
        (Method::PUT, "/v1/webhook-subscriptions"),
        (Method::GET, "/v1/transcribe/live"),
        (Method::GET, "/transcribe"),
        (Method::PUT, "/_emulator/stats"),
    ] {
        let answer = harness.authed(method.clone(), path, None).await;
        assert_problem(&answer, 405, &format!("{method} {path}"));
        assert!(answer.headers.get("allow").is_some(), "{path}");
    }
    shutdown(harness).await;
}

#[tokio::test]
async fn a_json_body_over_the_limit_is_413_in_its_areas_shape() {
    let harness = start().await;
    let body = oversized_json();
    let v2 = harness
        .authed(Method::POST, "/v2/transcript", Some(&body))
        .await;
    assert_v2_error(&v2, 413, "POST /v2/transcript");
    let agents = harness
        .authed(Method::POST, "/v1/webhook-subscriptions", Some(&body))
        .await;
    assert_problem(&agents, 413, "POST /v1/webhook-subscriptions");
    shutdown(harness).await;
}

#[tokio::test]
async fn a_path_that_does_not_decode_is_400_in_its_areas_shape() {
    let harness = start().await;
    let v2 = harness
        .authed(Method::GET, "/v2/transcript/%ff", None)
        .await;
    assert_v2_error(&v2, 400, "GET /v2/transcript/%ff");
    for path in [
        "/v1/webhook-subscriptions/%ff",
        "/v1/sessions/%ff/webhook-deliveries",
    ] {
        let answer = harness.authed(Method::GET, path, None).await;
        assert_problem(&answer, 400, path);
    }
    shutdown(harness).await;
}

#[tokio::test]
async fn a_request_target_too_long_to_read_is_414_in_its_areas_shape() {
    let harness = start().await;
    let v2 = harness
        .authed(Method::GET, &long_path("/v2/transcript/", 9000), None)
        .await;
    assert_v2_error(&v2, 414, "long /v2 path");
    let agents = harness
        .authed(
            Method::GET,
            &long_path("/v1/webhook-subscriptions/", 9000),
            None,
        )
        .await;
    assert_problem(&agents, 414, "long /v1 path");
    // Just under the limit is read (and is an unknown id).
    let read = harness
        .authed(Method::GET, &long_path("/v2/transcript/", 8000), None)
        .await;
    assert_v2_error(&read, 404, "8000-byte /v2 path");
    shutdown(harness).await;
}

#[tokio::test]
async fn handler_shapes_are_left_alone() {
    let harness = start().await;
    // Dictation's request-parse error keeps `{error, error_code}`.
    let parse = harness
        .authed(Method::POST, "/v1/transcribe/live", Some("not multipart"))
        .await;
    assert_eq!(parse.status, 400, "{}", parse.text);
    let body = parse.json();
    assert!(
        body["error"].is_string() || body["detail"].is_string(),
        "{body}"
    );
    // An agents-area problem keeps `{status, title, detail}`.
    let missing = harness
        .authed(
            Method::GET,
            "/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000",
            None,
        )
        .await;
    assert_problem(&missing, 404, "unknown subscription");
    shutdown(harness).await;
}
