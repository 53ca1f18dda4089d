//! The incident-history store as the panes' tasks reach it: where it is
//! ([`StorePath`]: a file, or a PostgreSQL store's pool), what the panes
//! read and write on either backend (the live event list, [`live_events`];
//! one event in full for the Events pane's detail, [`event_detail`]; the
//! Health board with its trend and the platform's give-up,
//! [`board_reads`], [`give_up_text`]; Pulse's counts, [`pulse_counts`]; a
//! subscription's failing sessions, [`failing_sessions`]; the incidents
//! and their acknowledgement, [`incidents_since`], [`acknowledge`];
//! recording a change the console made, [`note_change`], the newest
//! change, [`newest_change`], a session's stored events for the
//! Deliveries pane's session block, [`session_stored`], the sessions it
//! remembers and offers, [`remember_sessions`], [`known_session_ids`], and
//! the incidents a subscription's end resolves, [`end_subscription`];
//! recover's plan, sweep and log, [`RecoverStore`]; the receiver checks'
//! reads, [`checks`]), and the sweep's budget. Each is one `match` on
//! [`StoreAt`], so no pane holds an `if postgres`. A task's read of a file
//! runs on one of the console's kept connections ([`with_store`]; WAL lets
//! them read beside a `listen` that writes), as does the sweep; recover
//! and the rotation watch open their own.

use std::path::PathBuf;

use super::Failure;
use earshot_core::api::types::agents::DeliveryRecord;
use earshot_core::history::event_list::{self, EventDetail, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::history::incidents;
use earshot_core::history::recover;
use earshot_core::history::report;
use earshot_core::history::report_postgres::board_postgres;
use earshot_core::store::deliveries::{self, FailingSession};
use earshot_core::store::events::{self, StoredEvent};
use earshot_core::store::incidents::SubscriptionEnd;
use earshot_core::store::kept::KeptConnections;
use earshot_core::store::live_list::{LiveCursor, LiveRead};
use earshot_core::store::mark::StoreMark;
use earshot_core::store::postgres::PgStore;
use earshot_core::store::timeline;
use earshot_core::store::{AsyncStore, Store, StoreError, changes, sessions};

mod checks;
pub(crate) use checks::{
    listed_subscription, refused_event, refused_known, rotation_probe, stored_event, watch_rotation,
};

/// Where the console's store is.
#[derive(Clone, Debug)]
pub(crate) enum StoreAt {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL store, connected (and migrated) at the console's start.
    Postgres(PgStore),
}

impl From<PathBuf> for StoreAt {
    fn from(path: PathBuf) -> Self {
        StoreAt::File(path)
    }
}

impl StoreAt {
    /// The file's write mark (`None` for PostgreSQL, which has no file:
    /// every live read there asks the server).
    pub(crate) fn file_mark(&self) -> Option<StoreMark> {
        match self {
            StoreAt::File(path) => Some(StoreMark::of(path)),
            StoreAt::Postgres(_) => None,
        }
    }

    /// Whether `other` is the same store (the same file, or the same
    /// database URL).
    pub(crate) fn same_as(&self, other: &StoreAt) -> bool {
        match (self, other) {
            (StoreAt::File(a), StoreAt::File(b)) => a == b,
            (StoreAt::Postgres(a), StoreAt::Postgres(b)) => a.target() == b.target(),
            _ => false,
        }
    }
}

impl std::fmt::Display for StoreAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreAt::File(path) => write!(f, "{}", path.display()),
            StoreAt::Postgres(store) => write!(f, "{}", store.target()),
        }
    }
}

/// Requests one console sweep may send (it runs every 5 s while the
/// Health pane is on screen: at most 600 a minute, one a sweep when
/// nothing is due).
pub(crate) const CONSOLE_SWEEP_BUDGET: usize = 50;

/// Where the console's store is, or why there is none.
pub(crate) type StorePath = Result<StoreAt, String>;

/// A store error, as a pane shows it.
pub(crate) fn failure(error: impl std::fmt::Display) -> Failure {
    Failure::new(error.to_string())
}

/// The console's idle connections to its store file: the panes read it
/// every few seconds, each read on a kept connection rather than a new one
/// ([`KeptConnections`]). Four covers the panes that read at once.
static KEPT: KeptConnections = KeptConnections::new(4);

