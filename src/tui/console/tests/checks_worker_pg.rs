//! The receiver checks on a PostgreSQL store, as the worker runs them,
//! against a SQLite file fed the same deliveries: two observers
//! in-process (one filing into a database of the test kit's throwaway
//! cluster, one into a file) get the emulator's events over real HTTP;
//! one receiver holds another secret than its subscription's and answers
//! the platform 401, one accepts the subscription's secret and the next
//! one. Each store is swept by the console's sweep. Then the Signatures
//! pane's refused delivery (`SigsEffect::LoadRefused`) finds the same
//! event's exact bytes in both, and its receiver check
//! (`SigsEffect::AskReceiver`) names the same held secret from the same
//! record and rotation; the rotation dialog's check
//! (`SubsEffect::CheckRotation`) sends the same delivered event from both,
//! and the watch after a rotation reads the same from both.

use std::time::Duration;

use super::support::{Observed, Receiver, SECRET, eventually, observe, pane_results, pg_database};
use crate::tui::kernel::RefusedDelivery;
use crate::tui::kernel::store::{self, StoreAt};
use crate::tui::panes::signatures::SigsResult;
use crate::tui::panes::signatures::refused::{Asked, Located};
use crate::tui::panes::signatures::tasks::SigsEffect;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::{EventKind, Subscription};
use earshot_core::history::held_secret::Held;
use earshot_core::history::rotation::CheckReport;
use earshot_core::redact::SecretString;
use earshot_testkit::postgres::PgCluster;
use earshot_testkit::{Harness, Reply, verifies_with};

/// The secret the refusing receiver holds (another customer's).
const HELD: &str = "whsec_the_receiver_holds_this_0123456789";
/// The secret both receivers' subscriptions sign with.
const SIGNED: &str = "whsec_the_subscription_signs_0123456789ab";
/// The secret the rotation is to.
const NEW: &str = "whsec_the_secret_rotated_to_0123456789abcd";

/// One session delivered to both observers and both receivers, its
/// events filed in both stores, each store swept.
struct Fed {
    harness: Harness,
    _cluster: PgCluster,
    on_pg: earshot_core::receiver::listen::Listener,
    on_file: Observed,
    session: String,
    refusing: (Receiver, Subscription),
    rotating: (Receiver, Subscription),
    pg: StoreAt,
    file: StoreAt,
}

impl Fed {
    async fn start(database: &str) -> Fed {
        let harness = super::support::start().await;
        let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
        let pg = pg_database(&cluster, database).await;
        let on_pg = observe(&harness, pg.clone().into(), &EventKind::ALL, SECRET).await;
        let on_file = Observed::start(&harness, &EventKind::ALL, SECRET).await;
        let refusing = Receiver::start(|request, _| {
            if verifies_with(request, HELD) {
                Reply::ok()
            } else {
                Reply::status(401, "invalid signature")
            }
        })
        .await;
        let rotating = Receiver::start(|request, _| {
            if verifies_with(request, SIGNED) || verifies_with(request, NEW) {
                Reply::ok()
            } else {
                Reply::status(401, "invalid signature")
            }
        })
        .await;
        let refused_sub = harness
            .subscribe_secret(&refusing.url(), &EventKind::ALL, SIGNED)
            .await;
        let rotating_sub = harness
            .subscribe_secret(&rotating.url(), &EventKind::ALL, SIGNED)
            .await;
        let session = harness.start_session(None).await;
        harness.complete_session(&session).await;
        harness
            .wait_records(&session, &refused_sub.id, "both refused", |records| {
                records.len() == 2 && records.iter().all(|r| r["http_status_code"] == 401)
            })
            .await;
        eventually(Duration::from_secs(30), "every delivery made", || async {
            (harness.stats().await["deliveries_in_progress"] == 0).then_some(())
        })
        .await;
        let (pg, file) = (StoreAt::Postgres(pg), StoreAt::File(on_file.db.clone()));
        for store in [&pg, &file] {
            let swept = store::sweep(Ok(store.clone()), &harness.client)
                .await
                .unwrap_or_else(|failure| panic!("{store}: {}", failure.message));
            assert_eq!((swept.sessions_swept, swept.stopped), (1, None), "{store}");
        }
        Fed {
            harness,
            _cluster: cluster,
            on_pg,
            on_file,
            session,
            refusing: (refusing, refused_sub),
            rotating: (rotating, rotating_sub),
            pg,
            file,
        }
    }

    fn client(&self) -> &Client {
        &self.harness.client
    }

