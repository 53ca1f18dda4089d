//! What a receiver hands its reader: each request as received with its
//! verdict ([`Received`]), on a stream ([`Requests`]) whose waiting bytes
//! are bounded ([`Queue`]): past the bound a request is answered 503, not
//! queued.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::Bytes;
use axum::http::HeaderMap;
use tokio::sync::mpsc;

#[cfg(doc)]
use super::{ListenConfig, Listener, start};
use crate::receiver::capture::{CaptureEntry, VerdictCode};
use crate::signature::Verdict;

/// One request as received, with the verdict and the answer.
#[derive(Debug, Clone)]
pub struct Received {
    /// What the capture file gets (request, status answered, verdict) but
    /// its copies of the body: `body_base64` is empty and `body` `None`,
    /// so a request costs its body once while it waits; see
    /// [`capture_entry`](Self::capture_entry).
    pub entry: CaptureEntry,
    /// The exact body bytes.
    pub body: Bytes,
    /// The signature check of a voice-agent delivery, for details.
    pub signature: Option<Verdict>,
    /// Set when the entry could not be appended to the capture file.
    pub capture_error: Option<String>,
    /// Set when the event could not be stored (answered 503): the store's
    /// error, never the body.
    pub store_error: Option<String>,
    /// Set when a new, genuine event was kept in `unfiled_events` because
    /// `events` cannot file it: why, never the body.
    pub unfiled: Option<String>,
}

impl Received {
    /// The entry as the capture file has it, with the body (base64, and
    /// text when UTF-8).
    pub fn capture_entry(&self) -> CaptureEntry {
        let mut entry = self.entry.clone();
        entry.set_body(&self.body);
        entry
    }

    pub fn verdict(&self) -> VerdictCode {
        self.entry.verdict
    }

    pub fn status(&self) -> u16 {
        self.entry.status
    }

    /// Answered 2xx and not a repeat.
    pub fn is_accepted_new(&self) -> bool {
        self.entry.verdict == VerdictCode::Ok
    }
}

/// Every request a receiver answered, in order: what [`start`] returns
/// beside the [`Listener`]. What waits here is bounded
/// ([`ListenConfig::queue_bytes`]); a request is off the count once taken.
#[derive(Debug)]
pub struct Requests {
    queued: mpsc::UnboundedReceiver<Queued>,
}

impl Requests {
    /// The next request; `None` once the receiver has stopped.
    pub async fn recv(&mut self) -> Option<Received> {
        self.queued.recv().await.map(Queued::take)
    }

    /// The next request if one waits.
    pub fn try_recv(&mut self) -> Result<Received, mpsc::error::TryRecvError> {
        self.queued.try_recv().map(Queued::take)
    }

    /// [`recv`](Self::recv) for a poll loop.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.queued.poll_recv(cx).map(|next| next.map(Queued::take))
    }
}

impl futures_util::Stream for Requests {
    type Item = Received;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.get_mut().poll_recv(cx)
    }
}

/// A [`Requests`] stream on which at most `limit` bytes wait (see
/// [`Queue::reserve`]), and the receiver's end of it.
pub(super) fn bounded(limit: usize) -> (Outbox, Requests) {
    let (sender, queued) = mpsc::unbounded_channel();
    let queue = Arc::new(Queue {
        held: AtomicUsize::new(0),
        limit,
    });
    (Outbox { sender, queue }, Requests { queued })
}

/// Where a receiver puts what it answered: a place on the stream is
/// reserved first (before the entry's copies of the body are made), then
/// the request is sent with it.
pub(super) struct Outbox {
    sender: mpsc::UnboundedSender<Queued>,
    queue: Arc<Queue>,
}

impl Outbox {
    /// A place for a request costing `bytes` ([`queued_cost`]); `None`
    /// while the reader is that far behind.
    pub(super) fn reserve(&self, bytes: usize) -> Option<Place> {
        self.queue.reserve(bytes)
    }

    /// Sends `received` in its `place` (dropped unsent once the stream is
    /// gone).
    pub(super) fn send(&self, received: Received, place: Place) {
        let _ = self.sender.send(Queued {
            received,
            _place: place,
        });
    }
}

/// A request waiting on [`Requests`], and its share of the queue.
#[derive(Debug)]
struct Queued {
    received: Received,
    _place: Place,
}

impl Queued {
    fn take(self) -> Received {
        self.received
    }
}

/// What waits on a [`Requests`] stream, in bytes, and its limit.
#[derive(Debug)]
struct Queue {
    held: AtomicUsize,
    limit: usize,
}

impl Queue {
    /// A place for a request costing `bytes`; `None` when the queue is too
    /// full for it (an empty queue always takes one).
    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<Place> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let total = held.saturating_add(bytes);
                (held == 0 || total <= self.limit).then_some(total)
            })
            .ok()?;
        Some(Place {
            queue: self.clone(),
            bytes,
        })
    }
}

/// Bytes taken in a [`Queue`], given back when dropped (the request was
/// taken from the stream, or never sent).
#[derive(Debug)]
pub(super) struct Place {
    queue: Arc<Queue>,
    bytes: usize,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.queue.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// What a request with a body of `body` bytes and `headers` costs while
/// it waits: the body, the headers (as received and in the entry), and a
/// little for the rest.
pub(super) fn queued_cost(body: usize, headers: &HeaderMap) -> usize {
    let head: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    body.saturating_add(2 * head + 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_takes_one_request_when_empty_and_none_past_its_limit() {
        let queue = Arc::new(Queue {
            held: AtomicUsize::new(0),
            limit: 100,
        });
        let large = queue.reserve(150).expect("an empty queue takes one");
        assert!(queue.reserve(1).is_none());
        drop(large);
        let first = queue.reserve(60).expect("room");
        assert!(queue.reserve(50).is_none());
        let second = queue.reserve(40).expect("room");
        assert_eq!(queue.held.load(Ordering::Acquire), 100);
        drop((first, second));
        assert_eq!(queue.held.load(Ordering::Acquire), 0);
    }
}