/// Runs `work` with a connection to the store file at `path` on the
/// blocking pool: a kept one ([`KEPT`]), handed back when `work` succeeded
/// (one that met an error is closed; so for the console's sweep, which
/// runs every 5 s).
async fn with_store<T: Send + 'static>(
    path: PathBuf,
    work: impl FnOnce(&mut Store) -> Result<T, String> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(move || {
        let mut store = KEPT.take(&path).map_err(failure)?;
        let done = work(&mut store).map_err(Failure::new)?;
        KEPT.give_back(store);
        Ok(done)
    })
    .await
    .map_err(|error| failure(StoreError::Task(error.to_string())))?
}

/// The live read of `query`'s event list from either backend
/// (`history::event_list::live_from`): the whole list without `known`,
/// else only what was filed since (none twice), or nothing when nothing
/// changed. A file is read on the blocking pool.
pub(crate) async fn live_events(
    store: StorePath,
    query: EventQuery,
    since_ms: i64,
    limit: usize,
    known: Option<LiveCursor>,
) -> Result<(LiveRead<EventRow>, Option<LiveCursor>), Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                event_list::live_sqlite(store, &query, since_ms, limit, known.as_ref())
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            event_list::live_postgres(&store, &query, since_ms, limit, known.as_ref())
                .await
                .map_err(failure)
        }
    }
}

/// One event in full (`history::event_list::detail` or
/// `detail_postgres`), or `None` when the store does not hold it. A file
/// is read on the blocking pool.
pub(crate) async fn event_detail(
    store: StorePath,
    event_id: String,
) -> Result<Option<Box<EventDetail>>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                event_list::detail(store, &event_id)
                    .map(|detail| detail.map(Box::new))
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => event_list::detail_postgres(&store, &event_id)
            .await
            .map(|detail| detail.map(Box::new))
            .map_err(failure),
    }
}

/// When the platform gave up retrying on this account, as the store's
/// history shows it (`store::give_up`), from either backend.
async fn give_up(
    store: StorePath,
) -> Result<Option<earshot_core::store::give_up::GiveUp>, Failure> {
    use earshot_core::store::give_up::{observed, observed_postgres};
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, |store| {
                observed(store).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => observed_postgres(&store).await.map_err(failure),
    }
}

/// [`give_up`] in words; "unknown" with why when the store cannot be
/// read.
pub(crate) async fn give_up_text(path: StorePath) -> String {
    give_up_words(give_up(path).await)
}

/// [`give_up_text`]'s words for what the store's history showed.
pub(crate) fn give_up_words(
    observed: Result<Option<earshot_core::store::give_up::GiveUp>, Failure>,
) -> String {
    observed.map_or_else(
        |failure| format!("when the platform gives up: unknown ({})", failure.message),
        earshot_core::store::give_up::GiveUp::describe,
    )
}

/// Records a change the console made on the platform (never a secret), so
/// `earshot changes` and the Health board show it; tried twice, as the
/// command line does ([`changes::record_with_retry`]); a store that cannot
/// be written is logged, and the change stands.
pub(crate) async fn note_change(
    path: StorePath,
    subscription_id: &str,
    action: &str,
    detail: String,
) {
    let change = changes::Change::now(incidents::operator(), subscription_id, action, detail);
    let recorded = match path {
        Err(error) => Err(error),
        Ok(StoreAt::Postgres(store)) => changes::record_postgres_twice(&store, &change).await,
        Ok(StoreAt::File(path)) => tokio::task::spawn_blocking(move || {
            changes::record_with_retry(|| Store::open(&path), &change)
        })
        .await
        .unwrap_or_else(|error| Err(error.to_string())),
    };
    if let Err(error) = recorded {
        tracing::warn!(%error, "the change was not recorded");
    }
}

/// The incidents seen since `since_ms` (resolved ones with `all`), from
/// either backend: a file on the blocking pool, PostgreSQL from its pool.
pub(crate) async fn incidents_since(
    store: StorePath,
    since_ms: i64,
    all: bool,
) -> Result<Vec<incidents::Incident>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                incidents::list(store, since_ms, all).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => incidents::list_postgres(&store, since_ms, all)
            .await
            .map_err(failure),
    }
}

