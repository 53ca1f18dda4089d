//! The voice-agent delivery engine from the outside (spec parts 2 C, 5 C,
//! 6 C): at-least-once retries, headers and signatures, payload shapes,
//! ordering, secret rotation, deletion, and session artifacts.

use crate::common;
use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::common::{
    Captured, Receiver, Reply, SECRET, eventually, signature_parts, start, start_at, timestamp_of,
    verifies_with,
};
use earshot_core::api::types::agents::EventKind;
use serde_json::Value;

const NEW_SECRET: &str = "whsec_rotated_secret_ZYXWVUTSRQPONMLKJIH9876";

fn is_uuid(text: &Value) -> bool {
    text.as_str()
        .is_some_and(|text| uuid::Uuid::parse_str(text).is_ok())
}

fn is_rfc3339(text: &Value) -> bool {
    text.as_str()
        .is_some_and(|text| chrono::DateTime::parse_from_rfc3339(text).is_ok())
}

fn events_of(requests: &[Captured]) -> Vec<String> {
    requests
        .iter()
        .map(|request| request.header("x-svc-event").to_owned())
        .collect()
}

#[tokio::test]
async fn failed_attempts_are_retried_with_the_same_event_and_new_delivery_ids() {
    let harness = start().await;
    let receiver = Receiver::failing_first(
        2,
        500,
        "receiver overloaded\nsecond line is not the message",
    )
    .await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;

    let records = harness
        .wait_records(&call_id, &subscription.id, "three attempts", |records| {
            records.len() == 3 && records[2]["status"] != "pending"
        })
        .await;
    let counts: Vec<&Value> = records.iter().map(|r| &r["attempt_count"]).collect();
    assert_eq!(counts, [1, 2, 3]);
    let statuses: Vec<&Value> = records.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, ["failed", "failed", "delivered"]);
    let codes: Vec<&Value> = records.iter().map(|r| &r["http_status_code"]).collect();
    assert_eq!(codes, [500, 500, 200]);
    for failed in &records[..2] {
        assert_eq!(failed["error"], "HTTP 500: receiver overloaded", "{failed}");
        assert!(is_rfc3339(&failed["next_retry_at"]), "{failed}");
        assert!(failed["delivered_at"].is_null(), "{failed}");
    }
    let delivered = &records[2];
    assert!(delivered["error"].is_null(), "{delivered}");
    assert!(delivered["next_retry_at"].is_null(), "{delivered}");
    assert!(is_rfc3339(&delivered["delivered_at"]), "{delivered}");
    for record in &records {
        assert_eq!(record["session_id"], call_id.as_str());
        assert_eq!(record["subscription_id"], subscription.id.as_str());
        assert!(is_uuid(&record["id"]), "{record}");
        assert!(is_rfc3339(&record["created_at"]), "{record}");
    }

    let captured = receiver.captured();
    assert_eq!(captured.len(), 3);
    let event_ids: HashSet<Value> = captured
        .iter()
        .map(|c| c.json()["event_id"].clone())
        .collect();
    assert_eq!(event_ids.len(), 1, "event_id is stable across retries");
    assert!(captured.iter().all(|c| c.body == captured[0].body));
    let delivery_ids: Vec<&str> = captured
        .iter()
        .map(|c| c.header("x-svc-delivery-id"))
        .collect();
    assert_eq!(delivery_ids.iter().collect::<HashSet<_>>().len(), 3);
    for (id, record) in delivery_ids.iter().zip(&records) {
        assert_eq!(record["id"], *id, "record id = X-SVC-Delivery-Id");
        assert!(uuid::Uuid::parse_str(id).is_ok());
    }

    // Every attempt is listed, in pages, oldest first; /latest is the last.
    let path = format!("/v1/sessions/{call_id}/webhook-deliveries");
    let (status, page) = harness.get(&format!("{path}?limit=2")).await;
    assert_eq!(status, 200);
    assert_eq!(page["deliveries"].as_array().unwrap()[..], records[..2]);
    assert_eq!(page["has_more"], true);
    let (_, rest) = harness
        .get(&format!(
            "{path}?limit=2&starting_after={}",
            delivery_ids[1]
        ))
        .await;
    assert_eq!(rest["deliveries"].as_array().unwrap()[..], records[2..]);
    assert_eq!(rest["has_more"], false);
    let (_, latest) = harness.get(&format!("{path}/latest")).await;
    assert_eq!(latest["deliveries"], Value::Array(vec![records[2].clone()]));
    assert_eq!(latest["has_more"], false);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn connection_errors_are_retried() {
    let harness = start().await;
    // A port nobody listens on any more.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (subscription, call_id) = harness
        .failed_call_to(&format!("http://{closed}/hook"))
        .await;
    let records = harness
        .wait_records(&call_id, &subscription.id, "a second attempt", |records| {
            records.len() >= 2 && records[1]["status"] != "pending"
        })
        .await;
    for (index, record) in records[..2].iter().enumerate() {
        assert_eq!(record["attempt_count"], index + 1);
        assert_eq!(record["status"], "failed", "{record}");
        assert!(record["http_status_code"].is_null(), "{record}");
        let error = record["error"].as_str().expect("an error");
        assert!(error.starts_with("connection error"), "{error}");
        assert!(is_rfc3339(&record["next_retry_at"]), "{record}");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn pausing_during_a_pending_retry_cancels_it() {
    // Scale 0.1: the retry would come 500 ms after the failure.
    let harness = start_at(0.1).await;
    let receiver = Receiver::failing_first(1, 503, "busy").await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;
    let first = harness.wait_settled(&call_id, &subscription.id).await;
    assert!(is_rfc3339(&first[0]["next_retry_at"]), "{}", first[0]);
    assert_eq!(
        harness.stats().await["deliveries_in_progress"],
        1,
        "the waiting retry counts as in progress"
    );
    let (status, paused) = harness
        .raw_patch(&subscription.id, r#"{"enabled": false}"#)
        .await;
    assert_eq!(status, 200, "{paused}");

    harness.wait_deliveries_idle().await;
    assert_eq!(receiver.count(), 1, "no delivery while paused");
    let records = harness.records_of(&call_id, &subscription.id).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0]["next_retry_at"].is_null(),
        "no record promises a retry that will not happen: {}",
        records[0]
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn only_timeouts_408_425_429_and_5xx_are_retried() {
    let harness = start().await;
    let retried = [408u16, 425, 429, 503];
    let rejected = [400u16, 403, 404, 410];
    let mut receivers = Vec::new();
    for status in retried.into_iter().chain(rejected) {
        let receiver = Receiver::failing_first(1, status, "").await;
        let subscription = harness
            .subscribe(&receiver.url(), &[EventKind::CallFailed])
            .await;
        receivers.push((status, receiver, subscription));
    }
    let call_id = harness.start_call("failed").await;

    for (status, receiver, subscription) in &receivers[..retried.len()] {
        let records = harness
            .wait_records(&call_id, &subscription.id, "a retry", |records| {
                records.len() == 2 && records[1]["status"] != "pending"
            })
            .await;
        assert_eq!(receiver.count(), 2, "{status} is retried");
        assert_eq!(records[0]["status"], "failed");
        assert_eq!(records[0]["http_status_code"], *status);
        assert!(is_rfc3339(&records[0]["next_retry_at"]), "{}", records[0]);
        let error = records[0]["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("HTTP {status}: ")), "{error}");
        assert_eq!(records[1]["status"], "delivered");
    }
    harness.wait_deliveries_idle().await;
    for (status, receiver, subscription) in &receivers[retried.len()..] {
        assert_eq!(receiver.count(), 1, "{status} is not retried");
        let records = harness.records_of(&call_id, &subscription.id).await;
        assert_eq!(records.len(), 1, "{status}: {records:?}");
        assert_eq!(records[0]["status"], "failed");
        assert_eq!(records[0]["http_status_code"], *status);
        assert!(records[0]["next_retry_at"].is_null(), "{}", records[0]);
        // An empty answer: the message is the status's reason phrase.
        let reason = reqwest::StatusCode::from_u16(*status)
            .unwrap()
            .canonical_reason()
            .unwrap();
        assert_eq!(records[0]["error"], format!("HTTP {status}: {reason}"));
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn html_error_pages_are_recorded_by_their_title_or_reason_phrase() {
    let harness = start().await;
    let pages = [
        (
            401,
            "<!doctype html>\n<html lang=en><head><meta charset=utf-8>\n\
             <title>401 Unauthorized</title></head><body><h1>401</h1></body></html>",
            "HTTP 401: Unauthorized",
        ),
        (
            403,
            "<!DOCTYPE html><html><head><title>Access denied | example.com \
             used Cloudflare to restrict access</title></head></html>",
            "HTTP 403: Access denied | example.com used Cloudflare to restrict access",
        ),
        (
            404,
            "<html><body><h1>Not here</h1></body></html>",
            "HTTP 404: Not Found",
        ),
    ];
    for (status, page, expected) in pages {
        let receiver = Receiver::failing_first(1, status, page).await;
        let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;
        let records = harness.wait_settled(&call_id, &subscription.id).await;
        assert_eq!(records[0]["error"], expected, "{}", records[0]);
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn deliveries_carry_the_documented_headers_and_a_valid_signature() {
    let harness = start().await;
    let (receiver, _) = harness.healthy_subscriber(&EventKind::ALL).await;
    let session_id = harness.start_session(None).await;
    harness.complete_session(&session_id).await;
    let call_id = harness.start_call("connected").await;
    harness.end_call(&call_id).await;
    harness.start_call("failed").await;

    let requests = receiver.wait_count(5, "five deliveries").await;
    let mut events = events_of(&requests);
    events.sort();
    assert_eq!(
        events,
        [
            "call.connected",
            "call.ended",
            "call.failed",
            "session.completed",
            "session.started"
        ]
    );
    let now = chrono::Utc::now().timestamp();
    for request in &requests {
        let body = request.json();
        assert_eq!(request.header("x-svc-event"), body["event"]);
        assert!(request.header("user-agent").contains("1.0"));
        assert!(
            request
                .header("content-type")
                .starts_with("application/json"),
            "{}",
            request.header("content-type")
        );
        assert!(uuid::Uuid::parse_str(request.header("x-svc-delivery-id")).is_ok());

        let header = request.header("x-svc-signature");
        let (t, v1) = header
            .strip_prefix("t=")
            .and_then(|rest| rest.split_once(",v1="))
            .unwrap_or_else(|| panic!("t=<digits>,v1=<hex>: {header}"));
        assert!(
            !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()),
            "{header}"
        );
        assert_eq!(v1.len(), 64, "{header}");
        assert!(
            v1.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "lowercase hex: {header}"
        );
        let t: i64 = t.parse().unwrap();
        assert!(
            (now - t).abs() <= 5,
            "t={t} is the signing time (now {now})"
        );
        // Our own computation over "<t>." + the raw bytes, and the crate's.
        let expected = common::hmac_hex(
            SECRET.as_bytes(),
            &[format!("{t}.").as_bytes(), &request.body],
        );
        assert_eq!(v1, expected);
        assert!(verifies_with(request, SECRET));
    }
    harness.emulator.shutdown().await;
}

fn assert_session_object(session: &Value, session_id: &str) {
    for field in [
        "session_id",
        "account_id",
        "agent_id",
        "status",
        "duration_seconds",
        "public_close_reason",
        "s3_prefix",
        "created_at",
        "ended_at",
    ] {
        assert!(
            session.get(field).is_some(),
            "session.{field} present: {session}"
        );
    }
    assert_eq!(session["session_id"], session_id);
    assert!(session["account_id"].is_i64(), "integer: {session}");
    assert!(is_uuid(&session["agent_id"]), "{session}");
    assert!(is_rfc3339(&session["created_at"]), "{session}");
}

fn assert_call_object(call: &Value, call_id: &str) {
    for field in [
        "call_id",
        "session_id",
        "account_id",
        "agent_id",
        "status",
        "direction",
        "from_number",
        "to_number",
        "created_at",
        "ended_at",
        "recording_url",
        "transcript_url",
    ] {
        assert!(call.get(field).is_some(), "call.{field} present: {call}");
    }
    assert_eq!(call["call_id"], call_id);
    assert_eq!(call["session_id"], call["call_id"], "session_id = call_id");
    assert!(call["account_id"].is_i64(), "integer: {call}");
    assert!(is_uuid(&call["agent_id"]), "{call}");
    assert!(call["direction"].is_string());
    assert!(call["from_number"].is_string());
    assert!(call["to_number"].is_string());
    assert!(is_rfc3339(&call["created_at"]), "{call}");
    assert!(call.get("session").is_none());
}

fn assert_envelope(body: &Value, event: &str) {
    assert_eq!(body["event"], event);
    assert!(is_uuid(&body["event_id"]), "{body}");
    let timestamp = body["timestamp"].as_str().expect("timestamp string");
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .unwrap_or_else(|error| panic!("timestamp {timestamp:?} with offset: {error}"));
}

#[tokio::test]
async fn payloads_have_the_documented_shapes() {
    let harness = start().await;
    let (receiver, _) = harness.healthy_subscriber(&EventKind::ALL).await;

    let session_id = harness.start_session(None).await;
    receiver.wait_count(1, "session.started").await;
    harness.complete_session(&session_id).await;
    receiver.wait_count(2, "session.completed").await;
    let call_id = harness.start_call("connected").await;
    receiver.wait_count(3, "call.connected").await;
    harness.end_call(&call_id).await;
    receiver.wait_count(4, "call.ended").await;
    let failed_id = harness.start_call("failed").await;
    let requests = receiver.wait_count(5, "call.failed").await;
    let bodies: Vec<Value> = requests.iter().map(Captured::json).collect();

    let started = &bodies[0];
    assert_envelope(started, "session.started");
    let session = &started["session"];
    assert_session_object(session, &session_id);
    assert_eq!(session["status"], "created");
    assert!(session["duration_seconds"].is_null(), "{session}");
    assert!(session["ended_at"].is_null(), "{session}");
    assert!(session["public_close_reason"].is_null(), "{session}");
    assert!(session["s3_prefix"].is_string(), "{session}");
    assert!(started.get("call").is_none());

    let completed = &bodies[1];
    assert_envelope(completed, "session.completed");
    let session = &completed["session"];
    assert_session_object(session, &session_id);
    assert_eq!(session["status"], "completed");
    assert!(session["s3_prefix"].is_null(), "null in session.completed");
    assert!(session["duration_seconds"].is_number(), "{session}");
    assert!(is_rfc3339(&session["ended_at"]), "{session}");
    assert_ne!(completed["event_id"], started["event_id"]);

    let connected = &bodies[2];
    assert_envelope(connected, "call.connected");
    let call = &connected["call"];
    assert_call_object(call, &call_id);
    assert!(call["recording_url"].is_null(), "{call}");
    assert!(call["transcript_url"].is_null(), "{call}");

    let ended = &bodies[3];
    assert_envelope(ended, "call.ended");
    let call = &ended["call"];
    assert_call_object(call, &call_id);
    assert_eq!(call["status"], "ended");
    assert!(is_rfc3339(&call["ended_at"]), "{call}");
    for field in ["recording_url", "transcript_url"] {
        let url = call[field].as_str().unwrap_or_else(|| panic!("{field}"));
        assert!(url::Url::parse(url).is_ok(), "{field}: {url}");
        let response = harness.http.get(url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{field} usable immediately");
        assert!(!response.bytes().await.unwrap().is_empty());
    }

    let failed = &bodies[4];
    assert_envelope(failed, "call.failed");
    assert_call_object(&failed["call"], &failed_id);

    // The delivery records of a call are listed under the call_id.
    let records = harness.records(&call_id).await;
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records.iter().all(|r| r["session_id"] == call_id.as_str()));
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn call_artifact_urls_expire_one_hour_after_the_event() {
    // Scale 0.0005: one hour is 1.8 s. The 7.5 ms deadline does not matter:
    // the receiver records the body whether or not it answers in time.
    let harness = start_at(0.0005).await;
    let (receiver, _) = harness.healthy_subscriber(&[EventKind::CallEnded]).await;
    let call_id = harness.start_call("connected").await;
    let before = Instant::now();
    harness.end_call(&call_id).await;
    let after = Instant::now();
    let call = receiver.first_call().await;
    let urls: Vec<String> = ["recording_url", "transcript_url"]
        .iter()
        .map(|field| call[field].as_str().unwrap().to_owned())
        .collect();
    let status_of = |url: String| {
        let http = harness.http.clone();
        async move { http.get(url).send().await.unwrap().status().as_u16() }
    };
    for url in &urls {
        assert_eq!(status_of(url.clone()).await, 200, "usable at once: {url}");
    }
    // Still usable at 0.75 h (1.35 s) after the event at the latest ...
    tokio::time::sleep_until((before + Duration::from_millis(1350)).into()).await;
    for url in &urls {
        assert_eq!(status_of(url.clone()).await, 200, "within the hour: {url}");
    }
    // ... and not past 1.1 h (1.98 s) after the event at the earliest.
    tokio::time::sleep_until((after + Duration::from_millis(1980)).into()).await;
    for url in &urls {
        let status = status_of(url.clone()).await;
        assert!(
            !(200..300).contains(&status),
            "expired after an hour, got {status}: {url}"
        );
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn connected_arriving_after_ended_still_delivers_both() {
    // Scale 0.1: the first retry comes 500 ms after the failure, time for
    // the call to end and call.ended to be delivered first.
    let harness = start_at(0.1).await;
    let receiver = Receiver::start(|request, index| {
        if index == 0 && request.header("x-svc-event") == "call.connected" {
            Reply::status(503, "not ready")
        } else {
            Reply::ok()
        }
    })
    .await;
    let subscription = harness
        .subscribe(
            &receiver.url(),
            &[EventKind::CallConnected, EventKind::CallEnded],
        )
        .await;
    let call_id = harness.start_call("connected").await;
    harness.wait_settled(&call_id, &subscription.id).await;
    harness.end_call(&call_id).await;

    let requests = receiver.wait_count(3, "three requests").await;
    assert_eq!(
        events_of(&requests),
        ["call.connected", "call.ended", "call.connected"],
        "connected is retried after ended arrived"
    );
    assert_eq!(requests[0].body, requests[2].body);
    let records = harness
        .wait_records(&call_id, &subscription.id, "both delivered", |records| {
            records.len() == 3 && records.iter().all(|r| r["status"] != "pending")
        })
        .await;
    let status_of = |request: &Captured| {
        let id = request.header("x-svc-delivery-id");
        records
            .iter()
            .find(|record| record["id"] == id)
            .map(|record| record["status"].clone())
            .unwrap_or_else(|| panic!("no record for delivery {id}"))
    };
    assert_eq!(status_of(&requests[0]), "failed");
    assert_eq!(status_of(&requests[1]), "delivered", "call.ended");
    assert_eq!(status_of(&requests[2]), "delivered", "call.connected");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_retry_after_rotation_is_signed_with_the_new_secret() {
    // Scale 0.1: 500 ms between the failure and the retry to rotate in.
    let harness = start_at(0.1).await;
    let receiver = Receiver::failing_first(1, 503, "busy").await;
    let subscription = harness
        .subscribe(&receiver.url(), &[EventKind::CallFailed])
        .await;
    assert_eq!(subscription.secret_version, 1);
    let call_id = harness.start_call("failed").await;
    let first = harness.wait_settled(&call_id, &subscription.id).await;
    assert!(is_rfc3339(&first[0]["next_retry_at"]), "{}", first[0]);

    let rotated = harness.rotate_secret(&subscription.id, NEW_SECRET).await;
    assert_eq!(rotated.secret_version, 2);
    assert_eq!(receiver.count(), 1, "rotated before the retry");
    let (_, raw) = harness
        .get(&format!("/v1/webhook-subscriptions/{}", subscription.id))
        .await;
    assert_eq!(raw["secret_version"], 2);

    let records = harness
        .wait_records(&call_id, &subscription.id, "the retry", |records| {
            records.len() == 2 && records[1]["status"] != "pending"
        })
        .await;
    assert_eq!(records[1]["status"], "delivered");
    let captured = receiver.captured();
    assert!(verifies_with(&captured[0], SECRET), "attempt 1: old secret");
    assert!(verifies_with(&captured[1], NEW_SECRET), "retry: new secret");
    assert!(
        !verifies_with(&captured[1], SECRET),
        "retry: not the old one"
    );
    assert_eq!(captured[0].body, captured[1].body);
    let (t0, _) = signature_parts(captured[0].header("x-svc-signature")).unwrap();
    let (t1, _) = signature_parts(captured[1].header("x-svc-signature")).unwrap();
    assert!(t1 >= t0);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn an_attempt_in_flight_during_rotation_keeps_the_old_secret() {
    // Scale 0.1: deadline 1.5 s, so a 400 ms answer is in time.
    let harness = start_at(0.1).await;
    let receiver = Receiver::slow_first(Duration::from_millis(400)).await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;
    receiver.wait_count(1, "attempt 1 in flight").await;
    let rotated = harness.rotate_secret(&subscription.id, NEW_SECRET).await;
    assert_eq!(rotated.secret_version, 2);
    let records = harness.wait_settled(&call_id, &subscription.id).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "delivered", "{}", records[0]);
    let in_flight = &receiver.captured()[0];
    assert!(
        verifies_with(in_flight, SECRET),
        "signed before the rotation"
    );
    assert!(!verifies_with(in_flight, NEW_SECRET));

    // The next event is signed with the new secret.
    harness.start_call("failed").await;
    let next = eventually(Duration::from_secs(5), "the next event", || async {
        receiver.captured().get(1).cloned()
    })
    .await;
    assert!(verifies_with(&next, NEW_SECRET));
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn deleting_a_subscription_removes_its_history_and_pending_retries() {
    // Scale 0.1: the pending retry would come 500 ms after the failure.
    let harness = start_at(0.1).await;
    let failing = Receiver::start(|_, _| Reply::status(503, "down")).await;
    let doomed = harness
        .subscribe(&failing.url(), &[EventKind::CallFailed])
        .await;
    let (_healthy, kept) = harness.healthy_subscriber(&[EventKind::CallFailed]).await;
    let call_id = harness.start_call("failed").await;
    let failed = harness.wait_settled(&call_id, &doomed.id).await;
    assert!(
        is_rfc3339(&failed[0]["next_retry_at"]),
        "a retry is pending"
    );
    harness.wait_settled(&call_id, &kept.id).await;

    harness
        .client
        .delete_subscription(&doomed.id)
        .await
        .unwrap();
    let remaining = harness.records(&call_id).await;
    assert!(!remaining.is_empty());
    assert!(
        remaining
            .iter()
            .all(|r| r["subscription_id"] == kept.id.as_str()),
        "history of the deleted subscription is gone: {remaining:?}"
    );
    let (status, latest) = harness
        .get(&format!("/v1/sessions/{call_id}/webhook-deliveries/latest"))
        .await;
    assert_eq!(status, 200);
    let latest = latest["deliveries"].as_array().unwrap();
    assert_eq!(latest.len(), 1, "{latest:?}");
    assert_eq!(latest[0]["subscription_id"], kept.id.as_str());

    harness.wait_deliveries_idle().await;
    assert_eq!(failing.count(), 1, "the pending retry never arrives");
    assert!(harness.records_of(&call_id, &doomed.id).await.is_empty());
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn session_artifacts_appear_about_90_seconds_after_completion() {
    // Scale 0.01: 90 s is 900 ms.
    let harness = start().await;
    let session_id = harness.start_session(None).await;
    let (status, body) = harness.get(&format!("/v1/sessions/{session_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(body["artifacts"], serde_json::json!([]));

    let completed_at = Instant::now();
    harness.complete_session(&session_id).await;
    let (_, body) = harness.get(&format!("/v1/sessions/{session_id}")).await;
    assert_eq!(
        body["artifacts"],
        serde_json::json!([]),
        "empty right after session.completed"
    );
    let record = harness.client.get_session(&session_id).await.unwrap();
    assert!(record.artifacts.is_empty());

    let artifacts = eventually(Duration::from_secs(3), "artifacts", || async {
        let (_, body) = harness.get(&format!("/v1/sessions/{session_id}")).await;
        let artifacts = body["artifacts"].as_array().cloned().unwrap_or_default();
        (!artifacts.is_empty()).then_some(artifacts)
    })
    .await;
    assert!(
        completed_at.elapsed() >= Duration::from_millis(890),
        "not before 90 s (scaled): {:?}",
        completed_at.elapsed()
    );
    let mut kinds: Vec<&str> = artifacts
        .iter()
        .map(|artifact| artifact["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["recording", "transcript"]);
    for artifact in &artifacts {
        let url = artifact["url"].as_str().unwrap();
        let response = harness.http.get(url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        assert!(timestamp_of(artifact, "expires_at") > chrono::Utc::now());
    }
    harness.emulator.shutdown().await;
}
