//! A sliding-window log: at most `limit` events in any window of a given
//! length, exactly the rule the platform enforces (spec part 8 E). The
//! client's scheduler uses it as its guarantee (`earshot_core::poll::budget`);
//! the emulator enforces its limits with it (`emulator::limits`).
//!
//! Time is a `Duration` since an epoch the caller picks; nothing here reads
//! a clock.

use std::collections::VecDeque;
use std::time::Duration;

/// At most `limit` requests in any window of length `window`: the log of
/// the last `limit` request times. A request at `t` is allowed when fewer
/// than `limit` were sent in `(t - window, t]`, that is, when the `limit`-th
/// most recent one was sent at least `window` before `t`.
#[derive(Clone, Debug)]
pub struct SlidingWindow {
    limit: u32,
    window: Duration,
    /// Send times, oldest first; never more than `limit` of them.
    log: VecDeque<Duration>,
}

impl SlidingWindow {
    /// `limit` is at least 1.
    pub fn new(limit: u32, window: Duration) -> Self {
        SlidingWindow {
            limit: limit.max(1),
            window,
            log: VecDeque::new(),
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Lowers or raises the limit (at least 1), keeping the most recent
    /// request times: from now on, at most `limit` in any window.
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit.max(1);
        while self.log.len() > self.limit as usize {
            self.log.pop_front();
        }
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Requests sent in `(now - window, now]`.
    pub fn count(&self, now: Duration) -> u32 {
        let inside = self.log.len() - self.first_inside(now);
        u32::try_from(inside).unwrap_or(u32::MAX)
    }

    /// Position in the log of the oldest request inside the window at `now`.
    fn first_inside(&self, now: Duration) -> usize {
        self.log.partition_point(|&sent| sent + self.window <= now)
    }

    /// Whether one more request at `now` stays within the limit.
    pub fn allows(&self, now: Duration) -> bool {
        self.ready_at(now) <= now
    }

    /// The earliest time (not before `now`) at which one more request stays
    /// within the limit.
    pub fn ready_at(&self, now: Duration) -> Duration {
        if self.log.len() < self.limit as usize {
            return now;
        }
        match self.log.front() {
            Some(&oldest) => now.max(oldest + self.window),
            None => now,
        }
    }

    /// Records a request sent at `now`, whether or not it was allowed (so the
    /// log also reflects requests made for other reasons).
    pub fn record(&mut self, now: Duration) {
        // Keep the log sorted even if a caller's clock steps back.
        let at = self.log.back().map_or(now, |&last| last.max(now));
        self.log.push_back(at);
        while self.log.len() > self.limit as usize {
            self.log.pop_front();
        }
    }

    /// Records a request at `now` if it is allowed; otherwise how long
    /// until one would be (a `Retry-After`).
    pub fn admit(&mut self, now: Duration) -> Result<(), Duration> {
        let ready = self.ready_at(now);
        if ready > now {
            return Err(ready - now);
        }
        self.record(now);
        Ok(())
    }

    /// Records a request at `now` if it is allowed.
    pub fn try_take(&mut self, now: Duration) -> bool {
        if self.allows(now) {
            self.record(now);
            true
        } else {
            false
        }
    }

    /// The earliest time (not before `now`) at which `count(now)` drops: the
    /// oldest request inside the window leaves it. `None` when it is empty.
    pub fn frees_at(&self, now: Duration) -> Option<Duration> {
        self.log
            .get(self.first_inside(now))
            .map(|&oldest| oldest + self.window)
    }

    /// The most recent request time, if any.
    pub fn last(&self) -> Option<Duration> {
        self.log.back().copied()
    }

    /// Frees the log (for a job that will not be polled again).
    pub fn clear(&mut self) {
        self.log = VecDeque::new();
    }
}

/// The most of `times` (in order) inside any half-open window `(t - w, t]`:
/// what a log of `window` must never let past its limit. The reference the
/// tests of this log and of its users (the poller's budget) check against.
pub fn max_in_any_window(times: &[Duration], window: Duration) -> usize {
    let mut best = 0;
    let mut start = 0;
    for (end, &t) in times.iter().enumerate() {
        while times[start] + window <= t {
            start += 1;
        }
        best = best.max(end + 1 - start);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn frees_at_is_when_the_oldest_request_inside_leaves() {
        let mut log = SlidingWindow::new(3, secs(60.0));
        assert_eq!(log.frees_at(secs(0.0)), None);
        log.record(secs(1.0));
        log.record(secs(5.0));
        assert_eq!(log.frees_at(secs(10.0)), Some(secs(61.0)));
        // The first has left: the next to leave is the second.
        assert_eq!(log.frees_at(secs(61.0)), Some(secs(65.0)));
        assert_eq!(log.frees_at(secs(65.0)), None);
    }

    #[test]
    fn window_refuses_the_request_that_would_exceed_the_limit() {
        let mut window = SlidingWindow::new(3, Duration::from_secs(60));
        assert!(window.try_take(secs(0.0)));
        assert!(window.try_take(secs(1.0)));
        assert!(window.try_take(secs(2.0)));
        assert!(!window.try_take(secs(59.9)));
        assert_eq!(window.ready_at(secs(30.0)), secs(60.0));
        assert!(window.try_take(secs(60.0)));
        assert_eq!(window.count(secs(60.0)), 3);
        assert_eq!(window.count(secs(200.0)), 0);
    }

    #[test]
    fn admit_says_how_long_until_the_oldest_leaves() {
        let mut log = SlidingWindow::new(3, Duration::from_secs(60));
        for i in 0..3u64 {
            assert!(log.admit(Duration::from_secs(i)).is_ok());
        }
        assert_eq!(
            log.admit(Duration::from_millis(10_500)),
            Err(Duration::from_millis(49_500))
        );
        // Refused requests are not logged: waiting exactly that long works.
        assert_eq!(log.admit(Duration::from_secs(60)), Ok(()));
        assert!(log.admit(Duration::from_secs(60)).is_err());
    }

    #[test]
    fn a_client_within_the_limit_is_never_refused() {
        let mut log = SlidingWindow::new(3, Duration::from_secs(60));
        // 3 per minute, evenly spaced for ten minutes.
        for i in 0..30u32 {
            let now = Duration::from_secs(20) * i;
            assert_eq!(log.admit(now), Ok(()), "request {i}");
        }
    }

    proptest! {
        #[test]
        fn window_never_lets_more_than_limit_into_any_window(
            limit in 1u32..60,
            gaps in proptest::collection::vec(0u64..3_000, 1..600),
        ) {
            let window = Duration::from_secs(60);
            let mut limiter = SlidingWindow::new(limit, window);
            let mut now = Duration::ZERO;
            let mut sent = Vec::new();
            for gap in gaps {
                now += Duration::from_millis(gap);
                if limiter.try_take(now) {
                    sent.push(now);
                }
            }
            prop_assert!(max_in_any_window(&sent, window) <= limit as usize);
        }
    }
}