/// Acknowledges the incident `id` names as `by`, with a note, on either
/// backend; committed when it returns, so every console on the store
/// reads it at its next refresh.
pub(crate) async fn acknowledge(
    store: StorePath,
    id: String,
    by: String,
    note: Option<String>,
) -> Result<incidents::Acknowledged, Failure> {
    let now_ms = earshot_core::store::now_ms();
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                incidents::acknowledge(store, &id, &by, note.as_deref(), now_ms)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            incidents::acknowledge_postgres(&store, &id, &by, note.as_deref(), now_ms)
                .await
                .map_err(failure)
        }
    }
}

/// Resolves the open incidents of a subscription the console deleted or
/// paused, with the reason, on either backend; how many.
pub(crate) async fn end_subscription(
    store: StorePath,
    id: String,
    end: SubscriptionEnd,
) -> Result<usize, Failure> {
    let now_ms = earshot_core::store::now_ms();
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                earshot_core::store::incidents::end_subscription(store, &id, end, now_ms)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            earshot_core::store::incidents::end_subscription_postgres(&store, &id, end, now_ms)
                .await
                .map_err(failure)
        }
    }
}

/// What the Health board reads at each refresh, each read failing alone:
/// the board, its trend, when the platform gave up on this account. A
/// file gives all three from one open, on the blocking pool; PostgreSQL
/// reads each from its pool (`report_postgres::board_postgres`, as
/// `earshot health`; `timeline_postgres`; `give_up::observed_postgres`).
pub(crate) async fn board_reads(
    store: StorePath,
    since_ms: i64,
    trend_columns: usize,
) -> BoardReads {
    let now_ms = earshot_core::store::now_ms();
    let store = match store {
        Ok(store) => store,
        Err(why) => {
            let failure = Failure::new(why);
            return (Err(failure.clone()), Err(failure.clone()), Err(failure));
        }
    };
    match store {
        StoreAt::File(path) => {
            let read = with_store(path, move |store| {
                Ok((
                    report::board(store, since_ms, now_ms).map_err(|error| error.to_string()),
                    timeline::timeline(store, since_ms, now_ms, trend_columns)
                        .map_err(|error| error.to_string()),
                    earshot_core::store::give_up::observed(store)
                        .map_err(|error| error.to_string()),
                ))
            })
            .await;
            match read {
                Ok((board, trend, give_up)) => (
                    board.map_err(Failure::new),
                    trend.map_err(Failure::new),
                    give_up.map_err(Failure::new),
                ),
                Err(failure) => (Err(failure.clone()), Err(failure.clone()), Err(failure)),
            }
        }
        StoreAt::Postgres(store) => (
            board_postgres(&store, since_ms, now_ms)
                .await
                .map_err(failure),
            timeline::timeline_postgres(&store, since_ms, now_ms, trend_columns)
                .await
                .map_err(failure),
            give_up(Ok(StoreAt::Postgres(store))).await,
        ),
    }
}

/// [`board_reads`]' three answers.
pub(crate) type BoardReads = (
    Result<report::Board, Failure>,
    Result<timeline::Timeline, Failure>,
    Result<Option<earshot_core::store::give_up::GiveUp>, Failure>,
);

/// What the Pulse pane counts by: the trend of each of `timelines`
/// (`(since_ms, columns)`, each up to `now_ms`) and the events the
/// observer received in each of `hours` (hours since 1970, both included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CountWindows {
    pub(crate) now_ms: i64,
    pub(crate) timelines: [(i64, usize); 2],
    pub(crate) hours: (i64, i64),
}

/// [`pulse_counts`]' answer: the two trends, then the hours.
pub(crate) type Counts = ([timeline::Timeline; 2], events::ReceivedHours);

