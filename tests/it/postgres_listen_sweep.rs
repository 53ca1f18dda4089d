//! `earshot listen --store postgres://… --sweep` on two replicas (the real
//! binary): only the holder of the maintenance lease sweeps. Each replica
//! reaches the platform through a proxy of its own (the test kit's TCP
//! proxy in front of the emulator), so the connections each proxy took
//! say who asked the platform. The holder sweeps the session filed
//! before (its outcome rows appear), the other opens no connection; the
//! holder is killed with SIGKILL and the other sweeps within 10 s, and
//! sweeps a session filed after the takeover.

use std::time::{Duration, Instant};

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::now_ms;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;
use earshot_testkit::proxy::{RoundRobinProxy, addr_of};

use crate::common::cli::{line_with, postgres_observer};
use crate::common::{self, API_KEY, Captured, Harness, eventually};

/// The other replica must be sweeping within this after the holder died.
const SWEEPS_WITHIN: Duration = Duration::from_secs(10);

/// Files the events `captured` (as a receiver got them) into `store`.
async fn file(store: &PgStore, captured: &[Captured]) {
    for request in captured {
        let event = common::observed_event(request, now_ms());
        store.file(&event).await.expect("filed");
    }
}

/// A completed session on the platform, delivered to `receiver`'s
/// subscription; the requests it got for it.
pub(crate) async fn session(harness: &Harness, receiver: &common::Receiver, seen: usize) -> String {
    let id = harness.start_session(None).await;
    harness.complete_session(&id).await;
    receiver
        .wait_count(seen + 2, "the session's two events")
        .await;
    harness.wait_deliveries_idle().await;
    id
}

/// Waits until the store holds outcome rows of `session_id` (the sweep
/// wrote them).
async fn swept(cluster: &PgCluster, session_id: &str, within: Duration) {
    let sql = format!(
        "SELECT count(*) FROM earshot.event_outcomes WHERE session_id = '{session_id}' \
         AND state = 'delivered'"
    );
    eventually(within, "the session swept", || async {
        (cluster.psql("observers", &sql).expect("psql") == "2").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_sweeps_and_another_replica_sweeps_within_10_s_when_it_dies() {
    let harness = common::start().await;
    let (receiver, _) = harness.healthy_subscriber(&EventKind::ALL).await;
    let before = session(&harness, &receiver, 0).await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let url = cluster.url("observers");
    let sources = cluster.password_sources();
    let store = PgStore::connect(PgTarget::parse(&url).expect("a URL"), &sources)
        .await
        .expect("the store opens");
    file(&store, &receiver.captured()).await;

    let platform = addr_of(&harness.base);
    let proxies = [
        RoundRobinProxy::start(vec![platform])
            .await
            .expect("a proxy"),
        RoundRobinProxy::start(vec![platform])
            .await
            .expect("a proxy"),
    ];
    let flags = |proxy: &RoundRobinProxy| {
        [
            "--sweep".to_owned(),
            "--sweep-every".to_owned(),
            "1s".to_owned(),
            "--url".to_owned(),
            proxy.url(),
            "--api-key".to_owned(),
            API_KEY.to_owned(),
        ]
    };
    let first_flags = flags(&proxies[0]);
    let first_flags: Vec<&str> = first_flags.iter().map(String::as_str).collect();
    let (mut first, _, first_err) = postgres_observer(&cluster, &url, &first_flags);
    let (said, seen) = line_with(&first_err, "sweeps now", Duration::from_secs(15));
    assert!(
        said.is_some(),
        "the first replica takes the lease and sweeps: {seen:?}"
    );
    let second_flags = flags(&proxies[1]);
    let second_flags: Vec<&str> = second_flags.iter().map(String::as_str).collect();
    let (second, _, second_err) = postgres_observer(&cluster, &url, &second_flags);
    let second_pid = second.id().expect("running");
    let (said, seen) = line_with(&second_err, "maintenance lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the lease is said: {seen:?}"));
    assert!(said.contains("does not hold"), "{said}");

    swept(&cluster, &before, Duration::from_secs(15)).await;
    // Several sweeps' time: the holder asks the platform, the other never.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(proxies[0].taken()[0] > 0, "the holder asked the platform");
    assert_eq!(proxies[1].taken(), [0], "the other replica did not");

    first.start_kill().expect("SIGKILL sent");
    first.wait().await.expect("reaped");
    let killed_at = Instant::now();
    eventually(
        SWEEPS_WITHIN + Duration::from_secs(5),
        "the other sweeps",
        || async { (proxies[1].taken()[0] > 0).then_some(()) },
    )
    .await;
    let took = killed_at.elapsed();
    eprintln!("the other replica asked the platform {took:?} after the holder was killed");
    assert!(took <= SWEEPS_WITHIN, "took {took:?}");
    let (said, seen) = line_with(&second_err, "sweeps now", Duration::from_secs(5));
    let said = said.unwrap_or_else(|| panic!("the takeover is said: {seen:?}"));
    assert!(said.contains(&format!(":{second_pid})")), "{said}");

    // A session filed after the takeover is swept by the new holder.
    let after = session(&harness, &receiver, 2).await;
    file(&store, &receiver.captured()[2..]).await;
    swept(&cluster, &after, Duration::from_secs(10)).await;
    drop(second);
    harness.emulator.shutdown().await;
}
