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

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::SharedState;
use super::problem::Problem;

/// The HTTP limit's window (spec: five minutes).
pub(crate) const HTTP_WINDOW: Duration = Duration::from_secs(300);
/// The polling limit's window (spec: one minute).
pub(crate) const POLL_WINDOW: Duration = Duration::from_secs(60);
/// Default requests per [`HTTP_WINDOW`] per account.
pub const DEFAULT_HTTP_LIMIT: u32 = 20_000;
/// Default GETs per [`POLL_WINDOW`] per transcript id.
pub const DEFAULT_POLL_LIMIT: u32 = 60;
/// Sweep idle per-transcript logs after this many polls.
const SWEEP_EVERY: u32 = 4096;

/// The times of the requests let through in the last window.
#[derive(Default)]
struct SlidingLog {
    hits: VecDeque<Instant>,
}

impl SlidingLog {
    fn forget_before(&mut self, now: Instant, window: Duration) {
        while let Some(&oldest) = self.hits.front() {
            if now.saturating_duration_since(oldest) >= window {
                self.hits.pop_front();
            } else {
                break;
            }
        }
    }

    /// Lets the request through (and logs it), or says how long until one
    /// would be let through.
    fn admit(&mut self, now: Instant, window: Duration, limit: u32) -> Result<(), Duration> {
        self.forget_before(now, window);
        if self.hits.len() < limit as usize {
            self.hits.push_back(now);
            return Ok(());
        }
        // Full: the oldest logged request leaves the window first.
        let oldest = self.hits.front().copied().unwrap_or(now);
        Err((oldest + window).saturating_duration_since(now))
    }
}

struct Logs {
    account: SlidingLog,
    /// By transcript id. The emulator accepts one API key, so the spec's
    /// (key, transcript id) pair is the id alone.
    polls: HashMap<String, SlidingLog>,
    polls_since_sweep: u32,
}

pub(crate) struct Limits {
    http_limit: u32,
    poll_limit: u32,
    logs: Mutex<Logs>,
}

impl Limits {
    pub fn new(http_limit: u32, poll_limit: u32) -> Limits {
        Limits {
            http_limit,
            poll_limit,
            logs: Mutex::new(Logs {
                account: SlidingLog::default(),
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

    fn admit_request(&self, now: Instant) -> Result<(), Duration> {
        self.lock().account.admit(now, HTTP_WINDOW, self.http_limit)
    }

    fn admit_poll(&self, id: &str, now: Instant) -> Result<(), Duration> {
        let mut logs = self.lock();
        logs.polls_since_sweep += 1;
        if logs.polls_since_sweep >= SWEEP_EVERY {
            logs.polls_since_sweep = 0;
            logs.polls.retain(|_, log| {
                log.forget_before(now, POLL_WINDOW);
                !log.hits.is_empty()
            });
        }
        logs.polls
            .entry(id.to_owned())
            .or_default()
            .admit(now, POLL_WINDOW, self.poll_limit)
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
    fn a_client_within_the_limit_is_never_refused() {
        let mut log = SlidingLog::default();
        let start = Instant::now();
        let window = Duration::from_secs(60);
        // 3 per minute, evenly spaced for ten minutes.
        for i in 0..30u32 {
            let now = start + Duration::from_secs(20) * i;
            assert_eq!(log.admit(now, window, 3), Ok(()), "request {i}");
        }
    }

    #[test]
    fn the_request_over_the_limit_waits_for_the_oldest_to_leave() {
        let mut log = SlidingLog::default();
        let start = Instant::now();
        let window = Duration::from_secs(60);
        for i in 0..3u64 {
            assert!(log.admit(start + Duration::from_secs(i), window, 3).is_ok());
        }
        let now = start + Duration::from_millis(10_500);
        assert_eq!(
            log.admit(now, window, 3),
            Err(Duration::from_millis(49_500))
        );
        // Refused requests are not logged: waiting exactly that long works.
        assert_eq!(log.admit(start + window, window, 3), Ok(()));
        assert!(log.admit(start + window, window, 3).is_err());
    }

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
