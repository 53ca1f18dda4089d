//! The Events pane's list read on a PostgreSQL store, as the worker runs
//! it: two observers (replicas, each `listen --store postgres://…`
//! in-process) file the emulator's deliveries over real HTTP into one
//! database of the test kit's throwaway cluster; the pane's first read is
//! the whole list, an idle read finds nothing, a read after more sessions
//! gets only their events (each once, though both replicas were sent each
//! event), which with the rows held make the list a full read gives.
//!
//! An event's detail read from PostgreSQL as the worker runs it, beside
//! a file fed the same deliveries: the headers and exact body the
//! observer filed, outcomes unknown (never "none") until the session is
//! swept, then each subscription's outcome and attempts as the file's
//! detail has them; with the outcome table gone, the headers and body
//! still, and the outcomes unknown with why.

use std::time::Duration;

use super::events_worker::run_effect;
use super::support::{Observed, Receiver, pane_results, pg_database};
use super::support::{SECRET, eventually, observe, start};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::events::EventsResult;
use crate::tui::panes::events::freshness::{ListMark, with_newer};
use crate::tui::panes::events::tasks::EventsEffect;
use crate::tui::panes::events::view::detail_lines;
use crate::tui::theme::Theme;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::event_list::{self, EventDetail, EventRow, NOT_SWEPT_YET};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::sweep::SweepReport;
use earshot_core::receiver::listen::Listener;
use earshot_core::store::StoreReader;
use earshot_core::store::live_list::LiveCursor;
use earshot_core::store::outcomes::EventState;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;
use earshot_testkit::{Harness, Reply};

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

    first.stop().await;
    second.stop().await;
}

/// The pane's read of event `event_id` in full from `store`.
async fn detail(client: &Client, store: StoreAt, event_id: &str) -> EventDetail {
    let effect = EventsEffect::Detail {
        seq: 7,
        event_id: event_id.to_owned(),
    };
    match run_effect(client, store.clone(), effect).await {
        EventsResult::Detail {
            seq: 7,
            result: Ok(Some(detail)),
        } => *detail,
        other => panic!("{store}: not the event's detail: {other:?}"),
    }
}

