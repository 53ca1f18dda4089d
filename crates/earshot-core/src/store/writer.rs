//! The observer's writer: one thread owns the store connection; requests
//! queue their events and wait. The thread commits everything queued in one
//! transaction (group commit), then answers each request, so `listen` sends
//! its 2xx only once the event is on disk, and a flood costs one commit per
//! batch rather than per request.
//!
//! A repeat of an event whose first copy is still being written waits for
//! that copy's outcome and shares it (stored: a repeat; failed: the same
//! error), so no copy is acknowledged before the event is on disk. A repeat
//! of an event already kept is answered without waiting for the write lock.
//!
//! Between batches the thread puts filed events in the free-text index
//! ([`event_words::index_pending`], [`WORDS`]): at once while only a few
//! wait and nothing else is queued (a trickle, as before), and while a
//! flood lasts only once more than 50,000 wait, in steps of 4,096, the
//! rest once the queue has been empty for a moment. FTS5's merges cost
//! more the larger the index (about 60 µs an event on a million events
//! against 25 µs on a new store), so a flood is filed at the rate of the
//! tables and indexed as it ebbs; until then free text finds the waiting
//! events by scanning them (about 15 ms for 40,000).
//!
//! [`Writer::probe`] asks the same thread whether the store can still be
//! written ([`super::probe`]): answered in turn with the writes, so it also
//! tells whether the thread is alive and keeping up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot, watch};

use super::checkpointer::{Checkpointer, WAL_BOUND_PAGES, WAL_HELD_PAGES};
use super::event_words;
use super::events::{self, Filing};
use super::probe::{ProbeError, probe};
use super::{Store, StoreError};

/// Requests waiting for the writer before senders wait for room.
const QUEUE: usize = 4096;
/// Events committed in one transaction at most.
const BATCH: usize = 1024;

/// When the writer puts filed events in the free-text index.
#[derive(Clone, Copy)]
struct WordsPacing {
    /// Events left out of the index before the writer indexes them
    /// between batches even while busy.
    held: usize,
    /// Events put in the index in one transaction at most.
    step: usize,
    /// At most this many waiting, with nothing queued, are indexed at
    /// once: the writer is keeping up.
    light: usize,
    /// How long the queue stays empty before the writer indexes what waits.
    after_idle: Duration,
}

/// Up to 50,000 events wait (free text scans them in about 20 ms); a step
/// of 4,096 takes about 0.1–0.3 s, which a write arriving meanwhile waits.
const WORDS: WordsPacing = WordsPacing {
    held: 50_000,
    step: 4_096,
    light: 4,
    after_idle: Duration::from_millis(200),
};
/// The writer's page cache in KiB: SQLite's default (2,000) up to this.
const MAX_CACHE_KIB: u64 = 65_536;

struct Job {
    filing: Filing,
    done: oneshot::Sender<Result<bool, String>>,
}

/// What the writer's thread is asked to do.
enum Work {
    Write(Job),
    Probe(oneshot::Sender<Result<(), ProbeError>>),
}

/// How the first copy of an event ended: stored, or the error.
type Settled = Result<(), String>;

/// Event ids being written, each with its first copy's outcome once known.
type InFlight = Arc<Mutex<HashMap<String, watch::Receiver<Option<Settled>>>>>;

/// A handle to the writer thread; cloning it is cheap. The thread stops
/// when the last handle is dropped.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Work>,
    in_flight: InFlight,
    words_waiting: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

/// Whether a copy writes its event or waits for an earlier copy.
enum Claim {
    First(Claimed),
    Repeat(watch::Receiver<Option<Settled>>),
}

/// The first copy's hold on its event id. Dropping it, whatever happened
/// (answered, failed, request cancelled, panic), frees the id; waiters that
/// got no outcome then write the event themselves.
struct Claimed {
    in_flight: InFlight,
    event_id: String,
    outcome: watch::Sender<Option<Settled>>,
}

impl Claimed {
    fn settle(&self, result: &Result<bool, StoreError>) {
        let settled = match result {
            Ok(_) => Ok(()),
            Err(error) => Err(error.to_string()),
        };
        self.outcome.send_replace(Some(settled));
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        in_flight.remove(&self.event_id);
    }
}

