//! The scheduler's unit tests: cadence, priority, limits and learning,
//! driven in simulated time.
//! This module holds the helpers the subjects share (simulated time,
//! outcomes, driving the scheduler); each subject is a submodule.

mod cadence;
mod failures;
mod lifecycle;
mod limits;
mod priority;

use super::*;

fn t(seconds: f64) -> Tick {
    Duration::from_secs_f64(seconds)
}

fn processing() -> PollOutcome {
    PollOutcome::Status {
        status: TranscriptStatus::Processing,
    }
}

fn status(status: TranscriptStatus) -> PollOutcome {
    PollOutcome::Status { status }
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("job-{i}")).collect()
}

/// Runs the scheduler from `start` to `end`, answering every poll with
/// `answer`; returns the polls sent.
fn drive(
    scheduler: &mut Scheduler,
    start: Tick,
    end: Tick,
    mut answer: impl FnMut(&str, Tick) -> PollOutcome,
) -> Vec<(Tick, String)> {
    let mut now = start;
    let mut polls = Vec::new();
    for _ in 0..10_000_000 {
        if now > end {
            return polls;
        }
        match scheduler.next(now) {
            Decision::Poll(id) => {
                let outcome = answer(&id, now);
                scheduler.on_outcome(&id, outcome, now);
                polls.push((now, id));
            }
            Decision::WaitUntil(at) => {
                assert!(at > now, "asked to wait until {at:?} at {now:?}");
                now = at;
            }
            Decision::Idle => return polls,
        }
    }
    panic!("the scheduler never settled");
}

/// Largest number of `times` (sorted) in any window `(t - window, t]`.
fn max_in_any_window(times: &[Tick], window: Duration) -> usize {
    let mut best = 0;
    let mut start = 0;
    for (end, &at) in times.iter().enumerate() {
        while times[start] + window <= at {
            start += 1;
        }
        best = best.max(end + 1 - start);
    }
    best
}

fn polls_of<'a>(polls: &'a [(Tick, String)], id: &'a str) -> impl Iterator<Item = Tick> + 'a {
    polls
        .iter()
        .filter(move |(_, polled)| polled == id)
        .map(|&(at, _)| at)
}

fn with_audio(seconds: u64) -> JobHint {
    JobHint {
        submitted_at: None,
        audio_duration: Some(Duration::from_secs(seconds)),
    }
}

/// Like [`drive`], but every answer comes back `round_trip` after its poll,
/// so many polls can be in flight at once (as in the watcher).
fn drive_with_round_trip(
    scheduler: &mut Scheduler,
    end: Tick,
    round_trip: Duration,
    mut answer: impl FnMut(&str, Tick) -> PollOutcome,
) -> Vec<(Tick, String)> {
    let mut now = Tick::ZERO;
    let mut polls = Vec::new();
    let mut in_flight: Vec<(Tick, String, PollOutcome)> = Vec::new();
    while now <= end {
        let mut wait = None;
        while wait.is_none() {
            match scheduler.next(now) {
                Decision::Poll(id) => {
                    // The platform answers from the middle of the round trip.
                    let outcome = answer(&id, now + round_trip / 2);
                    polls.push((now, id.clone()));
                    in_flight.push((now + round_trip, id, outcome));
                }
                Decision::WaitUntil(at) => wait = Some(at),
                Decision::Idle if in_flight.is_empty() => return polls,
                Decision::Idle => wait = Some(end),
            }
        }
        let arrival = in_flight.iter().map(|(at, _, _)| *at).min();
        now = arrival.map_or(wait.unwrap_or(end), |arrival| {
            arrival.min(wait.unwrap_or(end))
        });
        let (due, later) = in_flight.into_iter().partition(|(at, _, _)| *at <= now);
        in_flight = later;
        for (_, id, outcome) in due {
            scheduler.on_outcome(&id, outcome, now);
        }
        if arrival.is_none() && wait.is_none_or(|at| at > end) {
            return polls;
        }
    }
    polls
}