/// Pulse's counts from either backend, read whole or not at all: a file
/// from one kept connection (`timeline::timeline` twice,
/// `events::received_per_hour`), PostgreSQL from its pool
/// (`timeline_postgres` twice, `received_per_hour_postgres`). A few
/// hundred count rows, never a scan of events.
pub(crate) async fn pulse_counts(
    store: StorePath,
    windows: CountWindows,
) -> Result<Counts, Failure> {
    let CountWindows {
        now_ms,
        timelines: [(first_since, first_columns), (second_since, second_columns)],
        hours: (first_hour, last_hour),
    } = windows;
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                let read = || -> Result<Counts, StoreError> {
                    Ok((
                        [
                            timeline::timeline(store, first_since, now_ms, first_columns)?,
                            timeline::timeline(store, second_since, now_ms, second_columns)?,
                        ],
                        events::received_per_hour(store, first_hour, last_hour)?,
                    ))
                };
                read().map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            let read = async {
                Ok::<Counts, StoreError>((
                    [
                        timeline::timeline_postgres(&store, first_since, now_ms, first_columns)
                            .await?,
                        timeline::timeline_postgres(&store, second_since, now_ms, second_columns)
                            .await?,
                    ],
                    events::received_per_hour_postgres(&store, first_hour, last_hour).await?,
                ))
            };
            read.await.map_err(failure)
        }
    }
}

/// One console sweep (within [`CONSOLE_SWEEP_BUDGET`]) into either
/// backend: by hand, so on PostgreSQL not fenced by the replicas' lease
/// (as `earshot health`'s); what it did.
pub(crate) async fn sweep(
    store: StorePath,
    client: &earshot_core::api::Client,
) -> Result<earshot_core::history::sweep::SweepReport, Failure> {
    use earshot_core::history::sweep::sweep;
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            let store = tokio::task::spawn_blocking(move || KEPT.take(&path))
                .await
                .map_err(|error| failure(StoreError::Task(error.to_string())))?
                .map_err(failure)?;
            let store = AsyncStore::new(store);
            let swept = sweep(client, &store, CONSOLE_SWEEP_BUDGET)
                .await
                .map_err(failure)?;
            // Every call has returned: the connection is this task's again.
            // (Handed back off the runtime: closing one past the limit
            // may checkpoint.)
            if let Ok(store) = store.into_inner() {
                tokio::task::spawn_blocking(move || KEPT.give_back(store));
            }
            Ok(swept)
        }
        StoreAt::Postgres(store) => sweep(client, &store, CONSOLE_SWEEP_BUDGET)
            .await
            .map_err(failure),
    }
}

/// The id of the newest change recorded by anyone, on either backend
/// (`changes::newest_id`): what the Subscriptions pane polls.
pub(crate) async fn newest_change(store: StorePath) -> Result<Option<i64>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, |store| {
                changes::newest_id(store).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => changes::newest_id_postgres(&store).await.map_err(failure),
    }
}

/// The sessions where `subscription_id`'s attempts failed since
/// `since_ms`, newest failure first, at most `limit`, from either backend
/// (`deliveries::failing_sessions`).
pub(crate) async fn failing_sessions(
    store: StorePath,
    subscription_id: String,
    since_ms: i64,
    limit: usize,
) -> Result<Vec<FailingSession>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                deliveries::failing_sessions(store, &subscription_id, since_ms, limit)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            deliveries::failing_sessions_postgres(&store, &subscription_id, since_ms, limit)
                .await
                .map_err(failure)
        }
    }
}

/// The events the observer stored of `session_id`, oldest first, and
/// the attempts the sweep stored of it, from either backend: a file
/// (`session_view::stored`) on the blocking pool; PostgreSQL's events
/// table (`events::for_session_postgres`), its attempts not read (the
/// pane lists the platform's, and draws no stored ones).
pub(crate) async fn session_stored(
    store: StorePath,
    session_id: String,
) -> Result<(Vec<StoredEvent>, Vec<DeliveryRecord>), Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                earshot_core::history::session_view::stored(store, &session_id)
                    .map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => {
            let stored = events::for_session_postgres(&store, &session_id)
                .await
                .map_err(failure)?;
            Ok((stored, Vec::new()))
        }
    }
}

/// Adds session ids the console came across (a session it viewed) to
/// either backend's known sessions (`sessions::add` or `add_postgres`),
/// for the sweep to follow; how many were new.
pub(crate) async fn remember_sessions(
    store: StorePath,
    ids: Vec<String>,
) -> Result<usize, Failure> {
    let now_ms = earshot_core::store::now_ms();
    let source = sessions::Source::Console;
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                sessions::add(store, &ids, source, now_ms).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => sessions::add_postgres(&store, &ids, source, now_ms)
            .await
            .map_err(failure),
    }
}