/// The detail as the pane draws it, 160 columns wide.
fn drawn(detail: &EventDetail) -> String {
    let now_ms = earshot_core::store::now_ms();
    detail_lines(detail, 0, false, now_ms, 160, &Theme::fallback())
        .iter()
        .map(|line| line.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Health pane's sweep of `store`, as the console runs it.
async fn swept(client: &Client, store: StoreAt) -> SweepReport {
    use crate::tui::panes::health::HealthResult;
    use crate::tui::panes::health::tasks::HealthEffect;
    match pane_results(client, store, HealthEffect::Sweep)
        .await
        .as_slice()
    {
        [HealthResult::Swept(Ok(report))] => report.clone(),
        other => panic!("not a sweep: {other:?}"),
    }
}

/// `bytes` as lower-case hex, as psql's `encode(…, 'hex')` prints them.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_detail_reads_from_postgresql_as_from_a_file_and_unknown_before_the_sweep() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    let pg = pg_database(&cluster, "detail").await;
    let on_pg = replica(&harness, pg.clone()).await;
    let on_file = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let healthy = Receiver::healthy().await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such hook")).await;
    let delivered = harness.subscribe(&healthy.url(), &EventKind::ALL).await;
    let missed = harness.subscribe(&gone.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    filed(&pg, 2).await;
    let file = StoreAt::File(on_file.db.clone());
    let ids: Vec<String> = eventually(Duration::from_secs(10), "the file's events", || async {
        let ids: Vec<String> = earshot_core::store::Store::open(&on_file.db)
            .ok()
            .and_then(|store| earshot_core::store::events::for_session(&store, &session).ok())?
            .into_iter()
            .map(|event| event.event_id)
            .collect();
        (ids.len() == 2).then_some(ids)
    })
    .await;
    let client = harness.client.clone();
    let pg_at = StoreAt::Postgres(pg.clone());

    // Before the sweep: the event as filed, its outcomes unknown.
    let before = detail(&client, pg_at.clone(), &ids[1]).await;
    let stored = cluster
        .psql(
            "detail",
            &format!(
                "SELECT headers, encode(body, 'hex') FROM earshot.events WHERE event_id = '{}'",
                ids[1]
            ),
        )
        .expect("read from outside");
    let (headers, body) = stored.split_once('|').expect("two columns");
    let headers: Vec<(String, String)> = serde_json::from_str(headers).expect("headers JSON");
    assert!(!headers.is_empty());
    assert_eq!(before.headers, headers, "the headers the observer filed");
    assert_eq!(hex(&before.body), body, "the exact bytes filed");
    assert_eq!(before.row.session_id, session);
    assert_eq!(before.outcomes_unknown.as_deref(), Some(NOT_SWEPT_YET));
    assert!(before.subscriptions.is_empty() && !before.row.outcomes_known);
    let page = drawn(&before);
    assert!(
        page.contains("unknown: its session has not been swept"),
        "{page}"
    );
    assert!(page.contains("per subscription (unknown;"), "{page}");
    assert!(!page.contains("no subscription"), "{page}");

    // Once every delivery settled, each store's own sweep: the same
    // outcomes and attempts per subscription on both.
    eventually(
        Duration::from_secs(20),
        "the deliveries settled",
        || async { (harness.stats().await["deliveries_in_progress"] == 0).then_some(()) },
    )
    .await;
    assert_eq!(swept(&client, pg_at.clone()).await.sessions_swept, 1);
    assert_eq!(swept(&client, file.clone()).await.sessions_swept, 1);
    for id in &ids {
        let on_pg = detail(&client, pg_at.clone(), id).await;
        let on_file = detail(&client, file.clone(), id).await;
        assert_eq!(on_pg.outcomes_unknown, None, "{on_pg:?}");
        assert_eq!(on_pg.subscriptions, on_file.subscriptions, "{id}");
        assert_eq!(
            on_pg.body, on_file.body,
            "the same bytes to every subscription"
        );
        assert_eq!(on_pg.give_up, on_file.give_up);
        assert_eq!(on_pg.row.event, on_file.row.event);
        assert_eq!(on_pg.subscriptions.len(), 4, "two observers, two receivers");
        let of = |sub: &str| {
            on_pg
                .subscriptions
                .iter()
                .find(|timeline| timeline.outcome.subscription_id == sub)
                .unwrap_or_else(|| panic!("{sub} in {on_pg:?}"))
        };
        assert_eq!(of(&delivered.id).outcome.state, EventState::Delivered);
        assert_eq!(of(&delivered.id).attempts.len(), 1);
        assert_eq!(
            of(&delivered.id).url.as_deref(),
            Some(healthy.url().as_str())
        );
        let lost = of(&missed.id);
        assert_eq!(lost.outcome.state, EventState::Missed);
        assert_eq!(lost.outcome.http_status_code, 404);
        assert!(lost.attempts[0].diagnosis.is_some(), "{lost:?}");
        // The observer's own subscription is each store's own.
        let own: Vec<&str> = on_pg
            .row
            .subscriptions
            .iter()
            .filter(|outcome| outcome.observer)
            .map(|outcome| outcome.id.as_str())
            .collect();
        assert_eq!(own.len(), 1, "{:?}", on_pg.row.subscriptions);
        let page = drawn(&on_pg);
        assert!(
            page.contains("MISSED") && page.contains("DELIVERED"),
            "{page}"
        );
        assert!(!page.contains("unknown:"), "{page}");
    }
    on_pg.stop().await;
    on_file.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detail_whose_outcomes_cannot_be_read_shows_the_event_and_says_unknown_with_why() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    let pg = pg_database(&cluster, "detail").await;
    let observer = replica(&harness, pg.clone()).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    filed(&pg, 2).await;
    let client = harness.client.clone();
    let at = StoreAt::Postgres(pg.clone());
    eventually(
        Duration::from_secs(20),
        "the deliveries settled",
        || async { (harness.stats().await["deliveries_in_progress"] == 0).then_some(()) },
    )
    .await;
    assert_eq!(swept(&client, at.clone()).await.sessions_swept, 1);
    let event_id = full(&pg).await[0].event_id.clone();
    let read = detail(&client, at.clone(), &event_id).await;
    assert_eq!(read.outcomes_unknown, None);
    assert_eq!(read.subscriptions.len(), 1, "the observer's own");
    observer.stop().await;

    cluster
        .psql(
            "detail",
            "ALTER TABLE earshot.event_outcomes RENAME TO event_outcomes_gone",
        )
        .expect("the outcome table renamed");
    let unread = detail(&client, at.clone(), &event_id).await;
    assert_eq!(unread.headers, read.headers, "the event is still read");
    assert_eq!(unread.body, read.body);
    let why = unread.outcomes_unknown.clone().expect("outcomes unknown");
    assert!(why.starts_with("not read from the store ("), "{why}");
    assert!(why.contains("event_outcomes"), "{why}");
    assert!(unread.subscriptions.is_empty() && !unread.row.outcomes_known);
    let page = drawn(&unread);
    assert!(page.contains("unknown: not read from the store"), "{page}");
    assert!(!page.contains("no subscription"), "{page}");

    // Without the events table the event itself cannot be read: the
    // pane's failure, said as it is (never "no such event").
    cluster
        .psql("detail", "ALTER TABLE earshot.events RENAME TO events_gone")
        .expect("the events table renamed");
    let effect = EventsEffect::Detail {
        seq: 8,
        event_id: event_id.clone(),
    };
    match run_effect(&client, at, effect).await {
        EventsResult::Detail {
            result: Err(failure),
            ..
        } => assert!(
            failure.message.contains("earshot.events"),
            "{}",
            failure.message
        ),
        other => panic!("not a failed read: {other:?}"),
    }
}