    async fn stop(self) {
        self.on_pg.stop().await;
        self.on_file.stop().await;
    }
}

/// What the Signatures pane's load of `target` finds in `store`.
async fn located(client: &Client, store: StoreAt, target: RefusedDelivery) -> Located {
    let effect = SigsEffect::LoadRefused { seq: 2, target };
    match pane_results(client, store.clone(), effect).await.as_slice() {
        [
            SigsResult::RefusedLoaded {
                seq: 2,
                result: Ok(located),
            },
        ] => located.clone(),
        other => panic!("{store}: not a load: {other:?}"),
    }
}

/// The Signatures pane's receiver check from `store`.
async fn asked(client: &Client, store: StoreAt, event_id: &str, subscription_id: &str) -> Asked {
    let effect = SigsEffect::AskReceiver {
        seq: 3,
        event_id: event_id.to_owned(),
        subscription_id: subscription_id.to_owned(),
        given: SecretString::new(HELD),
        second: None,
    };
    match pane_results(client, store.clone(), effect).await.as_slice() {
        [SigsResult::Asked { seq: 3, asked }] => (**asked).clone(),
        other => panic!("{store}: not the receiver's answers: {other:?}"),
    }
}

/// The rotation dialog's check of `subscription` from `store`.
async fn checked(
    client: &Client,
    store: StoreAt,
    subscription: &Subscription,
) -> Result<CheckReport, String> {
    let effect = SubsEffect::CheckRotation {
        id: subscription.id.clone(),
        url: subscription.url.clone(),
        new: SecretString::new(NEW),
        current: Some(SecretString::new(SIGNED)),
    };
    match pane_results(client, store.clone(), effect).await.as_slice() {
        [SubsResult::Checked { result, .. }] => result.clone().map_err(|failure| failure.message),
        other => panic!("{store}: not a check: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signatures_pane_finds_a_refused_event_and_asks_its_receiver_from_postgresql_as_from_a_file()
 {
    let fed = Fed::start("sigs").await;
    let client = fed.client().clone();
    let (refusing, refused_sub) = &fed.refusing;
    let refused_attempts = fed
        .harness
        .wait_records(&fed.session, &refused_sub.id, "both refused", |records| {
            records.len() == 2
        })
        .await;
    let target = |delivery_id: Option<String>, event_id: Option<String>| RefusedDelivery {
        subscription_id: refused_sub.id.clone(),
        session_id: fed.session.clone(),
        event_id,
        delivery_id,
    };

    // Each refused attempt, from the Deliveries pane (its id): the same
    // event's bytes from both stores, a different event for each.
    let mut found = Vec::new();
    for attempt in &refused_attempts {
        let delivery_id = attempt["id"].as_str().expect("an attempt id").to_owned();
        let on_pg = located(
            &client,
            fed.pg.clone(),
            target(Some(delivery_id.clone()), None),
        )
        .await;
        let on_file = located(&client, fed.file.clone(), target(Some(delivery_id), None)).await;
        assert_eq!(on_pg, on_file, "PostgreSQL, then the file");
        match on_pg {
            Located::Event { event_id, body } => {
                assert!(!body.is_empty());
                found.push(event_id);
            }
            Located::Missing(why) => panic!("not found: {why}"),
        }
    }
    found.sort();
    found.dedup();
    assert_eq!(found.len(), 2, "{found:?}");
    // Without an attempt (Health): its newest refused event; with the event
    // (Events): that event; the other receiver's subscription refused none.
    let newest = located(&client, fed.pg.clone(), target(None, None)).await;
    assert_eq!(
        newest,
        located(&client, fed.file.clone(), target(None, None)).await
    );
    let by_event = target(None, Some(found[0].clone()));
    let on_pg = located(&client, fed.pg.clone(), by_event.clone()).await;
    assert_eq!(on_pg, located(&client, fed.file.clone(), by_event).await);
    assert!(matches!(&on_pg, Located::Event { event_id, .. } if *event_id == found[0]));
    let none = RefusedDelivery {
        subscription_id: fed.rotating.1.id.clone(),
        ..target(None, None)
    };
    let on_pg = located(&client, fed.pg.clone(), none.clone()).await;
    assert_eq!(on_pg, located(&client, fed.file.clone(), none).await);
    assert!(
        matches!(&on_pg, Located::Missing(why) if why.contains("refused with 401")),
        "{on_pg:?}"
    );

    // A rotation on record in each store, then the receiver check from each.
    for store in [&fed.pg, &fed.file] {
        store::note_change(
            Ok(store.clone()),
            &refused_sub.id,
            "rotate",
            "secret version 1 → 1".into(),
        )
        .await;
    }
    let Located::Event { event_id, body } = newest else {
        panic!("no newest refused event: {newest:?}");
    };
    let before = refusing.count();
    let on_pg = asked(&client, fed.pg.clone(), &event_id, &refused_sub.id).await;
    let on_file = asked(&client, fed.file.clone(), &event_id, &refused_sub.id).await;
    let probes = &refusing.captured()[before..];
    assert_eq!(probes.len(), 4, "two probes from each store");
    assert!(
        probes.iter().all(|probe| probe.body[..] == body[..]),
        "the exact bytes"
    );
    for asked in [&on_pg, &on_file] {
        let checked = asked.result.clone().expect("the receiver was asked");
        assert_eq!(checked.held, Held::Given, "{}", checked.verdict);
        let statuses: Vec<_> = checked.answers.iter().map(|a| a.http_status).collect();
        assert_eq!(statuses, [Some(200), Some(401)]);
        assert_eq!(checked.event_id, event_id);
        assert_eq!(checked.secret_version, Some(refused_sub.secret_version));
        let rotation = checked.rotation.clone().expect("the rotation on record");
        assert_eq!(
            (
                rotation.action.as_str(),
                rotation.subscription_id.as_deref()
            ),
            ("rotate", Some(refused_sub.id.as_str()))
        );
        // The record as the sweep listed it, and the change log's rotation.
        assert!(
            checked.verdict.contains("per the record the sweep listed")
                && checked.verdict.contains("per the change log"),
            "{}",
            checked.verdict
        );
    }

    fed.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rotation_dialogs_check_and_watch_read_postgresql_as_a_file() {
    let fed = Fed::start("rotation").await;
    let client = fed.client().clone();
    let (rotating, rotating_sub) = &fed.rotating;
    let before = rotating.count();
    let on_pg = checked(&client, fed.pg.clone(), rotating_sub)
        .await
        .expect("the check from PostgreSQL");
    let on_file = checked(&client, fed.file.clone(), rotating_sub)
        .await
        .expect("the check from the file");
    assert_eq!(on_pg, on_file, "PostgreSQL, then the file");
    assert!(on_pg.passed, "{on_pg:?}");
    assert!(!on_pg.synthetic);
    let statuses: Vec<_> = on_pg.answers.iter().map(|a| a.http_status).collect();
    assert_eq!(statuses, [Some(200), Some(200), Some(401)]);
    // What was sent is an event the session delivered, its exact bytes.
    let probes = &rotating.captured()[before..];
    assert_eq!(probes.len(), 6, "three probes from each store");
    let delivered = rotating.captured()[..before]
        .iter()
        .find(|request| request.json()["event_id"] == on_pg.event_id.as_str())
        .map(|request| request.body.clone())
        .expect("the probe's event was delivered to the receiver");
    assert!(
        probes.iter().all(|probe| probe.body == delivered),
        "the exact bytes"
    );

    // The receiver that refused every delivery was delivered nothing to
    // check with: the same refusal from both.
    let refused_sub = &fed.refusing.1;
    let (on_pg, on_file) = (
        checked(&client, fed.pg.clone(), refused_sub).await,
        checked(&client, fed.file.clone(), refused_sub).await,
    );
    assert_eq!(on_pg, on_file);
    let why = on_pg.expect_err("nothing to check with");
    assert!(
        why.contains("holds no event this subscription was delivered"),
        "{why}"
    );

    // The watch after a rotation (one sweep: no time to watch longer): the
    // same deliveries since from both.
    let mut watched = Vec::new();
    for store in [&fed.pg, &fed.file] {
        let mut seen = 0;
        let report = store::watch_rotation(
            Ok(store.clone()),
            &client,
            &rotating_sub.id,
            0,
            Duration::ZERO,
            |_| seen += 1,
        )
        .await
        .unwrap_or_else(|failure| panic!("{store}: {}", failure.message));
        assert_eq!(seen, 1, "{store}");
        assert!(report.completed, "{store}: {report:?}");
        watched.push(report);
    }
    assert_eq!(watched[0], watched[1], "PostgreSQL, then the file");
    assert!(watched[0].delivered_since >= 2, "{:?}", watched[0]);
    assert!(watched[0].refused_sessions.is_empty());

    fed.stop().await;
}
