//! Serving HTTP with limits. Every server earshot runs (the emulator,
//! `earshot listen`, and the console's Inbox, which is `listen` in process)
//! goes through [`serve`], so one slow or silent client cannot hold memory,
//! file descriptors or a request worker:
//!
//! - at most [`ServerLimits::max_connections`] connections are open at once;
//!   more wait (in the kernel's queue) until one closes;
//! - a request head must arrive within `header_read` of the connection
//!   opening, or of its first byte on a kept-alive connection;
//! - a kept-alive connection waits at most `idle` for its next request;
//! - a request body must arrive within `body` and never pause for `idle`;
//! - request bodies held at once, across all connections, stay within
//!   `body_budget` bytes: a request that would take more is answered 503
//!   with `Retry-After` (the platform retries a 5xx);
//! - an answer the client does not read for `idle` ends the connection.
//!
//! The head and keep-alive rules are enforced on the connection's bytes
//! ([`GuardedIo`]), the body rules by a layer around every request body.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// How much any one client, and all of them together, may take; see the
/// module doc. [`Default`] is the emulator's; [`ServerLimits::webhooks`]
/// the webhook receivers'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time for a whole request head.
    pub header_read: Duration,
    /// Time a kept-alive connection waits for its next request, a body may
    /// pause, or an answer may sit unread.
    pub idle: Duration,
    /// Time for a whole request body. Longer than the longest dictation
    /// streamed in real time (120 s).
    pub body: Duration,
    /// Bytes of request bodies held at once across all connections. A
    /// body is charged as its bytes arrive and given back when its request
    /// ends; one that would go past this is answered 503 with
    /// `Retry-After` ([`RETRY_AFTER_SECS`]), so many clients each holding
    /// an almost whole body cost this much, not their sum.
    pub body_budget: usize,
}

impl Default for ServerLimits {
    /// The emulator's: 1 GiB of bodies may be held (five 200 MiB uploads).
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body: Duration::from_secs(180),
            body_budget: 1024 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// A webhook receiver's (`earshot listen`, the Inbox, `jobs watch
    /// --listen`): a delivery is at most 10 MiB, and 256 MiB of bodies
    /// may be held at once.
    pub const fn webhooks() -> Self {
        Self {
            max_connections: 512,
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body: Duration::from_secs(180),
            body_budget: 256 * 1024 * 1024,
        }
    }
}

/// The `Retry-After` of a 503 for a request over the body budget.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Why a request body ended early. Handlers find it in the chain of the
/// body's error ([`BodyError::find`]).
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body was not whole within `ServerLimits::body`.
    #[error("the request body did not arrive in time")]
    Late,
    /// The body paused for `ServerLimits::idle`.
    #[error("the request body paused too long")]
    Stalled,
    /// Taking the next bytes would go past `ServerLimits::body_budget`.
    #[error("the server holds as many request bytes as it may ({budget} bytes); retry")]
    OverBudget { budget: usize },
}

