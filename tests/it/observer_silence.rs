//! The observer's silence and incidents that end with their subscription,
//! through the real binary: an emulator with traffic to a healthy
//! receiver, one answering 401, and the observer. Deleting the failing
//! subscription (`earshot subs delete ID --yes`) resolves its incident and
//! `earshot incidents` exits 0; once the observer is killed while traffic
//! goes on, `earshot health` exits 3 and says `observer silent since`. In
//! each of the three states (an incident open, none, the observer silent)
//! `health` and `incidents` exit alike.
//! The silence floor is lowered (`EARSHOT_SILENCE_FLOOR_MS`) so the test
//! need not wait a minute.

use std::time::{Duration, Instant};

use crate::common::cli::{Observed, against, run, text};
use crate::common::{self, Receiver, Reply, eventually};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_silence_0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_observer_is_silent_and_a_deleted_subscription_ends_its_incident() {
    let harness = common::start().await;
    let mut observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let db = observed.db.clone();
    let healthy = Receiver::healthy().await;
    let failing = Receiver::start(|_, _| Reply::status(401, "invalid signature")).await;
    harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    let broken = harness.subscribe(&failing.url(), &EventKind::ALL).await;
    let traffic = |sessions: usize| {
        let harness = &harness;
        async move {
            for _ in 0..sessions {
                let session = harness.start_session(None).await;
                harness.complete_session(&session).await;
            }
        }
    };
    traffic(8).await;
    eventually(Duration::from_secs(10), "16 deliveries each", || async {
        (healthy.count() >= 16 && failing.count() >= 16).then_some(())
    })
    .await;
    let floor = [("EARSHOT_SILENCE_FLOOR_MS", "1000")];
    // `health` and `incidents` exit by one rule: each state below is read
    // by both, from the same store, and they agree.
    let agree = |expected: i32| {
        let (base, db) = (&harness.base, &db);
        async move {
            let mut codes = Vec::new();
            for command in ["health", "incidents"] {
                let args = [command, "--since", "1h", "--no-sweep"];
                let output = run(against(base, db, &args).envs(floor)).await;
                codes.push((command, output.status.code(), text(&output.stderr)));
            }
            assert!(
                codes.iter().all(|(_, code, _)| *code == Some(expected)),
                "both exit {expected}: {codes:?}"
            );
        }
    };
    let incidents = ["incidents", "--since", "1h"];
    let output = run(against(&harness.base, &db, &incidents).envs(floor)).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    agree(1).await;

    // Deleting the failing subscription ends its incident.
    let delete = ["subs", "delete", &broken.id, "--yes"];
    let output = run(against(&harness.base, &db, &delete).envs(floor)).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = run(against(&harness.base, &db, &incidents).envs(floor)).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let all = ["incidents", "--since", "1h", "--all", "--no-sweep"];
    let output = run(against(&harness.base, &db, &all).envs(floor)).await;
    assert!(
        text(&output.stdout).contains("resolved: subscription deleted"),
        "{}",
        text(&output.stdout)
    );
    agree(0).await;

    // The observer dies; traffic goes on; health says unknown.
    observed.stop();
    let health = ["health", "--since", "1h"];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        traffic(1).await;
        let output = run(against(&harness.base, &db, &health).envs(floor)).await;
        let printed = text(&output.stdout);
        if output.status.code() == Some(3) {
            assert!(printed.starts_with("observer silent since "), "{printed}");
            break;
        }
        assert!(Instant::now() < deadline, "never silent: {printed}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    agree(3).await;
}
