//! What the observer covers: every count of missed events rests on the
//! observer (`earshot listen --store`) having received the events. With no
//! event from it in the window, or silent (it stopped filing events), a
//! report says that missed events cannot be known (`earshot health` exits
//! 3, "unknown", as monitoring plugins do) rather than "all clear".
//!
//! Silence is a state with a start (its last filed event) and evidence,
//! the strongest first ([`silence`]): the platform's attempts to the
//! observer's own subscription it never filed; attempts to other
//! subscriptions of events it never filed; or, when the sweep cannot see
//! them (a stopped observer learns no new session), a gap longer than its
//! own pace allows.

use std::sync::atomic::{AtomicI64, Ordering};

use serde::Serialize;

use super::report::{SubscriptionHealth, rfc3339};
use crate::clock_text::utc_minute;
use crate::store::{Store, StoreError, deliveries, events, outcomes};

/// How long the sweep may see traffic the observer did not receive before
/// the observer counts as silent (the platform's first attempt and the
/// observer's copy of an event are seconds apart); also the shortest gap
/// its pace may call silence.
pub const SILENT_AFTER_MS: i64 = 60_000;

/// Events the observer must have filed in the hour before its last one
/// for its pace to tell silence: fewer, and a gap says nothing.
pub const PACE_MIN_EVENTS: i64 = 10;

/// A gap of this many mean intervals is silence: at a constant rate, the
/// chance of none in it is e^-10 (about 5 in 100,000).
pub const PACE_INTERVALS: i64 = 10;

const HOUR_MS: i64 = 3_600_000;

/// [`SILENT_AFTER_MS`] unless a front end lowered it (tests of the real
/// binary, through a hidden setting).
static SILENCE_FLOOR_MS: AtomicI64 = AtomicI64::new(SILENT_AFTER_MS);

/// Sets the floor every later [`coverage`] uses (at least 1 ms).
pub fn set_silence_floor_ms(ms: i64) {
    SILENCE_FLOOR_MS.store(ms.max(1), Ordering::Relaxed);
}

/// The floor [`coverage`] uses: [`SILENT_AFTER_MS`] unless set.
pub fn silence_floor_ms() -> i64 {
    SILENCE_FLOOR_MS.load(Ordering::Relaxed)
}

/// The observer's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CoverageState {
    /// It stored events in the window, and is not silent.
    Ok,
    /// It stopped receiving or storing: see [`Coverage::evidence`].
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
    /// Silent: since when (its last filed event), RFC 3339, UTC.
    pub silent_since: Option<String>,
    /// Silent: the evidence, in words.
    pub evidence: Option<String>,
    /// The newest event the sweep found that the observer never received.
    #[serde(skip)]
    pub newest_unobserved_ms: Option<i64>,
    #[serde(skip)]
    pub last_event_ms: Option<i64>,
    #[serde(skip)]
    pub silent_since_ms: Option<i64>,
}

/// What tells the observer's silence, the strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The platform made an attempt to the observer's own subscription at
    /// `at_ms`, and nothing was filed since its last event.
    OwnAttempt { at_ms: i64 },
    /// The sweep found an event of `at_ms` the observer never filed.
    Unfiled { at_ms: i64 },
    /// Nothing filed for longer than `PACE_INTERVALS` of its mean interval
    /// (`interval_ms`) in the hour before.
    Quiet { interval_ms: i64 },
}

impl Evidence {
    /// The evidence in words, `now_ms` and the last filed event given.
    pub fn words(self, last_ms: i64, now_ms: i64) -> String {
        match self {
            Evidence::OwnAttempt { at_ms } => format!(
                "the platform tried its own subscription at {}, {} after its last filed event",
                utc_minute(at_ms),
                ago(at_ms - last_ms)
            ),
            Evidence::Unfiled { at_ms } => format!(
                "the sweep found an event of {} it never filed, {} after its last one",
                utc_minute(at_ms),
                ago(at_ms - last_ms)
            ),
            Evidence::Quiet { interval_ms } => format!(
                "no event filed for {}; the hour before brought one every {}",
                ago(now_ms - last_ms),
                crate::duration_text::of(std::time::Duration::from_millis(
                    interval_ms.max(0).unsigned_abs()
                ))
            ),
        }
    }
}

/// What [`silence`] judges from, read from the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObserverFacts {
    /// Its newest filed event.
    pub last_event_ms: Option<i64>,
    /// Events filed in the hour up to the last one, and the first of them.
    pub hour_before: (i64, Option<i64>),
    /// The newest attempt to its own subscription the sweep found.
    pub own_attempt_ms: Option<i64>,
    /// The newest event, to any subscription, it never filed.
    pub newest_unobserved_ms: Option<i64>,
}

