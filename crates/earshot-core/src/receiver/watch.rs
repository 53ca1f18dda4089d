//! What a receiver tells whoever watches it: every request it answered and
//! every store write, as they happen (the observer's metrics and health,
//! `crate::observer`). Called on the request's own task, so a watcher only
//! counts; it never blocks or fails a request.

use std::time::Duration;

use super::listen::Received;

/// Told of each request and each store write; see the module doc.
pub trait Watch: Send + Sync + std::fmt::Debug {
    /// A request was judged and answered (its entry has the verdict and
    /// the status sent).
    fn answered(&self, request: &Received);

    /// A genuine event went to the store: how long until it was committed
    /// (or failed), and the error if it failed.
    fn stored(&self, took: Duration, failed: Option<&str>);
}
