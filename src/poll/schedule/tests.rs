//! The scheduler's unit tests: cadence, priority, limits and learning,
//! driven in simulated time.

use super::*;
use proptest::prelude::*;

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
fn terminal_jobs_are_never_polled_again() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    let ids = ids(20);
    for (i, id) in ids.iter().enumerate() {
        scheduler.add_job(id, with_audio(40 + 20 * i as u64), Tick::ZERO);
    }
    // Job i finishes (completed or error) at 10 + 5·i seconds.
    let finish = |id: &str| 10.0 + 5.0 * id["job-".len()..].parse::<f64>().unwrap();
    let polls = drive(&mut scheduler, Tick::ZERO, t(600.0), |id, now| {
        if now >= t(finish(id)) {
            let terminal = if id.ends_with('3') {
                TranscriptStatus::Error
            } else {
                TranscriptStatus::Completed
            };
            status(terminal)
        } else {
            processing()
        }
    });
    for id in &ids {
        let seen_done = polls_of(&polls, id)
            .filter(|&at| at >= t(finish(id)))
            .count();
        assert_eq!(seen_done, 1, "{id} polled {seen_done} times once finished");
    }
    assert!(scheduler.all_done());
    assert_eq!(scheduler.next(t(601.0)), Decision::Idle);
    assert!(scheduler.jobs().iter().all(|job| job.next_poll.is_none()));
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
fn finished_jobs_beyond_keep_finished_are_forgotten_oldest_first() {
    // The console watches jobs that never stop coming (the demo submits
    // three a second): what it remembers of finished ones stays bounded.
    let config = SchedulerConfig {
        keep_finished: Some(3),
        ..SchedulerConfig::default()
    };
    let mut scheduler = Scheduler::new(config, Tick::ZERO);
    for (i, id) in ids(10).iter().enumerate() {
        scheduler.add_job(id, JobHint::default(), t(i as f64));
    }
    let mut changes = 0;
    for (i, id) in ids(10).iter().enumerate() {
        let done = scheduler.on_webhook(id, TranscriptStatus::Completed, t(20.0 + i as f64));
        changes += usize::from(done.is_some());
    }
    assert_eq!(changes, 10, "every completion is still reported");
    let kept: Vec<String> = scheduler.jobs().into_iter().map(|view| view.id).collect();
    assert_eq!(kept, ids(10)[7..].to_vec());
    assert!(scheduler.job(&ids(10)[0]).is_none());
    // Without a bound (`jobs watch`), every finished job stays for the
    // summary.
    let mut keep_all = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ids(10) {
        keep_all.add_job(&id, JobHint::default(), Tick::ZERO);
        keep_all.on_webhook(&id, TranscriptStatus::Completed, t(1.0));
    }
    assert_eq!(keep_all.jobs().len(), 10);
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

#[test]
fn a_webhook_changes_the_status_without_a_request() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    let view = scheduler
        .on_webhook("a", TranscriptStatus::Completed, t(3.0))
        .expect("a change");
    assert_eq!(view.status, Some(TranscriptStatus::Completed));
    assert_eq!(view.finished_at, Some(t(3.0)));
    assert_eq!(view.polls, 0);
    assert_eq!(scheduler.requests_sent(), 0);
    assert_eq!(scheduler.next(t(3.0)), Decision::Idle);
    // The same news twice is no change; unknown ids are ignored.
    assert_eq!(
        scheduler.on_webhook("a", TranscriptStatus::Completed, t(4.0)),
        None
    );
    assert_eq!(
        scheduler.on_webhook("zz", TranscriptStatus::Completed, t(4.0)),
        None
    );
}

#[test]
fn an_answer_older_than_a_webhook_does_not_undo_it() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("a".into()));
    scheduler.on_webhook("a", TranscriptStatus::Completed, t(0.5));
    assert_eq!(scheduler.on_outcome("a", processing(), t(0.6)), None);
    assert_eq!(
        scheduler.job("a").unwrap().status,
        Some(TranscriptStatus::Completed)
    );
    assert!(scheduler.all_done());
}