impl Writer {
    /// Starts the thread that owns `store`; join the handle after the last
    /// [`Writer`] is dropped to be sure everything is committed.
    pub fn start(store: Store) -> Result<(Writer, JoinHandle<()>), StoreError> {
        Writer::start_paced(store, WORDS)
    }

    fn start_paced(
        store: Store,
        words: WordsPacing,
    ) -> Result<(Writer, JoinHandle<()>), StoreError> {
        let (queue, jobs) = mpsc::channel(QUEUE);
        // A batch's statements spill their journals (for a statement that
        // fails half way) past 64 KiB: in memory they cost no file writes
        // (about 60 a filed event in a temporary file otherwise).
        store.conn.pragma_update(None, "temp_store", "MEMORY")?;
        store
            .conn
            .pragma_update(None, "cache_size", -cache_kib(store.path()))?;
        let checkpointer = match Checkpointer::start(store.path()) {
            Ok(checkpointer) => {
                store
                    .conn
                    .pragma_update(None, "wal_autocheckpoint", WAL_BOUND_PAGES)?;
                // When the log starts again its file is cut back to this.
                let page: i64 = store
                    .conn
                    .query_row("PRAGMA page_size", [], |row| row.get(0))?;
                store.conn.pragma_update(
                    None,
                    "journal_size_limit",
                    i64::from(WAL_HELD_PAGES) * page,
                )?;
                Some(checkpointer)
            }
            Err(error) => {
                tracing::warn!(%error, "the store's checkpoints stay on the writer's thread");
                None
            }
        };
        let words_waiting = Arc::new(AtomicUsize::new(0));
        let waiting = words_waiting.clone();
        let thread = std::thread::Builder::new()
            .name("earshot-store".into())
            .spawn(move || run(store, jobs, checkpointer, words, &waiting))
            .map_err(StoreError::Thread)?;
        let in_flight = Arc::default();
        Ok((
            Writer {
                queue,
                in_flight,
                words_waiting,
            },
            thread,
        ))
    }

    /// Stores an event, or an unfiled delivery (a repeat `event_id` is
    /// ignored), and waits for the commit, or for the outcome of a copy of
    /// the same event being written. Whether it was new.
    pub async fn write(&self, filing: impl Into<Filing>) -> Result<bool, StoreError> {
        let filing = filing.into();
        let Some(event_id) = filing.event_id().map(str::to_owned) else {
            return self.commit(filing).await;
        };
        loop {
            match self.claim(&event_id) {
                Claim::First(claimed) => {
                    let result = self.commit(filing).await;
                    claimed.settle(&result);
                    return result;
                }
                Claim::Repeat(mut first) => {
                    let settled = match first.wait_for(Option::is_some).await {
                        Ok(settled) => settled.clone(),
                        Err(_) => None,
                    };
                    match settled {
                        Some(Ok(())) => return Ok(false),
                        Some(Err(error)) => return Err(StoreError::FirstCopyFailed(error)),
                        // The first copy's request went away before its
                        // outcome: write this one.
                        None => continue,
                    }
                }
            }
        }
    }

    fn claim(&self, event_id: &str) -> Claim {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(first) = in_flight.get(event_id) {
            return Claim::Repeat(first.clone());
        }
        let (outcome, first) = watch::channel(None);
        in_flight.insert(event_id.to_owned(), first);
        Claim::First(Claimed {
            in_flight: self.in_flight.clone(),
            event_id: event_id.to_owned(),
            outcome,
        })
    }

    async fn commit(&self, filing: Filing) -> Result<bool, StoreError> {
        let (done, answer) = oneshot::channel();
        self.queue
            .send(Work::Write(Job { filing, done }))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        match answer.await {
            Ok(Ok(new)) => Ok(new),
            Ok(Err(message)) => Err(StoreError::Commit(message)),
            Err(_) => Err(StoreError::WriterGone),
        }
    }

    /// How many filed events wait for the free-text index, as the
    /// writer's thread last counted them (for `/metrics`).
    pub fn words_waiting(&self) -> Arc<AtomicUsize> {
        self.words_waiting.clone()
    }

