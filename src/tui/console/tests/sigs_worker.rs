//! A delivery refused with 401, from the Deliveries pane to its receiver,
//! against the emulator over real HTTP: the observer (in-process) files
//! the events, a receiver holding another secret than its subscription's
//! answers the platform 401, the sweep stores the attempts; `s` on the
//! 401 row loads the observer's exact bytes of that attempt's event into
//! the Signatures form (the worker reads the store), and asking the
//! receiver with the secret it holds names it, with its answers.

use crate::tui::kernel::Handover;
use std::time::Duration;

use super::support::{NoClipboard, Observed, Receiver, SECRET, eventually, start};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press};
use crate::tui::console::worker::Worker;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::keymap::Move;
use crate::tui::panes::deliveries::{DeliveriesResult, DlvCommand};
use crate::tui::panes::signatures::SigsResult;
use earshot_core::api::types::agents::EventKind;
use earshot_core::history::held_secret::Held;
use earshot_core::history::sweep::sweep;
use earshot_core::store::{AsyncStore, Store, events};
use earshot_testkit::{Reply, verifies_with};
use ratatui::crossterm::event::KeyCode;
use tokio::sync::mpsc;

/// The secret the receiver holds (another customer's).
const HELD: &str = "whsec_the_receiver_holds_this_0123456789";
/// The secret its subscription signs with.
const SIGNED: &str = "whsec_the_subscription_signs_0123456789ab";

/// Feeds the worker's answers to `app` until one `done` accepts (30 s).
async fn until(
    app: &mut App,
    worker: &mut Worker,
    rx: &mut mpsc::UnboundedReceiver<Action>,
    what: &str,
    done: impl Fn(&Action) -> bool,
) {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let action = rx.recv().await.expect("the worker is alive");
            let finished = done(&action);
            let effects = app.update(action);
            worker.start_all(effects);
            if finished {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 30 s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s_on_a_401_row_loads_the_event_and_the_receiver_names_the_secret_it_holds() {
    let harness = start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, SECRET).await;
    let db = observed.db.clone();
    let receiver = Receiver::start(|request, _| {
        if verifies_with(request, HELD) {
            Reply::ok()
        } else {
            Reply::status(401, "invalid signature")
        }
    })
    .await;
    let sub = harness
        .subscribe_secret(&receiver.url(), &EventKind::ALL, SIGNED)
        .await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    harness
        .wait_records(&session, &sub.id, "both refused", |records| {
            records.len() == 2 && records.iter().all(|r| r["http_status_code"] == 401)
        })
        .await;
    eventually(Duration::from_secs(10), "both events filed", || async {
        let store = Store::open(&db).ok()?;
        (events::for_session(&store, &session).ok()?.len() == 2).then_some(())
    })
    .await;
    let store = AsyncStore::open(db.clone()).await.expect("the store");
    sweep(&harness.client, &store, 50).await.expect("a sweep");
    drop(store);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard))
        .with_store(Ok(db.clone().into()));
    let mut app = App::new(ConsoleConfig::default());
    let effects = app.update(Action::Handover(Handover::OpenInDeliveries(
        session.clone(),
    )));
    worker.start_all(effects);
    until(&mut app, &mut worker, &mut rx, "the attempts", |action| {
        matches!(action, Action::Deliveries(DeliveriesResult::Session { .. }))
    })
    .await;
    for _ in 0..app.panes.deliveries.rows().len() {
        if app.panes.deliveries.selected_is_signature_rejection() {
            break;
        }
        app.update(Action::Run(Command::Deliveries(DlvCommand::Move(
            Move::Down,
        ))));
    }
    let refused = app
        .panes
        .deliveries
        .selected()
        .filter(|record| record.subscription_id == sub.id && record.http_status_code == Some(401))
        .cloned()
        .expect("a 401 row of the receiver selected");

    // `s`: the worker finds the event of that attempt in the store.
    let effects = app.update(key('s'));
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Sigs(_))),
        "{effects:?}"
    );
    worker.start_all(effects);
    until(
        &mut app,
        &mut worker,
        &mut rx,
        "the event's bytes",
        |action| matches!(action, Action::Sigs(SigsResult::RefusedLoaded { .. })),
    )
    .await;
    let form = app.panes.sigs.refused.clone().expect("a refused delivery");
    assert_eq!(
        form.target.delivery_id.as_deref(),
        Some(refused.id.as_str())
    );
    let event_id = form.event_id.clone().expect("the event found");
    let stored = events::get(&Store::open(&db).unwrap(), &event_id)
        .unwrap()
        .expect("stored");
    assert_eq!(stored.session_id, session);
    let loaded = app.panes.sigs.loaded().and_then(|l| l.result.clone().ok());
    assert_eq!(loaded, Some(stored.body.clone()), "the observer's bytes");
    assert!(
        app.panes.sigs.header.value().is_empty(),
        "no header of its own"
    );

    // The secret the receiver holds, then enter: the receiver is asked.
    for c in HELD.chars() {
        app.update(press(KeyCode::Char(c)));
    }
    let before = receiver.count();
    let effects = app.update(press(KeyCode::Enter));
    worker.start_all(effects);
    until(
        &mut app,
        &mut worker,
        &mut rx,
        "the receiver's answers",
        |a| matches!(a, Action::Sigs(SigsResult::Asked { .. })),
    )
    .await;
    let asked = app
        .panes
        .sigs
        .shown_verdict()
        .expect("the verdict, beside its event");
    let checked = asked.result.clone().expect("the receiver was asked");
    assert_eq!(checked.held, Held::Given, "{}", checked.verdict);
    assert!(
        checked
            .verdict
            .contains("the secret you gave is the one it holds"),
        "{}",
        checked.verdict
    );
    let statuses: Vec<Option<u16>> = checked.answers.iter().map(|a| a.http_status).collect();
    assert_eq!(statuses, [Some(200), Some(401)]);
    let probes = &receiver.captured()[before..];
    assert_eq!(probes.len(), 2);
    assert!(
        probes
            .iter()
            .all(|p| p.json()["event_id"] == event_id.as_str())
    );
    assert_eq!(&probes[0].body[..], &stored.body[..], "the exact bytes");

    observed.stop().await;
    harness.emulator.shutdown().await;
}
