//! `earshot listen --store postgres://…` takes part in the maintenance
//! lease: of two replicas on one database, one says on stderr that it
//! holds it and the other that it does not (naming the holder); when the
//! holder is killed with SIGKILL, the other says it holds it within 10 s,
//! and the lease row names it. A replica stopped with a signal gives the
//! lease up at once.

use std::time::{Duration, Instant};

use earshot_testkit::postgres::PgCluster;

use crate::common::cli::{line_with, postgres_observer, send_signal};

/// A dead holder's lease is taken over within this (6 s lease, 2 s renewal).
const TAKEOVER_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_holds_the_maintenance_lease_and_another_takes_it_over_when_it_dies() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store = cluster.url("observers");
    let (mut first, _, first_err) = postgres_observer(&cluster, &store, &[]);
    let first_pid = first.id().expect("running");
    let (said, before) = line_with(&first_err, "maintenance lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the lease is said: {before:?}"));
    assert!(
        said.contains(&format!(":{first_pid})")) && said.contains("holds the maintenance lease"),
        "the first replica takes it: {said}"
    );
    let (second, _, second_err) = postgres_observer(&cluster, &store, &[]);
    let second_pid = second.id().expect("running");
    let (said, before) = line_with(&second_err, "maintenance lease", Duration::from_secs(15));
    let said = said.unwrap_or_else(|| panic!("the lease is said: {before:?}"));
    assert!(
        said.contains("does not hold the maintenance lease")
            && said.contains(&format!(":{first_pid} holds it")),
        "the second names the holder: {said}"
    );

    first.start_kill().expect("SIGKILL sent");
    first.wait().await.expect("reaped");
    let killed_at = Instant::now();
    let (said, before) = line_with(&second_err, "maintenance lease", TAKEOVER_WITHIN);
    let said = said.unwrap_or_else(|| panic!("taken over within 10 s: {before:?}"));
    let took = killed_at.elapsed();
    eprintln!("taken over {took:?} after the holder was killed");
    assert!(
        said.contains(&format!(":{second_pid})")) && said.contains("holds the maintenance lease"),
        "{said}"
    );
    let holder = cluster
        .psql(
            "observers",
            "SELECT holder FROM earshot.leases WHERE name = 'maintenance'",
        )
        .expect("psql");
    assert!(holder.ends_with(&format!(":{second_pid}")), "{holder}");

    // Stopped with a signal, it gives the lease up.
    send_signal(&second, "TERM").await;
    crate::common::cli::wait_out(second).await;
    let left = cluster
        .psql(
            "observers",
            "SELECT count(*) FROM earshot.leases WHERE name = 'maintenance' \
             AND expires_at > now()",
        )
        .expect("psql");
    assert_eq!(left, "0", "given up at the stop");
}
