//! The live list (`StoreReader::live_events`, what the console's Events
//! pane reads through): after a whole read, each read returns only the
//! events filed since, by any replica, each once, including one whose
//! filing transaction began before others and committed after them (on
//! PostgreSQL the case a number given at insert gets wrong); an outcome
//! changed makes the next read whole.

use super::{Backend, event, store_test};
use earshot_core::store::event_list::{Filter, ListedEvent};
use earshot_core::store::live_list::{LiveCursor, LiveRead};
use earshot_core::store::{StoreReader, now_ms};

/// One live read of every event (limit 1,000): the ids it returned,
/// whether it was whole, and the cursor for the next.
async fn read(
    reader: &StoreReader,
    filter: &Filter<'_>,
    known: Option<&LiveCursor>,
) -> (Option<Vec<String>>, bool, LiveCursor) {
    let (read, cursor) = reader
        .live_events(filter, 1_000, known)
        .await
        .expect("the live read");
    let ids = |rows: Vec<ListedEvent>| rows.into_iter().map(|row| row.event_id).collect();
    let (ids, whole) = match read {
        LiveRead::Same => (None, false),
        LiveRead::Newer(rows) => (Some(ids(rows)), false),
        LiveRead::All(rows) => (Some(ids(rows)), true),
    };
    (ids, whole, cursor.expect("a cursor"))
}

fn named(ids: &[usize]) -> Option<Vec<String>> {
    Some(ids.iter().map(|index| format!("evt-{index:04}")).collect())
}

store_test!(
    async fn events_filed_between_reads_by_two_replicas_are_each_read_once_even_one_committed_late(
        store
    ) {
        let first = store.replica().await;
        let second = store.replica().await;
        let reader = store.reader().await;
        let now = now_ms();
        let file = |replica: &earshot_core::store::StoreHandle, index: usize, at: i64| {
            let replica = replica.clone();
            async move {
                assert!(
                    replica.file(event(index, at)).await.expect("filed"),
                    "event {index} is new"
                );
            }
        };
        file(&first, 0, now - 9_000).await;
        file(&second, 1, now - 8_000).await;
        let all = Filter::default();
        let (ids, whole, cursor) = read(&reader, &all, None).await;
        assert!(whole, "no cursor: the whole list");
        assert_eq!(ids, named(&[1, 0]));
        let (ids, _, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, None, "nothing filed since");

        // A slow filing begins (its transaction takes its id first), two
        // replicas file and commit after it, and a read comes between.
        let slow = store.hold_filing(event(4, now - 3_000)).await;
        file(&first, 2, now - 5_000).await;
        file(&second, 3, now - 4_000).await;
        let (ids, whole, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert!(!whole, "only what was filed since");
        // Not the slow one: uncommitted on PostgreSQL, not filed yet on
        // SQLite (filed at its commit there).
        assert_eq!(ids, named(&[3, 2]));
        slow.commit().await;
        let (ids, _, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(
            ids,
            named(&[4]),
            "the late commit is read, the two read before are not again"
        );
        let (ids, _, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, None, "and then nothing");

        // A copy of a filed event (a redelivery to the other replica) is
        // no new row; an old event delivered late (a retry) is new.
        assert!(
            !second.file(event(3, now - 4_000)).await.expect("kept"),
            "a copy"
        );
        file(&second, 5, now - 3_600_000).await;
        file(&first, 6, now - 1_000).await;
        let (ids, _, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, named(&[6, 5]));

        // A filter holds on the live read too.
        let words = vec!["evt-0007".to_owned()];
        let only_seven = Filter {
            words: &words,
            ..Filter::default()
        };
        let (_, _, seven_cursor) = read(&reader, &only_seven, None).await;
        file(&first, 7, now - 500).await;
        file(&second, 8, now - 400).await;
        let (ids, _, _) = read(&reader, &only_seven, Some(&seven_cursor)).await;
        assert_eq!(ids, named(&[7]));
        let (ids, _, _) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, named(&[8, 7]));

        // Every event read once in all: the whole list is what was filed.
        let (ids, whole, cursor) = read(&reader, &all, None).await;
        assert!(whole);
        assert_eq!(ids, named(&[8, 7, 6, 4, 3, 2, 1, 0, 5]));

        // An outcome a list shows changes without any event filed (the
        // sweep learned it): the next read is whole, so the rows held get
        // it; a write that changes nothing listed leaves the list alone.
        let (ids, _, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, None);
        // SQLite keys the rows by the session's number.
        let (number, of_session) = match store.backend() {
            Backend::Sqlite => (
                "session_no, ",
                "(SELECT session_no FROM sessions WHERE session_id = 'ses-1'), ",
            ),
            Backend::Postgres => ("", ""),
        };
        store.rows(&format!(
            "INSERT INTO {{t}}event_outcomes ({number}session_id, subscription_id, event_key,
                 event_id, event, occurred_ms, state, attempts, http_status_code, error_class)
             VALUES ({of_session}'ses-1', 'sub_a', 'evt-0001', 'evt-0001', 'session.ended', {},
                 'delivered', 1, 200, '')",
            now - 8_000
        ));
        let (ids, whole, cursor) = read(&reader, &all, Some(&cursor)).await;
        assert!(whole, "an outcome changed: the whole list, {ids:?}");
        let (ids, _, _) = read(&reader, &all, Some(&cursor)).await;
        assert_eq!(ids, None, "and then nothing");
    }
);
