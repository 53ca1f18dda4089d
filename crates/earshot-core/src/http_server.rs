//! Serving HTTP with limits. Every server earshot runs (the emulator,
//! `earshot listen`, and the console's Inbox, which is `listen` in process)
//! goes through [`serve`], so one slow or silent client cannot hold memory,
//! file descriptors or a request worker, and a crowd of them cannot lock
//! everyone else out:
//!
//! - at most [`ServerLimits::max_connections`] connections are open at
//!   once; when all are taken, a new client is still let in and the open
//!   connection that has gone longest without a byte either way is closed
//!   for it (never one whose request is being answered);
//! - a request head must arrive within `header_read` of the connection
//!   opening, or of its first byte on a kept-alive connection;
//! - a kept-alive connection waits at most `idle` for its next request;
//! - a request body must arrive within `body` and never pause for
//!   `body_idle`;
//! - request bodies held at once, across all connections, stay within
//!   `body_budget` bytes: a request that would take more is answered 503
//!   with `Retry-After` (the platform retries a 5xx);
//! - an answer the client does not read for `idle` ends the connection.
//!
//! The head and keep-alive rules are enforced on the connection's bytes
//! ([`GuardedIo`]), the body rules by a layer around every request body.
//!
//! Over TLS ([`serve_with_tls`], `earshot listen --tls-cert`) the same
//! rules hold on the decrypted bytes. The handshake is made by each
//! connection's own task after accept, never by the accept loop, so a
//! client that stalls in it delays no one; it holds its connection slot
//! (and may be closed for a new client like any other), and it counts
//! against `header_read`: the handshake and the first request head must
//! both be done within it of the accept.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use futures_util::StreamExt;
use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use crate::tls::ServerTls;
use crate::tls::transport::Transport;

/// How much any one client, and all of them together, may take; see the
/// module doc. [`Default`] is the emulator's; [`ServerLimits::webhooks`]
/// the webhook receivers'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections open at once. Past it, the connection that has gone
    /// longest without a byte is closed for the new one: a crowd of slow
    /// clients costs each other their slots, not everyone else.
    pub max_connections: usize,
    /// Time for a whole request head.
    pub header_read: Duration,
    /// Time a kept-alive connection waits for its next request, or an
    /// answer may sit unread.
    pub idle: Duration,
    /// Time for a whole request body.
    pub body: Duration,
    /// Longest pause within a request body: a client trickling a byte now
    /// and then is closed after it, not after `body`.
    pub body_idle: Duration,
    /// Bytes of request bodies held at once across all connections. A
    /// body is charged as its bytes arrive and given back when its request
    /// ends; one that would go past this is answered 503 with
    /// `Retry-After` ([`RETRY_AFTER_SECS`]), so many clients each holding
    /// an almost whole body cost this much, not their sum.
    pub body_budget: usize,
}

impl Default for ServerLimits {
    /// The emulator's: a body may take 180 s (longer than the longest
    /// dictation streamed in real time, 120 s), and 1 GiB of bodies may be
    /// held (five 200 MiB uploads).
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body: Duration::from_secs(180),
            body_idle: Duration::from_secs(10),
            body_budget: 1024 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// A webhook receiver's (`earshot listen`, the Inbox, `jobs watch
    /// --listen`): a delivery is at most 10 MiB and its sender waits for
    /// the answer, so a body gets 30 s in all (350 KB/s for the largest)
    /// and 256 MiB of bodies may be held at once.
    pub const fn webhooks() -> Self {
        Self {
            max_connections: 512,
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body: Duration::from_secs(30),
            body_idle: Duration::from_secs(10),
            body_budget: 256 * 1024 * 1024,
        }
    }
}

/// The `Retry-After` of a 503 for a request over the body budget.
pub const RETRY_AFTER_SECS: u64 = 5;

/// How long a new client waits for the slot of the connection closed for
/// it before another is closed.
const EVICT_WAIT: Duration = Duration::from_millis(250);

/// Why a request body ended early. Handlers find it in the chain of the
/// body's error ([`BodyError::find`]).
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body was not whole within `ServerLimits::body`.
    #[error("the request body did not arrive in time")]
    Late,
    /// The body paused for `ServerLimits::body_idle`.
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
    serve_with_tls(listener, app, limits, None, shutdown).await
}

