//! The Pulse pane on a PostgreSQL store, as the worker runs it, against a
//! SQLite file fed the same deliveries: two observers in-process (one
//! filing into a database of the test kit's throwaway cluster, one into
//! a file) and a receiver that takes every delivery get the emulator's
//! events over real HTTP. The pane's own sweep (`PulseEffect::Sweep`)
//! fills each store from the platform; then its read (`PulseEffect::Load`)
//! gives the same events per minute by state, the same deliveries in
//! flight and the same filing per hour from both.

use std::time::Duration;

use super::support::{Observed, Receiver, SECRET, eventually, observe, pane_results, pg_database};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::pulse::PulseResult;
use crate::tui::panes::pulse::data::PulseData;
use crate::tui::panes::pulse::tasks::PulseEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::store::outcomes::EventTotals;
use earshot_testkit::postgres::PgCluster;

/// The pane's sweep of `store`: the sessions it swept.
async fn swept(client: &Client, store: StoreAt) -> usize {
    match pane_results(client, store.clone(), PulseEffect::Sweep)
        .await
        .as_slice()
    {
        [PulseResult::Swept(Ok(report))] => {
            assert_eq!(report.stopped, None, "{store}: {report:?}");
            report.sessions_swept
        }
        other => panic!("{store}: not a sweep: {other:?}"),
    }
}

/// The pane's read of `store`.
async fn loaded(client: &Client, store: StoreAt) -> PulseData {
    match pane_results(client, store.clone(), PulseEffect::Load { seq: 7 })
        .await
        .as_slice()
    {
        [
            PulseResult::Loaded {
                seq: 7,
                result: Ok(data),
            },
        ] => data.clone(),
        other => panic!("{store}: not a read: {other:?}"),
    }
}

/// Every minute's events summed.
fn summed(minutes: &[EventTotals]) -> EventTotals {
    minutes
        .iter()
        .fold(EventTotals::default(), |mut total, minute| {
            total.absorb(minute);
            total
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulse_reads_the_same_counts_from_postgresql_as_from_a_file() {
    let harness = super::support::start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    let pg = pg_database(&cluster, "pulse").await;
    let on_pg = observe(&harness, pg.clone().into(), &EventKind::ALL, SECRET).await;
    let on_file = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let healthy = Receiver::healthy().await;
    harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    for _ in 0..3 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
    }
    eventually(Duration::from_secs(30), "every delivery made", || async {
        (harness.stats().await["deliveries_in_progress"] == 0).then_some(())
    })
    .await;
    let client = harness.client.clone();
    let (pg, file) = (StoreAt::Postgres(pg), StoreAt::File(on_file.db.clone()));
    assert_eq!(swept(&client, pg.clone()).await, 3, "PostgreSQL");
    assert_eq!(swept(&client, file.clone()).await, 3, "the file");

    // Both reads in one minute, so their columns are the same minutes.
    let mut reads = None;
    for _ in 0..3 {
        let (on_pg, on_file) = (
            loaded(&client, pg.clone()).await,
            loaded(&client, file.clone()).await,
        );
        if on_pg.at_ms / 60_000 == on_file.at_ms / 60_000 {
            reads = Some((on_pg, on_file));
            break;
        }
    }
    let (on_pg_read, on_file_read) = reads.expect("two reads within one minute");
    assert_eq!(
        on_pg_read.minutes, on_file_read.minutes,
        "PostgreSQL, then the file"
    );
    assert_eq!(on_pg_read.in_flight, on_file_read.in_flight);
    assert_eq!(
        on_pg_read.filed, on_file_read.filed,
        "PostgreSQL, then the file"
    );
    assert_eq!(on_pg_read.minutes.len(), 60);
    assert_eq!(on_pg_read.filed.len(), 24);

    // What they agree on is the sessions': every event filed by each
    // observer, and delivered to each of the three subscriptions.
    let filed: i64 = on_pg_read.filed.iter().sum();
    assert!(filed >= 6, "two events a session at least: {filed}");
    let events = summed(&on_pg_read.minutes);
    assert_eq!(
        (events.delivered, events.total()),
        (3 * filed, 3 * filed),
        "{events:?}"
    );
    assert_eq!(on_pg_read.in_flight, 0);
    // Each observer received its copies a moment apart from the other's.
    let (Some(pg_newest), Some(file_newest)) =
        (on_pg_read.newest_filed_ms, on_file_read.newest_filed_ms)
    else {
        panic!("no newest filing: {on_pg_read:?} {on_file_read:?}");
    };
    assert!(
        (pg_newest - file_newest).abs() < 10_000,
        "{pg_newest} {file_newest}"
    );
    assert!(pg_newest <= on_pg_read.at_ms);

    on_pg.stop().await;
    on_file.stop().await;
}
