//! The emulator as a test double, through its public API only: the
//! journal of the requests it got, expectations checked by `verify()` or
//! on drop, and `settled()`.

use crate::support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use earshot_emulator::{AccountChange, Emulator, Fault, JOURNAL_BODY_LIMIT, Route, Times};
use reqwest::Method;
use serde_json::{Value, json};
use support::{Mode, Receiver, SECRET, audio, call, emulator, subscribe};

#[tokio::test]
async fn the_journal_lists_every_request_with_its_route_status_and_body() {
    let emulator = emulator().await;
    let id = subscribe(&emulator, "http://127.0.0.1:9/hooks", &["session.started"]).await;
    let (missing, _) = call(
        &emulator,
        Method::GET,
        "v1/webhook-subscriptions/nope",
        None,
    )
    .await;
    let (stats, _) = call(&emulator, Method::GET, "_emulator/stats", None).await;
    let (listed, _) = call(
        &emulator,
        Method::GET,
        "v1/webhook-subscriptions?include_disabled=true",
        None,
    )
    .await;

    let journal = emulator.journal();
    let seen: Vec<_> = journal
        .iter()
        .map(|entry| {
            (
                entry.method.as_str(),
                entry.path.as_str(),
                entry.route,
                entry.status,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "POST",
                "/v1/webhook-subscriptions",
                Some(Route::CreateSubscription),
                201
            ),
            (
                "GET",
                "/v1/webhook-subscriptions/nope",
                Some(Route::GetSubscription),
                missing
            ),
            ("GET", "/_emulator/stats", None, stats),
            (
                "GET",
                "/v1/webhook-subscriptions",
                Some(Route::ListSubscriptions),
                listed
            ),
        ]
    );
    assert_eq!((missing, stats, listed), (404, 200, 200));
    assert_eq!(journal[3].query.as_deref(), Some("include_disabled=true"));
    let seqs: Vec<u64> = journal.iter().map(|entry| entry.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert!(journal.windows(2).all(|pair| pair[0].at <= pair[1].at));

    // The body as the emulator read it, and nothing of it when printed.
    let created: Value = journal[0]
        .body_json()
        .expect("the body kept is the JSON sent");
    assert_eq!(created["url"], "http://127.0.0.1:9/hooks");
    assert_eq!(journal[0].body_len, journal[0].body.len() as u64);
    for shown in [format!("{}", journal[0]), format!("{:?}", journal[0])] {
        assert!(!shown.contains(SECRET), "{shown}");
    }
    let line = journal[0].to_string();
    let tail = format!(
        " UTC  POST /v1/webhook-subscriptions → 201 ({} B body)",
        journal[0].body_len
    );
    assert!(line.starts_with("#1 ") && line.ends_with(&tail), "{line}");
    assert_eq!(emulator.journal_of(Route::GetSubscription).len(), 1);
    assert!(!id.is_empty());
}

#[tokio::test]
async fn the_journal_keeps_the_start_of_a_long_body_and_counts_it_whole() {
    let emulator = emulator().await;
    let audio = audio(1, "long enough");
    assert!(audio.len() > JOURNAL_BODY_LIMIT);
    let response = support::http()
        .post(emulator.url().join("v2/upload").expect("joins"))
        .header("Authorization", emulator.api_key().expose())
        .body(audio.clone())
        .send()
        .await
        .expect("the upload is answered");
    assert_eq!(response.status(), 200);
    let entry = emulator.journal_of(Route::Upload).remove(0);
    assert_eq!(entry.body, audio[..JOURNAL_BODY_LIMIT]);
    assert_eq!(entry.body_len, audio.len() as u64);
}

#[tokio::test]
async fn the_journal_keeps_the_newest_and_expectations_still_count_all() {
    let emulator = Emulator::builder()
        .journal_keep(2)
        .start()
        .await
        .expect("the emulator starts");
    emulator.expect(Route::ListSubscriptions).times(5);
    for _ in 0..5 {
        call(&emulator, Method::GET, "v1/webhook-subscriptions", None).await;
    }
    let seqs: Vec<u64> = emulator.journal().iter().map(|entry| entry.seq).collect();
    assert_eq!(seqs, [4, 5]);
    emulator.verify().expect("all five requests were counted");
}

#[tokio::test]
async fn expectations_that_are_met_verify() {
    let emulator = emulator().await;
    emulator.expect(Route::CreateSubscription).times(2);
    emulator.expect(Route::ListSubscriptions).at_least(1);
    emulator.expect(Route::GetSubscription).at_most(1);
    emulator.expect(Route::DeleteSubscription).never();
    subscribe(&emulator, "http://127.0.0.1:9/a", &["session.started"]).await;
    subscribe(&emulator, "http://127.0.0.1:9/b", &["session.started"]).await;
    call(&emulator, Method::GET, "v1/webhook-subscriptions", None).await;
    emulator.verify().expect("every expectation is met");
}

#[tokio::test]
async fn an_unmet_expectation_fails_verify_with_a_diff_of_its_requests() {
    let emulator = emulator().await;
    emulator.expect(Route::CreateSubscription).times(3);
    emulator.expect(Route::GetSession).times(0);
    emulator
        .arm_fault(Fault::status("/v1/webhook-subscriptions", 503))
        .expect("a fault arms");
    let (faulted, _) = call(
        &emulator,
        Method::POST,
        "v1/webhook-subscriptions",
        Some(
            json!({"url": "http://127.0.0.1:9/a", "events": ["session.started"], "secret": SECRET}),
        ),
    )
    .await;
    assert_eq!(faulted, 503);
    subscribe(&emulator, "http://127.0.0.1:9/a", &["session.started"]).await;

    emulator
        .arm_fault(Fault::drop_connection("/v1/webhook-subscriptions"))
        .expect("a fault arms");
    let dropped = support::http()
        .get(
            emulator
                .url()
                .join("v1/webhook-subscriptions")
                .expect("joins"),
        )
        .header("Authorization", emulator.api_key().expose())
        .send()
        .await;
    assert!(dropped.is_err(), "no answer: {dropped:?}");

    let error = emulator.verify().expect_err("2 of 3 creations, not 3");
    assert_eq!(error.unmet.len(), 1);
    let unmet = &error.unmet[0];
    assert_eq!(
        (unmet.route, unmet.expected, unmet.received),
        (Route::CreateSubscription, Times::Exactly(3), 2)
    );
    let text = error.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], "1 expectation on the emulator not met:");
    assert_eq!(
        lines[1],
        "- POST /v1/webhook-subscriptions: expected exactly 3 requests, received 2"
    );
    assert!(
        lines[2].starts_with("    #1 ")
            && lines[2].contains(" UTC  POST /v1/webhook-subscriptions → 503 ("),
        "{text}"
    );
    assert!(
        lines[3].starts_with("    #2 ")
            && lines[3].contains(" UTC  POST /v1/webhook-subscriptions → 201 ("),
        "{text}"
    );
    assert!(!text.contains(SECRET), "{text}");
    let listed = emulator.journal_of(Route::ListSubscriptions).remove(0);
    assert!(listed.dropped);
    assert!(
        listed
            .to_string()
            .ends_with(" GET /v1/webhook-subscriptions → dropped (0 B body)"),
        "{listed}"
    );
}

