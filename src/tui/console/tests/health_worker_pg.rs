//! The Health pane's reads on a PostgreSQL store, as the worker runs them,
//! against a SQLite file fed the same deliveries: two observers in-process
//! (one filing into a database of the test kit's throwaway cluster, one
//! into a file) get the emulator's events over real HTTP, one receiver
//! takes every delivery and one answers 503 until the platform gives up.
//! The pane's own sweep (`HealthEffect::Sweep`) fills each store from the
//! platform; then its load (`HealthEffect::Load`) reads the same board
//! rows, the same trend and the same give-up line from both, and its
//! failing sessions and incidents are the same too. Once the receiver is
//! fixed, recover's preview and recover itself (`HealthEffect::Recover`)
//! run from each store, and both boards count the events recovered.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::support::{
    Observed, Receiver, SECRET, eventually, observe, pane_results, pg_database, start,
};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::health::HealthResult;
use crate::tui::panes::health::tasks::HealthEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::incidents::{Incident, IncidentState};
use earshot_core::history::report::Board;
use earshot_core::redact::SecretString;
use earshot_core::store::deliveries::FailingSession;
use earshot_core::store::timeline::Timeline;
use earshot_testkit::Reply;
use earshot_testkit::postgres::PgCluster;

/// The pane's sweep of `store`: the sessions it swept.
async fn swept(client: &Client, store: StoreAt) -> usize {
    match pane_results(client, store, HealthEffect::Sweep)
        .await
        .as_slice()
    {
        [HealthResult::Swept(Ok(report))] => {
            assert_eq!(report.stopped, None, "{report:?}");
            report.sessions_swept
        }
        other => panic!("not a sweep: {other:?}"),
    }
}

/// The pane's load of `store`: the board, the trend and the give-up line,
/// each read whole.
async fn loaded(client: &Client, store: StoreAt) -> (Board, Timeline, String) {
    let load = HealthEffect::Load {
        seq: 3,
        since_ms: 0,
    };
    match pane_results(client, store, load).await.as_slice() {
        [
            HealthResult::Loaded {
                seq: 3,
                result: Ok(board),
            },
            HealthResult::Trend {
                seq: 3,
                result: Ok(trend),
            },
            HealthResult::GiveUp { seq: 3, text },
        ] => (board.clone(), trend.clone(), text.clone()),
        other => panic!("not a whole load: {other:?}"),
    }
}

/// The failing sessions of `subscription_id` the pane's drill-down reads.
async fn failing(client: &Client, store: StoreAt, subscription_id: &str) -> Vec<FailingSession> {
    let effect = HealthEffect::LoadFailingSessions {
        seq: 4,
        subscription_id: subscription_id.to_owned(),
        since_ms: 0,
    };
    match pane_results(client, store, effect).await.as_slice() {
        [HealthResult::Sessions { result, .. }] => result.clone().expect("the sessions read"),
        other => panic!("not the failing sessions: {other:?}"),
    }
}

