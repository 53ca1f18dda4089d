//! Failures other than limits: network errors and polls never answered
//! back off with jitter and show stale; a 404 backs off and keeps the job.

use super::*;

#[test]
fn network_errors_back_off_with_jitter_and_show_stale() {
    let delays = |seed: u64| {
        let config = SchedulerConfig {
            seed,
            ..SchedulerConfig::default()
        };
        let mut scheduler = Scheduler::new(config, Tick::ZERO);
        scheduler.add_job("a", JobHint::default(), Tick::ZERO);
        let polls = drive(&mut scheduler, Tick::ZERO, t(600.0), |_, _| {
            PollOutcome::NetworkError
        });
        let view = scheduler.job("a").unwrap();
        assert!(view.stale);
        assert_eq!(view.problem, Some(JobProblem::NetworkError));
        assert_eq!(view.error_streak as usize, polls.len());
        assert_eq!(view.last_seen, None);
        let times: Vec<f64> = polls.iter().map(|(at, _)| at.as_secs_f64()).collect();
        times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<f64>>()
    };
    let first = delays(1);
    // 1 s doubling to 60 s, each between half and all of it.
    for (i, delay) in first.iter().enumerate() {
        let nominal = (2f64.powi(i as i32)).min(60.0);
        assert!(
            *delay >= nominal / 2.0 - 1e-6 && *delay <= nominal + 1e-6,
            "retry {i}: {delay} s"
        );
    }
    assert!(first.len() > 10);
    assert_ne!(first, delays(2), "no jitter");
    assert_eq!(first, delays(1), "not deterministic");
}

#[test]
fn not_found_backs_off_and_keeps_the_job() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    let polls = drive(&mut scheduler, Tick::ZERO, t(30.0), |_, at| {
        if at < t(10.0) {
            PollOutcome::NotFound
        } else {
            processing()
        }
    });
    assert!(polls.len() >= 4);
    let view = scheduler.job("a").unwrap();
    assert_eq!(view.status, Some(TranscriptStatus::Processing));
    assert_eq!(view.error_streak, 0);
    assert_eq!(view.problem, None);
}

#[test]
fn a_poll_never_answered_counts_as_a_network_error() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("a".into()));
    // Waiting for the answer until the request times out.
    assert_eq!(scheduler.next(t(1.0)), Decision::WaitUntil(t(60.0)));
    let Decision::WaitUntil(retry) = scheduler.next(t(60.0)) else {
        panic!("polled again without backing off");
    };
    assert!(retry > t(60.0) && retry <= t(61.0));
    let view = scheduler.job("a").unwrap();
    assert_eq!(view.problem, Some(JobProblem::NoAnswer));
    assert!(view.stale);
    assert_eq!(scheduler.next(retry), Decision::Poll("a".into()));
}
