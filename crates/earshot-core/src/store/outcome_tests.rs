//! Event rows and incidents, kept as records, events and recoveries arrive.

use super::incidents;
use super::outcomes::{self, EventState};
use super::tests::{event, record, temp_store};
use super::*;
use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, Subscription};

const HOUR: i64 = 3_600_000;
/// A fixed start, far from the epoch and on a whole hour.
const T0: i64 = 500_000 * HOUR;

fn subscription(id: &str, events: &[&str], enabled: bool) -> Subscription {
    Subscription {
        id: id.into(),
        url: format!("https://{id}.example.com/hook"),
        events: events.iter().map(|name| name.to_string()).collect(),
        agent_id: None,
        enabled,
        secret_version: 1,
        extra: Default::default(),
    }
}

const SESSION_EVENTS: [&str; 2] = ["session.started", "session.completed"];

fn failed(id: &str, sub: &str, session: &str, code: u16, at_ms: i64) -> DeliveryRecord {
    record(id, sub, session, DeliveryStatus::Failed, Some(code), at_ms)
}

fn delivered(id: &str, sub: &str, session: &str, at_ms: i64) -> DeliveryRecord {
    record(
        id,
        sub,
        session,
        DeliveryStatus::Delivered,
        Some(200),
        at_ms,
    )
}

/// `(state, count)` of one subscription's events since `since`.
fn totals(store: &Store, sub: &str, since: i64) -> Vec<(EventState, i64)> {
    let mut totals: Vec<(EventState, i64)> = Vec::new();
    for count in outcomes::counts_since(store, since).unwrap() {
        if count.subscription_id != sub {
            continue;
        }
        match totals.iter_mut().find(|(state, _)| *state == count.state) {
            Some((_, sum)) => *sum += count.count,
            None => totals.push((count.state, count.count)),
        }
    }
    totals.sort();
    totals
}

fn recover(store: &Store, sub: &str, event_id: &str, session: &str, delivered: bool, at: i64) {
    let row = recoveries::start(store, sub, event_id, session, at).unwrap();
    let result = recoveries::RecoveryResult {
        http_status_code: Some(if delivered { 200 } else { 401 }),
        error: (!delivered).then(|| "HTTP 401".to_owned()),
        latency_ms: 1,
        delivered,
    };
    recoveries::finish(store, row, &result, at).unwrap();
}

#[test]
fn events_are_counted_once_however_many_attempts_and_a_recovery_shows() {
    let (_dir, mut store) = temp_store();
    let subs = [
        subscription("bad", &SESSION_EVENTS, true),
        subscription("good", &SESSION_EVENTS, true),
    ];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    events::insert(
        &store.conn,
        &event("e2", "ses_1", "session.completed", T0 + 10_000),
    )
    .unwrap();
    // "bad": e1 refused once (401, never retried); e2 failed with a 500,
    // retried, failed again with no retry left. "good": both delivered.
    let mut first = failed("b2", "bad", "ses_1", 500, T0 + 10_100);
    first.next_retry_at = Some(super::tests::at(T0 + 15_000));
    let mut second = failed("b3", "bad", "ses_1", 500, T0 + 15_000);
    second.attempt_count = 2;
    let records = vec![
        failed("b1", "bad", "ses_1", 401, T0 + 100),
        first,
        second,
        delivered("g1", "good", "ses_1", T0 + 100),
        delivered("g2", "good", "ses_1", T0 + 10_100),
    ];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + HOUR).unwrap();

    assert_eq!(totals(&store, "bad", T0), vec![(EventState::Missed, 2)]);
    assert_eq!(totals(&store, "good", T0), vec![(EventState::Delivered, 2)]);
    let missed = outcomes::of_subscription(&store, "bad", EventState::Missed, T0).unwrap();
    let summary: Vec<(Option<&str>, i64, u16)> = missed
        .iter()
        .map(|row| (row.event_id.as_deref(), row.attempts, row.http_status_code))
        .collect();
    assert_eq!(summary, vec![(Some("e1"), 1, 401), (Some("e2"), 2, 500)]);

    // A failed re-send changes nothing; a delivered one makes it recovered,
    // and a later sweep of the same records keeps it so.
    recover(&store, "bad", "e1", "ses_1", false, T0 + 2 * HOUR);
    assert_eq!(totals(&store, "bad", T0), vec![(EventState::Missed, 2)]);
    recover(&store, "bad", "e1", "ses_1", true, T0 + 2 * HOUR);
    let expected = vec![(EventState::Missed, 1), (EventState::Recovered, 1)];
    assert_eq!(totals(&store, "bad", T0), expected);
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + 3 * HOUR).unwrap();
    assert_eq!(totals(&store, "bad", T0), expected);
    assert_eq!(
        outcomes::last_success_ms(&store, "bad").unwrap(),
        Some(T0 + 2 * HOUR)
    );
    // The failing-sessions drill-down names the events and what is left.
    let sessions = deliveries::failing_sessions(&store, "bad", T0, 10).unwrap();
    assert_eq!(sessions.len(), 1);
    let mut types = sessions[0].event_types.clone();
    types.sort();
    assert_eq!(types, ["session.completed", "session.started"]);
    assert_eq!(sessions[0].failed_attempts, 3);
    assert_eq!(sessions[0].missed, 1, "e1 recovered, e2 still missed");
}

