//! Deliveries on demand to the app under test (`Emulator::deliver`),
//! through the public API only: each reaches a small receiver with the
//! bytes and headers the platform sends, signed as the case says (checked
//! with the protocol crate's verifier), and the whole `check-receiver`
//! battery runs through the emulator against a correct receiver.

use crate::support;

use std::time::{Duration, Instant};

use earshot_emulator::protocol::delivery::cases::{AgentCase, CaseEvents, wrong_secret};
use earshot_emulator::protocol::signature::{InvalidReason, Verdict};
use earshot_emulator::{ControlError, Delivery, Emulator, NewCall, Route};
use reqwest::Method;
use serde_json::json;
use support::{Mode, Received, Receiver, SECRET, call, emulator, other_secret, subscribe};

const EVENTS: [&str; 5] = [
    "session.started",
    "session.completed",
    "call.connected",
    "call.ended",
    "call.failed",
];

/// An emulator and a correct receiver subscribed to every event.
async fn subscribed() -> (Emulator, Receiver, String) {
    let emulator = emulator().await;
    let receiver = Receiver::start(Mode::Verify).await;
    let subscription = subscribe(&emulator, &receiver.url(), &EVENTS).await;
    (emulator, receiver, subscription)
}

fn is_valid(received: &Received) -> bool {
    received.verdict.as_ref().is_some_and(Verdict::is_valid)
}

#[tokio::test]
async fn a_duplicate_is_the_same_bytes_with_a_new_delivery_id() {
    let (emulator, receiver, subscription) = subscribed().await;
    // Counted from here: a delivery is the platform calling the app, no
    // request to the emulator.
    emulator.expect(Route::CreateSubscription).never();
    emulator.start_session(None).expect("a session starts");
    let original = receiver.wait_for(1).await.remove(0);
    assert!(is_valid(&original));

    let answers = emulator
        .deliver(&subscription, Delivery::duplicate_of(original.event_id()))
        .await
        .expect("the event is delivered again");

    let got = receiver.wait_for(2).await;
    let duplicate = &got[1];
    assert_eq!(duplicate.body, original.body, "the same bytes");
    assert_eq!(duplicate.header("x-svc-event"), "session.started");
    assert_eq!(duplicate.header("user-agent"), "SVC-Webhooks/1.0");
    assert_eq!(duplicate.header("content-type"), "application/json");
    assert_ne!(
        duplicate.header("x-svc-delivery-id"),
        original.header("x-svc-delivery-id")
    );
    assert!(is_valid(duplicate), "{:?}", duplicate.verdict);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, Some(200));
    assert_eq!(answers[0].event_id, original.event_id());
    assert_eq!(
        answers[0].delivery_id,
        duplicate.header("x-svc-delivery-id")
    );
    let journal = emulator.journal();
    assert_eq!(
        journal.len(),
        1,
        "the subscription's creation only: {journal:?}"
    );
    emulator
        .verify()
        .expect("nothing more reached the emulator");
}

#[tokio::test]
async fn another_secret_gives_a_signature_the_receiver_refuses() {
    let (emulator, receiver, subscription) = subscribed().await;
    emulator.start_session(None).expect("a session starts");
    let original = receiver.wait_for(1).await.remove(0);
    let wrong = other_secret("wrong");

    let answers = emulator
        .deliver(
            &subscription,
            Delivery::of(original.event_id()).signed_with(wrong.clone()),
        )
        .await
        .expect("delivered");

    let forged = receiver.wait_for(2).await.remove(1);
    assert_eq!(forged.body, original.body);
    assert!(
        matches!(
            forged.verdict,
            Some(Verdict::Invalid(InvalidReason::NoMatchingSignature { .. }))
        ),
        "{:?}",
        forged.verdict
    );
    // Made with that other secret, not garbled.
    let expected = earshot_emulator::protocol::signature::sign(
        wrong.expose().as_bytes(),
        forged.timestamp(),
        &forged.body,
    );
    assert_eq!(forged.header("x-svc-signature"), expected);
    assert_eq!(answers[0].status, Some(401));
    assert!(
        answers[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("HTTP 401")),
        "{:?}",
        answers[0]
    );
}

#[tokio::test]
async fn a_stale_delivery_is_correctly_signed_with_an_old_t() {
    let (emulator, receiver, subscription) = subscribed().await;
    emulator.start_session(None).expect("a session starts");
    let original = receiver.wait_for(1).await.remove(0);
    let before = support::unix_now();

    let answers = emulator
        .deliver(
            &subscription,
            Delivery::of(original.event_id()).stale(Duration::from_secs(400)),
        )
        .await
        .expect("delivered");

    let stale = receiver.wait_for(2).await.remove(1);
    let age = before - stale.timestamp();
    assert!((400..=402).contains(&age), "t is {age} s old");
    match &stale.verdict {
        Some(Verdict::Invalid(InvalidReason::TimestampOutsideTolerance {
            digest_matched, ..
        })) => assert_eq!(digest_matched.as_deref(), Some("current")),
        other => panic!("expected a stale but genuine signature, got {other:?}"),
    }
    assert_eq!(answers[0].status, Some(401));
}

