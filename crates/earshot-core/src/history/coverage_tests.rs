//! The silence rule on its own: each evidence, their order, and no false
//! alarm where the observer's pace cannot tell.

use super::*;

const MIN: i64 = 60_000;
/// A fixed time, on a whole hour.
const T0: i64 = 500_000 * 3_600_000;

/// One event every `every_ms` for the hour before `T0`, the last at `T0`.
fn steady(every_ms: i64) -> ObserverFacts {
    let count = 3_600_000 / every_ms + 1;
    ObserverFacts {
        last_event_ms: Some(T0),
        hour_before: (count, Some(T0 - (count - 1) * every_ms)),
        ..ObserverFacts::default()
    }
}

#[test]
fn a_gap_longer_than_ten_intervals_and_the_floor_is_silence() {
    let facts = steady(2_000);
    // 60 s floor wins over 10 × 2 s.
    assert_eq!(silence(&facts, T0 + MIN, SILENT_AFTER_MS), None);
    let evidence = silence(&facts, T0 + MIN + 1, SILENT_AFTER_MS);
    assert_eq!(evidence, Some(Evidence::Quiet { interval_ms: 2_000 }));
    let words = evidence.unwrap().words(T0, T0 + 4 * MIN);
    assert_eq!(
        words,
        "no event filed for 4 min; the hour before brought one every 2 s"
    );
    // One every 30 s: 10 intervals are 5 min, more than the floor.
    let slower = steady(30_000);
    assert_eq!(silence(&slower, T0 + 5 * MIN, SILENT_AFTER_MS), None);
    assert!(silence(&slower, T0 + 5 * MIN + 1, SILENT_AFTER_MS).is_some());
    // A lowered floor (tests of the binary) lets the pace decide alone.
    assert_eq!(silence(&facts, T0 + 20_000, 1_000), None);
    assert!(silence(&facts, T0 + 20_001, 1_000).is_some());
}

#[test]
fn low_traffic_never_raises_a_false_alarm() {
    // Nine events in the hour before the last: the pace tells nothing,
    // however long the gap.
    let facts = ObserverFacts {
        last_event_ms: Some(T0),
        hour_before: (PACE_MIN_EVENTS - 1, Some(T0 - 50 * MIN)),
        ..ObserverFacts::default()
    };
    assert_eq!(silence(&facts, T0 + 24 * 60 * MIN, SILENT_AFTER_MS), None);
    // Ten in the hour, one every 6 min: quiet for less than an hour is fine.
    let sparse = steady(6 * MIN);
    assert_eq!(silence(&sparse, T0 + 60 * MIN, SILENT_AFTER_MS), None);
    // No event ever: nothing to be silent since.
    assert_eq!(silence(&ObserverFacts::default(), T0, 1), None);
}

#[test]
fn attempts_it_never_filed_are_the_strongest_evidence_its_own_first() {
    let mut facts = ObserverFacts {
        last_event_ms: Some(T0),
        hour_before: (1, Some(T0)),
        own_attempt_ms: Some(T0 + MIN),
        newest_unobserved_ms: Some(T0 + MIN),
    };
    // Within the grace: not yet.
    assert_eq!(silence(&facts, T0 + 5 * MIN, SILENT_AFTER_MS), None);
    facts.newest_unobserved_ms = Some(T0 + 3 * MIN);
    facts.own_attempt_ms = Some(T0 + 2 * MIN);
    let own = silence(&facts, T0 + 5 * MIN, SILENT_AFTER_MS);
    assert_eq!(
        own,
        Some(Evidence::OwnAttempt {
            at_ms: T0 + 2 * MIN
        })
    );
    assert!(
        own.unwrap()
            .words(T0, T0 + 5 * MIN)
            .starts_with("the platform tried its own subscription at "),
    );
    facts.own_attempt_ms = None;
    let other = silence(&facts, T0 + 5 * MIN, SILENT_AFTER_MS);
    assert_eq!(
        other,
        Some(Evidence::Unfiled {
            at_ms: T0 + 3 * MIN
        })
    );
    assert!(
        other
            .unwrap()
            .words(T0, T0)
            .contains("3 min after its last one")
    );
}
