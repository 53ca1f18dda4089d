//! The Events pane's re-send on a PostgreSQL store, as the worker runs
//! it, beside a file fed the same deliveries: two observers in-process
//! (one filing into a database of the test kit's throwaway cluster, one
//! into a file) get the emulator's events over real HTTP; a receiver
//! answers 404 (final), so the platform's delivery is missed. Once it is
//! fixed, the pane re-sends one event to its subscription from each
//! store: the receiver gets the observer's exact bytes, and each store
//! holds the same recovery row, the `recover` change and the event's
//! outcome `recovered`. A re-send to any URL reaches it and is recorded
//! nowhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::events_worker::run_effect;
use super::support::{
    Observed, Receiver, SECRET, eventually, observe, pane_results, pg_database, start,
};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::events::EventsResult;
use crate::tui::panes::events::tasks::{EventsEffect, ResendTarget};
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::event_list::EventDetail;
use earshot_core::redact::SecretString;
use earshot_core::store::outcomes::EventState;
use earshot_core::store::{Store, StoreReader, changes, events};
use earshot_testkit::Reply;
use earshot_testkit::postgres::PgCluster;

/// The pane's re-send of `event_id` from `store` to `target`: whether it
/// was delivered, and the pane's line.
async fn resend(
    client: &Client,
    store: StoreAt,
    event_id: &str,
    target: ResendTarget,
) -> (bool, String) {
    let effect = EventsEffect::Resend {
        event_id: event_id.to_owned(),
        target,
        secret: SecretString::new(SECRET),
    };
    match run_effect(client, store.clone(), effect).await {
        EventsResult::Resent(Ok(sent)) => (sent.delivered, sent.summary),
        other => panic!("{store}: not a re-send: {other:?}"),
    }
}

/// The pane's read of `event_id` in full.
async fn detail(client: &Client, store: StoreAt, event_id: &str) -> EventDetail {
    let effect = EventsEffect::Detail {
        seq: 2,
        event_id: event_id.to_owned(),
    };
    match run_effect(client, store.clone(), effect).await {
        EventsResult::Detail {
            result: Ok(Some(detail)),
            ..
        } => *detail,
        other => panic!("{store}: not the detail: {other:?}"),
    }
}

