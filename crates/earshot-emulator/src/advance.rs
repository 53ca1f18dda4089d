//! Moving the manual clock ([`Emulator::advance`]): time steps from one
//! sleeper's deadline to the next, and at each the work woken runs as far
//! as it can before the clock moves on, so everything due by the new time
//! happens, in order, without a test waiting for it.

use std::time::Duration;

use super::clock::{Clock, ManualClock};
use super::{Emulator, TimeScale};

/// The farthest the manual clock goes in all: a century, so every
/// deadline past it is still a time the system can name.
pub const MAX_CLOCK_MOVE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// [`Emulator::advance`] on an emulator whose time passes by itself.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error(
    "this emulator runs on real time × {scale}; only one started with `Emulator::builder().manual_clock()` can be advanced"
)]
#[non_exhaustive]
pub struct NoManualClock {
    /// The time scale it runs at.
    pub scale: TimeScale,
}

impl Emulator {
    /// Moves the manual clock `by` and returns once the work due by the
    /// new time has run as far as it can: each delivery retry, pre-recorded
    /// job and webhook attempt due was made and answered, in the order of
    /// their times (a retry due 5 s after a failure due within `by` runs
    /// too). Artifacts listed after 90 s and presigned links that expire
    /// after an hour read the moved clock. `advance(Duration::ZERO)` runs
    /// what is due now.
    ///
    /// The receivers' answers are I/O, not scheduled work: an attempt in
    /// flight is waited for, up to its deadline (15 s × the time scale).
    /// Advances on one emulator run one after another; in all they move
    /// the clock at most [`MAX_CLOCK_MOVE`] (a century).
    pub async fn advance(&self, by: Duration) -> Result<(), NoManualClock> {
        let clock = match &self.state.clock {
            Clock::Manual(clock) => clock.clone(),
            Clock::Scaled(scale) => return Err(NoManualClock { scale: *scale }),
        };
        let _alone = clock.advancing.lock().await;
        let target = clock.moved().saturating_add(by).min(MAX_CLOCK_MOVE);
        loop {
            self.run_due(&clock).await;
            match clock.next_deadline() {
                Some(next) if next <= target => clock.set(next),
                _ => break,
            }
        }
        clock.set(target);
        self.run_due(&clock).await;
        Ok(())
    }

    /// How far the manual clock has been moved since the emulator started
    /// (`None` on a scaled clock).
    #[must_use]
    pub fn clock_moved(&self) -> Option<Duration> {
        match &self.state.clock {
            Clock::Manual(clock) => Some(clock.moved()),
            Clock::Scaled(_) => None,
        }
    }

    /// Returns when every sleeper due has woken and every task that does
    /// the platform's work (a delivery, a job processing) sleeps on the
    /// clock again or has ended: nothing more happens until it moves.
    async fn run_due(&self, clock: &ManualClock) {
        let mut activity = self.state.activity.subscribe();
        let mut sleepers = clock.changes();
        loop {
            let asleep = clock.sleepers();
            let busy = self.busy();
            let working = busy.deliveries + u64::from(busy.processing);
            if asleep.due == 0 && working <= asleep.waiting as u64 {
                return;
            }
            // Both senders live in the state this handle holds.
            let woken = tokio::select! {
                changed = activity.changed() => changed.is_ok(),
                changed = sleepers.changed() => changed.is_ok(),
            };
            if !woken {
                return;
            }
        }
    }
}
