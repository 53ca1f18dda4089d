//! Read from a real store: the observer's silence and its evidence, and
//! incidents that end with their subscription (deleted or paused, by
//! earshot or as a sweep's listing shows).

use super::incidents::{self, SubscriptionEnd};
use super::tests::{event, record, temp_store};
use super::*;
use crate::api::types::agents::{DeliveryStatus, Subscription};
use crate::history::coverage::{CoverageState, SILENT_AFTER_MS, coverage};

const HOUR: i64 = 3_600_000;
/// A fixed start, far from the epoch and on a whole hour.
const T0: i64 = 500_000 * HOUR;
const EVENTS: [&str; 2] = ["session.started", "session.completed"];

fn subscription(id: &str, enabled: bool) -> Subscription {
    Subscription {
        id: id.into(),
        url: format!("https://{id}.example.com/hook"),
        events: EVENTS.iter().map(|name| name.to_string()).collect(),
        agent_id: None,
        enabled,
        secret_version: 1,
        extra: Default::default(),
    }
}

/// An event the observer filed, delivered as attempt `delivery_id`.
fn filed(id: &str, session: &str, delivery_id: &str, at_ms: i64) -> events::ObservedEvent {
    let mut event = event(id, session, "session.started", at_ms);
    event.delivery_id = Some(delivery_id.to_owned());
    event
}

#[test]
fn attempts_to_the_observers_own_subscription_it_never_filed_make_it_silent() {
    let (_dir, mut store) = temp_store();
    let subs = [subscription("obs", true), subscription("cust", true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &filed("e1", "ses_1", "r1", T0)).unwrap();
    let delivered = |id: &str, sub: &str, at| {
        record(id, sub, "ses_1", DeliveryStatus::Delivered, Some(200), at)
    };
    let mut records = vec![delivered("r1", "obs", T0), delivered("c1", "cust", T0)];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + 1_000).unwrap();
    let fine = coverage(&store, T0 - HOUR, T0 + 10 * 60_000).unwrap();
    assert_eq!(fine.state, CoverageState::Ok, "{fine:?}");
    assert_eq!(fine.silence_line(), None);
    // The platform's next attempt to the observer failed, 2 min later.
    let later = T0 + 2 * SILENT_AFTER_MS;
    records.push(record(
        "r2",
        "obs",
        "ses_1",
        DeliveryStatus::Failed,
        None,
        later,
    ));
    deliveries::record_sweep(&mut store, "ses_1", &records, later + 1_000).unwrap();
    let silent = coverage(&store, T0 - HOUR, later + 1_000).unwrap();
    assert_eq!(silent.state, CoverageState::Silent);
    assert_eq!(silent.silent_since_ms, Some(T0 + 5), "its last filed event");
    let line = silent.silence_line().unwrap();
    assert!(
        line.starts_with(
            "observer silent since 08:00 (the platform tried its own subscription at 08:02, "
        ) && line.ends_with(" after its last filed event)"),
        "{line}"
    );
    // Every enabled row reads unknown from then on.
    let board = crate::history::report::board(&store, T0 - HOUR, later + 1_000).unwrap();
    assert!(
        board
            .subscriptions
            .iter()
            .all(|row| row.unknown_since == silent.silent_since),
        "{:?}",
        board.subscriptions
    );
}

#[test]
fn an_observer_quiet_for_longer_than_its_pace_allows_is_silent_without_a_sweep() {
    let (_dir, store) = temp_store();
    // One event every 2 s for a minute: 31 events, the last at T0 + 60 s.
    for n in 0..=30 {
        let at = T0 + n * 2_000;
        let id = format!("e{n}");
        events::insert(&store.conn, &filed(&id, "ses_1", &format!("r{n}"), at)).unwrap();
    }
    let last = T0 + 60_000 + 5;
    let window = T0 - HOUR;
    let ok = coverage(&store, window, last + SILENT_AFTER_MS).unwrap();
    assert_eq!(ok.state, CoverageState::Ok);
    let silent = coverage(&store, window, last + 4 * 60_000).unwrap();
    assert_eq!(silent.state, CoverageState::Silent);
    assert_eq!(
        silent.evidence.as_deref(),
        Some("no event filed for 4 min; the hour before brought one every 2 s")
    );
    assert!(
        silent
            .explain(last + 4 * 60_000)
            .starts_with("observer silent since "),
    );
}

