//! How fresh the Subscriptions list is: the change log it watches (a
//! change recorded by anyone — the CLI, another console — newer than the
//! last seen reads the list again), the slower reread that catches a
//! change made outside earshot, and the clock its age is drawn from.

use std::time::{Duration, Instant};

use crate::tui::kernel::Failure;

/// How often the pane asks the store for the newest change while on
/// screen.
pub(crate) const WATCH_EVERY: Duration = Duration::from_secs(2);

/// How often the list is read again while on screen even with no change
/// recorded (one made outside earshot leaves none); the period its age is
/// measured against (older than twice this reads "stale").
pub(crate) const LIST_EVERY: Duration = Duration::from_secs(30);

/// The newest change seen in the store's change log.
#[derive(Debug, Default)]
pub(crate) struct ChangesSeen {
    /// `None` until the first answer (which only sets the baseline);
    /// then the newest change id (`Some(None)`: the log is empty).
    newest: Option<Option<i64>>,
    /// When the last question was asked.
    asked_at: Option<Instant>,
}

impl ChangesSeen {
    /// Whether to ask again at `at` (every [`WATCH_EVERY`]); asking is
    /// noted.
    pub(crate) fn due(&mut self, at: Instant) -> bool {
        let due = self
            .asked_at
            .is_none_or(|last| at.saturating_duration_since(last) >= WATCH_EVERY);
        if due {
            self.asked_at = Some(at);
        }
        due
    }

    /// An answer: whether a change newer than the last seen was recorded
    /// (the first answer is the baseline; a failed read changes nothing,
    /// the list's own refresh says when it fails).
    pub(crate) fn saw(&mut self, result: Result<Option<i64>, Failure>) -> bool {
        let Ok(newest) = result else {
            return false;
        };
        let newer = self.newest.is_some_and(|seen| newest > seen);
        self.newest = Some(newest);
        newer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_newer_than_the_baseline_counts() {
        let mut seen = ChangesSeen::default();
        assert!(!seen.saw(Ok(Some(3))), "the first answer is the baseline");
        assert!(!seen.saw(Ok(Some(3))));
        assert!(!seen.saw(Err(Failure::new("locked"))));
        assert!(seen.saw(Ok(Some(4))));
        assert!(!seen.saw(Ok(Some(4))));
        let mut empty = ChangesSeen::default();
        assert!(!empty.saw(Ok(None)));
        assert!(empty.saw(Ok(Some(1))), "the first change to an empty log");
    }

    #[test]
    fn the_store_is_asked_once_per_period() {
        let mut seen = ChangesSeen::default();
        let start = Instant::now();
        assert!(seen.due(start));
        assert!(!seen.due(start + Duration::from_millis(500)));
        assert!(seen.due(start + WATCH_EVERY));
    }
}
