//! Finding the event of a refused attempt, and the evidence that the
//! observer's secret is the one to ask a receiver with, on a real store.

use chrono::{TimeZone, Utc};

use super::*;
use crate::api::types::agents::DeliveryRecord;
use crate::store::events::ObservedEvent;

const T0: i64 = 1_800_000_000_000;
const SESSION: &str = "ses_1";
const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

fn subscription(id: &str, url: &str) -> Subscription {
    Subscription {
        id: id.into(),
        url: url.into(),
        events: vec!["session.started".into(), "session.completed".into()],
        agent_id: None,
        enabled: true,
        secret_version: 1,
        extra: Default::default(),
    }
}

fn attempt(id: &str, sub: &str, session: &str, code: u16, created_ms: i64) -> DeliveryRecord {
    let at = Utc.timestamp_millis_opt(created_ms).unwrap().fixed_offset();
    let delivered = code == 200;
    DeliveryRecord {
        id: id.into(),
        subscription_id: sub.into(),
        session_id: session.into(),
        status: if delivered {
            DeliveryStatus::Delivered
        } else {
            DeliveryStatus::Failed
        },
        attempt_count: 1,
        http_status_code: Some(code),
        error: (!delivered).then(|| format!("HTTP {code}: invalid signature")),
        delivered_at: delivered.then_some(at),
        next_retry_at: None,
        created_at: at,
        extra: Default::default(),
    }
}

/// An event the observer filed from its attempt `delivery_id`, signed with
/// the observer's secret.
fn filed(store: &mut Store, id: &str, session: &str, kind: &str, at_ms: i64, delivery_id: &str) {
    let body = format!(r#"{{"event_id":"{id}","event":"{kind}"}}"#).into_bytes();
    let header = crate::signature::sign(OBSERVER_SECRET.as_bytes(), at_ms / 1000, &body);
    let event = ObservedEvent {
        event_id: id.into(),
        event: kind.into(),
        session_id: session.into(),
        kind: "session",
        occurred_ms: at_ms,
        received_ms: at_ms,
        delivery_id: Some(delivery_id.into()),
        headers: vec![(crate::signature::HEADER_NAME.into(), header)],
        body,
    };
    events::insert(store.conn_mut(), &event).unwrap();
}

/// A customer subscription `bad` whose receiver refused both events of
/// the session, and the observer's `obs`, which filed them.
fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("earshot.db")).unwrap();
    let subs = [
        subscription("bad", "https://bad.example/hook"),
        subscription("obs", "https://observer.example/hook"),
    ];
    deliveries::replace_subscriptions(&mut store, &subs, T0).unwrap();
    filed(&mut store, "e1", SESSION, "session.started", T0, "o1");
    filed(
        &mut store,
        "e2",
        SESSION,
        "session.completed",
        T0 + 10_000,
        "o2",
    );
    let records = [
        attempt("o1", "obs", SESSION, 200, T0 + 100),
        attempt("o2", "obs", SESSION, 200, T0 + 10_100),
        attempt("d1", "bad", SESSION, 401, T0 + 100),
        attempt("d2", "bad", SESSION, 401, T0 + 10_100),
        attempt("d3", "bad", "ses_unseen", 401, T0 + 20_000),
    ];
    deliveries::record_sweeps(
        &mut store,
        &[(SESSION, &records[..4]), ("ses_unseen", &records[4..])],
        T0 + 30_000,
    )
    .unwrap();
    (dir, store)
}

fn event_id(located: Located) -> String {
    match located {
        Located::Event(event) => event.event_id,
        other => panic!("no event: {other:?}"),
    }
}

#[test]
fn a_refused_attempt_names_its_event_or_says_why_not() {
    let (_dir, store) = store();
    assert_eq!(
        event_id(locate(&store, "bad", SESSION, Some("d1")).unwrap()),
        "e1"
    );
    assert_eq!(
        event_id(locate(&store, "bad", SESSION, Some("d2")).unwrap()),
        "e2"
    );
    assert_eq!(
        event_id(locate(&store, "bad", SESSION, None).unwrap()),
        "e2",
        "without an attempt: the newest refused"
    );
    assert_eq!(
        locate(&store, "obs", SESSION, None).unwrap(),
        Located::NoRefusal,
        "nothing of obs was refused"
    );
    assert_eq!(
        locate(&store, "bad", SESSION, Some("o1")).unwrap(),
        Located::NoRefusal
    );
    assert_eq!(
        locate(&store, "bad", "ses_unseen", None).unwrap(),
        Located::NotFiled
    );
}

#[test]
fn the_observers_secret_is_offered_only_for_its_own_url_and_only_if_it_verifies() {
    let (_dir, store) = store();
    let secret = SecretString::new(OBSERVER_SECRET);
    let at_observer = subscription("new", "https://observer.example/hook");
    assert_eq!(
        observer_evidence(&store, &at_observer, &secret).unwrap(),
        ObserverEvidence::Fits {
            observer_subscription: "obs".into(),
            event_id: "e2".into(),
        }
    );
    let elsewhere = subscription("bad", "https://bad.example/hook");
    assert_eq!(
        observer_evidence(&store, &elsewhere, &secret).unwrap(),
        ObserverEvidence::NotObserverUrl
    );
    let other = SecretString::new("whsec_not_the_observers_0123456789abcdef");
    assert_eq!(
        observer_evidence(&store, &at_observer, &other).unwrap(),
        ObserverEvidence::SecretDoesNotFit {
            event_id: "e2".into()
        }
    );
}
