//! The manual clock (`Emulator::builder().manual_clock()`,
//! `Emulator::advance`), through the public API only: delivery retries,
//! pre-recorded processing and webhook retries, the artifact delay and
//! presigned-link expiry happen when the test moves the clock, each by the
//! time `advance` returns, and not a moment of emulated time before.

use crate::support;

use std::time::{Duration, Instant};

use earshot_emulator::protocol::duration_text;
use earshot_emulator::protocol::signature::{InvalidReason, Verdict};
use earshot_emulator::{Delivery, Emulator, MAX_CLOCK_MOVE, NoManualClock, Route};
use reqwest::Method;
use serde_json::{Value, json};
use support::{Mode, Received, Receiver, audio, call, manual_emulator, other_secret, subscribe};

const SECOND: Duration = Duration::from_secs(1);

fn is_valid(received: &Received) -> bool {
    received.verdict.as_ref().is_some_and(Verdict::is_valid)
}

/// `advance`, which only fails on a scaled clock.
async fn advance(emulator: &Emulator, by: Duration) {
    emulator
        .advance(by)
        .await
        .expect("the emulator has a manual clock");
}

/// The done-when test: a receiver in the test, every retry of an
/// event it fails, then a duplicate and a wrongly signed delivery; the
/// receiver got exactly what the platform sends, and the platform's
/// records and journal agree.
#[tokio::test]
async fn every_retry_a_duplicate_and_a_forged_delivery_reach_the_receiver_as_the_platform_sends() {
    let emulator = manual_emulator().await;
    let receiver = Receiver::start(Mode::Unavailable).await;
    emulator.expect(Route::CreateSubscription).times(1);
    emulator.expect(Route::ListDeliveries).times(1);
    emulator.expect(Route::DeleteSubscription).never();
    let subscription = subscribe(&emulator, &receiver.url(), &["session.started"]).await;

    let session = emulator.start_session(None).expect("a session starts");
    advance(&emulator, Duration::ZERO).await;
    assert_eq!(receiver.received().len(), 1, "the first attempt, at once");

    // 5 s, 30 s, 2 min, 10 min, 30 min: each retry exactly at its time.
    let mut moved = Duration::ZERO;
    for (retry, wait) in [5u64, 30, 120, 600, 1800].into_iter().enumerate() {
        let wait = Duration::from_secs(wait);
        if retry == 4 {
            receiver.answer_as(Mode::Verify); // the last one succeeds
        }
        advance(&emulator, wait - SECOND).await;
        assert_eq!(receiver.received().len(), retry + 1, "not before its time");
        advance(&emulator, SECOND).await;
        assert_eq!(receiver.received().len(), retry + 2, "retry {}", retry + 1);
        moved += wait;
    }
    assert_eq!(emulator.clock_moved(), Some(moved));
    assert!(emulator.busy().is_idle(), "{}", emulator.busy());
    advance(&emulator, Duration::from_secs(24 * 3600)).await;
    let attempts = receiver.received();
    assert_eq!(attempts.len(), 6, "no seventh attempt");

    let event_id = attempts[0].event_id();
    let answers = emulator
        .deliver(&subscription, Delivery::duplicate_of(event_id.clone()))
        .await
        .expect("a duplicate is delivered");
    assert_eq!(answers[0].status, Some(200));
    let answers = emulator
        .deliver(
            &subscription,
            Delivery::of(event_id.clone()).signed_with(other_secret("forged")),
        )
        .await
        .expect("a forged delivery is delivered");
    assert_eq!(answers[0].status, Some(401));

    let got = receiver.received();
    assert_eq!(got.len(), 8);
    let statuses: Vec<u16> = got.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [503, 503, 503, 503, 503, 200, 200, 401]);
    for received in &got {
        assert_eq!(received.body, got[0].body, "the same bytes every time");
        assert_eq!(received.event_id(), event_id);
        assert_eq!(received.header("x-svc-event"), "session.started");
    }
    assert!(got[..7].iter().all(is_valid), "signed with the secret");
    assert!(
        matches!(
            got[7].verdict,
            Some(Verdict::Invalid(InvalidReason::NoMatchingSignature { .. }))
        ),
        "{:?}",
        got[7].verdict
    );

    // The platform's records: the six attempts, not the deliveries the
    // test asked for; the journal holds the calls the test made.
    let path = format!("v1/sessions/{session}/webhook-deliveries");
    let (status, listed) = call(&emulator, Method::GET, &path, None).await;
    assert_eq!(status, 200, "{listed}");
    let mut records = listed["deliveries"].as_array().cloned().unwrap_or_default();
    records.sort_by_key(|record| record["attempt_count"].as_u64());
    let counts: Vec<Option<u64>> = records
        .iter()
        .map(|r| r["attempt_count"].as_u64())
        .collect();
    assert_eq!(counts, (1..=6).map(Some).collect::<Vec<_>>(), "{listed}");
    for (record, received) in records.iter().zip(&got) {
        assert_eq!(record["id"], received.header("x-svc-delivery-id"));
        assert_eq!(record["http_status_code"], received.status);
    }
    assert_eq!(records[5]["status"], "delivered");
    assert_eq!(records[4]["error"], "HTTP 503: Service Unavailable");
    let journal = emulator.journal();
    let routes: Vec<Option<Route>> = journal.iter().map(|entry| entry.route).collect();
    assert_eq!(
        routes,
        [Some(Route::CreateSubscription), Some(Route::ListDeliveries)]
    );
    assert_eq!(journal[1].path, format!("/{path}"));
    emulator.verify().expect("the expectations hold");
}

