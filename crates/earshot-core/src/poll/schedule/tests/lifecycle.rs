//! A job's life in the scheduler: terminal jobs never polled again,
//! webhooks changing the status without a request (and not undone by an
//! older answer), the moments an observation proves a state, adding twice, removing, idling, showing stale, and
//! forgetting finished jobs beyond `keep_finished`.

use super::*;

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

/// A poll's answer proves its status at some moment between the sending
/// and the answer: a state is proven until the sending of the last poll
/// that saw it, counted from the answer of the first.
#[test]
fn a_state_is_proven_from_the_first_answer_to_the_last_sending() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    scheduler.add_job("a", JobHint::default(), Tick::ZERO);
    let poll = |scheduler: &mut Scheduler, sent: f64, answered: f64, outcome| {
        let decision = scheduler.next(t(sent));
        assert_eq!(decision, Decision::Poll("a".into()), "due at {sent} s");
        scheduler.on_outcome("a", outcome, t(answered));
        scheduler.job("a").expect("watched")
    };
    let view = poll(&mut scheduler, 0.0, 0.4, status(TranscriptStatus::Queued));
    assert_eq!(
        (view.queued_since, view.queued_until),
        (Some(t(0.4)), Some(t(0.0)))
    );
    let next = view.next_poll.expect("due again");
    let view = poll(&mut scheduler, secs(next), secs(next) + 0.3, processing());
    assert_eq!(view.processing_since, Some(next + t(0.3)));
    assert_eq!(view.processing_until, Some(next), "one poll proves no span");
    assert_eq!(view.queued_until, Some(t(0.0)), "kept");
    let again = view.next_poll.expect("due again");
    let view = poll(&mut scheduler, secs(again), secs(again) + 0.3, processing());
    assert_eq!(view.processing_since, Some(next + t(0.3)));
    assert_eq!(view.processing_until, Some(again));
    // A webhook proves its status when it arrives.
    let view = scheduler
        .on_webhook("a", TranscriptStatus::Completed, again + t(2.0))
        .expect("a change");
    assert_eq!(view.processing_until, Some(again));
    assert_eq!(view.finished_at, Some(again + t(2.0)));
}

fn secs(tick: Tick) -> f64 {
    tick.as_secs_f64()
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

/// A watch that runs for days adds and forgets jobs without end: the
/// forgotten ones' slots go, the live ones keep theirs and their order.
#[test]
fn forgotten_jobs_leave_no_slot_behind() {
    let mut scheduler = Scheduler::new(SchedulerConfig::default(), Tick::ZERO);
    for n in 0..10_000 {
        scheduler.add_job(&format!("job-{n}"), JobHint::default(), Tick::ZERO);
        if n >= 3 {
            scheduler.remove_job(&format!("job-{}", n - 3));
        }
    }
    assert_eq!(scheduler.jobs.kept(), 3, "slots of forgotten jobs kept");
    let ids: Vec<String> = scheduler.jobs().into_iter().map(|job| job.id).collect();
    assert_eq!(ids, ["job-9997", "job-9998", "job-9999"]);
    scheduler.remove_job("job-9998");
    assert_eq!(scheduler.jobs.kept(), 3, "a hole between live jobs stays");
    scheduler.remove_job("job-9997");
    assert_eq!(scheduler.jobs.kept(), 1);
    let polls = drive(&mut scheduler, Tick::ZERO, t(60.0), |_, _| processing());
    assert!(polls.iter().all(|(_, id)| id == "job-9999"), "{polls:?}");
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
fn an_endless_watch_keeping_finished_jobs_never_grows_its_index() {
    let keep = 1_000;
    let config = SchedulerConfig {
        keep_finished: Some(keep),
        ..SchedulerConfig::default()
    };
    let mut scheduler = Scheduler::new(config, Tick::ZERO);
    let (index, finished) = (scheduler.index.capacity(), scheduler.finished.capacity());
    // A tenth as many running as kept, each finished job replaced by a new
    // one, ten times over.
    let in_flight = keep / 10;
    let id = |n: usize| format!("job-{n}");
    for n in 0..11 * keep {
        let at = t(n as f64);
        scheduler.add_job(&id(n), JobHint::default(), at);
        if n >= in_flight {
            scheduler.on_webhook(&id(n - in_flight), TranscriptStatus::Completed, at);
        }
    }
    assert_eq!(scheduler.index.len(), keep + in_flight);
    // A table's capacity dips while removed keys hold slots and comes back
    // when it rehashes in place; it only passes the first when it grew.
    assert!(scheduler.index.capacity() <= index, "the index grew");
    assert_eq!(scheduler.finished.capacity(), finished);
}
