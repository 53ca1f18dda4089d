//! A small round-robin TCP proxy on `127.0.0.1:0` ([`RoundRobinProxy`]),
//! the load balancer in front of several `earshot listen` replicas in the
//! failover test and benchmark. Each accepted connection goes to the next
//! backend in turn; a backend that refuses (or does not accept within
//! [`CONNECT_WITHIN`]) is skipped for the one after it, so a dead replica
//! costs the connections open to it when it died and nothing after. It
//! counts the connections each backend took and the skips.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long connecting to one backend may take before the next is tried.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(1);
/// The longest one proxied connection is kept (both directions together).
const CONNECTION_AT_MOST: Duration = Duration::from_secs(60);

/// The proxy, serving until dropped (its open connections end with it).
pub struct RoundRobinProxy {
    addr: SocketAddr,
    counts: Arc<Counts>,
    task: JoinHandle<()>,
}

struct Counts {
    next: AtomicUsize,
    taken: Vec<AtomicU64>,
    skipped: AtomicU64,
    unserved: AtomicU64,
}

impl RoundRobinProxy {
    /// Listens on `127.0.0.1:0` and forwards to `backends` (loopback
    /// addresses) in turn.
    pub async fn start(backends: Vec<SocketAddr>) -> std::io::Result<RoundRobinProxy> {
        assert!(!backends.is_empty(), "a proxy needs a backend");
        assert!(
            backends.iter().all(|backend| backend.ip().is_loopback()),
            "loopback backends only: {backends:?}"
        );
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts {
            next: AtomicUsize::new(0),
            taken: backends.iter().map(|_| AtomicU64::new(0)).collect(),
            skipped: AtomicU64::new(0),
            unserved: AtomicU64::new(0),
        });
        let task = tokio::spawn(serve(listener, Arc::new(backends), counts.clone()));
        Ok(RoundRobinProxy { addr, counts, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many connections each backend took, in the order given.
    pub fn taken(&self) -> Vec<u64> {
        self.counts
            .taken
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }

    /// How many times a backend refused and the next was tried.
    pub fn skipped(&self) -> u64 {
        self.counts.skipped.load(Ordering::Relaxed)
    }

    /// Connections closed unserved because no backend accepted them.
    pub fn unserved(&self) -> u64 {
        self.counts.unserved.load(Ordering::Relaxed)
    }
}

impl Drop for RoundRobinProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listen address of a `listen` URL (`http://127.0.0.1:PORT`).
pub fn addr_of(url: &str) -> SocketAddr {
    let parsed = reqwest::Url::parse(url).unwrap_or_else(|error| panic!("{url}: {error}"));
    parsed
        .socket_addrs(|| None)
        .ok()
        .and_then(|addrs| addrs.into_iter().next())
        .unwrap_or_else(|| panic!("no address in {url}"))
}

async fn serve(listener: TcpListener, backends: Arc<Vec<SocketAddr>>, counts: Arc<Counts>) {
    // Dropped (aborted) with the proxy: every connection task ends too.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((inbound, _)) = accepted else { continue };
                connections.spawn(forward(inbound, backends.clone(), counts.clone()));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Hands `inbound` to the first backend, from the next in turn, that
/// accepts; closes it when none does.
async fn forward(mut inbound: TcpStream, backends: Arc<Vec<SocketAddr>>, counts: Arc<Counts>) {
    let first = counts.next.fetch_add(1, Ordering::Relaxed);
    for step in 0..backends.len() {
        let index = (first + step) % backends.len();
        match tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(backends[index])).await {
            Ok(Ok(mut outbound)) => {
                counts.taken[index].fetch_add(1, Ordering::Relaxed);
                let _ = tokio::time::timeout(
                    CONNECTION_AT_MOST,
                    tokio::io::copy_bidirectional(&mut inbound, &mut outbound),
                )
                .await;
                return;
            }
            Ok(Err(_)) | Err(_) => {
                counts.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    counts.unserved.fetch_add(1, Ordering::Relaxed);
}
