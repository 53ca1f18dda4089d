//! Who goes next when the budget is short: focused jobs first, then the
//! oldest information; spare budget shared evenly among running jobs.

use super::*;

#[test]
fn spare_budget_polls_running_jobs_at_an_even_share_counted_from_sending() {
    // Five jobs of unknown length run for minutes; the budget (6 requests a
    // second) could poll each more often than the per-job limit allows, so
    // each is polled at that limit (50 a minute: every 1.2 s), the gap
    // counted from one sending to the next whatever the round trip.
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ids(5) {
        scheduler.add_job(&id, JobHint::default(), Tick::ZERO);
    }
    let polls = drive_with_round_trip(
        &mut scheduler,
        t(300.0),
        Duration::from_millis(300),
        |_, _| processing(),
    );
    for id in ids(5) {
        let times: Vec<f64> = polls
            .iter()
            .filter(|(at, polled)| *polled == id && *at > t(120.0))
            .map(|(at, _)| at.as_secs_f64())
            .collect();
        let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_by(f64::total_cmp);
        let median = gaps[gaps.len() / 2];
        assert!((1.15..1.3).contains(&median), "{id}: median gap {median}");
    }
}
#[test]
fn focused_jobs_go_first_when_the_budget_is_short() {
    // 30 requests per 5 minutes for 40 jobs: far too few.
    let config = SchedulerConfig {
        account_budget: 30,
        account_burst: 1,
        ..SchedulerConfig::default()
    };
    let mut scheduler = Scheduler::new(config, Tick::ZERO);
    let ids = ids(40);
    for id in &ids {
        scheduler.add_job(id, JobHint::default(), Tick::ZERO);
    }
    let focus = vec!["job-37".to_owned(), "job-38".to_owned()];
    scheduler.set_focus(&focus);
    let polls = drive(&mut scheduler, Tick::ZERO, t(600.0), |_, _| processing());
    // First polled before the 37 jobs added before them...
    assert_eq!(polls[0].1, "job-37");
    assert_eq!(polls[1].1, "job-38");
    // ...and polled far more often than the rest.
    let focused: usize = focus.iter().map(|id| polls_of(&polls, id).count()).sum();
    assert!(focused * 2 > polls.len(), "{focused} of {}", polls.len());
    assert!(scheduler.job("job-37").unwrap().focused);
}

#[test]
fn the_oldest_information_goes_next() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ["a", "b", "c"] {
        scheduler.add_job(id, JobHint::default(), Tick::ZERO);
    }
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("a".into()));
    scheduler.on_outcome("a", processing(), Tick::ZERO);
    assert_eq!(scheduler.next(t(1.0)), Decision::Poll("b".into()));
    scheduler.on_outcome("b", processing(), t(1.0));
    assert_eq!(scheduler.next(t(2.0)), Decision::Poll("c".into()));
    // A 403 holds everything back while every job comes due...
    scheduler.on_outcome("c", PollOutcome::AccountLimited, t(2.0));
    // ...and a webhook refreshes a.
    scheduler.on_webhook("a", TranscriptStatus::Processing, t(10.0));
    let Pause::AccountLimited { until, .. } = scheduler.pause() else {
        panic!("not paused");
    };
    let mut order = Vec::new();
    for _ in 0..3 {
        let Decision::Poll(id) = scheduler.next(until) else {
            panic!("nothing to poll");
        };
        scheduler.on_outcome(&id, processing(), until);
        order.push(id);
    }
    // c never seen, b seen at 1 s, a at 10 s.
    assert_eq!(order, ["c", "b", "a"]);
}

#[test]
fn focus_beats_older_information() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ["a", "b", "c"] {
        scheduler.add_job(id, JobHint::default(), Tick::ZERO);
    }
    for id in ["a", "b", "c"] {
        assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll(id.into()));
    }
    scheduler.on_outcome("a", processing(), Tick::ZERO);
    scheduler.on_outcome("b", processing(), Tick::ZERO);
    scheduler.on_outcome("c", PollOutcome::AccountLimited, t(5.0));
    scheduler.set_focus(&["c".to_owned()]);
    let Pause::AccountLimited { until, .. } = scheduler.pause() else {
        panic!("not paused");
    };
    assert_eq!(scheduler.next(until), Decision::Poll("c".into()));
}
