//! The tokio driver of the job watcher: runs a [`Scheduler`] against the
//! real client and reports to any front end (the CLI, the console) over a
//! channel. The scheduler decides when and what to poll; this file only
//! sends the requests it asks for and feeds the answers back.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::Tick;
use super::hints::{self, Known};
use super::schedule::{
    Decision, JobHint, JobView, Pause, PollOutcome, Scheduler, SchedulerConfig, Spent,
};
use crate::api::types::prerecorded::{Transcript, TranscriptStatus};
use crate::api::{ApiError, Client};

/// Requests in flight at once; more due polls wait for one to finish.
const MAX_IN_FLIGHT: usize = 16;
/// Used when a 429 carries no usable `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// What the watcher tells its front end.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// A job's status changed; the record is there when it came from a poll.
    Changed {
        view: JobView,
        transcript: Option<Box<Transcript>>,
    },
    /// A poll found the job in the status it had: its `last_seen` and
    /// `queued_until` or `processing_until` moved on (sent for every such
    /// poll, so a front end knows how long each state surely lasted).
    Polled { view: JobView },
    /// A poll failed; the job stays watched (and shows stale if it lasts).
    PollFailed { id: String, message: String },
    /// The account limit answered 403: every poll is paused until `resume_in`.
    Paused { resume_in: Duration },
    /// Polling goes on after a pause.
    Resumed,
    /// Every watched job is `completed` or `error`.
    AllDone,
    /// Requests used of the account share in its window, after each
    /// answer, and what spent them.
    Budget {
        used: u32,
        budget: u32,
        spent: Spent,
    },
}

/// What a front end tells the watcher.
#[derive(Debug)]
pub enum Command {
    Add {
        id: String,
        hint: JobHint,
    },
    /// Add a job with what the front end knows in wall-clock time (a job
    /// earshot submitted: its submit time and audio duration).
    AddKnown {
        id: String,
        known: Known,
    },
    /// The jobs on screen: polled first when the budget is short.
    Focus(Vec<String>),
    /// A webhook said this job changed: no poll needed. A pushed `error`
    /// costs one GET, for the record's error message; any other status
    /// none.
    Webhook {
        id: String,
        status: TranscriptStatus,
    },
    /// Stop watching this job (e.g. the platform does not know it).
    Remove {
        id: String,
    },
    /// One job as the scheduler sees it now (`None` when not watched).
    View {
        id: String,
        reply: oneshot::Sender<Option<JobView>>,
    },
    /// Every job as the scheduler sees it now.
    Snapshot(oneshot::Sender<Vec<JobView>>),
    /// The front end sent a pre-recorded request of its own (an upload, a
    /// job creation): it counts against the account share too.
    OtherRequest,
    /// The processing time per second of audio learned so far.
    LearnedRatio(oneshot::Sender<f64>),
    Stop,
}

/// The front end's side: send commands, receive events.
pub struct Watcher {
    pub commands: mpsc::UnboundedSender<Command>,
    pub events: mpsc::UnboundedReceiver<WatchEvent>,
    pub task: JoinHandle<()>,
}

impl Watcher {
    /// One job as the scheduler sees it (`None` when it is not watched or
    /// the watcher has stopped).
    pub async fn view(&self, id: &str) -> Option<JobView> {
        let (reply, answer) = oneshot::channel();
        let id = id.to_owned();
        self.commands.send(Command::View { id, reply }).ok()?;
        answer.await.ok().flatten()
    }

    /// The processing time per second of audio learned from the records
    /// seen so far (`None` if the watcher has stopped).
    pub async fn learned_ratio(&self) -> Option<f64> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Command::LearnedRatio(reply)).ok()?;
        answer.await.ok()
    }

    /// Every job as the scheduler sees it (empty if the watcher has stopped).
    pub async fn snapshot(&self) -> Vec<JobView> {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::Snapshot(reply)).is_err() {
            return Vec::new();
        }
        answer.await.unwrap_or_default()
    }
}

/// Starts watching; jobs are added with [`Command::Add`].
pub fn spawn(client: Client, config: SchedulerConfig) -> Watcher {
    let (commands, command_rx) = mpsc::unbounded_channel();
    let (event_tx, events) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(client, config, command_rx, event_tx));
    Watcher {
        commands,
        events,
        task,
    }
}

/// One finished request, back from its task.
struct Answer {
    id: String,
    result: Result<Transcript, ApiError>,
}

