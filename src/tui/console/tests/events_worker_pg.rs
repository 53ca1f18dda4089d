//! The Events pane's list read on a PostgreSQL store, as the worker runs
//! it: two observers (replicas, each `listen --store postgres://…`
//! in-process) file the emulator's deliveries over real HTTP into one
//! database of the test kit's throwaway cluster; the pane's first read is
//! the whole list, an idle read finds nothing, a read after more sessions
//! gets only their events (each once, though both replicas were sent each
//! event), which with the rows held make the list a full read gives. An
//! event's detail, which PostgreSQL does not hold yet, says so in one line.

use std::time::Duration;

use super::events_worker::run_effect;
use super::support::{SECRET, eventually, observe, start};
use crate::tui::kernel::store::{NOT_ON_POSTGRES, StoreAt};
use crate::tui::panes::events::EventsResult;
use crate::tui::panes::events::freshness::{ListMark, with_newer};
use crate::tui::panes::events::tasks::EventsEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::event_list::{self, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::receiver::listen::Listener;
use earshot_core::store::StoreReader;
use earshot_core::store::live_list::LiveCursor;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::Harness;
use earshot_testkit::postgres::PgCluster;

/// What one list read of the pane answers.
#[derive(Debug)]
enum Read {
    Full(Vec<EventRow>, ListMark),
    Skipped(Option<ListMark>),
    Newer(Vec<EventRow>, ListMark),
}

async fn run(client: &Client, store: &PgStore, effect: EventsEffect) -> EventsResult {
    run_effect(client, StoreAt::Postgres(store.clone()), effect).await
}

async fn read(client: &Client, store: &PgStore, known: Option<ListMark>) -> Read {
    let effect = EventsEffect::Load {
        known: known.map(Box::new),
        seq: 1,
        query: EventQuery::default(),
        since_ms: 0,
        limit: 100,
    };
    match run(client, store, effect).await {
        EventsResult::Loaded { result, mark, .. } => Read::Full(
            result.expect("the list reads"),
            mark.expect("a read leaves a mark"),
        ),
        EventsResult::Unchanged { mark, .. } => Read::Skipped(mark),
        EventsResult::Newer { rows, mark, .. } => {
            Read::Newer(rows, mark.expect("a read leaves a mark"))
        }
        other => panic!("not a list answer: {other:?}"),
    }
}

/// The list as a full query of the store reads it now.
async fn full(store: &PgStore) -> Vec<EventRow> {
    let reader = StoreReader::Postgres(store.clone());
    event_list::list_from(&reader, &EventQuery::default(), 0, 100)
        .await
        .expect("the list")
}

/// An observer filing into `store`, subscribed to every event.
async fn replica(harness: &Harness, store: PgStore) -> Listener {
    observe(harness, store.into(), &EventKind::ALL, SECRET).await
}

async fn filed(store: &PgStore, count: usize) {
    eventually(Duration::from_secs(10), "the events filed", || async {
        (full(store).await.len() == count).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pane_reads_a_postgresql_store_whole_then_only_what_either_replica_filed() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("console").expect("database made");
    let target = PgTarget::parse(&cluster.url("console")).expect("a store URL");
    let sources = cluster.password_sources();
    let connect = || async {
        PgStore::connect(target.clone(), &sources)
            .await
            .expect("the store opens")
    };
    let first = replica(&harness, connect().await).await;
    let second = replica(&harness, connect().await).await;
    let console = connect().await;
    let client = harness.client.clone();

    let one = harness.start_session(None).await;
    harness.complete_session(&one).await;
    filed(&console, 2).await;
    let Read::Full(rows, mark) = read(&client, &console, None).await else {
        panic!("the first read is whole")
    };
    assert_eq!(rows, full(&console).await);
    assert_eq!(
        rows.len(),
        2,
        "each event once, though both replicas got it"
    );
    assert!(
        rows.iter().all(|row| row.subscriptions.is_empty()),
        "no outcomes on PostgreSQL yet"
    );
    assert_eq!(mark.files, None, "no file to watch");
    assert!(matches!(mark.cursor, Some(LiveCursor::Postgres(_))));
    let Read::Skipped(Some(mark)) = read(&client, &console, Some(mark)).await else {
        panic!("nothing filed since: nothing new, the cursor renewed")
    };

    let two = harness.start_session(None).await;
    harness.complete_session(&two).await;
    let three = harness.start_session(None).await;
    harness.complete_session(&three).await;
    filed(&console, 6).await;
    let Read::Newer(newer, mark) = read(&client, &console, Some(mark)).await else {
        panic!("events filed: only they are read")
    };
    assert_eq!(newer.len(), 4, "{newer:?}");
    assert!(
        newer
            .iter()
            .all(|row| row.session_id == two || row.session_id == three),
        "{newer:?}"
    );
    assert_eq!(with_newer(&rows, newer, 0, 100), full(&console).await);
    assert!(
        matches!(
            read(&client, &console, Some(mark)).await,
            Read::Skipped(Some(_))
        ),
        "and then nothing more"
    );

    // What PostgreSQL does not hold yet is said in one line.
    let detail = EventsEffect::Detail {
        seq: 1,
        event_id: rows[0].event_id.clone(),
    };
    match run(&client, &console, detail).await {
        EventsResult::Detail {
            result: Err(failure),
            ..
        } => assert_eq!(failure.message, NOT_ON_POSTGRES),
        other => panic!("not the detail's failure: {other:?}"),
    }

    first.stop().await;
    second.stop().await;
}