#[tokio::test]
async fn a_failed_expectation_never_verified_panics_on_drop_with_the_diff() {
    let emulator = emulator().await;
    emulator.expect(Route::ListSubscriptions).never();
    call(&emulator, Method::GET, "v1/webhook-subscriptions", None).await;

    let panic = catch_unwind(AssertUnwindSafe(|| drop(emulator)))
        .expect_err("dropping it unverified panics");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.starts_with(
            "1 expectation on the emulator not met:\n\
             - GET /v1/webhook-subscriptions: expected no request, received 1\n    #1 "
        ),
        "{message}"
    );
    assert!(
        message.ends_with("(the emulator was dropped without `verify()`)"),
        "{message}"
    );
}

#[tokio::test]
async fn drop_is_quiet_once_verified_or_when_met() {
    let verified = emulator().await;
    verified.expect(Route::ListSubscriptions).never();
    call(&verified, Method::GET, "v1/webhook-subscriptions", None).await;
    assert!(verified.verify().is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| drop(verified))).is_ok());

    let met = emulator().await;
    met.expect(Route::ListSubscriptions).times(1);
    call(&met, Method::GET, "v1/webhook-subscriptions", None).await;
    assert!(catch_unwind(AssertUnwindSafe(|| drop(met))).is_ok());
}