/// [`serve`], over TLS when `tls` is given: https, with the certificate
/// `tls` holds at each handshake.
pub async fn serve_with_tls(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    tls: Option<&ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        limits,
        held: AtomicUsize::new(0),
        open: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        epoch: Instant::now(),
    });
    let app = app.layer(axum::middleware::from_fn_with_state(
        shared.clone(),
        bound_body,
    ));
    let guarded = Guarded {
        listener,
        tls: tls.map(ServerTls::acceptor),
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        shared,
    };
    axum::serve(
        guarded,
        app.into_make_service_with_connect_info::<Connection>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// What one server's connections and requests share.
struct Shared {
    limits: ServerLimits,
    /// Request-body bytes held now (at most `limits.body_budget`).
    held: AtomicUsize,
    /// The open connections, by id: where a connection to close is chosen.
    open: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
    /// Time zero of [`ConnState::last_byte`].
    epoch: Instant,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

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

    /// Marks for closing the open connection that has gone longest
    /// without a byte either way, leaving alone those whose request is
    /// being answered and those already marked. `false` when there is
    /// none.
    fn evict_stalest(&self) -> bool {
        let open = self
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let stalest = open
            .values()
            .filter(|conn| {
                !conn.serving.load(Ordering::Acquire) && !conn.evicted.load(Ordering::Acquire)
            })
            .min_by_key(|conn| conn.last_byte.load(Ordering::Acquire));
        match stalest {
            Some(conn) => {
                conn.evicted.store(true, Ordering::Release);
                conn.waker.wake();
                true
            }
            None => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The connect info of every request: the peer, and its connection's
/// state (for the body layer). Handlers get `ConnectInfo<SocketAddr>`.
#[derive(Clone)]
struct Connection {
    peer: SocketAddr,
    state: Arc<ConnState>,
}

impl Connected<IncomingStream<'_, Guarded>> for Connection {
    fn connect_info(stream: IncomingStream<'_, Guarded>) -> Self {
        Connection {
            peer: *stream.remote_addr(),
            state: stream.io().state.clone(),
        }
    }
}

/// One request's share of the server: the budget bytes its body holds
/// (given back when the last holder, the layer or the body, drops it) and
/// whether its body was refused for the budget.
struct Charge {
    shared: Arc<Shared>,
    taken: AtomicUsize,
    refused: AtomicBool,
    connection: Option<Arc<ConnState>>,
    /// The answer is out of the handler: a body ending later changes
    /// nothing.
    answered: AtomicBool,
}

impl Charge {
    fn new(shared: Arc<Shared>, connection: Option<Arc<ConnState>>) -> Charge {
        Charge {
            shared,
            taken: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            connection,
            answered: AtomicBool::new(false),
        }
    }

    /// The body is whole: the handler works on the answer, and its
    /// connection is not one to close for a new client meanwhile.
    fn body_done(&self) {
        if let Some(connection) = &self.connection
            && !self.answered.load(Ordering::Acquire)
        {
            connection.serving.store(true, Ordering::Release);
        }
    }

    /// The answer left the handler (once; later calls do nothing).
    fn answered(&self) {
        if self.answered.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(connection) = &self.connection {
            connection.serving.store(false, Ordering::Release);
            connection
                .last_byte
                .store(self.shared.now_ms(), Ordering::Release);
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.answered();
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
            let pause = Instant::now() + limits.body_idle;
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
                Ok(None) => {
                    charge.body_done();
                    return None;
                }
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
    let (mut parts, body) = request.into_parts();
    let connection = parts
        .extensions
        .get::<ConnectInfo<Connection>>()
        .map(|ConnectInfo(connection)| connection.clone());
    if let Some(connection) = &connection {
        parts.extensions.insert(ConnectInfo(connection.peer));
    }
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
    let charge = Arc::new(Charge::new(
        shared.clone(),
        connection.map(|connection| connection.state),
    ));
    if body.is_end_stream() {
        charge.body_done();
    }
    let body = bounded(body, charge.clone());
    let response = next.run(Request::from_parts(parts, body)).await;
    charge.answered();
    if charge.refused.load(Ordering::Acquire) {
        tracing::debug!("request refused: over the body budget");
        return over_budget();
    }
    response
}

// ---------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------

/// A TCP listener that keeps at most `max_connections` connections open,
/// closing the stalest for a new one when all are taken; with `tls`, each
/// connection is TLS (its handshake made by the connection's task).
struct Guarded {
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    permits: Arc<Semaphore>,
    shared: Arc<Shared>,
}

impl Guarded {
    async fn accept_tcp(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok(accepted) => return accepted,
                // Out of descriptors, or a connection reset before it was
                // accepted: wait a little rather than spin.
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// A slot for a new connection: a free one, else the one freed by
    /// closing the stalest connection (another every [`EVICT_WAIT`] while
    /// none frees up; when every connection is being answered, the new
    /// one waits for the first to end, as it would in the kernel's queue).
    async fn slot(&self) -> OwnedSemaphorePermit {
        loop {
            if let Ok(slot) = self.permits.clone().try_acquire_owned() {
                return slot;
            }
            if self.shared.evict_stalest() {
                tracing::debug!("all connection slots taken: closed the stalest");
            }
            if let Ok(Ok(slot)) =
                tokio::time::timeout(EVICT_WAIT, self.permits.clone().acquire_owned()).await
            {
                return slot;
            }
        }
    }
}

impl axum::serve::Listener for Guarded {
    type Io = GuardedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (GuardedIo, SocketAddr) {
        let (stream, peer) = self.accept_tcp().await;
        let slot = self.slot().await;
        let _ = stream.set_nodelay(true);
        let stream = Transport::new(stream, self.tls.as_ref());
        (GuardedIo::new(stream, slot, self.shared.clone()), peer)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// What the server knows of one open connection, shared by its
/// [`GuardedIo`], its requests and the choice of one to close.
struct ConnState {
    /// When a byte last went either way ([`Shared::epoch`] milliseconds),
    /// or its last answer left the handler.
    last_byte: AtomicU64,
    /// A request's body is whole and its answer is being worked on.
    serving: AtomicBool,
    /// Chosen to make room for a new client: the next read or write fails.
    evicted: AtomicBool,
    /// The connection's task, woken to see `evicted`.
    waker: AtomicWaker,
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

/// One accepted connection: the stream (plain or TLS), its connection
/// slot (freed when hyper drops it), the head, keep-alive and
/// unread-answer timers, and its entry among the open connections.
pub struct GuardedIo {
    stream: Transport,
    _slot: OwnedSemaphorePermit,
    shared: Arc<Shared>,
    id: u64,
    state: Arc<ConnState>,
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
    fn new(stream: Transport, slot: OwnedSemaphorePermit, shared: Arc<Shared>) -> Self {
        let limits = shared.limits;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState {
            last_byte: AtomicU64::new(shared.now_ms()),
            serving: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        shared
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(id, state.clone());
        Self {
            stream,
            _slot: slot,
            shared,
            id,
            state,
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

    fn touch(&self) {
        self.state
            .last_byte
            .store(self.shared.now_ms(), Ordering::Release);
    }

    /// The connection was chosen to make room for a new client; until it
    /// is, the task is woken when it is.
    fn evicted(&self, cx: &mut Context<'_>) -> bool {
        self.state.waker.register(cx.waker());
        self.state.evicted.load(Ordering::Acquire)
    }

    /// A write or flush waits for the client to read: it fails once the
    /// connection is chosen to make room, or has waited `idle`.
    fn write_waits<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if self.evicted(cx) {
            return Poll::Ready(Err(made_room()));
        }
        let idle = self.limits.idle;
        let stall = self
            .write_stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if stall.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(timed_out("the client did not read the answer")));
        }
        Poll::Pending
    }

    /// Common bookkeeping of a write that made progress or waits;
    /// `first` is the start of what was written.
    fn on_write(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
        result: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match result {
            Poll::Pending => self.write_waits(cx),
            Poll::Ready(result) => {
                self.write_stall = None;
                if matches!(result, Ok(written) if written > 0) {
                    self.touch();
                }
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

impl Drop for GuardedIo {
    fn drop(&mut self) {
        self.shared
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.id);
    }
}

fn timed_out(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what)
}

fn made_room() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "closed to make room for a new client",
    )
}

impl AsyncRead for GuardedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.evicted(cx) {
            return Poll::Ready(Err(made_room()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() == before {
                    return Poll::Ready(Ok(()));
                }
                this.touch();
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

    /// Over TLS a flush sends what the TLS layer holds, so it can wait
    /// on a client that does not read, like a write.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Pending => this.write_waits(cx),
            Poll::Ready(result) => {
                this.write_stall = None;
                Poll::Ready(result)
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_shutdown(cx) {
            Poll::Pending => this.write_waits(cx),
            Poll::Ready(result) => Poll::Ready(result),
        }
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
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    fn connection(shared: &Shared, id: u64, last_byte: u64, serving: bool) -> Arc<ConnState> {
        let state = Arc::new(ConnState {
            last_byte: AtomicU64::new(last_byte),
            serving: AtomicBool::new(serving),
            evicted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        shared.open.lock().unwrap().insert(id, state.clone());
        state
    }

    #[test]
    fn the_stalest_connection_not_being_answered_is_closed_first() {
        let shared = shared(1024);
        let answering = connection(&shared, 0, 10, true);
        let stalest = connection(&shared, 1, 20, false);
        let recent = connection(&shared, 2, 30, false);
        assert!(shared.evict_stalest());
        assert!(stalest.evicted.load(Ordering::Acquire));
        assert!(!answering.evicted.load(Ordering::Acquire));
        assert!(!recent.evicted.load(Ordering::Acquire));
        // One already chosen is not chosen again.
        assert!(shared.evict_stalest());
        assert!(recent.evicted.load(Ordering::Acquire));
        assert!(!shared.evict_stalest(), "only one being answered is left");
        assert!(!answering.evicted.load(Ordering::Acquire));
    }

    #[tokio::test]
    async fn a_body_past_the_budget_fails_and_every_byte_is_given_back() {
        let shared = shared(2 * 1024 * 1024);
        let chunk = Bytes::from(vec![0u8; 1024 * 1024]);
        let chunks = futures_util::stream::iter(
            [chunk.clone(), chunk.clone(), chunk].map(Ok::<_, io::Error>),
        );
        let charge = Arc::new(Charge::new(shared.clone(), None));
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
        let charge = Arc::new(Charge::new(shared.clone(), None));
        let body = bounded(Body::from_stream(chunks), charge.clone());
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(&bytes[..], b"abcdef");
        assert_eq!(shared.held.load(Ordering::Acquire), 6);
        drop(charge);
        assert_eq!(shared.held.load(Ordering::Acquire), 0);
    }
}