impl BodyError {
    /// The `BodyError` that caused `error`, if one did.
    pub fn find<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e BodyError> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(found) = error.downcast_ref::<BodyError>() {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// The request was refused for the budget (answer 503, retry).
    pub fn is_over_budget(&self) -> bool {
        matches!(self, BodyError::OverBudget { .. })
    }
}

/// The answer to a request over the body budget: 503, `Retry-After`, and
/// the connection closed (its body is not read).
pub fn over_budget() -> Response {
    unavailable(
        "the server holds as many request bytes as it may; retry",
        "busy",
    )
}

/// A 503 `{"error", "reason"}` with `Retry-After: `[`RETRY_AFTER_SECS`]
/// and `Connection: close`.
pub fn unavailable(error: &str, reason: &str) -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({ "error": error, "reason": reason })),
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves,
/// then lets open requests finish. Handlers may extract
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        limits,
        held: AtomicUsize::new(0),
    });
    let app = app.layer(axum::middleware::from_fn_with_state(shared, bound_body));
    let guarded = Guarded {
        listener,
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        limits,
    }
    // `tap_io` gives the wrapped listener axum's `ConnectInfo` support.
    .tap_io(|_: &mut GuardedIo| {});
    axum::serve(
        guarded,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

/// What one server's requests share.
struct Shared {
    limits: ServerLimits,
    /// Request-body bytes held now (at most `limits.body_budget`).
    held: AtomicUsize,
}

impl Shared {
    /// Takes `bytes` of the body budget; `false` (nothing taken) when
    /// that would go past it.
    fn take(&self, bytes: usize) -> bool {
        let budget = self.limits.body_budget;
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= budget)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// One request's share of the body budget: the bytes its body holds
/// (given back when the last holder, the layer or the body, drops it) and
/// whether its body was refused for the budget.
struct Charge {
    shared: Arc<Shared>,
    taken: AtomicUsize,
    refused: AtomicBool,
}

impl Charge {
    fn new(shared: Arc<Shared>) -> Charge {
        Charge {
            shared,
            taken: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.shared.give_back(*self.taken.get_mut());
    }
}

/// `body`, failing when it is late ([`BodyError::Late`]), pauses too long
/// ([`BodyError::Stalled`]) or would go past the body budget
/// ([`BodyError::OverBudget`]); its bytes are charged to `charge`.
fn bounded(body: Body, charge: Arc<Charge>) -> Body {
    let limits = charge.shared.limits;
    let budget = limits.body_budget;
    let deadline = Instant::now() + limits.body;
    let stream = body.into_data_stream();
    let chunks = futures_util::stream::unfold(Some(stream), move |stream| {
        let charge = charge.clone();
        async move {
            let mut stream = stream?;
            let pause = Instant::now() + limits.idle;
            let (wait, late) = if deadline <= pause {
                (deadline, BodyError::Late)
            } else {
                (pause, BodyError::Stalled)
            };
            let error = match tokio::time::timeout_at(wait, stream.next()).await {
                Ok(Some(Ok(bytes))) => {
                    if charge.shared.take(bytes.len()) {
                        charge.taken.fetch_add(bytes.len(), Ordering::AcqRel);
                        return Some((Ok::<Bytes, axum::BoxError>(bytes), Some(stream)));
                    }
                    charge.refused.store(true, Ordering::Release);
                    BodyError::OverBudget { budget }.into()
                }
                Ok(Some(Err(error))) => axum::BoxError::from(error),
                Ok(None) => return None,
                Err(_) => late.into(),
            };
            Some((Err(error), None))
        }
    });
    Body::from_stream(chunks)
}

/// Replaces the request body with one that fails (and so ends the request
/// and its connection) when the body is late, pauses too long, or would go
/// past the body budget; answers 503 for a request over the budget.
async fn bound_body(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    // A declared length that fits the budget on its own but not beside
    // what is held now: refused before a byte is read. (One larger than
    // the whole budget is the handler's to refuse, as too large.)
    let budget = shared.limits.body_budget;
    let declared = body
        .size_hint()
        .exact()
        .and_then(|len| usize::try_from(len).ok());
    if let Some(len) = declared
        && len <= budget
        && shared.held.load(Ordering::Acquire).saturating_add(len) > budget
    {
        tracing::debug!(len, "request refused: over the body budget");
        return over_budget();
    }
    let charge = Arc::new(Charge::new(shared));
    let body = bounded(body, charge.clone());
    let response = next.run(Request::from_parts(parts, body)).await;
    if charge.refused.load(Ordering::Acquire) {
        tracing::debug!("request refused: over the body budget");
        return over_budget();
    }
    response
}

fn timed_out(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what)
}

// ---------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------

/// A TCP listener that hands out at most `max_connections` connections.
struct Guarded {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    limits: ServerLimits,
}

impl axum::serve::Listener for Guarded {
    type Io = GuardedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (GuardedIo, SocketAddr) {
        // The semaphore is never closed; waiting forever is the fallback.
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return std::future::pending().await;
        };
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return (GuardedIo::new(stream, permit, self.limits), peer);
                }
                // Out of descriptors, or a connection reset before it was
                // accepted: wait a little rather than spin.
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Where a connection is in its request/answer cycle, as seen from bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head: it must end before the deadline.
    Head,
    /// Head read; the body and the handler run (their own limits apply).
    Message,
    /// Answer (being) sent; the next request must start before the
    /// deadline, which each write of the answer pushes back.
    KeepAlive,
}

/// One accepted connection: the stream, its connection slot (freed when
/// hyper drops it), and the head, keep-alive and unread-answer timers.
pub struct GuardedIo {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    limits: ServerLimits,
    phase: Phase,
    /// The head or keep-alive deadline (none in [`Phase::Message`]).
    deadline: Option<Pin<Box<Sleep>>>,
    /// The last byte of the head so far was a line feed (a blank line ends
    /// the head; `\r` is passed over).
    line_feed: bool,
    /// Set while a write waits for the client to read.
    write_stall: Option<Pin<Box<Sleep>>>,
}

impl GuardedIo {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit, limits: ServerLimits) -> Self {
        Self {
            stream,
            _slot: slot,
            limits,
            phase: Phase::Head,
            deadline: Some(Box::pin(tokio::time::sleep(limits.header_read))),
            line_feed: false,
            write_stall: None,
        }
    }

    fn arm(&mut self, after: Duration) {
        let at = Instant::now() + after;
        match &mut self.deadline {
            Some(deadline) => deadline.as_mut().reset(at),
            None => self.deadline = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    fn start_head(&mut self) {
        self.phase = Phase::Head;
        self.line_feed = false;
        self.arm(self.limits.header_read);
    }

    /// Follows bytes of a request head; a blank line ends it.
    fn scan_head(&mut self, bytes: &[u8]) {
        for byte in bytes {
            match byte {
                b'\n' if self.line_feed => {
                    self.phase = Phase::Message;
                    self.deadline = None;
                    return;
                }
                b'\n' => self.line_feed = true,
                b'\r' => {}
                _ => self.line_feed = false,
            }
        }
    }

    fn deadline_passed(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline
            .as_mut()
            .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready())
    }

    /// Common bookkeeping of a write that made progress or waits;
    /// `first` is the start of what was written.
    fn on_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Pending => {
                let idle = self.limits.idle;
                let stall = self
                    .write_stall
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                if stall.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(timed_out("the client did not read the answer")));
                }
                Poll::Pending
            }
            Poll::Ready(result) => {
                self.write_stall = None;
                // `100 Continue` comes before the body is read: not the answer.
                let interim = self.phase == Phase::Message && first.starts_with(b"HTTP/1.1 1");
                if result.is_ok() && self.phase != Phase::Head && !interim {
                    // hyper waits on the socket without reading again after
                    // an answer, so the timer is polled (its wake-up
                    // registered) here: it alone ends an idle connection.
                    self.phase = Phase::KeepAlive;
                    self.arm(self.limits.idle);
                    let _ = self.deadline_passed(cx);
                }
                Poll::Ready(result)
            }
        }
    }
}