#[test]
fn an_observed_event_is_unknown_until_swept_and_only_for_listening_enabled_subscriptions() {
    let (_dir, mut store) = temp_store();
    let subs = [
        subscription("starts", &["session.started"], true),
        subscription("ends", &["session.completed"], true),
        subscription("paused", &SESSION_EVENTS, false),
    ];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    let rows = outcomes::of_event(&store, "ses_1", "e1").unwrap();
    let subs_of: Vec<(&str, EventState)> = rows
        .iter()
        .map(|row| (row.subscription_id.as_str(), row.state))
        .collect();
    assert_eq!(subs_of, vec![("starts", EventState::Unknown)]);

    // Swept before its first attempt was recorded: still unknown.
    deliveries::record_sweep(&mut store, "ses_1", &[], T0 + 1_000).unwrap();
    assert_eq!(totals(&store, "starts", T0), vec![(EventState::Unknown, 1)]);
    // Swept once settled with still no attempt: it was not sent there.
    let settled = T0 + sessions::SETTLE_MS + 1_000;
    deliveries::record_sweep(&mut store, "ses_1", &[], settled).unwrap();
    assert_eq!(totals(&store, "starts", T0), vec![]);
    // Its attempt shows up: delivered.
    let attempt = delivered("a1", "starts", "ses_1", T0 + 50);
    deliveries::record_sweep(&mut store, "ses_1", &[attempt], settled).unwrap();
    assert_eq!(
        totals(&store, "starts", T0),
        vec![(EventState::Delivered, 1)]
    );
}