#[tokio::test]
async fn a_slow_delivery_arrives_late_signed_when_it_was_sent() {
    let (emulator, receiver, subscription) = subscribed().await;
    emulator.start_session(None).expect("a session starts");
    let original = receiver.wait_for(1).await.remove(0);
    let asked = Instant::now();
    let signed_by = support::unix_now();

    let answers = emulator
        .deliver(
            &subscription,
            Delivery::duplicate_of(original.event_id()).slow_by(Duration::from_millis(400)),
        )
        .await
        .expect("delivered");

    let late = receiver.wait_for(2).await.remove(1);
    let waited = late.at.duration_since(asked);
    assert!(
        waited >= Duration::from_millis(400),
        "arrived after {waited:?}"
    );
    assert!(late.timestamp() <= signed_by, "t is the signing time");
    assert!(is_valid(&late), "within the tolerance: {:?}", late.verdict);
    assert_eq!(answers[0].status, Some(200));
}

#[tokio::test]
async fn out_of_order_sends_the_later_event_first() {
    let (emulator, receiver, subscription) = subscribed().await;
    let call_id = emulator
        .start_call(NewCall::connected())
        .expect("a call starts");
    receiver.wait_for(1).await;
    emulator.end_call(&call_id).expect("the call ends");
    let got = receiver.wait_for(2).await;
    let (connected, ended) = (&got[0], &got[1]);
    assert_eq!(connected.header("x-svc-event"), "call.connected");
    assert_eq!(ended.header("x-svc-event"), "call.ended");

    let answers = emulator
        .deliver(
            &subscription,
            Delivery::out_of_order(connected.event_id(), ended.event_id()),
        )
        .await
        .expect("delivered");

    let got = receiver.wait_for(4).await;
    assert_eq!(got[2].body, ended.body, "call.ended first");
    assert_eq!(got[3].body, connected.body, "then call.connected");
    assert!(got[2..].iter().all(is_valid));
    let statuses: Vec<_> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(statuses, [Some(200), Some(200)]);
}

#[tokio::test]
async fn an_unknown_subscription_or_event_is_refused() {
    let (emulator, _receiver, subscription) = subscribed().await;
    let unknown = emulator
        .deliver("no-such-subscription", Delivery::of("x"))
        .await
        .expect_err("no such subscription");
    assert!(matches!(unknown, ControlError::NotFound(_)), "{unknown:?}");
    let unknown = emulator
        .deliver(&subscription, Delivery::of("not-an-event"))
        .await
        .expect_err("no such event");
    assert_eq!(
        unknown.to_string(),
        "no event not-an-event to deliver (it was never sent, or was forgotten since)"
    );
}

/// The event id of the first request the receiver got for `event`.
fn event_id_of(got: &[Received], event: &str) -> String {
    got.iter()
        .find(|received| received.header("x-svc-event") == event)
        .map(Received::event_id)
        .unwrap_or_else(|| panic!("no {event} received"))
}

#[tokio::test]
async fn the_check_receiver_battery_runs_through_the_emulator() {
    let (emulator, receiver, subscription) = subscribed().await;
    let session = emulator.start_session(None).expect("a session starts");
    emulator.complete_session(&session).expect("it completes");
    let call_id = emulator
        .start_call(NewCall::connected())
        .expect("a call starts");
    emulator.end_call(&call_id).expect("it ends");
    emulator
        .start_call(NewCall::failed())
        .expect("a call fails");
    let got = receiver.wait_for(5).await;
    emulator
        .settled_within(Duration::from_secs(10))
        .await
        .expect("delivered");

    // The secret is rotated: the old one is the previous secret.
    let rotated = "whsec_the_rotated_secret_of_the_test_0123456";
    receiver.also_accept(rotated);
    let (status, _) = call(
        &emulator,
        Method::PATCH,
        &format!("v1/webhook-subscriptions/{subscription}"),
        Some(json!({ "secret": rotated })),
    )
    .await;
    assert_eq!(status, 200);

    let started = event_id_of(&got, "session.started");
    let events = CaseEvents {
        valid: EVENTS
            .iter()
            .map(|event| (*event, event_id_of(&got, event)))
            .collect(),
        forged: started.clone(),
        stale: started.clone(),
        future: started.clone(),
        repeated: event_id_of(&got, "call.ended"),
        connected: event_id_of(&got, "call.connected"),
        ended: event_id_of(&got, "call.ended"),
        rotated: event_id_of(&got, "session.completed"),
        wrong_secret: wrong_secret(),
        previous_secret: Some(earshot_emulator::SecretString::new(SECRET)),
    };
    for case in AgentCase::ALL {
        let deliveries = case.deliveries(&events).expect("every case has its events");
        for delivery in deliveries {
            let answers = emulator
                .deliver(&subscription, delivery)
                .await
                .expect("the case is delivered");
            for answer in answers {
                let accepted = answer.status.is_some_and(|s| (200..300).contains(&s));
                assert_eq!(
                    accepted,
                    case.accepted(),
                    "{}: a correct receiver answered {:?}",
                    case.name(),
                    answer
                );
            }
        }
    }
}
