//! What the console's tests share: the workspace's test kit
//! (`earshot-testkit`: an emulator with a client, receivers, WAV, a config
//! with two profiles, waiting for a condition), and here the observer
//! in-process, a pane's effect run as the worker runs it, a session
//! opened in the Deliveries pane, and a clipboard that keeps nothing.

use std::path::PathBuf;

pub(crate) use earshot_testkit::{
    API_KEY, Harness, Options, Receiver, SECRET, eventually, start, start_at, start_with,
    two_profile_config, wav,
};

use crate::tui::clipboard::Clipboard;
use earshot_core::api::types::agents::EventKind;
use earshot_core::receiver::listen::{self, ListenConfig, Listener};
use earshot_core::redact::SecretString;
use earshot_core::store::StoreHandle;

/// The observer in-process: a receiver that keeps every genuine event of
/// the subscriptions it is given in the store at `db` (what `earshot
/// listen --store` runs), in a temp dir; stopped with [`Observed::stop`].
pub(crate) struct Observed {
    _dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    listener: Listener,
}

impl Observed {
    /// Subscribed on `harness` to `events` with `secret`.
    pub(crate) async fn start(harness: &Harness, events: &[EventKind], secret: &str) -> Observed {
        let dir = tempfile::tempdir().expect("a temp dir for the store");
        let db = dir.path().join("earshot.db");
        let store = earshot_core::store::Store::open(&db).expect("the store opens");
        let (writer, _thread) =
            earshot_core::store::writer::Writer::start(store).expect("the store's writer starts");
        let listener = observe(harness, writer.into(), events, secret).await;
        Observed {
            _dir: dir,
            db,
            listener,
        }
    }

    pub(crate) async fn stop(self) {
        self.listener.stop().await;
    }
}

/// An observer filing into `store` (either backend), subscribed on
/// `harness` to `events` with `secret`.
pub(crate) async fn observe(
    harness: &Harness,
    store: StoreHandle,
    events: &[EventKind],
    secret: &str,
) -> Listener {
    let config = ListenConfig {
        secrets: vec![("current".to_owned(), SecretString::new(secret))],
        store: Some(store),
        ..ListenConfig::default()
    };
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let (listener, mut requests) = listen::start(loopback, config)
        .await
        .expect("the observer starts");
    // Nobody reads the requests here: take them as they come.
    tokio::spawn(async move { while requests.recv().await.is_some() {} });
    harness
        .subscribe_secret(&listener.url(), events, secret)
        .await;
    listener
}

/// A clipboard that takes every copy and keeps nothing.
pub(crate) struct NoClipboard;

impl Clipboard for NoClipboard {
    fn copy(&mut self, _text: &str) -> std::io::Result<()> {
        Ok(())
    }
}

/// A pane's `effect` run on `store` as the console's worker runs it:
/// every result it reports, in order.
pub(crate) async fn pane_results<R: Send + 'static>(
    client: &earshot_core::api::Client,
    store: crate::tui::kernel::store::StoreAt,
    effect: impl crate::tui::kernel::PaneEffect<R>,
) -> Vec<R> {
    use crate::tui::kernel::{Report, TaskInput};
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let input = TaskInput {
        client: client.clone(),
        store: Ok(store),
        account_left: Default::default(),
    };
    effect
        .run(input, Report::new(move |result| tx.send(result).is_ok()))
        .await;
    let mut results = Vec::new();
    while let Ok(result) = rx.try_recv() {
        results.push(result);
    }
    results
}

/// Opens session `id` in the Deliveries pane (the handover other panes
/// make) with the console on `store`, and runs the worker until the
/// session block arrives (within 30 s): the app then.
pub(crate) async fn open_in_deliveries(
    client: &earshot_core::api::Client,
    store: crate::tui::kernel::store::StoreAt,
    id: &str,
) -> crate::tui::console::app::App {
    use crate::tui::console::action::Action;
    use crate::tui::console::app::App;
    use crate::tui::console::worker::Worker;
    use crate::tui::kernel::{ConsoleConfig, Handover};
    use crate::tui::panes::deliveries::DeliveriesResult;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(client.clone(), tx, Box::new(NoClipboard)).with_store(Ok(store));
    let mut app = App::new(ConsoleConfig::default());
    let effects = app.update(Action::Handover(Handover::OpenInDeliveries(id.into())));
    worker.start_all(effects);
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let action = rx.recv().await.expect("the worker is alive");
            let done = matches!(action, Action::Deliveries(DeliveriesResult::Session { .. }));
            let effects = app.update(action);
            worker.start_all(effects);
            if done {
                break;
            }
        }
    })
    .await
    .expect("the session block arrives within 30 s");
    app
}

/// A database of its own in `cluster`, connected (and migrated).
pub(crate) async fn pg_database(
    cluster: &earshot_testkit::postgres::PgCluster,
    name: &str,
) -> earshot_core::store::postgres::PgStore {
    use earshot_core::store::postgres::{PgStore, PgTarget};
    cluster.create_database(name).expect("database made");
    let target = PgTarget::parse(&cluster.url(name)).expect("a store URL");
    PgStore::connect(target, &cluster.password_sources())
        .await
        .expect("the store opens")
}