/// Whether the observer is silent at `now_ms`, and the strongest evidence:
/// attempts newer than its last event by more than `floor_ms`, to its own
/// subscription first; else, with at least [`PACE_MIN_EVENTS`] in the hour
/// before its last event, no event for more than `floor_ms` and
/// [`PACE_INTERVALS`] mean intervals. `None` while it has no event.
pub fn silence(facts: &ObserverFacts, now_ms: i64, floor_ms: i64) -> Option<Evidence> {
    let last = facts.last_event_ms?;
    if let Some(at_ms) = facts.own_attempt_ms.filter(|at| *at > last + floor_ms) {
        return Some(Evidence::OwnAttempt { at_ms });
    }
    if let Some(at_ms) = facts
        .newest_unobserved_ms
        .filter(|at| *at > last + floor_ms)
    {
        return Some(Evidence::Unfiled { at_ms });
    }
    let (count, first) = facts.hour_before;
    let first = first.filter(|_| count >= PACE_MIN_EVENTS)?;
    let interval_ms = (last - first) / (count - 1);
    (now_ms - last > floor_ms.max(PACE_INTERVALS * interval_ms))
        .then_some(Evidence::Quiet { interval_ms })
}

impl Coverage {
    /// Whether missed events can be known.
    pub fn is_known(&self) -> bool {
        self.state == CoverageState::Ok
    }

    /// `observer silent since 14:05 (evidence)`, when silent.
    pub fn silence_line(&self) -> Option<String> {
        let since = self.silent_since_ms?;
        let mut line = format!("observer silent since {}", utc_minute(since));
        if let Some(evidence) = &self.evidence {
            line.push_str(&format!(" ({evidence})"));
        }
        Some(line)
    }

    /// Marks every enabled subscription's row unknown from the silence on:
    /// the events the observer did not hear of cannot be counted.
    pub fn mark_unknown(&self, rows: &mut [SubscriptionHealth]) {
        let Some(since) = self.silent_since.as_ref() else {
            return;
        };
        for row in rows.iter_mut().filter(|row| row.enabled) {
            row.unknown_since = Some(since.clone());
        }
    }

    /// One line for a report: what the observer covers, or why missed
    /// events cannot be known and what to do.
    pub fn explain(&self, now_ms: i64) -> String {
        let last = match self.last_event_ms {
            Some(ms) => format!("last event {} ago", ago(now_ms - ms)),
            None => "no event ever".to_owned(),
        };
        if let Some(line) = self.silence_line() {
            return format!(
                "{line}: missed events cannot be known. Check that `earshot listen --store` \
                 is running and its subscription enabled"
            );
        }
        match self.state {
            CoverageState::None => format!(
                "observer: NO EVENTS in the window ({last}): missed events cannot be known. \
                 Run the observer (`earshot listen --store`, subscribed to every event) \
                 so earshot holds each event"
            ),
            _ => format!(
                "observer: {} events in the window, {last}",
                self.events_in_window
            ),
        }
    }
}

/// A span of `ms` milliseconds in whole seconds: "35 s", "12 min", "2 d 3 h".
fn ago(ms: i64) -> String {
    crate::duration_text::of_secs(ms.max(0).unsigned_abs() / 1_000)
}

/// The observer's coverage of the window since `since_ms`, at `now_ms`.
pub fn coverage(store: &Store, since_ms: i64, now_ms: i64) -> Result<Coverage, StoreError> {
    let (events_in_window, last_event_ms) = events::received_since(store, since_ms)?;
    let newest_unobserved_ms = outcomes::newest_unobserved_ms(store)?;
    let facts = match last_event_ms {
        Some(last) => ObserverFacts {
            last_event_ms,
            hour_before: events::pace_before(store, last, HOUR_MS)?,
            own_attempt_ms: deliveries::newest_attempt_ms(
                store,
                &deliveries::observer_subscriptions(store)?,
            )?,
            newest_unobserved_ms,
        },
        None => ObserverFacts::default(),
    };
    Ok(judged(
        events_in_window,
        facts,
        newest_unobserved_ms,
        now_ms,
    ))
}

/// The coverage a store's facts give at `now_ms`, whichever backend they
/// were read from: `events_in_window` filed in the window, the observer's
/// `facts` (all `None` while it has no event) and the newest event it
/// never filed.
pub fn judged(
    events_in_window: i64,
    facts: ObserverFacts,
    newest_unobserved_ms: Option<i64>,
    now_ms: i64,
) -> Coverage {
    let last_event_ms = facts.last_event_ms;
    let evidence = silence(&facts, now_ms, silence_floor_ms());
    let silent_since_ms = evidence.and(last_event_ms);
    let state = match (evidence, events_in_window) {
        (Some(_), _) => CoverageState::Silent,
        (None, 0) => CoverageState::None,
        (None, _) => CoverageState::Ok,
    };
    Coverage {
        state,
        last_event_at: last_event_ms.map(rfc3339),
        events_in_window,
        silent_since: silent_since_ms.map(rfc3339),
        evidence: evidence
            .zip(last_event_ms)
            .map(|(evidence, last)| evidence.words(last, now_ms)),
        newest_unobserved_ms,
        last_event_ms,
        silent_since_ms,
    }
}

#[cfg(test)]
#[path = "coverage_tests.rs"]
mod tests;
