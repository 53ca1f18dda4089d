//! When the console draws a frame: at once after the operator's input (a
//! key, a paste, a resize), otherwise no sooner than a refresh period after
//! the last frame — a burst of results, a counter that ticks and live rows
//! make one frame a period — and, after a large frame, later still, so that
//! what the console writes stays near a byte budget a second (a flood of
//! rows on a thin SSH link costs frames, not the link).
//!
//! The bytes come from the screen's [`ByteMeter`]; without one (tests on
//! `TestBackend`) only the period counts, and [`FramePace::immediate`]
//! draws every change at once.

use std::time::Duration;

use tokio::time::Instant;

use super::screen::ByteMeter;

/// The refresh period and byte budget of the console.
const PERIOD: Duration = Duration::from_millis(250);
const BUDGET: u64 = 4_000;
/// With `--low-bandwidth`.
const LOW_PERIOD: Duration = Duration::from_secs(1);
const LOW_BUDGET: u64 = 1_000;

pub(crate) struct FramePace {
    period: Duration,
    /// Bytes a second; `None`: no budget.
    budget: Option<u64>,
    meter: Option<ByteMeter>,
    /// The meter's total at the last frame.
    counted: u64,
    /// The earliest a frame not asked for by input may be drawn.
    next: Option<Instant>,
}

impl FramePace {
    /// Every change drawn at once: the tests' loop, and the console with
    /// ratatui's own backend (`EARSHOT_SCREEN=ratatui`, the "before" the
    /// benchmark compares with).
    pub(crate) fn immediate() -> FramePace {
        FramePace {
            period: Duration::ZERO,
            budget: None,
            meter: None,
            counted: 0,
            next: None,
        }
    }

    /// The real terminal's pace, its bytes counted by `meter`.
    pub(crate) fn for_terminal(low_bandwidth: bool, meter: ByteMeter) -> FramePace {
        let (period, budget) = if low_bandwidth {
            (LOW_PERIOD, LOW_BUDGET)
        } else {
            (PERIOD, BUDGET)
        };
        FramePace {
            period,
            budget: Some(budget),
            counted: meter.total(),
            meter: Some(meter),
            next: None,
        }
    }

    /// When a frame may be drawn: `None` now (after input, or once the
    /// wait is over), else the instant to wait for.
    pub(crate) fn wait(&self, now: Instant, after_input: bool) -> Option<Instant> {
        match self.next {
            Some(next) if !after_input && next > now => Some(next),
            _ => None,
        }
    }

    /// A frame was drawn at `now`: the next waits a period, or as long as
    /// the budget needs to pay for this frame's bytes.
    pub(crate) fn drawn(&mut self, now: Instant) {
        let total = self.meter.as_ref().map_or(0, ByteMeter::total);
        let bytes = total.saturating_sub(self.counted);
        self.counted = total;
        let paid = match self.budget {
            Some(budget) if budget > 0 => Duration::from_secs_f64(bytes as f64 / budget as f64),
            _ => Duration::ZERO,
        };
        self.next = Some(now + self.period.max(paid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input draws at once; anything else waits for the period after the
    /// last frame, then draws.
    #[test]
    fn input_draws_at_once_and_the_rest_waits_a_period() {
        let meter = ByteMeter::default();
        let mut pace = FramePace::for_terminal(false, meter);
        let start = Instant::now();
        assert_eq!(pace.wait(start, false), None, "the first frame");
        pace.drawn(start);
        let soon = start + Duration::from_millis(100);
        assert_eq!(pace.wait(soon, false), Some(start + PERIOD));
        assert_eq!(pace.wait(soon, true), None);
        assert_eq!(pace.wait(start + PERIOD, false), None);
    }

    /// A frame of 8,000 bytes at a budget of 4,000 a second holds the next
    /// one back for two seconds; with `--low-bandwidth`, the period is a
    /// second and the budget a quarter.
    #[test]
    fn a_large_frame_waits_for_its_bytes() {
        let meter = ByteMeter::default();
        let mut pace = FramePace::for_terminal(false, meter.clone());
        let start = Instant::now();
        meter.add(8_000);
        pace.drawn(start);
        assert_eq!(
            pace.wait(start, false),
            Some(start + Duration::from_secs(2))
        );
        // A small one after it waits only the period.
        meter.add(100);
        pace.drawn(start + Duration::from_secs(2));
        assert_eq!(
            pace.wait(start + Duration::from_secs(2), false),
            Some(start + Duration::from_secs(2) + PERIOD)
        );

        let mut low = FramePace::for_terminal(true, meter.clone());
        low.drawn(start);
        assert_eq!(low.wait(start, false), Some(start + LOW_PERIOD));
        meter.add(4_000);
        low.drawn(start);
        assert_eq!(low.wait(start, false), Some(start + Duration::from_secs(4)));
    }

    #[test]
    fn immediate_never_waits() {
        let mut pace = FramePace::immediate();
        let now = Instant::now();
        pace.drawn(now);
        assert_eq!(pace.wait(now, false), None);
    }
}
