//! Spec part 7 C, "Webhook receivers and subscriptions": one test per row
//! of the troubleshooting table, each with the receiver the row describes,
//! observed from the outside (receiver side and delivery records).

use crate::common;
use std::time::Duration;

use crate::common::{
    DEFAULT_AGENT, Harness, OTHER_AGENT, Receiver, Reply, SECRET, hmac_hex, start, timestamp_of,
    verifies_with,
};
use earshot_core::api::types::agents::{EventKind, SubscriptionPatch};
use earshot_core::signature::{Candidate, DEFAULT_TOLERANCE_SECS, diagnose, verify};
use serde_json::Value;

/// A delivery rejected with 401 by the receiver: the record says so in the
/// documented shape and the platform does not try again (part 5 C rule 4).
async fn assert_rejected_once(
    harness: &Harness,
    receiver: &Receiver,
    session_id: &str,
    subscription_id: &str,
    error: &str,
) {
    let records = harness.wait_settled(session_id, subscription_id).await;
    harness.wait_deliveries_idle().await;
    assert_eq!(receiver.count(), 1, "a 401 is not retried");
    let after = harness.records_of(session_id, subscription_id).await;
    assert_eq!(after, records, "no further attempt was recorded");
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["status"], "failed", "{record}");
    assert_eq!(record["error"], error, "{record}");
    assert_eq!(record["http_status_code"], 401, "{record}");
    assert!(record["next_retry_at"].is_null(), "{record}");
    assert!(record["delivered_at"].is_null(), "{record}");
    assert_eq!(record["attempt_count"], 1, "{record}");
    assert_eq!(
        receiver.captured()[0].header("x-svc-delivery-id"),
        record["id"],
        "the record is the attempt the receiver saw"
    );
}

/// The platform signed correctly: the crate's verifier accepts the request
/// the mistaken receiver rejected.
fn assert_genuine(receiver: &Receiver) {
    let request = &receiver.captured()[0];
    assert!(
        verifies_with(request, SECRET),
        "the platform's signature itself must be valid"
    );
}

/// What a receiver answers when its own check fails.
fn invalid_signature() -> Reply {
    Reply::status(401, "invalid signature")
}

/// A receiver that computes its own digest from the signature's timestamp
/// and the raw body (wrongly), and answers 401 unless it matches `v1`.
async fn mistaken_receiver(
    digest: impl Fn(i64, &[u8]) -> String + Send + Sync + 'static,
) -> Receiver {
    Receiver::start(move |request, _| {
        let Some((t, v1)) = common::signature_parts(request.header("x-svc-signature")) else {
            return invalid_signature();
        };
        if digest(t, &request.body) == v1 {
            Reply::ok()
        } else {
            invalid_signature()
        }
    })
    .await
}

/// The mistake of hashing a pretty-printed copy of the JSON body.
fn reserialised_digest(t: i64, body: &[u8]) -> String {
    let parsed: Value = serde_json::from_slice(body).unwrap();
    let pretty = serde_json::to_vec_pretty(&parsed).unwrap();
    hmac_hex(SECRET.as_bytes(), &[format!("{t}.").as_bytes(), &pretty])
}

/// The mistaken receiver rejected the one genuine delivery with 401
/// "invalid signature" and was not tried again.
async fn assert_signature_rejected_once(
    harness: &Harness,
    receiver: &Receiver,
    session_id: &str,
    subscription_id: &str,
) {
    assert_rejected_once(
        harness,
        receiver,
        session_id,
        subscription_id,
        "HTTP 401: invalid signature",
    )
    .await;
    assert_genuine(receiver);
}