/// A pre-recorded job of 4 s of audio (1 s of processing) with a webhook
/// to `receiver`; its id.
async fn job_with_webhook(emulator: &Emulator, receiver: &Receiver) -> String {
    let upload = support::upload(emulator, audio(4, "the words")).await;
    let (status, job) = call(
        emulator,
        Method::POST,
        "v2/transcript",
        Some(json!({"audio_url": upload["upload_url"], "webhook_url": receiver.url()})),
    )
    .await;
    assert_eq!(status, 200, "{job}");
    job["id"].as_str().expect("a job has an id").to_owned()
}

/// The measurement of the issue: "the 10th attempt of a delivery" (a
/// pre-recorded webhook, sent up to 10 times 10 s apart) without waiting
/// for the nine intervals. The wall time is printed, not asserted.
#[tokio::test]
async fn the_tenth_webhook_attempt_comes_when_the_clock_is_moved_past_nine_intervals() {
    let emulator = manual_emulator().await;
    let receiver = Receiver::start(Mode::Unavailable).await;
    let id = job_with_webhook(&emulator, &receiver).await;
    let path = format!("v2/transcript/{id}");

    let started = Instant::now();
    advance(&emulator, SECOND - Duration::from_millis(1)).await;
    let (_, job) = call(&emulator, Method::GET, &path, None).await;
    assert_eq!(job["status"], "processing", "1 s of processing: {job}");
    advance(&emulator, Duration::from_millis(1)).await;
    assert_eq!(receiver.received().len(), 1, "the webhook, once done");
    advance(&emulator, Duration::from_secs(90)).await;
    let took = started.elapsed();

    assert_eq!(receiver.received().len(), 10);
    eprintln!(
        "the 10th webhook attempt, 91 s of emulated time, took {} of wall time",
        duration_text::of(took)
    );
    advance(&emulator, Duration::from_secs(3600)).await;
    assert_eq!(receiver.received().len(), 10, "10 attempts at most");
    let (_, job) = call(&emulator, Method::GET, &path, None).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["webhook_status_code"], 503, "{job}");
    assert!(emulator.busy().is_idle(), "{}", emulator.busy());
}

/// Artifacts are listed 90 s after `session.completed` and their links
/// answer for an hour after it, on the moved clock.
#[tokio::test]
async fn artifacts_are_listed_at_90_s_and_links_expire_at_one_hour_of_the_moved_clock() {
    let emulator = manual_emulator().await;
    let session = emulator.start_session(None).expect("a session starts");
    emulator.complete_session(&session).expect("it completes");
    let path = format!("v1/sessions/{session}");
    let artifacts = |body: &Value| body["artifacts"].as_array().cloned().unwrap_or_default();

    advance(&emulator, Duration::from_secs(89)).await;
    let (_, before) = call(&emulator, Method::GET, &path, None).await;
    assert_eq!(artifacts(&before), Vec::<Value>::new(), "{before}");
    advance(&emulator, SECOND).await;
    let (_, after) = call(&emulator, Method::GET, &path, None).await;
    let listed = artifacts(&after);
    assert_eq!(listed.len(), 2, "{after}");

    let http = support::http();
    let fetch = |url: String| {
        let http = http.clone();
        async move {
            http.get(url)
                .send()
                .await
                .expect("the link is answered")
                .status()
                .as_u16()
        }
    };
    let url = listed[0]["url"].as_str().expect("a URL").to_owned();
    advance(&emulator, Duration::from_secs(3600 - 91)).await;
    assert_eq!(fetch(url.clone()).await, 200, "a second before the hour");
    advance(&emulator, SECOND).await;
    assert_eq!(fetch(url).await, 403, "an hour after the event");
}

#[tokio::test]
async fn a_scaled_clock_cannot_be_advanced() {
    let emulator = support::emulator().await;
    let refused = emulator.advance(SECOND).await;
    assert_eq!(
        refused.map_err(|error| error.to_string()),
        Err("this emulator runs on real time × 0.01; only one started with `Emulator::builder().manual_clock()` can be advanced".to_owned())
    );
    assert!(matches!(
        emulator.advance(SECOND).await,
        Err(NoManualClock { .. })
    ));
    assert_eq!(emulator.clock_moved(), None);
}

#[tokio::test]
async fn the_clock_moves_a_century_at_most() {
    let emulator = manual_emulator().await;
    advance(&emulator, Duration::MAX).await;
    advance(&emulator, SECOND).await;
    assert_eq!(emulator.clock_moved(), Some(MAX_CLOCK_MOVE));
    // Reading the moved clock still works: a session's record.
    let session = emulator.start_session(None).expect("a session starts");
    emulator.complete_session(&session).expect("it completes");
    let (status, record) = call(
        &emulator,
        Method::GET,
        &format!("v1/sessions/{session}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{record}");
}