    /// Whether the store can still be written ([`super::probe`]), asked
    /// of the writer's thread after the writes queued before it.
    pub async fn probe(&self) -> Result<(), StoreError> {
        let (done, answer) = oneshot::channel();
        self.queue
            .send(Work::Probe(done))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        match answer.await {
            Ok(result) => result.map_err(StoreError::Probe),
            Err(_) => Err(StoreError::WriterGone),
        }
    }

    /// How many event ids are being written now (for tests).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The writer's page cache for the store at `path`, in KiB: room for the
/// interior pages of the tables keyed by random ids (event, session,
/// outcome; 48 MiB of a 6.5 GiB store of a million events, 1/128 of the
/// file), so that filing an event on a large store reads only the leaves
/// it changes, while a small one (the demo's) keeps SQLite's 2,000 KiB.
fn cache_kib(path: &std::path::Path) -> i64 {
    let file = std::fs::metadata(path).map_or(0, |meta| meta.len());
    let kib = (file / 128 / 1024).clamp(2_000, MAX_CACHE_KIB);
    i64::try_from(kib).unwrap_or(2_000)
}

/// What the writer's thread does next.
enum Next {
    Work(Work),
    /// Nothing came for [`WordsPacing::after_idle`].
    Idle,
    /// Every [`Writer`] is gone.
    Closed,
}

/// The next work, waiting for it at most `idle` when given (while events
/// wait for the free-text index) and there is a clock to wait with.
fn next(work: &mut mpsc::Receiver<Work>, idle: Option<Duration>, clock: Option<&Runtime>) -> Next {
    let received = match (idle, clock) {
        // The timer is made inside the runtime, whose clock it needs.
        (Some(idle), Some(clock)) => {
            match clock.block_on(async { tokio::time::timeout(idle, work.recv()).await }) {
                Ok(received) => received,
                Err(_) => return Next::Idle,
            }
        }
        _ => work.blocking_recv(),
    };
    received.map_or(Next::Closed, Next::Work)
}

/// The writer's loop; `checkpointer` (stopped when the loop ends, before
/// the store closes) copies each commit into the store file.
fn run(
    mut store: Store,
    mut work: mpsc::Receiver<Work>,
    checkpointer: Option<Checkpointer>,
    words: WordsPacing,
    // Where `words_waiting` is shown to the other threads.
    shown: &AtomicUsize,
) {
    // Only for its clock: waiting for work at most `after_idle`. Without
    // it a flood's words wait for the next trickle or for `held`.
    let clock = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .inspect_err(|error| tracing::warn!(%error, "the store's writer has no clock: a flood's words are indexed later"))
        .ok();
    let mut batch = Vec::with_capacity(BATCH);
    let mut probes = Vec::new();
    // Left by an earlier run or another program: indexed once idle.
    let mut words_waiting = event_words::pending(&store.conn).unwrap_or(0);
    loop {
        shown.store(words_waiting, Ordering::Relaxed);
        let idle = (words_waiting > 0).then_some(words.after_idle);
        let first = match next(&mut work, idle, clock.as_ref()) {
            Next::Work(first) => first,
            Next::Idle => {
                // Step by step while nothing else is asked for.
                loop {
                    words_waiting = index_words(&mut store, words.step);
                    shown.store(words_waiting, Ordering::Relaxed);
                    if words_waiting == 0 || !work.is_empty() {
                        break;
                    }
                }
                continue;
            }
            Next::Closed => break,
        };
        let mut more = Some(first);
        while let Some(item) = more.take() {
            match item {
                Work::Write(job) => batch.push(job),
                Work::Probe(done) => probes.push(done),
            }
            if batch.len() < BATCH {
                more = work.try_recv().ok();
            }
        }
        answer_repeats(&store, &mut batch);
        let results = commit(&mut store, &batch);
        // New events wait for the index; unfiled deliveries are not in it.
        words_waiting += batch
            .iter()
            .zip(&results)
            .filter(|(job, new)| matches!((&job.filing, new), (Filing::Event(_), Ok(true))))
            .count();
        // A trickle: only this batch's few events wait, nothing is queued.
        let light = (1..=words.light).contains(&words_waiting) && work.is_empty();
        for (job, result) in batch.drain(..).zip(results) {
            let _ = job.done.send(result);
        }
        if words_waiting > words.held || light {
            words_waiting = index_words(&mut store, words.step);
        }
        if let Some(checkpointer) = &checkpointer {
            checkpointer.after_commit();
        }
        // After the writes queued with them: a probe waits its turn.
        for done in probes.drain(..) {
            let _ = done.send(probe(&store));
        }
    }
    drop(checkpointer);
}

/// Puts the oldest `step` waiting events in the free-text index in one
/// transaction: how many still wait. A failure is logged and the rest
/// wait for events filed after it.
fn index_words(store: &mut Store, step: usize) -> usize {
    let waiting = store.conn_mut().transaction().and_then(|tx| {
        event_words::index_pending(&tx, i64::try_from(step).unwrap_or(i64::MAX))?;
        let waiting = event_words::pending(&tx)?;
        tx.commit()?;
        Ok(waiting)
    });
    waiting.unwrap_or_else(|error| {
        tracing::error!(%error, "the store could not index filed events' words; free text scans them meanwhile");
        0
    })
}

/// Answers the jobs whose event is already kept (a read: it does not wait
/// for another connection's write lock) and takes them out of `batch`.
fn answer_repeats(store: &Store, batch: &mut Vec<Job>) {
    // One read snapshot for the batch; rolled back (nothing to undo) when
    // dropped. Without it every job is simply written.
    let Ok(read) = store.conn.unchecked_transaction() else {
        return;
    };
    let kept = |job: &Job| events::is_kept(&read, &job.filing).unwrap_or(false);
    let mut index = 0;
    while index < batch.len() {
        if kept(&batch[index]) {
            let job = batch.swap_remove(index);
            let _ = job.done.send(Ok(false));
        } else {
            index += 1;
        }
    }
}

/// One transaction for the whole batch; on failure every job gets the error.
fn commit(store: &mut Store, batch: &[Job]) -> Vec<Result<bool, String>> {
    if batch.is_empty() {
        return Vec::new();
    }
    let mut attempt = || -> rusqlite::Result<Vec<bool>> {
        let tx = store
            .conn_mut()
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut fresh = Vec::with_capacity(batch.len());
        for job in batch {
            fresh.push(events::keep(&tx, &job.filing)?);
        }
        tx.commit()?;
        Ok(fresh)
    };
    match attempt() {
        Ok(fresh) => fresh.into_iter().map(Ok).collect(),
        Err(error) => {
            tracing::error!(%error, "the store could not commit received events");
            batch.iter().map(|_| Err(error.to_string())).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::events::ObservedEvent;

    fn event(id: &str) -> ObservedEvent {
        let body = format!(
            r#"{{"event_id":"{id}","event":"session.started","timestamp":"2026-11-25T01:00:00Z","session":{{"session_id":"ses_1"}}}}"#
        );
        ObservedEvent::from_delivery(body.as_bytes(), vec![], None, 1).expect("a session event")
    }

    #[test]
    fn the_cache_grows_with_the_store_from_sqlites_default_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.db");
        let file = std::fs::File::create(&path).unwrap();
        for (len, kib) in [
            (0, 2_000),
            (40 << 20, 2_000),
            (512 << 20, 4_096),
            (8 << 30, 65_536),
        ] {
            file.set_len(len).unwrap();
            assert_eq!(cache_kib(&path), kib, "a file of {len} bytes");
        }
        assert_eq!(cache_kib(&dir.path().join("missing.db")), 2_000);
    }

    fn writer_with_short_busy_timeout() -> (tempfile::TempDir, Writer, JoinHandle<()>) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("earshot.db")).unwrap();
        store.set_busy_timeout(Duration::from_millis(300)).unwrap();
        let (writer, thread) = Writer::start(store).unwrap();
        (dir, writer, thread)
    }

