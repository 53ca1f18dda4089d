//! Forwarding from the store (`listen --store --forward-to`): the
//! receiver answers the platform once an event is stored, and this relay
//! passes the stored events on to the app in the order they were filed,
//! each signed anew when it is sent (an event that waited past the
//! signature's five-minute tolerance still verifies).
//!
//! An event moves on only once the app has taken it (a 2xx). While the app
//! is down, refusing, or the laptop sleeps, the event is sent again after
//! a pause that doubles up to [`MAX_PAUSE`], and the events behind it wait
//! in the store: none is lost, none overtakes another. Where it stopped is
//! kept in the store ([`crate::store::relay`]) after each event the app
//! takes, so a restart (or a kill) resumes there; an event the app took
//! just before a kill, before its cursor was kept, is sent once more (the
//! app deduplicates by `event_id`, as it must for the platform too).
//!
//! On a PostgreSQL store the replicas share, one relay per app runs, on
//! the replica holding the forwarding lease, and reads what every replica
//! filed in the order of the filing transactions
//! ([`crate::store::postgres::relay`], read through
//! [`super::relay_source`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use tokio::sync::{mpsc, watch};

use super::listen::{Forward, Forwarded};
use super::relay_source::{NotKept, PgSource, Source};
use crate::store::postgres::{Fence, PgError, PgStore};
use crate::store::relay::{self, Pending};
use crate::store::{Store, StoreError, now_ms};

/// How often the store is asked for new events while none wait.
const POLL: Duration = Duration::from_millis(200);
/// The first pause before an event the app did not take is sent again.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two tries of one event.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);
/// How often a stall is said again while it lasts.
const REMINDER_MS: i64 = 30_000;
/// Events read from the store at a time.
const BATCH: usize = 64;

/// An event as the relay tells of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayedEvent {
    /// Its row id on SQLite; none on PostgreSQL.
    pub seq: Option<i64>,
    pub event_id: String,
    pub event: String,
    pub session_id: String,
}

/// What the relay tells its reader (`listen` prints it).
#[derive(Clone, Debug)]
pub enum RelayNote {
    /// The app took an event.
    Taken {
        event: RelayedEvent,
        forwarded: Forwarded,
    },
    /// The app did not take `event` (said when it starts, when the reason
    /// changes, and every 30 s while it lasts): it is sent again, and
    /// `queued` events wait behind it, itself included.
    Stalled {
        event: RelayedEvent,
        forwarded: Forwarded,
        since_ms: i64,
        queued: i64,
    },
    /// The app takes events again after a stall of `stalled_ms`.
    Resumed { stalled_ms: i64, queued: i64 },
    /// At the start, `queued` events the app had not taken wait from an
    /// earlier run; they go first.
    Resuming { queued: i64 },
    /// The store could not be read, or the cursor kept: tried again.
    StoreFailed(String),
}

/// A running relay. Dropping it stops it (an event being sent is not
/// waited for; it is sent again after a restart).
pub struct Relay {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Relay")
    }
}

impl Relay {
    /// Starts passing on what the store at `path` files after the cursor
    /// kept under `key` (the newest event when there is none) along
    /// `forward`, which must sign anew. Its notes go to `notes`.
    pub fn start(
        path: PathBuf,
        key: String,
        forward: Arc<Forward>,
        notes: mpsc::Sender<RelayNote>,
    ) -> Result<Relay, StoreError> {
        let store = Store::open(&path)?;
        let cursor = relay::resume(&store, &key, now_ms())?;
        let (stop, stopped) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(StoreError::Thread)?;
        let mut run = Run {
            source: Source::Sqlite { store, key, cursor },
            forward,
            notes,
            stopped,
            stall: None,
        };
        let thread = std::thread::Builder::new()
            .name("earshot-relay".into())
            .spawn(move || {
                runtime.block_on(run.relay());
            })
            .map_err(StoreError::Thread)?;
        Ok(Relay {
            stop,
            thread: Some(thread),
            task: None,
        })
    }

    /// Starts passing on what any replica files into the PostgreSQL
    /// `store` after the place kept under `key`, while `fence` (the
    /// forwarding lease) is held: every write of the place is fenced by
    /// it, and when one finds the lease taken by another replica this
    /// relay sends nothing more until it holds it again (its caller stops
    /// it when the lease keeper says so). A task on the current runtime.
    pub fn start_postgres(
        store: PgStore,
        key: String,
        fence: Fence,
        forward: Arc<Forward>,
        notes: mpsc::Sender<RelayNote>,
    ) -> Relay {
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(relay_postgres(store, key, fence, forward, notes, stopped));
        Relay {
            stop,
            thread: None,
            task: Some(task),
        }
    }
}