#[test]
fn idle_when_there_is_nothing_to_poll() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Idle);
    assert!(scheduler.all_done());
    scheduler.add_job("a", JobHint::default(), t(1.0));
    assert!(!scheduler.all_done());
    assert_eq!(scheduler.next(t(1.0)), Decision::Poll("a".into()));
    let view = scheduler.on_outcome("a", status(TranscriptStatus::Error), t(1.2));
    assert_eq!(view.unwrap().status, Some(TranscriptStatus::Error));
    assert_eq!(scheduler.next(t(2.0)), Decision::Idle);
    assert!(scheduler.all_done());
}

#[test]
fn adding_a_job_twice_changes_nothing_but_missing_hints() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    scheduler.add_job("a", with_audio(60), t(1.0));
    let jobs = scheduler.jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].added_at, Tick::ZERO);
    assert_eq!(scheduler.next(t(1.0)), Decision::Poll("a".into()));
    scheduler.on_outcome("a", processing(), t(1.0));
    // 60 s of audio: expected after about 15 s.
    let eta = scheduler.job("a").unwrap().eta.unwrap();
    assert!(eta > t(10.0) && eta < t(20.0), "{eta:?}");
}

#[test]
fn a_removed_job_is_not_polled() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    scheduler.add_job("b", JobHint::default(), Tick::ZERO);
    scheduler.remove_job("a");
    let polls = drive(&mut scheduler, Tick::ZERO, t(60.0), |_, _| processing());
    assert!(polls.iter().all(|(_, id)| id == "b"));
    assert_eq!(scheduler.jobs().len(), 1);
    scheduler.remove_job("b");
    assert_eq!(scheduler.next(t(61.0)), Decision::Idle);
}

#[test]
fn jobs_show_stale_when_not_seen_for_a_while() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    assert!(!scheduler.job_at("a", t(29.0)).unwrap().stale);
    assert!(scheduler.job_at("a", t(31.0)).unwrap().stale);
    scheduler.on_webhook("a", TranscriptStatus::Processing, t(40.0));
    assert!(!scheduler.job_at("a", t(50.0)).unwrap().stale);
    assert!(scheduler.job_at("a", t(71.0)).unwrap().stale);
}

#[test]
fn polls_cluster_around_the_expected_completion() {
    // As after learning: a ratio known to about 10%.
    let config = SchedulerConfig {
        prior_spread: 0.1,
        ..SchedulerConfig::default()
    };
    let mut scheduler = Scheduler::new(config, Tick::ZERO);
    // 40 min of audio: expected to take about 10 min.
    scheduler.add_job("a", with_audio(2_400), Tick::ZERO);
    let polls = drive(&mut scheduler, Tick::ZERO, t(1_500.0), |_, _| processing());
    let eta = scheduler.job("a").unwrap().eta.unwrap().as_secs_f64();
    assert!((500.0..700.0).contains(&eta), "{eta}");
    let count = |from: f64, to: f64| {
        polls_of(&polls, "a")
            .filter(|&at| at >= t(from) && at < t(to))
            .count()
    };
    let early = count(60.0, 180.0);
    let near = count(eta - 60.0, eta + 60.0);
    assert!(
        near > 3 * early,
        "{near} near the expected end, {early} early"
    );
    // Still polled now and then early on, and never more than the window.
    assert!(early >= 4, "{early}");
    assert!(near <= 100);
}

#[test]
fn a_job_of_unknown_audio_is_polled_in_step_with_its_running_time() {
    // No audio duration: a short job is seen finishing within a tenth
    // of its processing time, not at the cadence of the typical one.
    for (end, within) in [(5.3, 0.8), (40.0, 4.5)] {
        let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
        scheduler.add_job("a", JobHint::default(), Tick::ZERO);
        let polls = drive(&mut scheduler, Tick::ZERO, t(end + 60.0), |_, at| {
            if at >= t(end) {
                status(TranscriptStatus::Completed)
            } else {
                processing()
            }
        });
        let seen = polls.last().unwrap().0.as_secs_f64();
        assert!(seen - end <= within, "ended at {end}, seen at {seen}");
    }
}

#[test]
fn queued_jobs_back_off() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    let polls = drive(&mut scheduler, Tick::ZERO, t(600.0), |_, _| {
        status(TranscriptStatus::Queued)
    });
    let times: Vec<f64> = polls.iter().map(|(at, _)| at.as_secs_f64()).collect();
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] < 3.0, "{gaps:?}");
    assert!(gaps.last().unwrap() > &(5.0 * gaps[0]), "{gaps:?}");
    // Spare budget keeps it fresh: never a gap beyond `max_interval`.
    assert!(gaps.iter().all(|&gap| gap <= 20.0 + 1e-6), "{gaps:?}");
}

