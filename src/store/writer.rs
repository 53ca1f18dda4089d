//! The observer's writer: one thread owns the store connection; requests
//! queue their events and wait. The thread commits everything queued in one
//! transaction (group commit), then answers each request, so `listen` sends
//! its 2xx only once the event is on disk, and a flood costs one commit per
//! batch rather than per request.

use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot};

use super::events::{self, ObservedEvent};
use super::{Store, StoreError};

/// Requests waiting for the writer before senders wait for room.
const QUEUE: usize = 4096;
/// Events committed in one transaction at most.
const BATCH: usize = 1024;

struct Job {
    event: ObservedEvent,
    done: oneshot::Sender<Result<bool, String>>,
}

/// A handle to the writer thread; cloning it is cheap. The thread stops
/// when the last handle is dropped.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

impl Writer {
    /// Starts the thread that owns `store`; join the handle after the last
    /// [`Writer`] is dropped to be sure everything is committed.
    pub fn start(store: Store) -> Result<(Writer, JoinHandle<()>), StoreError> {
        let (queue, jobs) = mpsc::channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("earshot-store".into())
            .spawn(move || run(store, jobs))
            .map_err(StoreError::Thread)?;
        Ok((Writer { queue }, thread))
    }

    /// Stores `event` (a repeat `event_id` is ignored) and waits for the
    /// commit. Whether it was new.
    pub async fn write(&self, event: ObservedEvent) -> Result<bool, StoreError> {
        let (done, answer) = oneshot::channel();
        self.queue
            .send(Job { event, done })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        match answer.await {
            Ok(Ok(new)) => Ok(new),
            Ok(Err(message)) => Err(StoreError::Commit(message)),
            Err(_) => Err(StoreError::WriterGone),
        }
    }
}

fn run(mut store: Store, mut jobs: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(first) = jobs.blocking_recv() {
        batch.push(first);
        while batch.len() < BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let results = commit(&mut store, &batch);
        for (job, result) in batch.drain(..).zip(results) {
            let _ = job.done.send(result);
        }
    }
}

/// One transaction for the whole batch; on failure every job gets the error.
fn commit(store: &mut Store, batch: &[Job]) -> Vec<Result<bool, String>> {
    let mut attempt = || -> rusqlite::Result<Vec<bool>> {
        let tx = store.conn_mut().transaction()?;
        let mut fresh = Vec::with_capacity(batch.len());
        for job in batch {
            fresh.push(events::insert(&tx, &job.event)?);
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
