//! Emulated time: every platform duration multiplied by one factor.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

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
