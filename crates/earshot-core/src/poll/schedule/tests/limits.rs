//! Limits: the per-job and account windows (property tests), the default
//! share, `Retry-After` and the 429s it saves, a lower platform limit, and
//! the account-wide 403 pause with its backoff.

use super::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn per_job_window_is_never_exceeded(
        per_job in 1u32..80,
        jobs in 1usize..6,
        audio in proptest::collection::vec(1u64..900, 6),
        focus in any::<bool>(),
        min_gap_ms in 1u64..500,
        failures in proptest::collection::vec(0u8..12, 1..40),
    ) {
        let config = SchedulerConfig {
            per_job_per_minute: per_job,
            min_gap: Duration::from_millis(min_gap_ms),
            ..SchedulerConfig::default()
        };
        let limit = config.per_job_per_minute.clamp(1, 59) as usize;
        let mut scheduler = Scheduler::new(config, Tick::ZERO);
        let ids = ids(jobs);
        for (id, &audio) in ids.iter().zip(&audio) {
            scheduler.add_job(id, with_audio(audio), Tick::ZERO);
        }
        if focus {
            scheduler.set_focus(&ids);
        }
        // Never finishes: the scheduler polls as much as it may, through
        // failures of every kind.
        let mut answers = failures.iter().cycle();
        let polls = drive(&mut scheduler, Tick::ZERO, t(900.0), |_, _| {
            match answers.next() {
                Some(0) => PollOutcome::NetworkError,
                Some(1) => PollOutcome::RateLimited {
                    retry_after: Duration::from_secs(1),
                },
                Some(2) => PollOutcome::NotFound,
                Some(3) => status(TranscriptStatus::Queued),
                _ => processing(),
            }
        });
        for id in &ids {
            let times: Vec<Tick> = polls_of(&polls, id).collect();
            prop_assert!(max_in_any_window(&times, Duration::from_secs(60)) <= limit);
        }
    }

    #[test]
    fn account_window_is_never_exceeded(
        budget in 20u32..400,
        burst in 1u32..50,
        jobs in 1usize..120,
    ) {
        let config = SchedulerConfig {
            account_budget: budget,
            account_burst: burst,
            ..SchedulerConfig::default()
        };
        let mut scheduler = Scheduler::new(config, Tick::ZERO);
        let ids = ids(jobs);
        for id in &ids {
            scheduler.add_job(id, JobHint::default(), Tick::ZERO);
        }
        scheduler.set_focus(&ids[..jobs.min(5)]);
        let polls = drive(&mut scheduler, Tick::ZERO, t(1_200.0), |_, _| processing());
        let times: Vec<Tick> = polls.iter().map(|&(at, _)| at).collect();
        prop_assert!(max_in_any_window(&times, Duration::from_secs(300)) <= budget as usize);
    }
}

#[test]
fn default_share_stays_within_2000_per_5_minutes_with_5000_jobs() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    let ids = ids(5_000);
    for id in &ids {
        scheduler.add_job(id, with_audio(600), Tick::ZERO);
    }
    let polls = drive(&mut scheduler, Tick::ZERO, t(1_500.0), |_, _| processing());
    let times: Vec<Tick> = polls.iter().map(|&(at, _)| at).collect();
    let most = max_in_any_window(&times, Duration::from_secs(300));
    assert!(most <= 2_000, "{most} requests in one 5-minute window");
    // And it does use its share.
    assert!(most >= 1_800, "only {most} requests in the busiest window");
    let (used, budget) = scheduler.budget_used(t(1_500.0));
    assert!(used <= budget);
    assert_eq!(scheduler.requests_sent(), polls.len() as u64);
}
#[test]
fn retry_after_is_obeyed_for_that_job() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    scheduler.add_job("b", JobHint::default(), Tick::ZERO);
    let mut limited = false;
    let polls = drive(&mut scheduler, Tick::ZERO, t(120.0), |id, _| {
        if id == "a" && !limited {
            limited = true;
            PollOutcome::RateLimited {
                retry_after: Duration::from_secs(17),
            }
        } else {
            processing()
        }
    });
    let a: Vec<Tick> = polls_of(&polls, "a").collect();
    assert_eq!(a[0], Tick::ZERO);
    assert!(a[1] >= t(17.0), "polled again at {:?}", a[1]);
    // The other job is not held back.
    assert!(polls_of(&polls, "b").filter(|&at| at < t(17.0)).count() > 1);
}

#[test]
fn after_a_429_no_job_is_refused_again_for_the_same_cause() {
    // The platform allows 20 polls per job-minute (`--poll-limit 20`),
    // counting only the polls it lets through; earshot believes 50.
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    let ids = ids(5);
    for id in &ids {
        scheduler.add_job(id, JobHint::default(), Tick::ZERO);
    }
    let mut admitted: HashMap<String, Vec<Tick>> = HashMap::new();
    let mut refused = 0;
    drive(&mut scheduler, Tick::ZERO, t(600.0), |id, at| {
        let log = admitted.entry(id.to_owned()).or_default();
        log.retain(|&sent| sent + Duration::from_secs(60) > at);
        if log.len() >= 20 {
            refused += 1;
            let wait = log[0] + Duration::from_secs(60) - at;
            return PollOutcome::RateLimited {
                retry_after: Duration::from_secs(wait.as_secs_f64().ceil() as u64),
            };
        }
        log.push(at);
        processing()
    });
    assert_eq!(refused, 1, "one 429 for the whole watch");
    assert!(
        scheduler.per_job_limit() < 20,
        "{}",
        scheduler.per_job_limit()
    );
}
#[test]
fn a_job_polled_closely_at_first_is_never_locked_out_of_its_window() {
    // A job's first seconds are polled every 250 ms; at the even share it
    // then runs at the per-job limit. Without spreading what is left, the
    // window fills before the first minute ends and the job goes unpolled
    // until its first polls leave the window.
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    let polls = drive_with_round_trip(
        &mut scheduler,
        t(300.0),
        Duration::from_millis(100),
        |_, _| processing(),
    );
    let times: Vec<f64> = polls.iter().map(|(at, _)| at.as_secs_f64()).collect();
    let longest = times.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!(times.len() > 200, "{} polls", times.len());
    assert!(longest < 2.5, "longest gap {longest} s");
}