#[test]
fn a_completion_gives_the_oldest_queued_job_a_poll_at_once() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ["running", "first", "second"] {
        scheduler.add_job(id, JobHint::default(), Tick::ZERO);
    }
    drive(&mut scheduler, Tick::ZERO, t(100.0), |id, _| {
        if id == "running" {
            processing()
        } else {
            status(TranscriptStatus::Queued)
        }
    });
    let now = t(100.0);
    // The running job finishes (a webhook says so, or a poll).
    scheduler.on_webhook("running", TranscriptStatus::Completed, now);
    assert_eq!(scheduler.next(now), Decision::Poll("first".into()));
    scheduler.on_outcome("first", processing(), now);
    // `second` is not boosted: it waits its turn.
    assert!(matches!(scheduler.next(now), Decision::WaitUntil(_)));
}

#[test]
fn jobs_behind_a_queued_one_are_taken_as_queued_without_a_request() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for id in ids(50) {
        scheduler.add_job(&id, JobHint::default(), Tick::ZERO);
    }
    assert_eq!(scheduler.next(Tick::ZERO), Decision::Poll("job-0".into()));
    scheduler.on_outcome("job-0", status(TranscriptStatus::Queued), Tick::ZERO);
    // The 49 jobs behind it need no first poll now.
    assert!(matches!(scheduler.next(Tick::ZERO), Decision::WaitUntil(_)));
    assert_eq!(scheduler.requests_sent(), 1);
    assert!(
        scheduler
            .jobs()
            .iter()
            .skip(1)
            .all(|job| job.next_poll.unwrap() > Tick::ZERO)
    );
}

#[test]
fn learns_the_ratio_from_the_jobs_it_watches() {
    // The platform takes half the audio duration, not the prior quarter.
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    let mut start = 0.0;
    let mut lags = Vec::new();
    for i in 0..30u64 {
        let audio = 20.0 + (i * 37 % 300) as f64;
        let id = format!("job-{i}");
        let now = t(start);
        let hint = JobHint {
            submitted_at: Some(now),
            audio_duration: Some(Duration::from_secs_f64(audio)),
        };
        scheduler.add_job(&id, hint, now);
        let end = start + 0.5 * audio;
        let polls = drive(&mut scheduler, now, t(end + 200.0), |_, at| {
            if at >= t(end) {
                status(TranscriptStatus::Completed)
            } else {
                processing()
            }
        });
        let seen = polls.last().unwrap().0.as_secs_f64();
        lags.push(seen - end);
        start = seen + 1.0;
    }
    let ratio = scheduler.learned_ratio();
    assert!((ratio - 0.5).abs() < 0.03, "learned {ratio}");
    let expected = scheduler.expected_processing(Duration::from_secs(200));
    assert!((expected.as_secs_f64() - 100.0).abs() < 5.0, "{expected:?}");
    // Once learned, completions are seen within a second.
    assert!(lags[20..].iter().all(|&lag| lag < 1.0), "{lags:?}");
}

#[test]
fn the_same_seed_gives_the_same_decisions() {
    let run = |seed: u64| {
        let config = SchedulerConfig {
            seed,
            ..SchedulerConfig::default()
        };
        let mut scheduler = Scheduler::new(config, Tick::ZERO);
        for (i, id) in ids(30).iter().enumerate() {
            scheduler.add_job(id, with_audio(30 + i as u64 * 10), Tick::ZERO);
        }
        let mut count = 0u32;
        drive(&mut scheduler, Tick::ZERO, t(300.0), |_, _| {
            count += 1;
            if count.is_multiple_of(7) {
                PollOutcome::NetworkError
            } else {
                processing()
            }
        })
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn an_unsafe_configuration_is_clamped() {
    let config = SchedulerConfig {
        per_job_per_minute: 1_000,
        account_budget: 0,
        account_burst: 500,
        utilisation: f64::NAN,
        ..SchedulerConfig::default()
    };
    let scheduler = Scheduler::new(config, Tick::ZERO);
    assert_eq!(scheduler.config().per_job_per_minute, 59);
    assert_eq!(scheduler.config().account_budget, 1);
    assert_eq!(scheduler.config().account_burst, 1);
    assert!(scheduler.config().utilisation > 0.0);
}
