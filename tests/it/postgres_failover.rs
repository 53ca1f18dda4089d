//! Failover of the observer on PostgreSQL (issue 34's "Done when"): three
//! `earshot listen --store postgres://…` replicas on one database of the
//! test kit's cluster, behind the test kit's round-robin TCP proxy, take a
//! flood of signed events (distinct ids, every tenth sent twice at once)
//! while one replica is killed with SIGKILL in the middle. What was not
//! answered 2xx is sent again, as the platform retries. Every event
//! answered 2xx is then in the database exactly once, and every event is
//! in it once in the end. Bounded to a minute.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use earshot_testkit::flood::{FloodPlan, flood, resend_unacked};
use earshot_testkit::postgres::PgCluster;
use earshot_testkit::proxy::{RoundRobinProxy, addr_of};

use crate::common::SECRET;
use crate::common::cli::postgres_observer;

/// The whole test, cluster start included, ends within this.
const BOUND: Duration = Duration::from_secs(60);
/// Events started per second, and for how long.
const RATE: u32 = 200;
const FLOOD_FOR: Duration = Duration::from_secs(12);
/// How long the retries of what was not acked may take.
const RETRIES_WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_a_proxy_lose_and_double_nothing_when_one_is_killed_mid_flood() {
    tokio::time::timeout(BOUND, failover())
        .await
        .unwrap_or_else(|_| panic!("the failover test ends within {BOUND:?}"));
}

async fn failover() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("failover").expect("database made");
    let store = cluster.url("failover");
    let mut replicas = Vec::new();
    let mut addrs = Vec::new();
    for replica in 0..3 {
        let (child, url, _stderr) = postgres_observer(&cluster, &store, &[]);
        warm_up(&url, replica).await;
        addrs.push(addr_of(&url));
        replicas.push(child);
    }
    let proxy = RoundRobinProxy::start(addrs).await.expect("the proxy");
    let plan = FloodPlan {
        prefix: "evt-failover".into(),
        rate_per_s: RATE,
        duration: FLOOD_FOR,
        twice_every: 10,
        in_flight: 48,
    };
    let started = Instant::now();
    let sending = {
        let (url, plan) = (proxy.url(), plan.clone());
        tokio::spawn(async move { flood(&url, SECRET, &plan).await })
    };
    // Killed once half the flood has gone through the proxy, whatever
    // the machine's speed.
    let half = (RATE as usize * FLOOD_FOR.as_secs() as usize) / 2;
    while proxy.taken().iter().sum::<u64>() < half as u64 && !sending.is_finished() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before_kill = proxy.taken();
    assert!(
        before_kill.iter().all(|&taken| taken > 0),
        "every replica took connections before the kill: {before_kill:?}"
    );
    eprintln!(
        "before the kill: taken {before_kill:?}, skipped {}",
        proxy.skipped()
    );
    assert!(!sending.is_finished(), "killed mid-flood");
    let mut killed = replicas.remove(1);
    killed.start_kill().expect("SIGKILL sent");
    killed.wait().await.expect("the killed replica reaped");
    let at_death = proxy.taken();
    let flooded = sending.await.expect("the flood ran");
    let during_flood = (flooded.sent, flooded.answered_2xx, flooded.no_answer);
    let acked_by_flood: Vec<String> = flooded.acked_ids().map(str::to_owned).collect();
    let report = resend_unacked(&proxy.url(), SECRET, flooded, 16, RETRIES_WITHIN).await;
    eprintln!(
        "{} events in {:?} (p50 {:?}, p99 {:?}); flood: sent {}, 2xx {}, no answer {}; \
         after retries: sent {}, unacked {}; proxy: taken {:?}, skipped {}, unserved {}; \
         {:?} in all",
        report.events.len(),
        report.elapsed,
        report.latency_percentile(50.0),
        report.latency_percentile(99.0),
        during_flood.0,
        during_flood.1,
        during_flood.2,
        report.sent,
        report.unacked(),
        proxy.taken(),
        proxy.skipped(),
        proxy.unserved(),
        started.elapsed(),
    );
    assert_eq!(report.unacked(), 0, "every event acked after the retries");
    assert!(
        proxy.skipped() > 0,
        "the dead replica was skipped by the proxy after the kill"
    );
    assert_eq!(
        proxy.taken()[1],
        at_death[1],
        "the killed replica took nothing after it died"
    );

    let rows = filed(&cluster);
    let missing: Vec<&String> = acked_by_flood
        .iter()
        .filter(|id| !rows.contains_key(*id))
        .collect();
    let doubled: Vec<(&String, &usize)> = rows.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        missing.is_empty(),
        "{} acked and missing: {missing:?}",
        missing.len()
    );
    assert!(
        doubled.is_empty(),
        "{} duplicate rows: {doubled:?}",
        doubled.len()
    );
    for event in &report.events {
        assert_eq!(rows.get(&event.id), Some(&1), "{} filed once", event.id);
    }
    assert_eq!(rows.len(), report.events.len(), "nothing else filed");
    let warm_ups = cluster
        .psql(
            "failover",
            "SELECT count(*) FROM earshot.events WHERE event_id LIKE 'evt-warm-up-%'",
        )
        .expect("psql");
    assert_eq!(warm_ups, "192", "the warm-up events, once each");
}

/// Sends `replica` a second of events, sixteen at once, before the flood:
/// its pool opens its connections to the database (slow in a debug build)
/// before the flood and the kill, not during them.
async fn warm_up(url: &str, replica: usize) {
    let plan = FloodPlan {
        prefix: format!("evt-warm-up-{replica}"),
        rate_per_s: 64,
        duration: Duration::from_secs(1),
        twice_every: 0,
        in_flight: 16,
    };
    let report = flood(url, SECRET, &plan).await;
    assert_eq!(report.unacked(), 0, "replica {replica} warmed up");
}

/// Each `event_id` of the flood in the events table, with how many rows it
/// has.
fn filed(cluster: &PgCluster) -> HashMap<String, usize> {
    let text = cluster
        .psql(
            "failover",
            "SELECT event_id FROM earshot.events WHERE event_id LIKE 'evt-failover-%'",
        )
        .expect("psql");
    let mut rows = HashMap::new();
    for id in text.lines().filter(|line| !line.is_empty()) {
        *rows.entry(id.to_owned()).or_insert(0) += 1;
    }
    rows
}
