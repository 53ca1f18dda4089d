//! Leases on the PostgreSQL store (`store::postgres::leases`) against the
//! test kit's throwaway cluster, with short terms given as a parameter
//! (the defaults are 6 s renewed every 2 s): while its holder renews, a
//! lease stays its own; when the holder stops renewing, the other keeper
//! takes it over after the expiry and not before; work under a lapsed
//! lease writes nothing once it is taken over, and a takeover waits for
//! work that checked the lease in time to commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use earshot_core::store::postgres::leases::{LeaseKeeper, LeaseTerms};
use earshot_core::store::postgres::{PgError, PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;

/// Short terms: the takeover is bounded by `ttl + renew_every`.
const TERMS: LeaseTerms = LeaseTerms {
    ttl: Duration::from_millis(1_000),
    renew_every: Duration::from_millis(250),
};

/// Slack for a loaded machine on the upper bound of a takeover.
const SLACK: Duration = Duration::from_millis(1_500);

async fn cluster_and_replicas(database: &str) -> (PgCluster, PgStore, PgStore) {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(database).expect("database made");
    let sources = cluster.password_sources();
    let target = || PgTarget::parse(&cluster.url(database)).expect("a store URL");
    let first = PgStore::connect(target(), &sources)
        .await
        .expect("connects");
    let second = PgStore::connect(target(), &sources)
        .await
        .expect("connects");
    (cluster, first, second)
}

/// Waits until `keeper` says it holds its lease (at most 10 s).
async fn until_held(keeper: &LeaseKeeper) {
    let mut held = keeper.watch();
    tokio::time::timeout(Duration::from_secs(10), held.wait_for(|held| *held))
        .await
        .expect("held within 10 s")
        .expect("the keeper runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_holder_stops_renewing_is_taken_over_after_its_expiry_not_before() {
    let (_cluster, first, second) = cluster_and_replicas("takeover").await;
    let a = LeaseKeeper::start(first, "maintenance", "replica-a", TERMS);
    until_held(&a).await;
    let b = LeaseKeeper::start(second.clone(), "maintenance", "replica-b", TERMS);
    // Longer than the lease: renewed, it stays a's, and b never holds it.
    let watched = Instant::now();
    while watched.elapsed() < TERMS.ttl * 2 {
        assert!(!b.held(), "b took a lease a renews");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(a.held());
    let state = second
        .lease("maintenance")
        .await
        .expect("read")
        .expect("a row");
    assert_eq!(state.holder, "replica-a");
    // a stops renewing, as a dead replica would.
    drop(a);
    let stopped = Instant::now();
    until_held(&b).await;
    let took = stopped.elapsed();
    eprintln!("the lease changed hands {took:?} after its holder stopped renewing");
    // a renewed at most `renew_every` before it stopped: its lease ran out
    // `ttl - renew_every` to `ttl` later, and b tries every `renew_every`.
    assert!(
        took >= TERMS.ttl - TERMS.renew_every - Duration::from_millis(50),
        "taken over before the expiry: {took:?}"
    );
    assert!(
        took <= TERMS.ttl + TERMS.renew_every + SLACK,
        "taken over late: {took:?}"
    );
    let state = second
        .lease("maintenance")
        .await
        .expect("read")
        .expect("a row");
    assert_eq!(state.holder, "replica-b");
    assert!(
        state.expires_in_ms > 0 && state.expires_in_ms <= 1_000,
        "{state:?}"
    );
    // A clean stop gives it up at once.
    b.release().await.expect("released");
    assert_eq!(second.lease("maintenance").await.expect("read"), None);
}

/// Inserts `by` into the test's table under the lease `work` of `holder`.
async fn work(store: &PgStore, holder: &str, by: &str) -> Result<(), PgError> {
    let by = by.to_owned();
    store
        .leased("work", holder, move |tx| {
            Box::pin(async move {
                tx.execute("INSERT INTO public.work (by) VALUES ($1)", &[&by])
                    .await?;
                Ok(())
            })
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_under_a_lapsed_lease_writes_nothing_once_another_replica_took_it() {
    let (cluster, a, b) = cluster_and_replicas("fencing").await;
    cluster
        .psql("fencing", "CREATE TABLE public.work (by text NOT NULL)")
        .expect("table made");
    let ttl = Duration::from_millis(500);
    assert!(a.take_lease("work", "a", ttl).await.expect("take"));
    work(&a, "a", "a-1").await.expect("a holds it");
    assert!(!b.take_lease("work", "b", ttl).await.expect("take"), "a's");
    let refused = work(&b, "b", "b-0").await.expect_err("b does not hold it");
    assert!(matches!(refused, PgError::LeaseLost { .. }), "{refused}");
    // a stalls past its expiry without renewing; b takes it over.
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    assert!(
        b.take_lease("work", "b", ttl).await.expect("take"),
        "lapsed"
    );
    let stalled = work(&a, "a", "a-2").await.expect_err("a's lease was taken");
    assert!(matches!(stalled, PgError::LeaseLost { .. }), "{stalled}");
    assert!(stalled.to_string().contains("held by another replica"));
    work(&b, "b", "b-1").await.expect("b holds it");
    assert!(!a.take_lease("work", "a", ttl).await.expect("take"), "b's");
    let rows = cluster
        .psql(
            "fencing",
            "SELECT string_agg(by, ',' ORDER BY by) FROM public.work",
        )
        .expect("psql");
    assert_eq!(rows, "a-1,b-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_waits_for_work_that_checked_the_lease_in_time() {
    let (cluster, a, b) = cluster_and_replicas("inflight").await;
    cluster
        .psql("inflight", "CREATE TABLE public.work (by text NOT NULL)")
        .expect("table made");
    let ttl = Duration::from_millis(300);
    assert!(a.take_lease("work", "a", ttl).await.expect("take"));
    let b_done = Arc::new(AtomicBool::new(false));
    let (expired, on_expiry) = tokio::sync::oneshot::channel::<()>();
    let taker = {
        let b_done = Arc::clone(&b_done);
        tokio::spawn(async move {
            on_expiry.await.expect("a's work runs");
            let took = b.take_lease("work", "b", ttl).await;
            b_done.store(true, Ordering::SeqCst);
            took
        })
    };
    let seen_done = Arc::clone(&b_done);
    a.leased("work", "a", move |tx| {
        Box::pin(async move {
            // Checked in time; now the lease runs out mid-work and b tries.
            tokio::time::sleep(ttl + Duration::from_millis(100)).await;
            let _ = expired.send(());
            tokio::time::sleep(Duration::from_millis(400)).await;
            assert!(
                !seen_done.load(Ordering::SeqCst),
                "b took the lease while a's checked work was open"
            );
            tx.execute("INSERT INTO public.work (by) VALUES ('a-late')", &[])
                .await?;
            Ok(())
        })
    })
    .await
    .expect("a's work commits");
    let took = tokio::time::timeout(Duration::from_secs(10), taker)
        .await
        .expect("b's take ends")
        .expect("task")
        .expect("take");
    assert!(took, "then b takes the lapsed lease");
    assert_eq!(
        cluster
            .psql("inflight", "SELECT count(*) FROM public.work")
            .expect("psql"),
        "1"
    );
}
