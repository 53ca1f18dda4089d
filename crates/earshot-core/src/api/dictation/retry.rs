//! The one retry policy of areas A and B: [`RetryPolicy`] (which answers
//! are sent again, after how long) and [`with_retries`], which runs a call
//! under it.

use std::time::Duration;

use crate::api::ApiError;

/// When to send a refused request again (spec part 7 A): 429 and 503 back
/// off and retry (honouring `Retry-After`); 502 and 504 retry once, then
/// surface. Callers retry only audio that can be read again (a file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries of 429 and 503 answers, together.
    pub backoff_retries: u32,
    /// Retries of 502 and 504 answers, together.
    pub upstream_retries: u32,
    /// The first back-off; it doubles with each retry.
    pub base_delay: Duration,
    /// No wait is longer; a `Retry-After` past it is surfaced instead.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            backoff_retries: 3,
            upstream_retries: 1,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

/// Retries used so far in one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryCount {
    backoff: u32,
    upstream: u32,
}

impl RetryPolicy {
    /// Never retry: for probes, which report the first answer as it is.
    pub const NEVER: RetryPolicy = RetryPolicy {
        backoff_retries: 0,
        upstream_retries: 0,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// Whether `status` is one the policy may retry at all.
    pub fn retryable(status: u16) -> bool {
        matches!(status, 429 | 502 | 503 | 504)
    }

    /// How long to wait before retrying an answer of `status`, or `None`
    /// to surface it. Counts the retry in `count`.
    pub fn next_delay(
        &self,
        status: u16,
        retry_after: Option<Duration>,
        count: &mut RetryCount,
    ) -> Option<Duration> {
        match status {
            429 | 503 => {
                if count.backoff >= self.backoff_retries {
                    return None;
                }
                let backoff = self
                    .base_delay
                    .saturating_mul(1 << count.backoff.min(16))
                    .min(self.max_delay);
                let wait = retry_after.unwrap_or(backoff);
                if wait > self.max_delay {
                    return None;
                }
                count.backoff += 1;
                Some(wait)
            }
            502 | 504 => {
                if count.upstream >= self.upstream_retries {
                    return None;
                }
                count.upstream += 1;
                Some(retry_after.unwrap_or(Duration::ZERO).min(self.max_delay))
            }
            _ => None,
        }
    }
}

/// Sends `attempt` (a fresh request each time) under `policy`; the final
/// answer's bytes, or the last refusal with the number of attempts.
/// `replayable` is false for audio that cannot be read again: then nothing
/// is retried.
pub(crate) async fn with_retries<F, Fut>(
    policy: RetryPolicy,
    replayable: bool,
    mut attempt: F,
) -> Result<Vec<u8>, (ApiError, u32, bool)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<u8>, ApiError>>,
{
    let mut count = RetryCount::default();
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let error = match attempt().await {
            Ok(bytes) => return Ok(bytes),
            Err(error) => error,
        };
        let Some(status) = error.status() else {
            return Err((error, attempts, false));
        };
        if !replayable {
            return Err((error, attempts, RetryPolicy::retryable(status)));
        }
        match policy.next_delay(status, error.retry_after(), &mut count) {
            Some(wait) => tokio::time::sleep(wait).await,
            None => return Err((error, attempts, false)),
        }
    }
}
