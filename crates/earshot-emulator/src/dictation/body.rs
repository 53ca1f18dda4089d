//! The request body pump: forwards the raw body to the multipart reader
//! as it arrives ([`Inflow`]), enforces the size cap (413 as soon as it is
//! crossed) and, once an answer has gone out early, drains the rest so the
//! client can read that answer instead of a reset connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_LENGTH;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::{Refuse, parse_error, too_large};

/// After an early answer, the rest of the body is read (and dropped) for
/// at most this long, so the client sees the answer, not a reset.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The request body as the multipart reader sees it, fed by [`pump`].
pub(super) struct Inflow {
    /// Set when the body crossed the cap: the reader's error is a 413.
    over_cap: Arc<AtomicBool>,
    cap: u64,
}

impl Inflow {
    /// Starts the pump on `request`'s body and hands back a request whose
    /// body is the pump's output (headers and extensions kept).
    pub(super) fn start(request: Request, cap: u64) -> (Inflow, Request) {
        let (parts, body) = request.into_parts();
        let (sender, receiver) = mpsc::channel(4);
        let over_cap = Arc::new(AtomicBool::new(false));
        tokio::spawn(pump(body, cap, sender, over_cap.clone()));
        let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        let request = Request::from_parts(parts, Body::from_stream(stream));
        (Inflow { over_cap, cap }, request)
    }

    /// A multipart read error: 413 when the cap was crossed, else the body
    /// could not be parsed.
    pub(super) fn refuse(&self, error: impl std::fmt::Display) -> Refuse {
        if self.over_cap.load(Ordering::SeqCst) {
            too_large(self.cap).into()
        } else {
            parse_error(format!("the multipart body could not be read: {error}"))
        }
    }
}

/// Forwards the body's chunks as they arrive; past `cap` bytes, or once
/// the handler has answered, reads the rest and drops it (for at most
/// [`DRAIN_LIMIT`]), so the client is not reset before reading the answer.
async fn pump(
    body: Body,
    cap: u64,
    sender: mpsc::Sender<Result<Bytes, std::io::Error>>,
    over_cap: Arc<AtomicBool>,
) {
    let mut chunks = body.into_data_stream();
    let mut total = 0u64;
    let mut forwarding = true;
    let mut drain_until = None;
    loop {
        let next = match drain_until {
            None => chunks.next().await,
            Some(deadline) => match tokio::time::timeout_at(deadline, chunks.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let chunk = match next {
            None => break,
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => {
                if forwarding {
                    let _ = sender
                        .send(Err(std::io::Error::other(format!(
                            "the upload was interrupted: {error}"
                        ))))
                        .await;
                }
                break;
            }
        };
        total += chunk.len() as u64;
        if !forwarding {
            continue;
        }
        let refused = if total > cap {
            over_cap.store(true, Ordering::SeqCst);
            let _ = sender
                .send(Err(std::io::Error::other("the body is over the size cap")))
                .await;
            true
        } else {
            sender.send(Ok(chunk)).await.is_err()
        };
        if refused {
            forwarding = false;
            drain_until = Some(tokio::time::Instant::now() + DRAIN_LIMIT);
        }
    }
}

/// `Content-Length` over the cap: refused before reading.
pub(super) fn declared_len(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok())
}
