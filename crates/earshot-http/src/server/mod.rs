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
//! Over TLS ([`serve_with_tls`] with a [`TlsAcceptor`], which only the
//! `tls` feature can make; `earshot listen --tls-cert`) the same rules hold
//! on the decrypted bytes. The handshake is made by each
//! connection's own task after accept, never by the accept loop, so a
//! client that stalls in it delays no one; it holds its connection slot
//! (and may be closed for a new client like any other), and it counts
//! against `header_read`: the handshake and the first request head must
//! both be done within it of the accept.
//!
//! Its parts: the limits and the 503 answered at them (`limits`), the
//! body layer and budget (`body`), the listener and what it knows of each
//! connection (`connections`), the rules on a connection's bytes
//! (`guarded_io`), a connection's stream, plain or TLS (`transport`), and
//! a server in its own task (`running`).

mod body;
mod connections;
mod guarded_io;
mod limits;
mod running;
mod transport;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use body::bound_body;
use connections::{ConnState, Connection, Guarded};

pub use body::{BodyError, over_budget};
pub use guarded_io::GuardedIo;
pub use limits::{RETRY_AFTER_SECS, ServerLimits, unavailable};
pub use running::{Running, STOP_GRACE};
pub use transport::TlsAcceptor;

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
    tls: Option<&TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    server(listener, app, limits, tls, shutdown).1.await
}

/// How many connections a server holds open now (each holds one of its
/// `max_connections` slots), readable while it serves.
#[derive(Clone)]
pub struct OpenConnections(Arc<Shared>);

impl OpenConnections {
    /// The connections accepted and not yet closed.
    pub fn count(&self) -> usize {
        self.0
            .open
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .len()
    }
}

impl std::fmt::Debug for OpenConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OpenConnections")
            .field(&self.count())
            .finish()
    }
}

/// [`serve_with_tls`] as a future still to run, and the count of its open
/// connections.
pub fn server(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    tls: Option<&TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (
    OpenConnections,
    impl Future<Output = io::Result<()>> + Send + 'static,
) {
    let shared = Arc::new(Shared::new(limits));
    let open = OpenConnections(shared.clone());
    let app = app.layer(axum::middleware::from_fn_with_state(
        shared.clone(),
        bound_body,
    ));
    let guarded = Guarded {
        listener,
        tls: tls.cloned(),
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        shared,
    };
    let serving = axum::serve(
        guarded,
        app.into_make_service_with_connect_info::<Connection>(),
    )
    .with_graceful_shutdown(shutdown);
    (open, async move { serving.await })
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
    fn new(limits: ServerLimits) -> Shared {
        Shared {
            limits,
            held: AtomicUsize::new(0),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// A webhook receiver's, with a body budget of `budget` bytes.
    #[cfg(test)]
    fn with_budget(budget: usize) -> Arc<Shared> {
        Arc::new(Shared::new(ServerLimits {
            body_budget: budget,
            ..ServerLimits::webhooks()
        }))
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(shared: &Shared, id: u64, last_byte: u64, serving: bool) -> Arc<ConnState> {
        let state = Arc::new(ConnState::new(last_byte));
        state.serving.store(serving, Ordering::Release);
        shared.open.lock().unwrap().insert(id, state.clone());
        state
    }

    #[test]
    fn the_stalest_connection_not_being_answered_is_closed_first() {
        let shared = Shared::with_budget(1024);
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
}