/// The incidents the pane's incidents view reads (resolved ones too).
async fn incidents(client: &Client, store: StoreAt) -> Vec<Incident> {
    let effect = HealthEffect::LoadIncidents {
        seq: 1,
        since_ms: 0,
        all: true,
    };
    match pane_results(client, store, effect).await.as_slice() {
        // An incident's id is made from the first failure the sweep that
        // opened it met, and the two sweeps meet the sessions in their
        // own order: ids are each store's own, the rest must agree.
        [HealthResult::Incidents { result, .. }] => result
            .clone()
            .expect("the incidents read")
            .into_iter()
            .map(|incident| Incident {
                id: String::new(),
                ..incident
            })
            .collect(),
        other => panic!("not the incidents: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_its_trend_and_the_give_up_read_from_postgresql_as_from_a_file() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    let pg = pg_database(&cluster, "console").await;
    let on_pg = observe(&harness, pg.clone().into(), &EventKind::ALL, SECRET).await;
    let on_file = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let healthy = Receiver::healthy().await;
    let fixed = Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let down = Receiver::start(move |_, _| {
        if flag.load(Ordering::SeqCst) {
            Reply::ok()
        } else {
            Reply::status(503, "down for maintenance")
        }
    })
    .await;
    let delivered = harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    let given_up = harness.subscribe(&down.url(), &EventKind::ALL).await;
    for _ in 0..2 {
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
    }
    // Six attempts 50 ms, 300 ms, 1.2 s, 6 s and 18 s apart: the platform
    // gives up on the 503s about 26 s later.
    eventually(
        Duration::from_secs(60),
        "the platform gave up retrying",
        || async { (harness.stats().await["deliveries_in_progress"] == 0).then_some(()) },
    )
    .await;
    let client = harness.client.clone();
    let (pg, file) = (
        StoreAt::Postgres(pg.clone()),
        StoreAt::File(on_file.db.clone()),
    );
    assert_eq!(swept(&client, pg.clone()).await, 2, "PostgreSQL");
    assert_eq!(swept(&client, file.clone()).await, 2, "the file");

    let (pg_board, pg_trend, pg_give_up) = loaded(&client, pg.clone()).await;
    let (file_board, file_trend, file_give_up) = loaded(&client, file.clone()).await;
    assert_eq!(
        pg_board.subscriptions, file_board.subscriptions,
        "PostgreSQL, then the file"
    );
    assert_eq!(pg_trend, file_trend, "PostgreSQL, then the file");
    assert_eq!(pg_give_up, file_give_up);
    assert_eq!(
        pg_give_up,
        "on this account the platform gave up after 6 attempts (seen 4 times)"
    );
    assert_eq!(
        pg_board.subscriptions.len(),
        4,
        "two observers, two receivers"
    );
    let row = |id: &str| {
        pg_board
            .subscriptions
            .iter()
            .find(|row| row.id == id)
            .unwrap_or_else(|| panic!("{id} on the board"))
            .events
    };
    assert_eq!(row(&delivered.id).delivered, 4);
    assert_eq!(row(&given_up.id).missed, 4);
    let in_trend = |id: &str| -> (i64, i64) {
        pg_trend
            .buckets_of(id)
            .iter()
            .fold((0, 0), |(delivered, missed), bucket| {
                (delivered + bucket.delivered, missed + bucket.missed)
            })
    };
    assert_eq!(in_trend(&given_up.id), (0, 4), "{pg_trend:?}");
    assert_eq!(in_trend(&delivered.id), (4, 0), "{pg_trend:?}");

    // The drill-down and the incidents: the same on both.
    let pg_failing = failing(&client, pg.clone(), &given_up.id).await;
    assert_eq!(
        pg_failing,
        failing(&client, file.clone(), &given_up.id).await
    );
    assert_eq!(pg_failing.len(), 2, "{pg_failing:?}");
    for session in &pg_failing {
        assert_eq!(session.failed_attempts, 12, "two events, six attempts each");
        assert_eq!(session.missed, 2);
        assert_eq!(session.http_status_code, Some(503));
    }
    // The healthy receiver's subscription: the same on both (none, unless
    // an attempt timed out on a loaded machine, as the full suite can).
    assert_eq!(
        failing(&client, pg.clone(), &delivered.id).await,
        failing(&client, file.clone(), &delivered.id).await
    );
    let pg_incidents = incidents(&client, pg.clone()).await;
    assert_eq!(pg_incidents, incidents(&client, file.clone()).await);
    assert_eq!(pg_incidents.len(), 1, "{pg_incidents:?}");
    assert_eq!(pg_incidents[0].subscription_id, given_up.id);
    assert_eq!(pg_incidents[0].state, IncidentState::Open);
    assert_eq!(pg_incidents[0].missed, 4);

    // The receiver is fixed: recover's preview, then recover itself, from
    // each store; both boards then count the four events recovered.
    fixed.store(true, Ordering::SeqCst);
    for store in [pg.clone(), file.clone()] {
        let sent_before = down.count();
        let plan = HealthEffect::PlanRecover {
            subscription_id: given_up.id.clone(),
            since_ms: 0,
        };
        match pane_results(&client, store.clone(), plan).await.as_slice() {
            [
                HealthResult::Planned {
                    result: Ok(preview),
                    ..
                },
            ] => {
                assert_eq!(preview.to_send, 4, "{store}: {preview:?}")
            }
            other => panic!("{store}: not a plan: {other:?}"),
        }
        assert_eq!(down.count(), sent_before, "{store}: a plan sends nothing");
        let recover = HealthEffect::Recover {
            subscription_id: given_up.id.clone(),
            since_ms: 0,
            secret: SecretString::new(SECRET),
            stop: Default::default(),
        };
        match pane_results(&client, store.clone(), recover).await.last() {
            Some(HealthResult::Recovered(Ok(summary))) => assert!(
                summary.starts_with("4 of 4 delivered"),
                "{store}: {summary}"
            ),
            other => panic!("{store}: not recovered: {other:?}"),
        }
        assert_eq!(down.count(), sent_before + 4, "{store}");
    }
    // Each store recorded its recover change, and the recovered events'
    // success, at its own moment (a second apart across a boundary).
    let untimed = |board: Board| {
        let mut rows = board.subscriptions;
        for row in &mut rows {
            if let Some(change) = row.latest_change.as_mut() {
                (change.at, change.at_ms) = (String::new(), 0);
            }
            if row.events.recovered > 0 {
                row.last_success_at = None;
            }
        }
        rows
    };
    let (pg_board, _, _) = loaded(&client, pg).await;
    let (file_board, _, _) = loaded(&client, file).await;
    for board in [&pg_board, &file_board] {
        let row = board.subscriptions.iter().find(|row| row.id == given_up.id);
        assert!(
            row.is_some_and(|row| row.last_success_at.is_some()),
            "a recovery is a success: {row:?}"
        );
    }
    let pg_rows = untimed(pg_board.clone());
    assert_eq!(pg_rows, untimed(file_board), "PostgreSQL, then the file");
    let change = pg_rows
        .iter()
        .find_map(|row| row.latest_change.as_ref())
        .expect("the recover run recorded");
    assert_eq!(change.action, "recover");
    let recovered = pg_board
        .subscriptions
        .iter()
        .find(|row| row.id == given_up.id)
        .expect("on the board")
        .events;
    assert_eq!((recovered.missed, recovered.recovered), (0, 4));

    on_pg.stop().await;
    on_file.stop().await;
}
