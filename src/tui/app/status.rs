//! The status bar's facts ([`Status`]): the connection as every area
//! (pane) that calls the platform last saw it, the error slot, the request
//! budget; and the [`Toast`], a short message that goes away by itself.

use std::time::Instant;

use super::super::action::Failure;
use super::super::panes::PaneId;

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
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub(crate) connection: Connection,
    /// Requests used of the account budget; the Jobs pane fills it.
    pub(crate) budget: Option<String>,
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
            last_error: None,
            failing: Vec::new(),
            error_from: None,
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