#[test]
fn the_pace_query_reads_an_index_not_the_events_table() {
    let (_dir, store) = temp_store();
    let plan: Vec<String> = store
        .conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT count(*), min(received_ms) FROM events
             WHERE received_ms BETWEEN ?1 AND ?2",
        )
        .unwrap()
        .query_map([T0, T0], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|step| step.contains("USING COVERING INDEX events_by_received")),
        "{plan:?}"
    );
}

/// A store with one open 401 incident on `cust`, and `obs` healthy.
fn store_with_an_incident() -> (tempfile::TempDir, Store) {
    let (dir, mut store) = temp_store();
    let subs = [subscription("obs", true), subscription("cust", true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &filed("e1", "ses_1", "r1", T0)).unwrap();
    let records = [
        record(
            "r1",
            "obs",
            "ses_1",
            DeliveryStatus::Delivered,
            Some(200),
            T0,
        ),
        record("c1", "cust", "ses_1", DeliveryStatus::Failed, Some(401), T0),
    ];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + 1_000).unwrap();
    let open = incidents::list(&store, T0 - HOUR, false).unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].subscription_id, "cust");
    (dir, store)
}

#[test]
fn deleting_or_pausing_a_subscription_resolves_its_incidents_with_the_reason() {
    for end in [SubscriptionEnd::Deleted, SubscriptionEnd::Paused] {
        let (_dir, mut store) = store_with_an_incident();
        let resolved = incidents::end_subscription(&store, "cust", end, T0 + 2_000).unwrap();
        assert_eq!(resolved, 1);
        assert!(
            incidents::list(&store, T0 - HOUR, false)
                .unwrap()
                .is_empty()
        );
        let all = crate::history::incidents::list(&store, T0 - HOUR, true).unwrap();
        assert_eq!(all[0].resolved_reason.as_deref(), Some(end.reason()));
        assert_eq!(all[0].resolved_at.as_deref(), Some("2027-01-15T08:00:02Z"));
        // The store's subscription follows: gone, or paused.
        let stored = deliveries::subscriptions(&store).unwrap();
        let cust = stored.iter().find(|sub| sub.id == "cust");
        match end {
            SubscriptionEnd::Deleted => assert!(cust.is_none()),
            SubscriptionEnd::Paused => assert!(!cust.unwrap().enabled),
        }
        // A sweep of the same failure, later, opens no incident again.
        let records = [record(
            "c1",
            "cust",
            "ses_1",
            DeliveryStatus::Failed,
            Some(401),
            T0,
        )];
        let mut again = records.to_vec();
        again[0].attempt_count = 2;
        deliveries::record_sweep(&mut store, "ses_1", &again, T0 + 3_000).unwrap();
        assert!(
            incidents::list(&store, T0 - HOUR, false)
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn a_listing_without_the_subscription_or_with_it_paused_resolves_its_incidents() {
    let (_dir, mut store) = store_with_an_incident();
    let paused = [subscription("obs", true), subscription("cust", false)];
    deliveries::replace_subscriptions(&mut store, &paused, T0 + 2_000).unwrap();
    let all = incidents::list(&store, T0 - HOUR, true).unwrap();
    assert_eq!(
        all[0].resolved_reason.as_deref(),
        Some("subscription paused")
    );

    let (_dir, mut store) = store_with_an_incident();
    let without = [subscription("obs", true)];
    deliveries::replace_subscriptions(&mut store, &without, T0 + 2_000).unwrap();
    let all = incidents::list(&store, T0 - HOUR, true).unwrap();
    assert_eq!(
        all[0].resolved_reason.as_deref(),
        Some("subscription deleted")
    );
    assert_eq!(all[0].resolved_ms, Some(T0 + 2_000));
}
