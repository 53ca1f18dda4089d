//! The Health pane's incidents and their acknowledgement on a PostgreSQL
//! store, as the worker runs them for two consoles on one database (each
//! a pool of its own): an observer in-process files the emulator's
//! deliveries over real HTTP, a subscription whose receiver answers 404
//! misses them, the first console's sweep opens an incident; the second
//! console lists it open, the first acknowledges it, and the second's next
//! read (what its next refresh runs) shows who and when, with the note.

use super::support::{Receiver, SECRET, eventually, observe, pane_results, start};
use crate::tui::kernel::store::StoreAt;
use crate::tui::panes::health::HealthResult;
use crate::tui::panes::health::tasks::HealthEffect;
use earshot_core::api::Client;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::incidents::{Incident, IncidentState, operator};
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::Reply;
use earshot_testkit::postgres::PgCluster;

/// The Health pane's `effect` run on `store` as the console's worker runs
/// it: the last result it reports.
async fn run_effect(client: &Client, store: &PgStore, effect: HealthEffect) -> HealthResult {
    pane_results(client, StoreAt::Postgres(store.clone()), effect)
        .await
        .pop()
        .expect("the task answers")
}

/// The incidents a console's incidents view reads (open and acknowledged).
async fn listed(client: &Client, store: &PgStore) -> Vec<Incident> {
    let effect = HealthEffect::LoadIncidents {
        seq: 1,
        since_ms: 0,
        all: false,
    };
    match run_effect(client, store, effect).await {
        HealthResult::Incidents { result, .. } => result.expect("the incidents read"),
        other => panic!("not the incidents: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledgement_made_in_one_console_is_read_by_the_other_at_its_next_refresh() {
    let harness = start().await;
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("team").expect("database made");
    let target = PgTarget::parse(&cluster.url("team")).expect("a store URL");
    let sources = cluster.password_sources();
    let connect = || async {
        PgStore::connect(target.clone(), &sources)
            .await
            .expect("the store opens")
    };
    let observer = observe(&harness, connect().await.into(), &EventKind::ALL, SECRET).await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such hook")).await;
    let refused = harness.subscribe(&gone.url(), &EventKind::ALL).await;
    let (alice, bob) = (connect().await, connect().await);
    let client = harness.client.clone();

    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    // Swept by the first console once the refusals are final.
    eventually(
        std::time::Duration::from_secs(20),
        "an incident opened",
        || async {
            match run_effect(&client, &alice, HealthEffect::Sweep).await {
                HealthResult::Swept(Ok(_)) => {}
                other => panic!("the sweep: {other:?}"),
            }
            let found = listed(&client, &bob).await;
            (found.iter().any(|incident| incident.missed == 2)).then_some(found)
        },
    )
    .await;
    let open = listed(&client, &bob).await;
    assert_eq!(open.len(), 1, "{open:?}");
    let incident = &open[0];
    assert_eq!(incident.subscription_id, refused.id);
    assert_eq!(incident.state, IncidentState::Open);
    assert_eq!(incident.acknowledged_by, None);

    let before = earshot_core::store::now_ms();
    let ack = HealthEffect::AckIncident {
        id: incident.id.clone(),
        note: Some("looking at the receiver".into()),
    };
    match run_effect(&client, &alice, ack).await {
        HealthResult::Acknowledged(Ok(line)) => assert_eq!(
            line,
            format!("acknowledged incident {} as {}", incident.id, operator())
        ),
        other => panic!("not acknowledged: {other:?}"),
    }
    let seen = listed(&client, &bob).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].state, IncidentState::Acknowledged);
    assert_eq!(
        seen[0].acknowledged_by.as_deref(),
        Some(operator().as_str())
    );
    assert_eq!(seen[0].note.as_deref(), Some("looking at the receiver"));
    let at = seen[0].acknowledged_ms.expect("when");
    assert!(
        (before..=earshot_core::store::now_ms()).contains(&at),
        "{at}"
    );
    observer.stop().await;
}