impl AsyncRead for GuardedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() == before {
                    return Poll::Ready(Ok(()));
                }
                if this.phase == Phase::KeepAlive {
                    this.start_head();
                }
                if this.phase == Phase::Head {
                    // A head trickled in byte by byte still has to end in time.
                    if this.deadline_passed(cx) {
                        return Poll::Ready(Err(timed_out(
                            "the request head did not arrive in time",
                        )));
                    }
                    this.scan_head(&buf.filled()[before..]);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                if this.deadline_passed(cx) {
                    return Poll::Ready(Err(timed_out(match this.phase {
                        Phase::KeepAlive => "no next request in time",
                        _ => "the request head did not arrive in time",
                    })));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for GuardedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.on_write(cx, buf, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        let first = bufs
            .iter()
            .find(|buf| !buf.is_empty())
            .map_or(&[][..], |buf| &buf[..]);
        this.on_write(cx, first, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(budget: usize) -> Arc<Shared> {
        Arc::new(Shared {
            limits: ServerLimits {
                body_budget: budget,
                ..ServerLimits::webhooks()
            },
            held: AtomicUsize::new(0),
        })
    }

    #[tokio::test]
    async fn a_body_past_the_budget_fails_and_every_byte_is_given_back() {
        let shared = shared(2 * 1024 * 1024);
        let chunk = Bytes::from(vec![0u8; 1024 * 1024]);
        let chunks = futures_util::stream::iter(
            [chunk.clone(), chunk.clone(), chunk].map(Ok::<_, io::Error>),
        );
        let charge = Arc::new(Charge::new(shared.clone()));
        let body = bounded(Body::from_stream(chunks), charge.clone());
        let error = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect_err("the third MiB is past the budget");
        let found = BodyError::find(&error).expect("a body error in the chain");
        assert!(found.is_over_budget(), "{found}");
        assert!(charge.refused.load(Ordering::Acquire));
        assert_eq!(shared.held.load(Ordering::Acquire), 2 * 1024 * 1024);
        drop(charge);
        assert_eq!(shared.held.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_body_within_the_budget_is_whole() {
        let shared = shared(2 * 1024 * 1024);
        let chunks = futures_util::stream::iter(
            [Bytes::from_static(b"abc"), Bytes::from_static(b"def")].map(Ok::<_, io::Error>),
        );
        let charge = Arc::new(Charge::new(shared.clone()));
        let body = bounded(Body::from_stream(chunks), charge.clone());
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(&bytes[..], b"abcdef");
        assert_eq!(shared.held.load(Ordering::Acquire), 6);
        drop(charge);
        assert_eq!(shared.held.load(Ordering::Acquire), 0);
    }
}