/// The PostgreSQL relay's loop: resume under the lease (tried again
/// every [`MAX_PAUSE`] while another replica holds it), pass events on
/// until the lease is found lost, and again.
async fn relay_postgres(
    store: PgStore,
    key: String,
    fence: Fence,
    forward: Arc<Forward>,
    notes: mpsc::Sender<RelayNote>,
    stopped: watch::Receiver<bool>,
) {
    loop {
        match store.relay_resume(&fence, &key, now_ms()).await {
            Ok(place) => {
                let mut run = Run {
                    source: Source::Postgres(PgSource {
                        store: store.clone(),
                        key: key.clone(),
                        fence: fence.clone(),
                        place,
                        horizon: None,
                        kept_since: true,
                    }),
                    forward: forward.clone(),
                    notes: notes.clone(),
                    stopped: stopped.clone(),
                    stall: None,
                };
                if run.relay().await == Ended::Stopped {
                    return;
                }
            }
            Err(PgError::LeaseLost { .. }) => {}
            Err(error) => {
                let note = RelayNote::StoreFailed(error.to_string());
                let _ = notes.send(note).await;
            }
        }
        let mut stopped = stopped.clone();
        tokio::select! {
            () = tokio::time::sleep(MAX_PAUSE) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Why a relay's loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// The relay was stopped.
    Stopped,
    /// Another replica holds the forwarding lease now.
    LeaseLost,
}

/// A stall in progress: since when, why, and when it was last said.
struct Stall {
    since_ms: i64,
    why: String,
    said_ms: i64,
}

struct Run {
    source: Source,
    forward: Arc<Forward>,
    notes: mpsc::Sender<RelayNote>,
    stopped: watch::Receiver<bool>,
    stall: Option<Stall>,
}

impl Run {
    async fn relay(&mut self) -> Ended {
        match self.source.waiting().await {
            Ok(0) => {}
            Ok(queued) => self.note(RelayNote::Resuming { queued }).await,
            Err(error) => self.note(RelayNote::StoreFailed(error)).await,
        }
        loop {
            let pending = match self.source.next(BATCH).await {
                Ok(pending) => pending,
                Err(NotKept::LeaseLost) => return Ended::LeaseLost,
                Err(NotKept::Failed(error)) => {
                    // Said once a pause, not once a poll, while it lasts.
                    self.note(RelayNote::StoreFailed(error)).await;
                    if !self.pause(MAX_PAUSE).await {
                        return Ended::Stopped;
                    }
                    continue;
                }
            };
            if pending.is_empty() && !self.pause(POLL).await {
                return Ended::Stopped;
            }
            for event in pending {
                if let Some(ended) = self.pass_on(&event).await {
                    return ended;
                }
            }
        }
    }

    /// Sends `event` until the app takes it (or it has no app); why the
    /// relay ends when it is stopped first or the lease is lost.
    async fn pass_on(&mut self, pending: &Pending) -> Option<Ended> {
        let event = RelayedEvent {
            seq: pending.seq,
            event_id: pending.event_id.clone(),
            event: pending.event.clone(),
            session_id: pending.session_id.clone(),
        };
        if let Some(app) = self.forward.app_for(&pending.event).cloned() {
            let headers = platform_headers(pending);
            let mut pause = FIRST_PAUSE;
            loop {
                let mut stopped = self.stopped.clone();
                let forwarded = tokio::select! {
                    forwarded = self.forward.send(&app, &pending.session_id, &headers, &pending.body) => forwarded,
                    _ = stopped.wait_for(|stop| *stop) => return Some(Ended::Stopped),
                };
                if forwarded.taken() {
                    self.resumed().await;
                    let kept = self.keep_cursor(pending).await;
                    self.note(RelayNote::Taken { event, forwarded }).await;
                    return kept;
                }
                self.stalled(&event, forwarded).await;
                if !self.pause(pause).await {
                    return Some(Ended::Stopped);
                }
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
        self.keep_cursor(pending).await
    }

    async fn stalled(&mut self, event: &RelayedEvent, forwarded: Forwarded) {
        let now = now_ms();
        let why = forwarded.answered();
        let since_ms = match &mut self.stall {
            Some(stall) if stall.why == why && now - stall.said_ms < REMINDER_MS => return,
            Some(stall) => {
                stall.why = why;
                stall.said_ms = now;
                stall.since_ms
            }
            None => {
                let stall = Stall {
                    since_ms: now,
                    why,
                    said_ms: now,
                };
                self.stall = Some(stall);
                now
            }
        };
        let queued = self.source.waiting().await.unwrap_or(0);
        let note = RelayNote::Stalled {
            event: event.clone(),
            forwarded,
            since_ms,
            queued,
        };
        self.note(note).await;
    }

    async fn resumed(&mut self) {
        if let Some(stall) = self.stall.take() {
            let queued = self.source.waiting().await.unwrap_or(0);
            let stalled_ms = now_ms() - stall.since_ms;
            self.note(RelayNote::Resumed { stalled_ms, queued }).await;
        }
    }

    /// Keeps that the app is done with `pending`; `Some` when the lease
    /// was found lost (a failure is said, and the relay goes on).
    async fn keep_cursor(&mut self, pending: &Pending) -> Option<Ended> {
        match self.source.keep(pending).await {
            Ok(()) => None,
            Err(NotKept::LeaseLost) => Some(Ended::LeaseLost),
            Err(NotKept::Failed(error)) => {
                let note = format!("the relay's place could not be kept: {error}");
                self.note(RelayNote::StoreFailed(note)).await;
                None
            }
        }
    }

    async fn note(&mut self, note: RelayNote) {
        let _ = self.notes.send(note).await;
    }

    /// Waits `pause`; false when the relay is stopped first.
    async fn pause(&mut self, pause: Duration) -> bool {
        let mut stopped = self.stopped.clone();
        let went_by = tokio::select! {
            () = tokio::time::sleep(pause) => true,
            _ = stopped.wait_for(|stop| *stop) => false,
        };
        went_by && !*self.stopped.borrow()
    }
}

/// The platform's headers a stored event is forwarded with (its signature
/// is made when it is sent).
fn platform_headers(pending: &Pending) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(value) = HeaderValue::from_str(&pending.event) {
        headers.insert("x-svc-event", value);
    }
    if let Some(Ok(value)) = pending.delivery_id.as_deref().map(HeaderValue::from_str) {
        headers.insert("x-svc-delivery-id", value);
    }
    headers
}
