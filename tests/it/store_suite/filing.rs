//! Filing through the store handle, on both backends: a repeat is not
//! new and is stored once; the same events filed by several replicas at
//! the same moment are stored once each, and each is new to exactly one
//! of them; a delivery `events` cannot file is kept once by its
//! `event_id` (each without one is kept).

use std::sync::Arc;

use earshot_core::store::events::{Filing, ObservedEvent};
use earshot_core::store::now_ms;

use super::{event, store_test};

/// Replicas in the concurrency test.
const REPLICAS: usize = 6;
/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

store_test! {
    async fn a_repeat_is_not_new_and_is_stored_once(store) {
        let handle = store.replica().await;
        let first = event(1, now_ms());
        assert!(handle.file(first.clone()).await.expect("filed"), "new");
        assert!(!handle.file(first.clone()).await.expect("filed"), "a repeat");
        assert!(handle.file(event(2, now_ms())).await.expect("filed"), "another");
        assert_eq!(store.count("events"), 2);
        assert_eq!(store.count_id("events", "evt-0001"), 1);
        assert_eq!(store.count("sessions"), 2);
    }
}

store_test! {
    async fn the_same_events_filed_by_replicas_at_once_are_stored_once_each(store) {
        let now = now_ms();
        // Half of them ten days ago: on PostgreSQL a day without a
        // partition until an event needs it, which every replica finds
        // missing at once.
        let old_day = now - 10 * DAY_MS;
        let events: Arc<Vec<ObservedEvent>> = Arc::new(
            (0..60)
                .map(|index| event(index, if index % 2 == 0 { now } else { old_day }))
                .collect(),
        );
        let mut replicas = Vec::new();
        for _ in 0..REPLICAS {
            replicas.push(store.replica().await);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(REPLICAS));
        let filers = replicas.into_iter().enumerate().map(|(replica, handle)| {
            let events = Arc::clone(&events);
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                let mut new = Vec::new();
                // Each replica in its own order (strides prime to 60), so
                // copies cross.
                let stride = [1, 7, 11, 13, 17, 19][replica % 6];
                for step in 0..events.len() {
                    let index = (step * stride) % events.len();
                    if handle.file(events[index].clone()).await.expect("filed") {
                        new.push(index);
                    }
                }
                new
            })
        });
        let mut first_copies = vec![0; events.len()];
        for filed in futures_util::future::join_all(filers).await {
            for index in filed.expect("task") {
                first_copies[index] += 1;
            }
        }
        assert!(
            first_copies.iter().all(|&copies| copies == 1),
            "each event is new to exactly one replica: {first_copies:?}"
        );
        assert_eq!(store.count("events"), 60);
        for index in [0, 1, 59] {
            assert_eq!(store.count_id("events", &format!("evt-{index:04}")), 1);
        }
        assert_eq!(store.count("sessions"), 7);
    }
}

store_test! {
    async fn a_delivery_events_cannot_file_is_kept_once_by_its_event_id(store) {
        let handle = store.replica().await;
        let no_timestamp = br#"{"event_id":"evt-odd","event":"call.failed","call":{"call_id":"c1"}}"#;
        let filing = || Filing::read(no_timestamp, vec![], Some("dlv-odd".into()), now_ms());
        assert!(matches!(filing(), Filing::Unfiled(_)), "{:?}", filing());
        assert!(handle.file(filing()).await.expect("kept"), "new");
        assert!(!handle.file(filing()).await.expect("kept"), "a repeat");
        assert_eq!(store.count_id("unfiled_events", "evt-odd"), 1);
        // Without an event_id nothing tells copies apart: each is kept.
        let no_id = || Filing::read(b"[1, 2]", vec![], None, now_ms());
        assert!(handle.file(no_id()).await.expect("kept"));
        assert!(handle.file(no_id()).await.expect("kept"));
        assert_eq!(store.count("unfiled_events"), 3);
        assert_eq!(store.count("events"), 0);
    }
}
