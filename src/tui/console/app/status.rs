//! The status bar's facts ([`Status`]): the connection as every area
//! (pane) that calls the platform last saw it, the error slot, the request
//! budget; and the [`Toast`], a short message that goes away by itself.

use std::time::{Duration, Instant};

use crate::tui::kernel::Failure;
use crate::tui::panes::PaneId;

/// The platform as the status bar reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Connection {
    /// No answer yet.
    Unknown,
    Ok,
    Error,
}

/// The status bar's facts.
///
/// The connection state is the latest answer of *every* area (pane) that
/// calls the platform, not of whichever answered last: `error` while any
/// area's latest call failed, `ok` once each has recovered. A platform
/// error leaves the error slot when its area recovers; a local notice (a
/// theme, an unknown command, the clipboard) leaves at the next key.
/// How often the status bar's budget figure may change.
pub(crate) const BUDGET_EVERY: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub(crate) connection: Connection,
    /// Requests used of the account budget; the Jobs pane fills it.
    pub(crate) budget: Option<String>,
    /// A newer figure not shown yet, and when the shown one was set: the
    /// watcher reports several times a second, the bar changes at most
    /// every [`BUDGET_EVERY`] (a redraw per report cost ~100 bytes a
    /// second over a thin link).
    budget_next: Option<String>,
    budget_at: Option<Instant>,
    /// What the error slot shows.
    pub(crate) last_error: Option<Failure>,
    /// Areas whose latest platform call failed, oldest failure first (at
    /// most one entry per pane).
    failing: Vec<(PaneId, Failure)>,
    /// The area `last_error` came from; `None` for a local notice.
    error_from: Option<PaneId>,
}

impl Status {
    pub(crate) fn new() -> Status {
        Status {
            connection: Connection::Unknown,
            budget: None,
            budget_next: None,
            budget_at: None,
            last_error: None,
            failing: Vec::new(),
            error_from: None,
        }
    }

    /// The budget's newest figure, shown at once when the last one is at
    /// least [`BUDGET_EVERY`] old, else at the next [`Status::flush_budget`].
    /// Whether the bar changed.
    pub(crate) fn set_budget(&mut self, text: String, now: Instant) -> bool {
        if self.budget.as_deref() == Some(text.as_str()) {
            self.budget_next = None;
            return false;
        }
        self.budget_next = Some(text);
        self.flush_budget(now)
    }

    /// Shows a held budget figure once its time has come; whether the bar
    /// changed.
    pub(crate) fn flush_budget(&mut self, now: Instant) -> bool {
        let due = self
            .budget_at
            .is_none_or(|at| now.saturating_duration_since(at) >= BUDGET_EVERY);
        match self.budget_next.take() {
            Some(next) if due => {
                self.budget = Some(next);
                self.budget_at = Some(now);
                true
            }
            held => {
                self.budget_next = held;
                false
            }
        }
    }

    /// The latest platform call of `area` failed.
    pub(crate) fn failed(&mut self, area: PaneId, failure: Failure) {
        self.failing.retain(|(failing, _)| *failing != area);
        self.failing.push((area, failure.clone()));
        self.connection = Connection::Error;
        self.last_error = Some(failure);
        self.error_from = Some(area);
    }

    /// The latest platform call of `area` succeeded.
    pub(crate) fn succeeded(&mut self, area: PaneId) {
        self.failing.retain(|(failing, _)| *failing != area);
        match self.failing.last() {
            Some((other, failure)) => {
                self.connection = Connection::Error;
                if self.error_from == Some(area) {
                    self.last_error = Some(failure.clone());
                    self.error_from = Some(*other);
                }
            }
            None => {
                self.connection = Connection::Ok;
                if self.error_from.take().is_some() {
                    self.last_error = None;
                }
            }
        }
    }

    /// A message that is not about the platform, shown in the error slot
    /// until the next key.
    pub(crate) fn notice(&mut self, failure: Failure) {
        self.last_error = Some(failure);
        self.error_from = None;
    }

    /// The next key clears a notice (a platform error stays while its
    /// area is failing).
    pub(super) fn key_pressed(&mut self) {
        if self.error_from.is_none() {
            self.last_error = None;
        }
    }

    /// The areas whose latest platform call failed.
    #[cfg(test)]
    pub(crate) fn failing_areas(&self) -> impl Iterator<Item = PaneId> + '_ {
        self.failing.iter().map(|(area, _)| *area)
    }
}

/// A short message that goes away by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Toast {
    pub(crate) text: String,
    pub(crate) until: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports several times a second: the bar shows the first at once,
    /// then the newest at most every two seconds, the last one too.
    #[test]
    fn the_budget_changes_at_most_every_two_seconds_and_ends_on_the_newest() {
        let mut status = Status::new();
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(status.set_budget("10/2000".into(), at(0)));
        assert!(!status.set_budget("12/2000".into(), at(250)));
        assert!(!status.set_budget("14/2000".into(), at(500)));
        assert_eq!(status.budget.as_deref(), Some("10/2000"));
        assert!(!status.flush_budget(at(1_900)));
        assert!(status.flush_budget(at(2_000)));
        assert_eq!(status.budget.as_deref(), Some("14/2000"), "the newest");
        assert!(!status.flush_budget(at(4_000)), "nothing held");
        assert!(!status.set_budget("14/2000".into(), at(4_100)), "unchanged");
    }
}
