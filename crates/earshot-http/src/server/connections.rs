//! The connections a server holds: its listener ([`Guarded`]) keeps at
//! most `max_connections` open, closing the stalest for a new client when
//! all are taken, and wraps each one (plain or TLS, its handshake made by
//! the connection's own task) in a [`GuardedIo`]; what the server knows of
//! each open connection ([`ConnState`]) and hands its requests
//! ([`Connection`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use futures_util::task::AtomicWaker;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Shared;
use super::guarded_io::GuardedIo;
use super::transport::TlsAcceptor;
use super::transport::Transport;

/// How long a new client waits for the slot of the connection closed for
/// it before another is closed.
const EVICT_WAIT: Duration = Duration::from_millis(250);

/// The connect info of every request: the peer, and its connection's
/// state (for the body layer). Handlers get `ConnectInfo<SocketAddr>`.
#[derive(Clone)]
pub(super) struct Connection {
    pub(super) peer: SocketAddr,
    pub(super) state: Arc<ConnState>,
}

impl Connected<IncomingStream<'_, Guarded>> for Connection {
    fn connect_info(stream: IncomingStream<'_, Guarded>) -> Self {
        Connection {
            peer: *stream.remote_addr(),
            state: stream.io().state.clone(),
        }
    }
}

/// A TCP listener that keeps at most `max_connections` connections open,
/// closing the stalest for a new one when all are taken; with `tls`, each
/// connection is TLS (its handshake made by the connection's task).
pub(super) struct Guarded {
    pub(super) listener: TcpListener,
    pub(super) tls: Option<TlsAcceptor>,
    pub(super) permits: Arc<Semaphore>,
    pub(super) shared: Arc<Shared>,
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
pub(super) struct ConnState {
    /// When a byte last went either way ([`Shared::epoch`] milliseconds),
    /// or its last answer left the handler.
    pub(super) last_byte: AtomicU64,
    /// A request's body is whole and its answer is being worked on.
    pub(super) serving: AtomicBool,
    /// Chosen to make room for a new client: the next read or write fails.
    pub(super) evicted: AtomicBool,
    /// The connection's task, woken to see `evicted`.
    pub(super) waker: AtomicWaker,
}

impl ConnState {
    /// A connection that last saw a byte at `last_byte`, idle and not
    /// chosen to make room.
    pub(super) fn new(last_byte: u64) -> ConnState {
        ConnState {
            last_byte: AtomicU64::new(last_byte),
            serving: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        }
    }
}