async fn run(
    client: Client,
    config: SchedulerConfig,
    mut commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<WatchEvent>,
) {
    let epoch = Instant::now();
    let now = || epoch.elapsed();
    let mut scheduler = Scheduler::new(config, now());
    let (answer_tx, mut answers) = mpsc::unbounded_channel::<Answer>();
    // Records of jobs a webhook said failed, fetched for their message.
    let (pushed_tx, mut pushed_records) = mpsc::unbounded_channel::<Answer>();
    let mut in_flight: HashSet<String> = HashSet::new();
    let mut paused = false;
    let mut announced_done = false;
    // `all_done` is also true of an empty watch list: wait for a job.
    let mut has_jobs = false;
    loop {
        // Ask for polls while there is room for another request.
        let mut wake_at: Option<Tick> = None;
        while in_flight.len() < MAX_IN_FLIGHT {
            match scheduler.next(now()) {
                Decision::Poll(id) => {
                    if !in_flight.insert(id.clone()) {
                        // Already asked; look again when an answer is back.
                        break;
                    }
                    let (client, answer_tx) = (client.clone(), answer_tx.clone());
                    tokio::spawn(async move {
                        let result = client.get_transcript(&id).await;
                        let _ = answer_tx.send(Answer { id, result });
                    });
                }
                Decision::WaitUntil(at) => {
                    wake_at = Some(at);
                    break;
                }
                Decision::Idle => break,
            }
        }
        let done = has_jobs && scheduler.all_done() && in_flight.is_empty();
        if done && !announced_done {
            announced_done = true;
            if events.send(WatchEvent::AllDone).is_err() {
                return;
            }
        }
        let sleep = async {
            match wake_at {
                Some(at) => tokio::time::sleep(at.saturating_sub(now())).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                None | Some(Command::Stop) => return,
                Some(Command::Add { id, hint }) => {
                    scheduler.add_job(&id, hint, now());
                    has_jobs = true;
                    announced_done = false;
                }
                Some(Command::AddKnown { id, known }) => {
                    scheduler.add_job(&id, known.hint(epoch), now());
                    has_jobs = true;
                    announced_done = false;
                }
                Some(Command::Remove { id }) => scheduler.remove_job(&id),
                Some(Command::View { id, reply }) => {
                    let _ = reply.send(scheduler.job_at(&id, now()));
                }
                Some(Command::Focus(ids)) => scheduler.set_focus(&ids),
                Some(Command::LearnedRatio(reply)) => {
                    let _ = reply.send(scheduler.learned_ratio());
                }
                Some(Command::Snapshot(reply)) => {
                    let _ = reply.send(scheduler.jobs_at(now()));
                }
                Some(Command::OtherRequest) => {
                    scheduler.record_other_request(now());
                    let _ = events.send(budget_event(&scheduler, now()));
                }
                Some(Command::Webhook { id, status: TranscriptStatus::Error }) => {
                    // The push says it failed, not why: one GET for the
                    // message, counted in the budget; reported when back.
                    scheduler.record_other_request(now());
                    let (client, pushed_tx) = (client.clone(), pushed_tx.clone());
                    tokio::spawn(async move {
                        let result = client.get_transcript(&id).await;
                        let _ = pushed_tx.send(Answer { id, result });
                    });
                }
                Some(Command::Webhook { id, status }) => {
                    if let Some(view) = scheduler.on_webhook(&id, status, now()) {
                        let _ = events.send(WatchEvent::Changed { view, transcript: None });
                    }
                }
            },
            Some(Answer { id, result }) = pushed_records.recv() => {
                // Whatever the GET gave, the job failed: the push said so.
                let transcript = result.ok().filter(|record| record.status == TranscriptStatus::Error);
                if let Some(view) = scheduler.on_webhook(&id, TranscriptStatus::Error, now()) {
                    let _ = events.send(WatchEvent::Changed { view, transcript: transcript.map(Box::new) });
                }
            },
            Some(answer) = answers.recv() => {
                in_flight.remove(&answer.id);
                if let Ok(record) = &answer.result {
                    // Learned per account: every record's audio duration,
                    // before its outcome (a finished job teaches the model).
                    let audio_duration = hints::audio_of_record(record);
                    scheduler.fill_hint(&answer.id, JobHint { submitted_at: None, audio_duration });
                }
                let (outcome, transcript, failure) = classify(answer.result);
                if let Some(message) = failure {
                    let _ = events.send(WatchEvent::PollFailed { id: answer.id.clone(), message });
                }
                let answered = matches!(outcome, PollOutcome::Status { .. });
                match scheduler.on_outcome(&answer.id, outcome, now()) {
                    Some(view) => {
                        let _ = events.send(WatchEvent::Changed { view, transcript: transcript.map(Box::new) });
                    }
                    None if answered => {
                        if let Some(view) = scheduler.job_at(&answer.id, now()) {
                            let _ = events.send(WatchEvent::Polled { view });
                        }
                    }
                    None => {}
                }
                let is_paused = !matches!(scheduler.pause(), Pause::None);
                if is_paused != paused {
                    paused = is_paused;
                    let event = match scheduler.pause() {
                        Pause::AccountLimited { until, .. } => WatchEvent::Paused { resume_in: until.saturating_sub(now()) },
                        Pause::None => WatchEvent::Resumed,
                    };
                    let _ = events.send(event);
                }
                let _ = events.send(budget_event(&scheduler, now()));
            },
            () = sleep => {
                if paused && matches!(scheduler.pause_at(now()), Pause::None) {
                    paused = false;
                    let _ = events.send(WatchEvent::Resumed);
                }
            }
        }
    }
}

/// Maps a poll's result to what the scheduler needs, the record if any,
/// and a message for the front end when it failed.
fn classify(
    result: Result<Transcript, ApiError>,
) -> (PollOutcome, Option<Transcript>, Option<String>) {
    match result {
        Ok(transcript) => (
            PollOutcome::Status {
                status: transcript.status.clone(),
            },
            Some(transcript),
            None,
        ),
        Err(error) => {
            let message = error.to_string();
            let outcome = match error.status() {
                Some(429) => PollOutcome::RateLimited {
                    retry_after: error.retry_after().unwrap_or(DEFAULT_RETRY_AFTER),
                },
                Some(403) => PollOutcome::AccountLimited,
                Some(404) => PollOutcome::NotFound,
                _ => PollOutcome::NetworkError,
            };
            (outcome, None, Some(message))
        }
    }
}

/// The account share as of `now`.
fn budget_event(scheduler: &Scheduler, now: Tick) -> WatchEvent {
    let (used, budget) = scheduler.budget_used(now);
    WatchEvent::Budget {
        used,
        budget,
        spent: scheduler.spent(now),
    }
}