#[test]
fn an_event_the_observer_never_received_is_listed_with_the_type_its_session_leaves() {
    let (_dir, mut store) = temp_store();
    let subs = [subscription("sub", &SESSION_EVENTS, true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    let records = vec![
        delivered("r1", "sub", "ses_1", T0 + 100),
        // session.completed a minute later: the observer was down.
        failed("r2", "sub", "ses_1", 401, T0 + 60_000),
    ];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + HOUR).unwrap();
    let missed = outcomes::of_subscription(&store, "sub", EventState::Missed, T0).unwrap();
    assert_eq!(missed.len(), 1);
    assert_eq!(missed[0].event_key, "delivery:r2");
    assert_eq!(missed[0].event_id, None);
    assert_eq!(missed[0].event.as_deref(), Some("session.completed"));
    assert_eq!(
        outcomes::newest_unobserved_ms(&store).unwrap(),
        Some(T0 + 60_000)
    );
}

#[test]
fn an_incident_opens_resolves_on_its_own_and_a_new_failure_opens_another() {
    let (_dir, mut store) = temp_store();
    let subs = [subscription("sub", &SESSION_EVENTS, true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    let sweep = |store: &mut Store, session: &str, records: Vec<DeliveryRecord>, at: i64| {
        deliveries::record_sweep(store, session, &records, at).unwrap();
    };
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    events::insert(
        &store.conn,
        &event("e2", "ses_2", "session.started", T0 + 60_000),
    )
    .unwrap();
    sweep(
        &mut store,
        "ses_1",
        vec![failed("r1", "sub", "ses_1", 401, T0 + 100)],
        T0 + HOUR,
    );
    sweep(
        &mut store,
        "ses_2",
        vec![failed("r2", "sub", "ses_2", 401, T0 + 60_100)],
        T0 + HOUR,
    );
    let open = incidents::list(&store, T0, false).unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let first = &open[0];
    assert_eq!(
        (
            first.http_status_code,
            first.first_seen_ms,
            first.last_seen_ms
        ),
        (401, T0 + 100, T0 + 60_100)
    );
    assert_eq!((first.missed, first.recovered), (2, 0));

    // A later event delivered does not resolve it while two are missed.
    events::insert(
        &store.conn,
        &event("e3", "ses_3", "session.started", T0 + 120_000),
    )
    .unwrap();
    sweep(
        &mut store,
        "ses_3",
        vec![delivered("r3", "sub", "ses_3", T0 + 120_100)],
        T0 + HOUR,
    );
    assert_eq!(incidents::list(&store, T0, false).unwrap().len(), 1);
    assert!(incidents::acknowledge(&store, &first.id, "alice", Some("deploying fix"), T0).unwrap());
    recover(&store, "sub", "e1", "ses_1", true, T0 + 2 * HOUR);
    recover(&store, "sub", "e2", "ses_2", true, T0 + 2 * HOUR);
    assert!(incidents::list(&store, T0, false).unwrap().is_empty());
    let all = incidents::list(&store, T0, true).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].resolved_ms, Some(T0 + 2 * HOUR));
    assert_eq!(all[0].acknowledged_by.as_deref(), Some("alice"));
    assert_eq!((all[0].missed, all[0].recovered), (0, 2));

    // The same failure later is a new incident.
    events::insert(
        &store.conn,
        &event("e4", "ses_4", "session.started", T0 + 3 * HOUR),
    )
    .unwrap();
    sweep(
        &mut store,
        "ses_4",
        vec![failed("r4", "sub", "ses_4", 401, T0 + 3 * HOUR + 100)],
        T0 + 4 * HOUR,
    );
    let open = incidents::list(&store, T0, false).unwrap();
    assert_eq!(open.len(), 1);
    assert_ne!(open[0].id, first.id);
    assert_eq!(open[0].acknowledged_by, None);
}

#[test]
fn the_observer_is_silent_when_the_sweep_sees_traffic_it_did_not_receive() {
    use crate::history::coverage::{CoverageState, SILENT_AFTER_MS, coverage};
    let (_dir, mut store) = temp_store();
    let none = coverage(&store, T0, T0).unwrap();
    assert_eq!(none.state, CoverageState::None);
    let subs = [subscription("sub", &SESSION_EVENTS, true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    let mut records = vec![delivered("r1", "sub", "ses_1", T0 + 100)];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + HOUR).unwrap();
    assert_eq!(coverage(&store, T0, T0).unwrap().state, CoverageState::Ok);
    // session.completed went out two minutes later; the observer has no copy.
    records.push(delivered("r2", "sub", "ses_1", T0 + 2 * SILENT_AFTER_MS));
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + HOUR).unwrap();
    let silent = coverage(&store, T0, T0 + HOUR).unwrap();
    assert_eq!(silent.state, CoverageState::Silent);
    assert!(silent.explain(T0 + HOUR).contains("cannot be known"));
}

#[test]
fn the_event_list_filters_by_state_subscription_type_session_and_text() {
    use crate::history::event_list::list;
    use crate::history::event_query::EventQuery;
    let (_dir, mut store) = temp_store();
    let subs = [
        subscription("aaaa1111", &SESSION_EVENTS, true),
        subscription("bbbb2222", &SESSION_EVENTS, true),
    ];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_one", "session.started", T0)).unwrap();
    events::insert(
        &store.conn,
        &event("e2", "ses_one", "session.completed", T0 + 10_000),
    )
    .unwrap();
    events::insert(
        &store.conn,
        &event("e3", "ses_two", "session.started", T0 + 20_000),
    )
    .unwrap();
    let records = vec![
        delivered("r1", "aaaa1111", "ses_one", T0 + 100),
        failed("r2", "aaaa1111", "ses_one", 401, T0 + 10_100),
        delivered("r3", "bbbb2222", "ses_one", T0 + 100),
        delivered("r4", "bbbb2222", "ses_one", T0 + 10_100),
    ];
    deliveries::record_sweep(&mut store, "ses_one", &records, T0 + HOUR).unwrap();
    let ids = |query: &str| -> Vec<String> {
        let query = EventQuery::parse(query, T0 + HOUR).unwrap();
        list(&store, &query, T0 - 1, 100)
            .unwrap()
            .into_iter()
            .map(|row| row.event_id)
            .collect()
    };
    assert_eq!(ids(""), ["e3", "e2", "e1"], "newest first");
    assert_eq!(ids("status:missed"), ["e2"]);
    assert_eq!(ids("status:missed sub:bbbb"), Vec::<String>::new());
    assert_eq!(ids("status:delivered sub:bbbb"), ["e2", "e1"]);
    assert_eq!(ids("type:session.started"), ["e3", "e1"]);
    assert_eq!(ids("session:ses_o"), ["e2", "e1"]);
    assert_eq!(ids("TWO"), ["e3"], "free text, any case");
    assert_eq!(ids("status:unknown"), ["e3"], "not swept yet");
    let query = EventQuery::parse("", T0).unwrap();
    let rows = list(&store, &query, T0 - 1, 100).unwrap();
    let e2: Vec<(&str, EventState)> = rows[1]
        .subscriptions
        .iter()
        .map(|outcome| (outcome.id.as_str(), outcome.state))
        .collect();
    assert_eq!(
        e2,
        [
            ("aaaa1111", EventState::Missed),
            ("bbbb2222", EventState::Delivered)
        ]
    );
}

#[test]
fn the_event_list_puts_the_named_subscription_first_and_the_observer_last() {
    use crate::history::event_list::list;
    use crate::history::event_query::EventQuery;
    let (_dir, mut store) = temp_store();
    let subs = [
        subscription("aaaa1111", &SESSION_EVENTS, true),
        subscription("bbbb2222", &SESSION_EVENTS, true),
        subscription("0bse0000", &SESSION_EVENTS, true),
    ];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    // The observer filed e1 from attempt `d1`: its subscription is 0bse0000.
    events::insert(&store.conn, &event("e1", "ses_one", "session.started", T0)).unwrap();
    let records = vec![
        delivered("d1", "0bse0000", "ses_one", T0 + 100),
        failed("r1", "aaaa1111", "ses_one", 401, T0 + 100),
        delivered("r2", "bbbb2222", "ses_one", T0 + 100),
    ];
    deliveries::record_sweep(&mut store, "ses_one", &records, T0 + HOUR).unwrap();
    let shown = |query: &str| -> (Vec<String>, usize) {
        let query = EventQuery::parse(query, T0 + HOUR).unwrap();
        let rows = list(&store, &query, T0 - 1, 100).unwrap();
        let row = &rows[0];
        let texts = row.subscriptions.iter().map(|o| o.short_text()).collect();
        (texts, row.customers())
    };
    let (texts, customers) = shown("");
    assert_eq!(
        texts,
        ["aaaa1111 missed", "bbbb2222 delivered", "obs ✓"],
        "customers worst first, the observer last and marked"
    );
    assert_eq!(customers, 2, "the observer is no customer");
    let (texts, _) = shown("sub:bbbb");
    assert_eq!(texts, ["bbbb2222 delivered", "aaaa1111 missed", "obs ✓"]);
    let (texts, _) = shown("sub:0bse");
    assert_eq!(
        texts[0], "obs ✓",
        "the named one first, even the observer's"
    );
}

#[test]
fn a_re_check_that_changes_nothing_writes_no_event_row() {
    let (_dir, mut store) = temp_store();
    let subs = [subscription("bad", &SESSION_EVENTS, true)];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    events::insert(&store.conn, &event("e1", "ses_1", "session.started", T0)).unwrap();
    let records = vec![failed("b1", "bad", "ses_1", 401, T0 + 100)];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + HOUR).unwrap();
    let version = mark::list_state(&store).unwrap().version;
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + 2 * HOUR).unwrap();
    assert_eq!(
        mark::list_state(&store).unwrap().version,
        version,
        "the same records again: no row rewritten"
    );
    assert_eq!(totals(&store, "bad", T0), vec![(EventState::Missed, 1)]);
    let records = vec![
        failed("b1", "bad", "ses_1", 401, T0 + 100),
        delivered("b2", "bad", "ses_1", T0 + 200),
    ];
    deliveries::record_sweep(&mut store, "ses_1", &records, T0 + 3 * HOUR).unwrap();
    assert!(
        mark::list_state(&store).unwrap().version > version,
        "a new attempt"
    );
}
