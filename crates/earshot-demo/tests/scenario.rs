//! The demo scenario (`earshot emulator --traffic`, `earshot demo`): within
//! seconds of starting it, every pane has live data, each receiver fails in
//! its own characteristic way, and `stop()` ends the traffic. Against the
//! workspace's test kit (`earshot-testkit`: the emulator with a client).

use std::time::{Duration, Instant};

use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::redact::SecretString;
use earshot_demo::{self as scenario, DemoSubscription, ScenarioConfig, ScenarioError};
use earshot_emulator::TimeScale;
use earshot_testkit as common;
use earshot_testkit::{API_KEY, Harness, Options};

const SCALE: f64 = 0.05;

async fn emulator(allow_private_urls: bool) -> Harness {
    common::start_with(Options {
        time_scale: SCALE,
        allow_private_urls,
        // The test reads the same transcripts repeatedly.
        poll_limit: 1000,
        ..Options::default()
    })
    .await
}

fn config() -> ScenarioConfig {
    ScenarioConfig {
        pace: Duration::from_millis(200),
        seed: 7,
        time_scale: TimeScale::new(SCALE).unwrap(),
        transcript_webhook: None,
    }
}

fn role<'a>(subscriptions: &'a [DemoSubscription], role: &str) -> &'a DemoSubscription {
    subscriptions
        .iter()
        .find(|subscription| subscription.role == role)
        .unwrap_or_else(|| panic!("no {role} subscription"))
}

/// Whether one conversation's records show every receiver's signature
/// behaviour; what is still missing otherwise.
fn missing(records: &[DeliveryRecord], subs: &[DemoSubscription]) -> Vec<&'static str> {
    let of = |name: &str| {
        let id = &role(subs, name).id;
        records
            .iter()
            .filter(move |record| &record.subscription_id == id)
    };
    let mut missing = Vec::new();
    if !of("healthy").any(|r| r.status == DeliveryStatus::Delivered) {
        missing.push("healthy delivered");
    }
    let reserialised: Vec<_> = of("reserialises-body").collect();
    let rejected = |r: &&DeliveryRecord| {
        r.status == DeliveryStatus::Failed
            && r.http_status_code == Some(401)
            && r.error.as_deref() == Some("HTTP 401: invalid signature")
            && r.next_retry_at.is_none()
    };
    if !reserialised.iter().any(rejected) {
        missing.push("reserialiser 401");
    }
    // Rejected for good: never a second attempt for the same event.
    assert!(
        reserialised.iter().all(|r| r.attempt_count == 1),
        "{reserialised:?}"
    );
    if !of("slow").any(|r| {
        r.status == DeliveryStatus::Failed
            && r.http_status_code.is_none()
            && r.next_retry_at.is_some()
            && r.error.as_deref().is_some_and(|e| e.starts_with("timeout"))
    }) {
        missing.push("slow timeout with a retry");
    }
    if !of("redirects").any(|r| {
        r.status == DeliveryStatus::Failed
            && r.http_status_code == Some(301)
            && r.error
                .as_deref()
                .is_some_and(|e| e.starts_with("HTTP 301"))
    }) {
        missing.push("redirect 301");
    }
    assert_eq!(
        of("paused").count(),
        0,
        "the paused subscription got deliveries"
    );
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenario_fills_every_pane_within_seconds_and_stops() {
    let harness = emulator(true).await;
    let started = Instant::now();
    let demo = scenario::start(
        &harness.emulator.url(),
        &SecretString::new(API_KEY),
        config(),
    )
    .await
    .expect("scenario starts");

    // The first burst is there as soon as `start` returns.
    assert!(
        demo.recent_conversations().len() >= 4,
        "{:?}",
        demo.recent_conversations()
    );
    let first_jobs = demo.job_ids();
    assert!(first_jobs.len() >= 6, "{first_jobs:?}");

    // Five subscriptions; the paused one only with include_disabled.
    let subs = demo.subscriptions();
    let roles: Vec<_> = subs.iter().map(|s| s.role).collect();
    assert_eq!(
        roles,
        [
            "healthy",
            "reserialises-body",
            "slow",
            "redirects",
            "paused"
        ]
    );
    let enabled = harness.client.list_subscriptions(false).await.unwrap();
    let all = harness.client.list_subscriptions(true).await.unwrap();
    assert_eq!(enabled.len(), 4);
    assert_eq!(all.len(), 5);
    let paused: Vec<_> = all.iter().filter(|s| !s.enabled).collect();
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].id, role(&subs, "paused").id);
    assert!(!enabled.iter().any(|s| s.id == paused[0].id));

    // Jobs wait at the concurrency limit right away.
    let mut statuses = Vec::new();
    for id in &first_jobs {
        statuses.push(harness.client.get_transcript(id).await.unwrap().status);
    }
    assert!(
        statuses.contains(&TranscriptStatus::Queued),
        "the queue is not at the concurrency limit: {statuses:?}"
    );
    assert!(
        statuses.contains(&TranscriptStatus::Processing),
        "{statuses:?}"
    );

    // One conversation shows every receiver's behaviour.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut shown = None;
    let mut last_missing = Vec::new();
    while shown.is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        for id in demo.recent_conversations() {
            let records = harness.client.list_deliveries(&id).await.unwrap();
            let missing = missing(&records, &subs);
            if missing.is_empty() {
                shown = Some(id);
                break;
            }
            last_missing = missing;
        }
    }
    let shown = shown.unwrap_or_else(|| panic!("no conversation shows it all: {last_missing:?}"));
    println!("{shown} shows every receiver after {:?}", started.elapsed());

    // The oldest job has completed.
    let oldest = first_jobs.last().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let job = harness.client.get_transcript(oldest).await.unwrap();
        if job.status == TranscriptStatus::Completed {
            break;
        }
        assert!(job.status != TranscriptStatus::Error, "{job:?}");
        assert!(
            Instant::now() < deadline,
            "{oldest} never completed: {job:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A finished job frees a slot; the scenario's next turn tops the
    // queue up.
    let deadline = Instant::now() + Duration::from_secs(20);
    while demo.job_ids().len() <= first_jobs.len() {
        assert!(Instant::now() < deadline, "the queue was not topped up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Modest traffic: nothing refused for a rate limit.
    let (_, stats) = harness.get("/_emulator/stats").await;
    for refused in ["403", "429"] {
        assert!(stats["by_status"].get(refused).is_none(), "{stats}");
    }

    // Stopping ends the traffic: every task of the scenario ends (one that
    // went on sending would not, and this would time out).
    tokio::time::timeout(Duration::from_secs(10), demo.stopped())
        .await
        .expect("every task of the scenario ends once stopped");
    println!("whole test: {:?}", started.elapsed());
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn without_private_urls_the_scenario_says_what_to_change() {
    let harness = emulator(false).await;
    let error = match scenario::start(
        &harness.emulator.url(),
        &SecretString::new(API_KEY),
        config(),
    )
    .await
    {
        Ok(_) => panic!("a scenario started against an emulator refusing loopback receivers"),
        Err(error) => error,
    };
    assert!(
        matches!(
            error,
            ScenarioError::Subscription {
                role: "healthy",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("--allow-private-urls"),
        "{error}"
    );
    harness.emulator.shutdown().await;
}