/// The known session ids, most recently active first, at most `limit`,
/// from either backend (`sessions::ids` or `ids_postgres`).
pub(crate) async fn known_session_ids(
    store: StorePath,
    limit: usize,
) -> Result<Vec<String>, Failure> {
    match store.map_err(Failure::new)? {
        StoreAt::File(path) => {
            with_store(path, move |store| {
                sessions::ids(store, limit).map_err(|error| error.to_string())
            })
            .await
        }
        StoreAt::Postgres(store) => sessions::ids_postgres(&store, limit).await.map_err(failure),
    }
}

/// A store held open for recover and the Events pane's re-send, on
/// either backend: its plans and its sweep read it, and recover's log is
/// written through it ([`RecoverStore::log`]).
pub(crate) enum RecoverStore {
    File(AsyncStore),
    Postgres(PgStore),
}

impl RecoverStore {
    /// Opens the store (a file on the blocking pool; PostgreSQL's pool as
    /// it is).
    pub(crate) async fn open(store: StorePath) -> Result<RecoverStore, Failure> {
        Ok(match store.map_err(Failure::new)? {
            StoreAt::File(path) => {
                RecoverStore::File(AsyncStore::open(path).await.map_err(failure)?)
            }
            StoreAt::Postgres(store) => RecoverStore::Postgres(store),
        })
    }

    /// Where recover writes its log.
    pub(crate) fn log(&self) -> recover::RecoveryLog<'_> {
        match self {
            RecoverStore::File(store) => recover::RecoveryLog::File(store),
            RecoverStore::Postgres(store) => recover::RecoveryLog::Postgres(store),
        }
    }

    /// One console sweep into it ([`CONSOLE_SWEEP_BUDGET`]), as recover
    /// runs first.
    pub(crate) async fn sweep(
        &self,
        client: &earshot_core::api::Client,
    ) -> Result<earshot_core::history::sweep::SweepReport, Failure> {
        use earshot_core::history::sweep::sweep;
        match self {
            RecoverStore::File(store) => sweep(client, store, CONSOLE_SWEEP_BUDGET).await,
            RecoverStore::Postgres(store) => sweep(client, store, CONSOLE_SWEEP_BUDGET).await,
        }
        .map_err(failure)
    }

    /// A plan to send event `event_id` alone to `subscription_id` (the
    /// Events pane's re-send; `recover::plan_event` or
    /// `plan_event_postgres`).
    pub(crate) async fn plan_event(
        &self,
        subscription_id: String,
        event_id: String,
    ) -> Result<recover::Plan, Failure> {
        match self {
            RecoverStore::File(store) => {
                store
                    .run(move |store| recover::plan_event(store, &subscription_id, &event_id))
                    .await
            }
            RecoverStore::Postgres(store) => {
                recover::plan_event_postgres(store, &subscription_id, &event_id).await
            }
        }
        .map_err(failure)
    }

    /// The observer's copy of event `event_id`, its exact bytes
    /// (`recover::observed_event` or `observed_event_postgres`).
    pub(crate) async fn observed_event(&self, event_id: String) -> Result<StoredEvent, Failure> {
        match self {
            RecoverStore::File(store) => {
                store
                    .run(move |store| recover::observed_event(store, &event_id))
                    .await
            }
            RecoverStore::Postgres(store) => {
                recover::observed_event_postgres(store, &event_id).await
            }
        }
        .map_err(failure)
    }

    /// What `subscription_id` missed for good since `since_ms`, all of it
    /// (`recover::plan` or `plan_postgres`).
    pub(crate) async fn plan(
        &self,
        subscription_id: String,
        since_ms: i64,
    ) -> Result<recover::Plan, Failure> {
        let scope = recover::Scope::default();
        match self {
            RecoverStore::File(store) => {
                store
                    .run(move |store| recover::plan(store, &subscription_id, since_ms, &scope))
                    .await
            }
            RecoverStore::Postgres(store) => {
                recover::plan_postgres(store, &subscription_id, since_ms, &scope).await
            }
        }
        .map_err(failure)
    }
}