#[test]
fn a_lower_platform_limit_costs_one_429_even_with_every_job_in_step() {
    // Five jobs submitted together are polled in step, so their 21st polls
    // would all be in flight before the first 429 comes back: one job at a
    // time finds out whether the platform allows that many.
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ids(5) {
        scheduler.add_job(&id, JobHint::default(), Tick::ZERO);
    }
    let mut admitted: HashMap<String, Vec<Tick>> = HashMap::new();
    let mut refused = 0;
    let mut polls = 0;
    drive_with_round_trip(
        &mut scheduler,
        t(300.0),
        Duration::from_millis(100),
        |id, at| {
            polls += 1;
            let log = admitted.entry(id.to_owned()).or_default();
            log.retain(|&sent| sent + Duration::from_secs(60) > at);
            if log.len() >= 20 {
                refused += 1;
                return PollOutcome::RateLimited {
                    retry_after: Duration::from_secs(10),
                };
            }
            log.push(at);
            processing()
        },
    );
    assert!(polls > 5 * 20, "{polls} polls: the limit was never reached");
    assert_eq!(refused, 1, "one 429 for the account");
}

#[test]
fn a_429_after_one_poll_slows_that_job_only() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    assert!(matches!(scheduler.next(Tick::ZERO), Decision::Poll(_)));
    let limited = PollOutcome::RateLimited {
        retry_after: Duration::from_secs(1),
    };
    scheduler.on_outcome("a", limited, Tick::ZERO);
    assert_eq!(scheduler.per_job_limit(), 50);
}

#[test]
fn retry_after_shows_the_job_stale_with_its_retry_time() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("a".into()));
    let retry_after = Duration::from_secs(9);
    scheduler.on_outcome("a", PollOutcome::RateLimited { retry_after }, Tick::ZERO);
    let view = scheduler.job("a").unwrap();
    assert!(view.stale);
    assert_eq!(view.problem, Some(JobProblem::RateLimited));
    assert!(view.retry_at.unwrap() >= t(9.0));
    match scheduler.next(t(1.0)) {
        Decision::WaitUntil(at) => assert!(at >= t(9.0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn account_limit_pauses_everything_with_growing_backoff_and_resumes() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ids(5) {
        scheduler.add_job(&id, JobHint::default(), Tick::ZERO);
    }
    let mut now = Tick::ZERO;
    let mut pauses = Vec::new();
    for round in 0..7 {
        let Decision::Poll(id) = scheduler.next(now) else {
            panic!("round {round}: no poll at {now:?}");
        };
        scheduler.on_outcome(&id, PollOutcome::AccountLimited, now);
        let Pause::AccountLimited { until, backoff } = scheduler.pause() else {
            panic!("not paused");
        };
        assert!(until >= now + backoff && until <= now + backoff + backoff / 4);
        pauses.push(backoff.as_secs());
        assert_eq!(scheduler.pause_at(until), Pause::None);
        // Nothing goes out during the pause, whatever is due.
        for probe in [
            now + Duration::from_millis(1),
            until - Duration::from_millis(1),
        ] {
            assert_eq!(scheduler.next(probe), Decision::WaitUntil(until));
        }
        now = until;
    }
    assert_eq!(pauses, [30, 60, 120, 240, 300, 300, 300]);
    assert_eq!(scheduler.pauses(), 7);
    assert!(
        scheduler
            .jobs()
            .iter()
            .all(|job| job.stale || job.status.is_none())
    );
    // It resumes, and a good answer resets the back-off.
    let Decision::Poll(id) = scheduler.next(now) else {
        panic!("no poll after the pause");
    };
    assert_eq!(scheduler.pause(), Pause::None);
    scheduler.on_outcome(&id, processing(), now);
    let Decision::Poll(id) = scheduler.next(now) else {
        panic!("no poll after a good answer");
    };
    scheduler.on_outcome(&id, PollOutcome::AccountLimited, now);
    assert!(matches!(
        scheduler.pause(),
        Pause::AccountLimited { backoff, .. } if backoff == Duration::from_secs(30)
    ));
}

#[test]
fn a_403_to_a_request_sent_before_the_pause_does_not_double_it() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    scheduler.add_job("b", JobHint::default(), Tick::ZERO);
    // Both in flight, both refused.
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("a".into()));
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("b".into()));
    scheduler.on_outcome("a", PollOutcome::AccountLimited, t(0.1));
    scheduler.on_outcome("b", PollOutcome::AccountLimited, t(0.2));
    assert!(matches!(
        scheduler.pause(),
        Pause::AccountLimited { backoff, .. } if backoff == Duration::from_secs(30)
    ));
    assert_eq!(scheduler.pauses(), 1);
}
