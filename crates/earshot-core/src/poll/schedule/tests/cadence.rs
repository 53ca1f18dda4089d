//! Cadence and the model: polls clustered around the expected completion,
//! unknown audio polled in step with its running time, the queue (backoff,
//! FIFO, jobs behind a queued one), learning the ratio, determinism from
//! the seed, and clamping an unsafe configuration.

use super::*;

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
