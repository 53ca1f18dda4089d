//! Request budgets: a token bucket (pacing) and a sliding-window log (the
//! hard limit; [`SlidingWindow`], shared with the emulator's limits and
//! re-exported here).
//!
//! The platform counts requests in windows: at most 60 GETs of one
//! transcript in a minute, at most 20,000 requests per account in five
//! minutes. A token bucket of capacity `c` refilled at `r` per second lets
//! through up to `c + r·w` requests in any window of `w` seconds, so a bucket
//! sized "B per window" can send 2B in one window. [`SlidingWindow`] keeps the
//! times of the last `limit` requests and refuses one more until the oldest of
//! them has left the window: it can never exceed `limit` in any window, which
//! is exactly the server's rule. The scheduler uses a window as the guarantee
//! and a small bucket on top of the account share only to spread requests
//! out.
//!
//! Time is a [`Tick`] (a `Duration` since the scheduler's epoch); nothing
//! here reads a clock.

use std::time::Duration;

use super::Tick;
pub use crate::sliding_window::SlidingWindow;

/// Tokens within this of a whole one count as a whole one (float rounding).
const EPSILON: f64 = 1e-9;

/// A token bucket: holds up to `capacity` tokens, refills continuously.
///
/// In any window of length `w` it lets through at most
/// `initial + rate · w` requests, and at most `capacity + rate · w` once it
/// has been full ([`TokenBucket::max_in_window`]).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    capacity: f64,
    /// Tokens per second.
    rate: f64,
    tokens: f64,
    updated: Tick,
}

impl TokenBucket {
    /// A bucket of `capacity` tokens that refills completely over `per`, and
    /// starts full: a burst of `capacity` may go at once. For a limit that is
    /// counted over a window, prefer [`TokenBucket::with_rate`] with a small
    /// capacity.
    pub fn new(capacity: f64, per: Duration, now: Tick) -> Self {
        Self::with_rate(capacity, capacity, per, capacity, now)
    }

    /// A bucket of `capacity` tokens refilled at `tokens` per `per`, holding
    /// `initial` tokens at `now`.
    pub fn with_rate(capacity: f64, tokens: f64, per: Duration, initial: f64, now: Tick) -> Self {
        let capacity = capacity.max(1.0);
        let seconds = per.as_secs_f64().max(1e-9);
        TokenBucket {
            capacity,
            rate: (tokens / seconds).max(1e-12),
            tokens: initial.clamp(0.0, capacity),
            updated: now,
        }
    }

    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Refill rate in tokens per second.
    pub fn rate_per_second(&self) -> f64 {
        self.rate
    }

    /// The most this bucket can let through in any window of length
    /// `window` once it has been full.
    pub fn max_in_window(&self, window: Duration) -> f64 {
        self.capacity + self.rate * window.as_secs_f64()
    }

    fn refill(&mut self, now: Tick) {
        if now > self.updated {
            let elapsed = (now - self.updated).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
            self.updated = now;
        }
    }

    /// Tokens available at `now` (a time before the last update counts as
    /// the last update).
    pub fn available(&mut self, now: Tick) -> f64 {
        self.refill(now);
        self.tokens
    }

    /// Takes one token if there is one.
    pub fn try_take(&mut self, now: Tick) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 - EPSILON {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// When one whole token will be there (`now` if it already is).
    pub fn ready_at(&mut self, now: Tick) -> Tick {
        self.refill(now);
        if self.tokens >= 1.0 - EPSILON {
            return now.max(self.updated);
        }
        let wait = (1.0 - self.tokens) / self.rate;
        // Round up so that `try_take(ready_at(..))` succeeds.
        let wait = Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX / 2);
        self.updated
            .saturating_add(wait)
            .saturating_add(Duration::from_micros(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sliding_window::max_in_any_window;
    use proptest::prelude::*;

    fn secs(s: f64) -> Tick {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn bucket_new_starts_full_and_refills_over_the_period() {
        let mut bucket = TokenBucket::new(5.0, Duration::from_secs(10), Tick::ZERO);
        for _ in 0..5 {
            assert!(bucket.try_take(Tick::ZERO));
        }
        assert!(!bucket.try_take(Tick::ZERO));
        let ready = bucket.ready_at(Tick::ZERO);
        assert!(ready >= secs(2.0) && ready < secs(2.001), "{ready:?}");
        assert!(bucket.try_take(ready));
        assert!((bucket.available(secs(100.0)) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn bucket_with_small_capacity_spreads_requests() {
        // 100 per 10 s, capacity 1: one every 0.1 s.
        let mut bucket =
            TokenBucket::with_rate(1.0, 100.0, Duration::from_secs(10), 1.0, Tick::ZERO);
        let mut now = Tick::ZERO;
        let mut sent = Vec::new();
        while now < secs(10.0) {
            if bucket.try_take(now) {
                sent.push(now);
            }
            now = bucket.ready_at(now);
        }
        assert!((99..=101).contains(&sent.len()), "{}", sent.len());
        assert!(sent.windows(2).all(|w| w[1] - w[0] >= secs(0.0999)));
    }

    #[test]
    fn bucket_ready_at_is_when_try_take_succeeds() {
        let mut bucket = TokenBucket::with_rate(3.0, 7.0, Duration::from_secs(3), 0.0, secs(1.0));
        let mut now = secs(1.0);
        for _ in 0..1000 {
            now = bucket.ready_at(now);
            assert!(bucket.try_take(now));
        }
    }

    proptest! {
        #[test]
        fn bucket_stays_within_capacity_plus_rate_times_window(
            capacity in 1u32..20,
            per_window in 20u32..400,
            gaps in proptest::collection::vec(0u64..2_000, 1..2_000),
        ) {
            let window = Duration::from_secs(300);
            let allowance = f64::from(per_window - per_window.min(capacity - 1));
            let mut bucket = TokenBucket::with_rate(
                f64::from(capacity), allowance, window, f64::from(capacity), Tick::ZERO);
            let mut now = Tick::ZERO;
            let mut sent = Vec::new();
            for gap in gaps {
                now += Duration::from_millis(gap);
                if bucket.try_take(now) {
                    sent.push(now);
                }
            }
            let bound = bucket.max_in_window(window).floor() as usize;
            prop_assert!(max_in_any_window(&sent, window) <= bound);
        }
    }
}
