//! What the observer covers: every count of missed events rests on the
//! observer (`earshot listen --store`) having received the events. With no
//! event from it in the window, or none for longer than the traffic the
//! sweep sees allows, a report says that missed events cannot be known
//! (`earshot health` exits 3, "unknown", as monitoring plugins do) rather
//! than "all clear".

use serde::Serialize;

use super::report::rfc3339;
use crate::store::{Store, StoreError, events, outcomes};

/// How long the sweep may see traffic the observer did not receive before
/// the observer counts as silent (the platform's first attempt and the
/// observer's copy of an event are seconds apart).
pub const SILENT_AFTER_MS: i64 = 60_000;

/// The observer's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CoverageState {
    /// It stored events in the window, and nothing newer was missed by it.
    Ok,
    /// The sweep found attempts for events newer than the observer's last
    /// one: it stopped receiving or storing.
    Silent,
    /// No event stored in the window.
    None,
}

/// `"observer"` in `health --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coverage {
    pub state: CoverageState,
    /// When the observer received its newest event, RFC 3339, UTC.
    pub last_event_at: Option<String>,
    pub events_in_window: i64,
    /// The newest event the sweep found that the observer never received.
    #[serde(skip)]
    pub newest_unobserved_ms: Option<i64>,
    #[serde(skip)]
    pub last_event_ms: Option<i64>,
}

impl Coverage {
    /// Whether missed events can be known.
    pub fn is_known(&self) -> bool {
        self.state == CoverageState::Ok
    }

    /// One line for a report: what the observer covers, or why missed
    /// events cannot be known and what to do.
    pub fn explain(&self, now_ms: i64) -> String {
        let last = match self.last_event_ms {
            Some(ms) => format!("last event {} ago", ago(now_ms - ms)),
            None => "no event ever".to_owned(),
        };
        match self.state {
            CoverageState::Ok => format!(
                "observer: {} events in the window, {last}",
                self.events_in_window
            ),
            CoverageState::None => format!(
                "observer: NO EVENTS in the window ({last}): missed events cannot be known. \
                 Run the observer (`earshot listen --store`, subscribed to every event) \
                 so earshot holds each event"
            ),
            CoverageState::Silent => format!(
                "observer: SILENT ({last}, while the platform sent events {} later): missed \
                 events cannot be known. Check that `earshot listen --store` is running and \
                 its subscription enabled",
                ago(self.newest_unobserved_ms.unwrap_or(now_ms) - self.last_event_ms.unwrap_or(0))
            ),
        }
    }
}

/// A span of `ms` milliseconds in whole seconds: "35 s", "12 min", "2 d 3 h".
fn ago(ms: i64) -> String {
    crate::duration_text::of_secs(ms.max(0).unsigned_abs() / 1_000)
}

/// The observer's coverage of the window since `since_ms`.
pub fn coverage(store: &Store, since_ms: i64, _now_ms: i64) -> Result<Coverage, StoreError> {
    let (events_in_window, last_event_ms) = events::received_since(store, since_ms)?;
    let newest_unobserved_ms = outcomes::newest_unobserved_ms(store)?;
    let silent = match (newest_unobserved_ms, last_event_ms) {
        (Some(unobserved), Some(last)) => unobserved > last + SILENT_AFTER_MS,
        _ => false,
    };
    let state = if events_in_window == 0 {
        CoverageState::None
    } else if silent {
        CoverageState::Silent
    } else {
        CoverageState::Ok
    };
    Ok(Coverage {
        state,
        last_event_at: last_event_ms.map(rfc3339),
        events_in_window,
        newest_unobserved_ms,
        last_event_ms,
    })
}
