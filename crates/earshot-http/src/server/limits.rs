//! How much a server lets one client, and all of them together, take
//! ([`ServerLimits`]: the emulator's and the webhook receivers'), and the
//! 503 it answers at a limit ([`unavailable`]).

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

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
