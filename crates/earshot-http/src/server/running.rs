//! A server in its own task ([`Running`]): started on a bound listener,
//! stopped on demand (its open requests get [`STOP_GRACE`] to finish) or
//! when dropped.

use std::io;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{OpenConnections, ServerLimits, TlsAcceptor, server};

/// How long [`Running::stop`] waits for open requests to finish.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A server serving in its own task; it stops when
/// [`stop`](Running::stop)ped or dropped.
#[derive(Debug)]
pub struct Running {
    stop: watch::Sender<bool>,
    open: OpenConnections,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Serves `app` on `listener` within `limits` (https when `tls` is
    /// given, see [`serve_with_tls`](super::serve_with_tls)) in a new task.
    pub fn spawn(
        listener: TcpListener,
        app: Router,
        limits: ServerLimits,
        tls: Option<TlsAcceptor>,
    ) -> Running {
        let (stop, mut stopped) = watch::channel(false);
        let stopped = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        let (open, serving) = server(listener, app, limits, tls.as_ref(), stopped);
        let task = tokio::spawn(serving);
        Running {
            stop,
            open,
            task: Some(task),
        }
    }

    /// How many connections it holds open now.
    pub fn open_connections(&self) -> usize {
        self.open.count()
    }

    /// Stops accepting, lets open requests finish (for at most
    /// [`STOP_GRACE`]), and returns.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(STOP_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