#[tokio::test]
async fn receiver_hashing_a_reserialised_body_gets_401_and_no_retry() {
    let harness = start().await;
    // The mistake: parse the JSON, pretty-print it, hash that.
    let receiver = mistaken_receiver(reserialised_digest).await;
    let subscription = harness
        .subscribe(&receiver.url(), &[EventKind::SessionStarted])
        .await;
    let session_id = harness.start_session(None).await;

    assert_signature_rejected_once(&harness, &receiver, &session_id, &subscription.id).await;

    // The crate's diagnosis names the mistake from the receiver's digest.
    let request = &receiver.captured()[0];
    let header = request.header("x-svc-signature");
    let (t, _) = common::signature_parts(header).unwrap();
    let computed = reserialised_digest(t, &request.body);
    let diagnosis = diagnose(
        header,
        &request.body,
        &[Candidate {
            label: "current",
            secret: SECRET.as_bytes(),
        }],
        chrono::Utc::now().timestamp(),
        DEFAULT_TOLERANCE_SECS,
        Some(&computed),
    );
    assert!(
        diagnosis
            .findings
            .iter()
            .any(|finding| finding.code() == "receiver_mistake"),
        "{diagnosis:?}"
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn receiver_omitting_the_timestamp_prefix_gets_401_and_no_retry() {
    let harness = start().await;
    // The mistake: HMAC over the raw body alone, no "<t>." prefix.
    let receiver = mistaken_receiver(|_, body| hmac_hex(SECRET.as_bytes(), &[body])).await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;

    assert_signature_rejected_once(&harness, &receiver, &call_id, &subscription.id).await;
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn receiver_with_a_different_secret_gets_401_and_no_retry() {
    const RECEIVER_SECRET: &str = "whsec_some_other_secret_abcdefghijklmnopq";
    let harness = start().await;
    // Right computation, wrong key.
    let receiver = mistaken_receiver(|t, body| {
        hmac_hex(
            RECEIVER_SECRET.as_bytes(),
            &[format!("{t}.").as_bytes(), body],
        )
    })
    .await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;

    assert_signature_rejected_once(&harness, &receiver, &call_id, &subscription.id).await;
    harness.emulator.shutdown().await;
}

/// A correct verifier whose clock is `skew_secs` ahead of the real one.
fn skewed_receiver(skew_secs: i64) -> impl Fn(&common::Captured, usize) -> Reply {
    move |request, _| {
        let now = chrono::Utc::now().timestamp() + skew_secs;
        let verdict = verify(
            request.header("x-svc-signature"),
            &request.body,
            &[Candidate {
                label: "current",
                secret: SECRET.as_bytes(),
            }],
            now,
            DEFAULT_TOLERANCE_SECS,
        );
        if verdict.is_valid() {
            Reply::ok()
        } else {
            Reply::status(401, "timestamp outside tolerance")
        }
    }
}

#[tokio::test]
async fn receiver_clock_off_by_more_than_300_seconds_gets_401_and_no_retry() {
    let harness = start().await;
    let skewed = Receiver::start(skewed_receiver(400)).await;
    let tolerant = Receiver::start(skewed_receiver(200)).await;
    let too_far = harness
        .subscribe(&skewed.url(), &[EventKind::CallFailed])
        .await;
    let within = harness
        .subscribe(&tolerant.url(), &[EventKind::CallFailed])
        .await;
    let call_id = harness.start_call("failed").await;

    assert_rejected_once(
        &harness,
        &skewed,
        &call_id,
        &too_far.id,
        "HTTP 401: timestamp outside tolerance",
    )
    .await;
    assert_genuine(&skewed);

    let records = harness.wait_settled(&call_id, &within.id).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["status"], "delivered", "{}", records[0]);
    assert_eq!(records[0]["http_status_code"], 200);
    assert!(records[0]["error"].is_null());
    assert_eq!(tolerant.count(), 1);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn session_only_subscription_receives_nothing_for_calls() {
    let harness = start().await;
    let (sessions, session_only) = harness
        .healthy_subscriber(&[EventKind::SessionStarted, EventKind::SessionCompleted])
        .await;
    let (calls, call_events) = harness
        .healthy_subscriber(&[
            EventKind::CallConnected,
            EventKind::CallEnded,
            EventKind::CallFailed,
        ])
        .await;

    let answered = harness.start_call("connected").await;
    harness.end_call(&answered).await;
    let failed = harness.start_call("failed").await;

    calls.wait_count(3, "three call deliveries").await;
    let mut seen: Vec<String> = calls
        .captured()
        .iter()
        .map(|request| request.header("x-svc-event").to_owned())
        .collect();
    seen.sort();
    assert_eq!(seen, ["call.connected", "call.ended", "call.failed"]);
    for call_id in [&answered, &failed] {
        harness
            .wait_records(
                call_id,
                &call_events.id,
                "delivered call events",
                |records| {
                    records.iter().all(|record| record["status"] == "delivered")
                        && !records.is_empty()
                },
            )
            .await;
    }
    harness.wait_deliveries_idle().await;
    assert_eq!(sessions.count(), 0, "phone calls never emit session.*");
    for call_id in [&answered, &failed] {
        assert!(
            harness
                .records_of(call_id, &session_only.id)
                .await
                .is_empty(),
            "no delivery record for the session-only subscription"
        );
    }

    // The same subscription does get session events.
    let session_id = harness.start_session(None).await;
    sessions.wait_count(1, "session.started").await;
    assert_eq!(
        sessions.captured()[0].header("x-svc-event"),
        "session.started"
    );
    assert_eq!(
        sessions.captured()[0].json()["session"]["session_id"],
        session_id.as_str()
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn paused_subscription_receives_nothing_until_resumed() {
    let harness = start().await;
    let (paused, subscription) = harness.healthy_subscriber(&[EventKind::CallFailed]).await;
    let (_control, witness) = harness.healthy_subscriber(&[EventKind::CallFailed]).await;
    let answer = harness
        .client
        .update_subscription(
            &subscription.id,
            &SubscriptionPatch {
                enabled: Some(false),
                ..SubscriptionPatch::default()
            },
        )
        .await
        .unwrap();
    assert!(!answer.enabled);

    let while_paused = harness.start_call("failed").await;
    harness.wait_settled(&while_paused, &witness.id).await;
    harness.wait_deliveries_idle().await;
    assert_eq!(paused.count(), 0, "a paused subscription gets nothing");
    assert!(
        harness
            .records_of(&while_paused, &subscription.id)
            .await
            .is_empty()
    );

    let (status, resumed) = harness
        .raw_patch(&subscription.id, r#"{"enabled": true}"#)
        .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["enabled"], true);
    let after_resume = harness.start_call("failed").await;
    let records = harness.wait_settled(&after_resume, &subscription.id).await;
    assert_eq!(records[0]["status"], "delivered", "{}", records[0]);
    harness.wait_deliveries_idle().await;
    assert_eq!(
        paused.count(),
        1,
        "only the event after resuming arrives (no backlog)"
    );
    assert_eq!(
        paused.captured()[0].json()["call"]["call_id"],
        after_resume.as_str()
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn subscription_scoped_to_another_agent_receives_nothing() {
    let harness = start().await;
    let (elsewhere, other) = harness
        .healthy_subscriber_for(&[EventKind::CallFailed], Some(OTHER_AGENT))
        .await;
    let (here, emitting) = harness
        .healthy_subscriber_for(&[EventKind::CallFailed], Some(DEFAULT_AGENT))
        .await;
    assert_eq!(other.agent_id.as_deref(), Some(OTHER_AGENT));

    let call_id = harness.start_call_for(DEFAULT_AGENT, "failed").await;
    let records = harness.wait_settled(&call_id, &emitting.id).await;
    assert_eq!(records[0]["status"], "delivered", "{}", records[0]);
    assert_eq!(here.count(), 1);
    assert_eq!(here.captured()[0].json()["call"]["agent_id"], DEFAULT_AGENT);
    harness.wait_deliveries_idle().await;
    assert_eq!(elsewhere.count(), 0, "scoped to another agent");
    assert!(harness.records_of(&call_id, &other.id).await.is_empty());

    // The other agent's calls reach it, and not the first one.
    let other_call = harness.start_call_for(OTHER_AGENT, "failed").await;
    harness.wait_settled(&other_call, &other.id).await;
    assert_eq!(elsewhere.count(), 1);
    harness.wait_deliveries_idle().await;
    assert_eq!(here.count(), 1);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn redirecting_receiver_fails_once_and_is_not_followed() {
    let harness = start().await;
    let target = Receiver::healthy().await;
    let location = target.url();
    let redirecting = Receiver::start(move |_, _| Reply {
        location: Some(location.clone()),
        ..Reply::status(301, "moved")
    })
    .await;
    let (subscription, call_id) = harness.failed_call_to(&redirecting.url()).await;

    let records = harness.wait_settled(&call_id, &subscription.id).await;
    harness.wait_deliveries_idle().await;
    assert_eq!(
        harness.records_of(&call_id, &subscription.id).await,
        records,
        "no retry recorded"
    );
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["status"], "failed", "{record}");
    assert_eq!(record["http_status_code"], 301, "{record}");
    let error = record["error"].as_str().expect("an error message");
    assert!(error.starts_with("HTTP 301: "), "{error}");
    assert!(record["next_retry_at"].is_null(), "{record}");
    assert_eq!(redirecting.count(), 1, "a redirect is not retried");
    assert_eq!(target.count(), 0, "the redirect is not followed");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn receiver_slower_than_the_deadline_times_out_and_is_retried() {
    // Scale 0.01: deadline 150 ms, first retry 50 ms after the failure.
    let deadline = Duration::from_millis(150);
    let harness = start().await;
    let receiver = Receiver::slow_first(Duration::from_millis(600)).await;
    let (subscription, call_id) = harness.failed_call_to(&receiver.url()).await;

    let records = harness
        .wait_records(&call_id, &subscription.id, "a second attempt", |records| {
            records.len() == 2 && records[1]["status"] != "pending"
        })
        .await;
    let (first, second) = (&records[0], &records[1]);
    assert_eq!(first["status"], "failed", "{first}");
    assert!(first["http_status_code"].is_null(), "{first}");
    let error = first["error"].as_str().expect("an error");
    assert!(error.contains("timeout"), "{error}");
    assert_eq!(first["attempt_count"], 1);
    // Set when the attempt failed, i.e. at least one deadline after it
    // started, and later than that failure.
    let next_retry_at = timestamp_of(first, "next_retry_at");
    let started = timestamp_of(first, "created_at");
    assert!(
        next_retry_at > started + chrono::Duration::from_std(deadline).unwrap(),
        "next_retry_at {next_retry_at} is after the timed-out attempt ({started} + 150 ms)"
    );
    assert!(
        timestamp_of(second, "created_at") + chrono::Duration::milliseconds(5) >= next_retry_at,
        "the retry did not start before next_retry_at"
    );

    assert_eq!(second["status"], "delivered", "{second}");
    assert_eq!(second["attempt_count"], 2);
    assert_eq!(second["http_status_code"], 200);
    assert!(second["error"].is_null());
    let captured = receiver.captured();
    assert_eq!(captured.len(), 2);
    assert_ne!(
        captured[0].header("x-svc-delivery-id"),
        captured[1].header("x-svc-delivery-id"),
        "every attempt has its own delivery id"
    );
    assert_eq!(captured[0].header("x-svc-delivery-id"), first["id"]);
    assert_eq!(captured[1].header("x-svc-delivery-id"), second["id"]);
    assert_eq!(captured[0].body, captured[1].body, "same event, same bytes");
    assert!(captured[1].at.duration_since(captured[0].at) >= deadline);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn subscription_scoped_with_another_spelling_of_the_agent_uuid_receives_its_events() {
    // The emulator accepts these as UUIDs (201); each names the emitting
    // agent, so "scoped to another agent_id" must not apply to them.
    let spellings = [
        DEFAULT_AGENT.to_ascii_uppercase(),
        DEFAULT_AGENT.replace('-', ""),
        format!("urn:uuid:{DEFAULT_AGENT}"),
    ];
    let harness = start().await;
    let mut scoped = Vec::new();
    for spelling in &spellings {
        let receiver = Receiver::healthy().await;
        let subscription = harness
            .subscribe_with(&receiver.url(), &[EventKind::CallFailed], Some(spelling))
            .await;
        scoped.push((spelling, receiver, subscription));
    }
    let (_canonical, witness) = harness
        .healthy_subscriber_for(&[EventKind::CallFailed], Some(DEFAULT_AGENT))
        .await;

    let call_id = harness.start_call_for(DEFAULT_AGENT, "failed").await;
    harness.wait_settled(&call_id, &witness.id).await;
    harness.wait_deliveries_idle().await;
    let missed: Vec<&str> = scoped
        .iter()
        .filter(|(_, receiver, _)| receiver.count() == 0)
        .map(|(spelling, _, _)| spelling.as_str())
        .collect();
    assert!(
        missed.is_empty(),
        "accepted as agent {DEFAULT_AGENT} but received nothing for its call: {missed:?}"
    );
    harness.emulator.shutdown().await;
}