#[test]
fn drop_does_not_panic_again_while_the_test_is_panicking() {
    let outcome = catch_unwind(|| {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime starts");
        let emulator = runtime.block_on(emulator());
        emulator.expect(Route::CreateTranscript).times(1);
        // The test fails for its own reason; the unmet expectation must
        // not turn that into a double panic (an abort).
        panic!("the test's own failure");
    });
    let panic = outcome.expect_err("the test panicked");
    assert_eq!(
        panic.downcast_ref::<&str>(),
        Some(&"the test's own failure")
    );
}

#[tokio::test]
async fn settled_returns_once_jobs_are_done_and_their_webhooks_answered() {
    let emulator = emulator().await;
    let receiver = Receiver::start(Mode::Verify).await;
    emulator
        .update_account(AccountChange::default().concurrency(1))
        .expect("the concurrency changes");
    let upload = support::upload(&emulator, audio(40, "the words")).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (status, job) = call(
            &emulator,
            Method::POST,
            "v2/transcript",
            Some(json!({"audio_url": upload["upload_url"], "webhook_url": receiver.url()})),
        )
        .await;
        assert_eq!(status, 200, "{job}");
        ids.push(job["id"].as_str().expect("a job has an id").to_owned());
    }
    // 40 s of audio take 10 s, × 0.01: the second job waits its turn.
    let busy = emulator.busy();
    assert!(!busy.is_idle(), "{busy}");
    assert_eq!((busy.queued, busy.processing), (1, 1), "{busy}");

    emulator
        .settled_within(Duration::from_secs(10))
        .await
        .expect("two jobs and two webhooks end within 10 s");

    assert!(emulator.busy().is_idle());
    let got = receiver.received();
    assert_eq!(
        got.len(),
        2,
        "both webhooks answered before settled returned"
    );
    for id in &ids {
        let (_, job) = call(&emulator, Method::GET, &format!("v2/transcript/{id}"), None).await;
        assert_eq!(job["status"], "completed", "{job}");
        assert_eq!(job["webhook_status_code"], 200, "{job}");
    }
}

#[tokio::test]
async fn settled_within_names_what_is_still_busy() {
    // Real time: the failed delivery's first retry is 5 s away.
    let emulator = Emulator::builder()
        .allow_private_urls(true)
        .start()
        .await
        .expect("the emulator starts");
    let receiver = Receiver::start(Mode::Unavailable).await;
    subscribe(&emulator, &receiver.url(), &["session.started"]).await;
    emulator.start_session(None).expect("a session starts");
    receiver.wait_for(1).await;

    let error = emulator
        .settled_within(Duration::from_millis(200))
        .await
        .expect_err("a delivery waits for its retry");
    assert_eq!(error.busy.deliveries, 1);
    assert_eq!(
        error.to_string(),
        "the emulator did not settle within 200 ms: 1 webhook delivery pending"
    );
}

#[tokio::test]
async fn settled_is_immediate_when_idle() {
    let emulator = emulator().await;
    emulator
        .settled_within(Duration::from_millis(100))
        .await
        .expect("nothing to wait for");
    assert_eq!(emulator.busy().to_string(), "idle");
}
