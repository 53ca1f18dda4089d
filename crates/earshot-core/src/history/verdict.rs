//! The one exit rule of every command that exits on the board's verdict
//! (`earshot health`, `earshot incidents`): 3 (unknown) when the observer
//! is silent or filed no event in the window; else 1 while an incident is
//! unresolved (acknowledged ones too) or an event was missed for good in
//! the window; else 0. Events pending alone are not a failure.

use super::incidents::{Incident, IncidentState};
use super::report::Board;

/// The board's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Failing,
    Unknown,
}

impl Verdict {
    /// The process exit code, as monitoring plugins read it.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Ok => 0,
            Verdict::Failing => 1,
            Verdict::Unknown => 3,
        }
    }
}

/// The verdict of `board` with the `incidents` of its window.
pub fn verdict(board: &Board, incidents: &[Incident]) -> Verdict {
    let unresolved = incidents
        .iter()
        .any(|incident| incident.state != IncidentState::Resolved);
    let missed = board.subscriptions.iter().any(|row| row.events.missed > 0);
    if !board.observer.is_known() {
        Verdict::Unknown
    } else if unresolved || missed {
        Verdict::Failing
    } else {
        Verdict::Ok
    }
}

/// Events pending (in flight, or a retry to come) on the board.
pub fn pending(board: &Board) -> i64 {
    board
        .subscriptions
        .iter()
        .map(|row| row.events.pending)
        .sum()
}

/// The line both commands end with on stderr: "3 events pending; 1
/// unresolved incident".
pub fn summary(board: &Board, unresolved: &[Incident]) -> String {
    let pending = pending(board);
    let incidents = unresolved.len();
    format!(
        "{pending} event{} pending; {incidents} unresolved incident{}",
        if pending == 1 { "" } else { "s" },
        if incidents == 1 { "" } else { "s" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::coverage::{Coverage, CoverageState};
    use crate::history::report::{EventTotals, SubscriptionHealth};

    fn board(state: CoverageState, missed: i64, pending: i64) -> Board {
        Board {
            observer: Coverage {
                state,
                last_event_at: None,
                events_in_window: 1,
                silent_since: None,
                evidence: None,
                newest_unobserved_ms: None,
                last_event_ms: None,
                silent_since_ms: None,
            },
            subscriptions: vec![SubscriptionHealth {
                events: EventTotals {
                    missed,
                    pending,
                    ..EventTotals::default()
                },
                pending,
                ..SubscriptionHealth::new("sub".into(), "https://sub.example/hook".into(), true)
            }],
        }
    }

    fn incident(state: IncidentState) -> Incident {
        Incident {
            id: "i1".into(),
            subscription_id: "sub".into(),
            diagnosis: "401".into(),
            first_seen_at: String::new(),
            last_seen_at: String::new(),
            missed: 0,
            recovered: 0,
            retrying: 0,
            state,
            acknowledged_by: None,
            acknowledged_at: None,
            note: None,
            resolved_at: None,
            resolved_reason: None,
            first_seen_ms: 0,
            last_seen_ms: 0,
            acknowledged_ms: None,
        }
    }

    #[test]
    fn one_rule_for_every_state() {
        use CoverageState::{None as NoEvents, Ok, Silent};
        use IncidentState::*;
        let table = [
            (Ok, 0, 0, None, 0),
            (Ok, 0, 131, None, 0),
            (Ok, 0, 131, Some(Resolved), 0),
            (Ok, 0, 0, Some(Open), 1),
            (Ok, 0, 0, Some(Acknowledged), 1),
            (Ok, 2, 0, None, 1),
            (Silent, 2, 0, Some(Open), 3),
            (Silent, 0, 0, None, 3),
            (NoEvents, 0, 0, None, 3),
        ];
        for (state, missed, pending, incident_state, expected) in table {
            let board = board(state, missed, pending);
            let incidents: Vec<Incident> = incident_state.into_iter().map(incident).collect();
            assert_eq!(
                verdict(&board, &incidents).exit_code(),
                expected,
                "{state:?} missed {missed} pending {pending} {incident_state:?}"
            );
        }
    }

    #[test]
    fn the_summary_counts_in_words() {
        let one = [incident(IncidentState::Open)];
        assert_eq!(
            summary(&board(CoverageState::Ok, 0, 1), &one),
            "1 event pending; 1 unresolved incident"
        );
        assert_eq!(
            summary(&board(CoverageState::Ok, 0, 131), &[]),
            "131 events pending; 0 unresolved incidents"
        );
    }
}