/// The Health pane's sweep of `store`, as the console runs it.
async fn sweep(client: &Client, store: StoreAt) {
    use crate::tui::panes::health::HealthResult;
    use crate::tui::panes::health::tasks::HealthEffect;
    match pane_results(client, store.clone(), HealthEffect::Sweep)
        .await
        .as_slice()
    {
        [HealthResult::Swept(Ok(_))] => {}
        other => panic!("{store}: not a sweep: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_from_postgresql_reaches_the_receiver_and_is_logged_there_as_in_a_file() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    let pg = pg_database(&cluster, "resend").await;
    let on_pg = observe(&harness, pg.clone().into(), &EventKind::ALL, SECRET).await;
    let on_file = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let fixed = Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let down = Receiver::start(move |_, _| {
        if flag.load(Ordering::SeqCst) {
            Reply::ok()
        } else {
            Reply::status(404, "no such hook")
        }
    })
    .await;
    let lost = harness.subscribe(&down.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    let filed = eventually(Duration::from_secs(10), "both stores filed", || async {
        let on_pg = events::for_session_postgres(&pg, &session).await.ok()?;
        let file = Store::open(&on_file.db).ok()?;
        let in_file = events::for_session(&file, &session).ok()?;
        (on_pg.len() == 2 && in_file.len() == 2).then_some(on_pg)
    })
    .await;
    eventually(
        Duration::from_secs(20),
        "the deliveries settled",
        || async { (harness.stats().await["deliveries_in_progress"] == 0).then_some(()) },
    )
    .await;
    let client = harness.client.clone();
    let (pg_at, file_at) = (
        StoreAt::Postgres(pg.clone()),
        StoreAt::File(on_file.db.clone()),
    );
    let event = &filed[1];
    for store in [pg_at.clone(), file_at.clone()] {
        sweep(&client, store.clone()).await;
        let before = detail(&client, store.clone(), &event.event_id).await;
        let state = before
            .subscriptions
            .iter()
            .find(|timeline| timeline.outcome.subscription_id == lost.id)
            .map(|timeline| timeline.outcome.state);
        assert_eq!(state, Some(EventState::Missed), "{store}");
    }

    // The receiver is fixed: one re-send from each store.
    fixed.store(true, Ordering::SeqCst);
    for store in [pg_at.clone(), file_at.clone()] {
        let before = down.count();
        let (delivered, line) = resend(
            &client,
            store.clone(),
            &event.event_id,
            ResendTarget::Subscription(lost.id.clone()),
        )
        .await;
        assert!(delivered, "{store}: {line}");
        assert!(line.starts_with("delivered to "), "{store}: {line}");
        let got = down.captured();
        assert_eq!(got.len(), before + 1, "{store}: one POST");
        let body = &got.last().expect("the re-send").body;
        assert_eq!(
            body.as_ref(),
            event.body.as_slice(),
            "{store}: the exact bytes"
        );
        let after = detail(&client, store.clone(), &event.event_id).await;
        let state = after
            .subscriptions
            .iter()
            .find(|timeline| timeline.outcome.subscription_id == lost.id)
            .map(|timeline| timeline.outcome.state);
        assert_eq!(state, Some(EventState::Recovered), "{store}");
    }

    // The recovery row, as each store holds it (read from outside).
    let pg_rows = cluster
        .psql(
            "resend",
            "SELECT subscription_id, event_id, session_id, delivered, http_status_code \
             FROM earshot.recoveries ORDER BY id",
        )
        .expect("read from outside");
    let file_rows: Vec<String> = {
        let conn = rusqlite::Connection::open(&on_file.db).expect("the file");
        let mut statement = conn
            .prepare(
                "SELECT subscription_id, event_id, session_id, delivered, http_status_code \
                 FROM recoveries ORDER BY id",
            )
            .expect("a statement");
        statement
            .query_map([], |row| {
                let delivered: bool = row.get(3)?;
                Ok(format!(
                    "{}|{}|{}|{}|{}",
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    if delivered { "t" } else { "f" },
                    row.get::<_, i64>(4)?,
                ))
            })
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read")
    };
    let expected = format!("{}|{}|{session}|t|200", lost.id, event.event_id);
    assert_eq!(pg_rows, expected);
    assert_eq!(file_rows, vec![expected]);

    // The change each store recorded: the same action and detail.
    let pg_changes = changes::since_in(&StoreReader::Postgres(pg.clone()), 0)
        .await
        .expect("PostgreSQL's changes");
    let file_store = Store::open(&on_file.db).expect("the file");
    let file_changes = changes::since(&file_store, 0).expect("the file's changes");
    let said = |list: &[changes::Change]| -> Vec<(String, Option<String>, String)> {
        list.iter()
            .map(|change| {
                let change = change.clone();
                (change.action, change.subscription_id, change.detail)
            })
            .collect()
    };
    assert_eq!(said(&pg_changes), said(&file_changes));
    assert_eq!(pg_changes.len(), 1, "{pg_changes:?}");
    assert_eq!(pg_changes[0].action, "recover");
    assert!(
        pg_changes[0].detail.contains(&event.event_id),
        "{:?}",
        pg_changes[0]
    );

    // To any URL: it gets the bytes, and nothing is recorded.
    let elsewhere = Receiver::healthy().await;
    let (delivered, line) = resend(
        &client,
        pg_at,
        &event.event_id,
        ResendTarget::Url(elsewhere.url()),
    )
    .await;
    assert!(delivered, "{line}");
    let got = elsewhere.wait_count(1, "the re-send to a URL").await;
    assert_eq!(got[0].body.as_ref(), event.body.as_slice());
    let recoveries = cluster
        .psql("resend", "SELECT count(*) FROM earshot.recoveries")
        .expect("read from outside");
    assert_eq!(recoveries, "1", "a send to a URL is recorded nowhere");

    on_pg.stop().await;
    on_file.stop().await;
}