    /// Holds the store's write lock from a second connection.
    fn lock(dir: &tempfile::TempDir) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(dir.path().join("earshot.db")).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn
    }

    #[tokio::test]
    async fn a_repeat_shares_the_first_copys_failure_and_frees_the_id() {
        let (dir, writer, _thread) = writer_with_short_busy_timeout();
        let held = lock(&dir);
        let (first, second) = tokio::join!(writer.write(event("e1")), async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer.write(event("e1")).await
        });
        assert!(matches!(first, Err(StoreError::Commit(_))), "{first:?}");
        assert!(
            matches!(second, Err(StoreError::FirstCopyFailed(_))),
            "{second:?}"
        );
        assert_eq!(writer.in_flight(), 0);
        drop(held);
        assert!(writer.write(event("e1")).await.unwrap(), "stored as new");
        assert!(!writer.write(event("e1")).await.unwrap(), "then a repeat");
        assert_eq!(writer.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_probe_says_when_the_write_lock_cannot_be_taken() {
        let (dir, writer, _thread) = writer_with_short_busy_timeout();
        writer.probe().await.expect("writable");
        let held = lock(&dir);
        let error = writer.probe().await.expect_err("locked elsewhere");
        assert!(
            matches!(error, StoreError::Probe(ProbeError::Lock(_))),
            "{error}"
        );
        drop(held);
        writer.probe().await.expect("writable again");
        assert!(writer.write(event("e3")).await.unwrap(), "and it writes");
    }

    /// (events waiting for the free-text index, events in it)
    fn words(path: &std::path::Path) -> (i64, i64) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT (SELECT count(*) FROM event_words_pending),
                    (SELECT count(*) FROM event_words)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn filed_events_wait_for_the_word_index_until_too_many_or_the_writer_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let never_idle = WordsPacing {
            held: 6,
            step: 4,
            light: 0,
            after_idle: Duration::from_secs(3_600),
        };
        let (writer, thread) =
            Writer::start_paced(Store::open(&path).unwrap(), never_idle).unwrap();
        for n in 0..6 {
            assert!(writer.write(event(&format!("e{n}"))).await.unwrap());
        }
        // An unfiled delivery has no words to wait for.
        let unfiled = Filing::read(br#"{"event":"agent.updated"}"#, vec![], None, 1);
        assert!(matches!(unfiled, Filing::Unfiled(_)));
        assert!(writer.write(unfiled).await.unwrap());
        writer.probe().await.expect("after the writes");
        assert_eq!(words(&path), (6, 0), "filed, not indexed");
        assert_eq!(writer.words_waiting().load(Ordering::Relaxed), 6);
        // One more than `held`: one step of four is indexed.
        assert!(writer.write(event("e6")).await.unwrap());
        writer.probe().await.expect("after the step");
        assert_eq!(words(&path), (3, 4));
        assert_eq!(writer.words_waiting().load(Ordering::Relaxed), 3);
        drop(writer);
        thread.join().unwrap();

        // Left waiting by that run: indexed by the next once it is idle,
        // step by step, with nothing filed.
        let idle_soon = WordsPacing {
            step: 2,
            after_idle: Duration::from_millis(20),
            ..never_idle
        };
        let (writer, thread) = Writer::start_paced(Store::open(&path).unwrap(), idle_soon).unwrap();
        let mut seen = words(&path);
        for _ in 0..500 {
            if seen == (0, 7) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            seen = words(&path);
        }
        assert_eq!(seen, (0, 7), "every event indexed");
        drop(writer);
        thread.join().unwrap();
    }

    #[tokio::test]
    async fn a_trickle_of_events_is_indexed_as_it_is_filed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("earshot.db");
        let trickle = WordsPacing {
            after_idle: Duration::from_secs(3_600),
            ..WORDS
        };
        let (writer, thread) = Writer::start_paced(Store::open(&path).unwrap(), trickle).unwrap();
        for n in 0..3 {
            assert!(writer.write(event(&format!("t{n}"))).await.unwrap());
            writer.probe().await.expect("after the write");
            assert_eq!(words(&path), (0, n + 1), "indexed with its batch");
        }
        drop(writer);
        thread.join().unwrap();
    }

    #[tokio::test]
    async fn a_cancelled_first_copy_frees_the_id_for_its_repeat() {
        let (_dir, writer, _thread) = writer_with_short_busy_timeout();
        let first = writer.write(event("e2"));
        // Polled once (claimed and queued), then dropped.
        let _ = tokio::time::timeout(Duration::ZERO, first).await;
        assert_eq!(writer.in_flight(), 0);
        // New or not (the cancelled copy's job may have committed first).
        writer.write(event("e2")).await.expect("stored");
        assert_eq!(writer.in_flight(), 0);
    }
}
