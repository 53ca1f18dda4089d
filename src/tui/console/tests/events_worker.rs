//! The Events pane's list read against the emulator over real HTTP: the
//! observer files a session's events, and the pane's read (the worker's
//! task, run as the worker runs it) skips the query while the store saw
//! no commit or a commit of nothing a list shows (the list state stands),
//! reads only the new events once events were filed (the list they make
//! with the rows held equal to a full re-query), and reads everything
//! again after outcomes changed by a sweep.

use std::path::Path;
use std::time::Duration;

use super::support::{Observed, Receiver, SECRET, eventually, pane_results, start};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::events::EventsResult;
use crate::tui::panes::events::freshness::{ListMark, with_newer};
use crate::tui::panes::events::tasks::EventsEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::event_list::{self, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::sweep::sweep;
use earshot_core::store::{AsyncStore, Store, events};
use earshot_testkit::Reply;

/// What one list read of the pane answers.
#[derive(Debug)]
enum Read {
    /// A full read: its rows and the mark it saw.
    Full(Vec<EventRow>, ListMark),
    /// Skipped, with the store's new mark when only the files' changed.
    Skipped(Option<ListMark>),
    /// Only the events filed since, and the mark it saw.
    Newer(Vec<EventRow>, ListMark),
}

/// The Events pane's `effect` run on `store` as the console runs it: the
/// result it reports.
pub(super) async fn run_effect(
    client: &Client,
    store: StoreAt,
    effect: EventsEffect,
) -> EventsResult {
    pane_results(client, store, effect)
        .await
        .into_iter()
        .next()
        .expect("the task answers")
}

async fn read(client: &Client, db: &Path, known: Option<ListMark>) -> Read {
    let effect = EventsEffect::Load {
        known: known.map(Box::new),
        seq: 1,
        query: EventQuery::default(),
        since_ms: 0,
        limit: 100,
    };
    match run_effect(client, db.to_path_buf().into(), effect).await {
        EventsResult::Loaded { result, mark, .. } => Read::Full(
            result.expect("the list reads"),
            mark.expect("a store has a mark"),
        ),
        EventsResult::Unchanged { mark, .. } => Read::Skipped(mark),
        EventsResult::Newer { rows, mark, .. } => {
            Read::Newer(rows, mark.expect("a store has a mark"))
        }
        other => panic!("not a list answer: {other:?}"),
    }
}

fn full_read(read: Read) -> (Vec<EventRow>, ListMark) {
    match read {
        Read::Full(rows, mark) => (rows, mark),
        other => panic!("not a full read: {other:?}"),
    }
}

/// The list as a full query reads it now.
fn full(db: &Path) -> Vec<EventRow> {
    let store = Store::open(db).expect("the store");
    event_list::list(&store, &EventQuery::default(), 0, 100).expect("the list")
}

async fn filed(db: &Path, session: &str, count: usize) {
    eventually(Duration::from_secs(10), "the events filed", || async {
        let store = Store::open(db).ok()?;
        (events::for_session(&store, session).ok()?.len() == count).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_read_is_skipped_and_new_events_or_outcomes_are_read_again() {
    let harness = start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let db = observed.db.clone();
    let receiver = Receiver::start(|_, _| Reply::status(500, "down")).await;
    harness
        .subscribe_secret(&receiver.url(), &EventKind::ALL, SECRET)
        .await;
    let client = harness.client.clone();

    let first = harness.start_session(None).await;
    harness.complete_session(&first).await;
    filed(&db, &first, 2).await;
    let (rows, mark) = full_read(read(&client, &db, None).await);
    assert_eq!(rows, full(&db));
    assert_eq!(rows.len(), 2);
    assert!(
        matches!(
            read(&client, &db, Some(mark.clone())).await,
            Read::Skipped(None)
        ),
        "no commit since: the read is skipped"
    );

    // A commit of the sweep's bookkeeping only: one row read, no list.
    rusqlite::Connection::open(&db)
        .expect("the store")
        .execute("UPDATE sessions SET last_swept_ms = 1", [])
        .expect("noted");
    let Read::Skipped(Some(renewed)) = read(&client, &db, Some(mark.clone())).await else {
        panic!("a commit of nothing listed reads no list")
    };
    assert_ne!(renewed.files, mark.files);
    assert_eq!(renewed.cursor, mark.cursor);
    let mark = renewed;

    // The sweep files the customer's failed attempts: outcomes change.
    let before_sweep = full(&db);
    let store = AsyncStore::open(db.clone()).await.expect("the store");
    sweep(&client, &store, 50).await.expect("a sweep");
    drop(store);
    let (rows, mark) = full_read(read(&client, &db, Some(mark)).await);
    assert_eq!(rows, full(&db));
    assert_ne!(rows, before_sweep, "the sweep changed the outcomes shown");

    // New events only: those two are read, and with the rows held they
    // make the list a full query gives.
    let second = harness.start_session(None).await;
    harness.complete_session(&second).await;
    filed(&db, &second, 2).await;
    let Read::Newer(newer, mark) = read(&client, &db, Some(mark)).await else {
        panic!("events filed, nothing else changed: only they are read")
    };
    assert!(
        matches!(read(&client, &db, Some(mark)).await, Read::Skipped(None)),
        "and then nothing more"
    );
    assert_eq!(newer.len(), 2);
    assert!(
        newer.iter().all(|row| row.session_id == second),
        "{newer:?}"
    );
    let merged = with_newer(&rows, newer, 0, 100);
    assert_eq!(merged, full(&db));
    assert_eq!(merged.len(), 4);

    observed.stop().await;
}
