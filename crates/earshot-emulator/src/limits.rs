//! The pre-recorded API's rate limits (spec part 8 E), as two middlewares:
//!
//! - [`http_limit`]: at most `--http-limit` (20,000) requests per five
//!   minutes for the account, over every `/v2` endpoint and method; the
//!   excess gets 403.
//! - [`poll_limit`]: at most `--poll-limit` (60) `GET /v2/transcript/{id}`
//!   per minute for one transcript id, on top of the HTTP limit; the excess
//!   gets 429 with `Retry-After`.
//!
//! Both are sliding logs in real time (not scaled by `--time-scale`): a
//! client that never sends more than the limit in any window is never
//! refused, and `Retry-After` is exactly when the next request fits. A
//! request counts toward a limit only when that limit lets it through, so
//! waiting out a refusal always works; a poll the polling limit refuses has
//! already passed (and counts toward) the HTTP limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::SharedState;
use super::problem::Problem;
use earshot_protocol::sliding_window::SlidingWindow;

/// The HTTP limit's window (spec: five minutes).
pub(crate) const HTTP_WINDOW: Duration = Duration::from_secs(300);
/// The polling limit's window (spec: one minute).
pub(crate) const POLL_WINDOW: Duration = Duration::from_secs(60);
/// Default requests per [`HTTP_WINDOW`] per account.
pub const DEFAULT_HTTP_LIMIT: u32 = 20_000;
/// Default GETs per [`POLL_WINDOW`] per transcript id.
pub const DEFAULT_POLL_LIMIT: u32 = 60;
/// Sweep idle per-transcript logs after this many polls.
pub(super) const SWEEP_EVERY: u32 = 4096;

struct Logs {
    account: SlidingWindow,
    /// By transcript id. The emulator accepts one API key, so the spec's
    /// (key, transcript id) pair is the id alone.
    polls: HashMap<String, SlidingWindow>,
    polls_since_sweep: u32,
}

pub(crate) struct Limits {
    /// Times in the logs are durations since this.
    epoch: Instant,
    http_limit: u32,
    poll_limit: u32,
    logs: Mutex<Logs>,
}

impl Limits {
    pub fn new(http_limit: u32, poll_limit: u32) -> Limits {
        Limits {
            epoch: Instant::now(),
            http_limit,
            poll_limit,
            logs: Mutex::new(Logs {
                account: SlidingWindow::new(http_limit, HTTP_WINDOW),
                polls: HashMap::new(),
                polls_since_sweep: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Logs> {
        self.logs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn since_epoch(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.epoch)
    }

    fn admit_request(&self, now: Instant) -> Result<(), Duration> {
        let now = self.since_epoch(now);
        self.lock().account.admit(now)
    }

    /// Transcripts with a polling log (for the bounds tests).
    #[cfg(test)]
    pub(super) fn polled(&self) -> usize {
        self.lock().polls.len()
    }

    pub(super) fn admit_poll(&self, id: &str, now: Instant) -> Result<(), Duration> {
        let now = self.since_epoch(now);
        let mut logs = self.lock();
        logs.polls_since_sweep += 1;
        if logs.polls_since_sweep >= SWEEP_EVERY {
            logs.polls_since_sweep = 0;
            logs.polls.retain(|_, log| log.count(now) > 0);
        }
        logs.polls
            .entry(id.to_owned())
            .or_insert_with(|| SlidingWindow::new(self.poll_limit, POLL_WINDOW))
            .admit(now)
    }
}

/// Whole seconds to wait, rounded up, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// Middleware on every `/v2` route, inside the API-key check.
pub(crate) async fn http_limit(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    match state.limits.admit_request(Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(wait) => Problem::new(
            StatusCode::FORBIDDEN,
            format!(
                "the account exceeded {} HTTP requests in five minutes; \
                 requests are accepted again in {} s",
                state.limits.http_limit,
                whole_seconds(wait)
            ),
        )
        .into_response(),
    }
}

/// Middleware on `GET /v2/transcript/{id}`, inside [`http_limit`].
pub(crate) async fn poll_limit(
    State(state): State<SharedState>,
    Path(id): Path<String>,
    request: Request,
    next: Next,
) -> Response {
    match state.limits.admit_poll(&id, Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            let seconds = whole_seconds(wait);
            let mut response = Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "more than {} GET requests in a minute for transcript {id}; \
                     retry after {seconds} s, or use a webhook",
                    state.limits.poll_limit
                ),
            )
            .into_response();
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(seconds));
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(2)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(49_500)), 50);
    }

    #[test]
    fn polls_are_counted_per_transcript() {
        let limits = Limits::new(100, 2);
        let now = Instant::now();
        assert!(limits.admit_poll("a", now).is_ok());
        assert!(limits.admit_poll("a", now).is_ok());
        assert!(limits.admit_poll("a", now).is_err());
        assert!(limits.admit_poll("b", now).is_ok());
    }
}
