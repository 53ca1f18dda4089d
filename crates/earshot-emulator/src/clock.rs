//! Emulated time: the one [`Clock`] the platform's scheduled work waits
//! on (delivery retries, pre-recorded processing and webhook intervals,
//! the artifact delay, presigned-link expiry). Real time with every
//! platform duration multiplied by a [`TimeScale`], or a manual clock
//! ([`ManualClock`]) that moves only when a test advances it.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// The `--time-scale` factor: 1.0 is real time, 0.01 makes a 15 s deadline
/// 150 ms. Always finite and positive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale(f64);

impl TimeScale {
    pub const REAL_TIME: TimeScale = TimeScale(1.0);

    pub fn new(factor: f64) -> Option<TimeScale> {
        (factor.is_finite() && factor > 0.0 && factor <= 1000.0).then_some(TimeScale(factor))
    }

    pub fn factor(self) -> f64 {
        self.0
    }

    /// A platform duration as it passes in this emulator.
    pub fn scale(self, platform: Duration) -> Duration {
        platform.mul_f64(self.0)
    }
}

impl FromStr for TimeScale {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let factor: f64 = text
            .parse()
            .map_err(|_| format!("{text:?} is not a number (try 0.01)"))?;
        TimeScale::new(factor).ok_or_else(|| format!("{text} must be above 0 and at most 1000"))
    }
}

impl fmt::Display for TimeScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What the emulator's scheduled work waits on. I/O deadlines (a
/// receiver's 15 s, the audio download) are not scheduled work: they pass
/// in real time, scaled, on either clock.
#[derive(Clone)]
pub(crate) enum Clock {
    /// Real time, every platform duration × the scale.
    Scaled(TimeScale),
    /// Time that passes only in [`crate::Emulator::advance`].
    Manual(Arc<ManualClock>),
}

impl Clock {
    /// A platform duration as it passes on this clock: scaled, or as it is
    /// on the manual clock.
    pub fn span(&self, platform: Duration) -> Duration {
        match self {
            Clock::Scaled(scale) => scale.scale(platform),
            Clock::Manual(_) => platform,
        }
    }

    /// The clock's present, for deadlines kept in records.
    pub fn now(&self) -> Instant {
        match self {
            Clock::Scaled(_) => Instant::now(),
            Clock::Manual(clock) => clock.now(),
        }
    }

    /// Waits until `platform` has passed on this clock.
    pub async fn sleep(&self, platform: Duration) {
        match self {
            Clock::Scaled(scale) => tokio::time::sleep(scale.scale(platform)).await,
            Clock::Manual(clock) => clock.sleep(platform).await,
        }
    }
}

/// A clock that stands still until [`ManualClock::set`] moves it. It
/// knows who sleeps on it and until when, so the emulator can tell when
/// the work due has run ([`crate::Emulator::advance`]).
pub(crate) struct ManualClock {
    origin: Instant,
    /// How far it has been moved since `origin`; sleepers wait on it.
    moved: watch::Sender<Duration>,
    /// Sleepers by deadline (time since `origin`): how many wait for each.
    sleepers: Mutex<BTreeMap<Duration, usize>>,
    /// Ticks whenever a sleeper starts or stops waiting.
    changes: watch::Sender<u64>,
    /// One advance at a time: two would step past each other's deadlines.
    pub(crate) advancing: tokio::sync::Mutex<()>,
}

/// Who sleeps on a [`ManualClock`] now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sleepers {
    /// Their deadline has passed: woken, not yet run on.
    pub due: usize,
    /// Waiting for a time still ahead.
    pub waiting: usize,
}

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock {
            origin: Instant::now(),
            moved: watch::channel(Duration::ZERO).0,
            sleepers: Mutex::new(BTreeMap::new()),
            changes: watch::channel(0).0,
            advancing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn now(&self) -> Instant {
        self.origin + self.moved()
    }

    /// How far it has been moved since it was made.
    pub fn moved(&self) -> Duration {
        *self.moved.borrow()
    }

    /// Moves it to `to` (never back) and wakes the sleepers due by then.
    pub fn set(&self, to: Duration) {
        // Under the sleepers' lock, so a sleeper reads the time and
        // registers its deadline as one step.
        let _sleepers = self.lock();
        self.moved.send_if_modified(|moved| {
            let forward = to > *moved;
            if forward {
                *moved = to;
            }
            forward
        });
    }

    /// The earliest deadline a sleeper waits for.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.lock().keys().next().copied()
    }

    pub fn sleepers(&self) -> Sleepers {
        let sleepers = self.lock();
        let moved = self.moved();
        let (mut due, mut waiting) = (0, 0);
        for (deadline, count) in sleepers.iter() {
            if *deadline <= moved {
                due += count;
            } else {
                waiting += count;
            }
        }
        Sleepers { due, waiting }
    }

    /// A receiver that sees every sleeper come and go.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits until the clock has been moved `span` past now. Dropping the
    /// future stops the wait (and its count).
    async fn sleep(&self, span: Duration) {
        let mut moved = self.moved.subscribe();
        let sleeper = {
            let mut sleepers = self.lock();
            let deadline = self.moved() + span;
            *sleepers.entry(deadline).or_default() += 1;
            Sleeper {
                clock: self,
                deadline,
            }
        };
        self.tick();
        // The sender lives as long as `self`: an error cannot happen here.
        let _ = moved.wait_for(|moved| *moved >= sleeper.deadline).await;
    }

    fn tick(&self) {
        self.changes
            .send_modify(|tick| *tick = tick.wrapping_add(1));
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<Duration, usize>> {
        self.sleepers
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// One sleeper's registration, removed when its wait ends or is dropped.
struct Sleeper<'a> {
    clock: &'a ManualClock,
    deadline: Duration,
}

impl Drop for Sleeper<'_> {
    fn drop(&mut self) {
        {
            let mut sleepers = self.clock.lock();
            if let Some(count) = sleepers.get_mut(&self.deadline) {
                *count -= 1;
                if *count == 0 {
                    sleepers.remove(&self.deadline);
                }
            }
        }
        self.clock.tick();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sleeper_wakes_when_the_clock_passes_its_deadline_only() {
        let clock = Arc::new(ManualClock::new());
        let sleeping = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep(Duration::from_secs(90)).await }
        });
        let mut changes = clock.changes();
        changes
            .wait_for(|_| clock.sleepers().waiting == 1)
            .await
            .expect("the clock lives");
        assert_eq!(clock.next_deadline(), Some(Duration::from_secs(90)));

        clock.set(Duration::from_secs(89));
        assert_eq!(clock.sleepers(), Sleepers { due: 0, waiting: 1 });
        assert!(!sleeping.is_finished());

        clock.set(Duration::from_secs(90));
        sleeping.await.expect("the sleeper ends");
        assert_eq!(clock.sleepers(), Sleepers { due: 0, waiting: 0 });
        assert_eq!(clock.now(), clock.origin + Duration::from_secs(90));
    }

    #[test]
    fn the_clock_never_goes_back() {
        let clock = ManualClock::new();
        clock.set(Duration::from_secs(5));
        clock.set(Duration::from_secs(2));
        assert_eq!(clock.moved(), Duration::from_secs(5));
    }

    #[test]
    fn a_scaled_clock_scales_and_a_manual_one_does_not() {
        let minute = Duration::from_secs(60);
        let scaled = Clock::Scaled(TimeScale(0.01));
        assert_eq!(scaled.span(minute), Duration::from_millis(600));
        let manual = Clock::Manual(Arc::new(ManualClock::new()));
        assert_eq!(manual.span(minute), minute);
    }
}
