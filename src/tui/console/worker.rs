//! Runs [`Effect`]s: every platform call in its own tokio task that sends
//! its result back as an [`Action`].
//!
//! A pane's own effects (`Effect::<Pane>`, declared and run in its
//! folder: [`PaneEffect`]) go through one generic path: the worker hands
//! the task the client and the store, wraps what it reports as the pane's
//! `Action`, and keeps one `Latest` slot per kind the pane declares
//! "latest request wins" ([`PaneEffect::latest_key`]: the Subscriptions
//! list and rotation watch, the Events list and event reads, the probe,
//! the Inbox receiver), where a new request aborts the one still running.
//!
//! The console's effects (work that holds the worker's state or is no
//! one pane's) are matched here: the job watcher and its commands,
//! copies. Every task but the slots' runs to its end (`update` drops an
//! answer whose sequence number a newer request has passed). At an
//! account switch the worker sets the flag it hands every task
//! ([`TaskInput::account_left`]), so recover stops after the event being
//! sent. Dropping the worker aborts everything in flight.
//!
//! Logs name the call, never its body: bodies can carry secrets.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use super::action::{Action, Effect};
use super::context::ActionTx;
use crate::tui::clipboard::Clipboard;
use crate::tui::kernel::Failure;
use crate::tui::kernel::StorePath;
use crate::tui::kernel::{ConsoleEffect, Pane, PaneEffect, Report, TaskInput};
use crate::tui::panes::jobs::JobsResult;
use crate::tui::panes::registry;
use earshot_core::api::Client;
use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::poll::hints::Known;
use earshot_core::poll::schedule::{JobHint, SchedulerConfig};
use earshot_core::poll::watcher::{self, Command as WatchCommand};

pub(crate) struct Worker {
    client: Client,
    tx: ActionTx,
    clipboard: Box<dyn Clipboard>,
    /// The panes' own "latest wins" work in flight, by the effect's type
    /// and its [`PaneEffect::latest_key`].
    pane_latest: HashMap<(&'static str, &'static str), Latest>,
    /// Every other task in flight (finished ones are pruned as we go).
    tasks: Vec<AbortHandle>,
    /// The job watcher, started by the first Jobs effect.
    jobs: Option<JobsWatch>,
    /// The incident-history store the Health pane reads.
    store: StorePath,
    /// Set when the console leaves this account: work that must end
    /// cleanly (recover) stops at its next step.
    account_left: Arc<AtomicBool>,
}

/// "Latest request wins": the one task of a kind in flight. Starting
/// another aborts it; so does dropping the slot.
#[derive(Default)]
struct Latest(Option<AbortHandle>);

impl Latest {
    /// Aborts the task in flight, if any, and runs `work` in its place.
    fn replace(&mut self, work: impl Future<Output = ()> + Send + 'static) {
        self.abort();
        self.0 = Some(tokio::spawn(work).abort_handle());
    }

    fn abort(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

impl Drop for Latest {
    fn drop(&mut self) {
        self.abort();
    }
}

/// The running job watcher and the task forwarding its events.
struct JobsWatch {
    commands: UnboundedSender<WatchCommand>,
    watcher: AbortHandle,
    forward: AbortHandle,
}

impl Worker {
    /// A worker for `client`, answering on `tx` (a plain channel, or one
    /// stamped with the account's generation: [`ActionTx::stamped`]).
    pub(crate) fn new(
        client: Client,
        tx: impl Into<ActionTx>,
        clipboard: Box<dyn Clipboard>,
    ) -> Self {
        Worker {
            client,
            tx: tx.into(),
            clipboard,
            pane_latest: HashMap::new(),
            tasks: Vec::new(),
            jobs: None,
            store: Err("no incident-history store configured".into()),
            account_left: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The incident-history store to read and sweep into.
    pub(crate) fn with_store(mut self, store: StorePath) -> Self {
        self.store = store;
        self
    }

    /// Moves to another account (`:ctx`): what runs for the old one stops
    /// or is left to finish, and every task from now on uses `client`,
    /// `store` and `tx` (stamped with the new account's generation, so
    /// whatever the old tasks still send is dropped by the console).
    ///
    /// Stopped: every "latest wins" slot (the loads, the probe, the
    /// rotation watch, the Inbox's receiver) and the job watcher (told to
    /// stop, then aborted). A recover
    /// is asked to stop after the event being sent, so the store records
    /// what was sent. Every other call (a change the operator confirmed, a
    /// re-send, a sweep) is left to finish on the old account: aborting it
    /// mid-request would leave unknown whether the platform applied it and
    /// the change unrecorded.
    pub(crate) fn change_account(
        &mut self,
        client: Client,
        store: StorePath,
        tx: impl Into<ActionTx>,
    ) {
        // Dropping a slot aborts its task.
        self.pane_latest.clear();
        self.account_left.store(true, Ordering::Relaxed);
        self.account_left = Arc::new(AtomicBool::new(false));
        self.tasks.retain(|task| !task.is_finished());
        if !self.tasks.is_empty() {
            tracing::info!(
                running = self.tasks.len(),
                "calls of the previous account finish in the background"
            );
        }
        self.tasks.clear();
        self.stop_job_watcher();
        self.client = client;
        self.store = store;
        self.tx = tx.into();
    }

    /// Tells the job watcher to stop and aborts it with its forwarder.
    fn stop_job_watcher(&mut self) {
        if let Some(jobs) = self.jobs.take() {
            let _ = jobs.commands.send(WatchCommand::Stop);
            jobs.forward.abort();
            jobs.watcher.abort();
        }
    }

    /// Starts every effect.
    pub(crate) fn start_all(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            self.start(effect);
        }
    }

    pub(crate) fn start(&mut self, effect: Effect) {
        self.tasks.retain(|task| !task.is_finished());
        let client = self.client.clone();
        let tx = self.tx.clone();
        match effect {
            pane @ registry!(pane_effect_pattern) => self.start_pane(pane),
            // The event loop switches accounts itself (a new client, store
            // and channel): it never hands this effect on.
            Effect::SwitchProfile { name } => {
                tracing::warn!(%name, "a profile switch reached the worker; ignored");
            }
            Effect::Console(ConsoleEffect::JobWebhook { id, status }) => {
                if let Some(jobs) = &self.jobs {
                    let _ = jobs.commands.send(WatchCommand::Webhook { id, status });
                }
            }
            Effect::Console(ConsoleEffect::Copy { what, text }) => {
                if let Err(error) = self.clipboard.copy(text.expose()) {
                    tracing::warn!(what, %error, "clipboard copy failed");
                    let _ = self.tx.send(Action::Failed(Failure::new(format!(
                        "could not copy the {what} to the clipboard: {error}"
                    ))));
                }
            }
            Effect::Console(ConsoleEffect::WatchJobs(ids)) => {
                tracing::debug!(count = ids.len(), "watch jobs");
                let commands = self.job_watcher();
                for id in ids {
                    let _ = commands.send(WatchCommand::Add {
                        id,
                        hint: JobHint::default(),
                    });
                }
            }
            Effect::Console(ConsoleEffect::UnwatchJobs(ids)) => {
                if let Some(jobs) = &self.jobs {
                    for id in ids {
                        let _ = jobs.commands.send(WatchCommand::Remove { id });
                    }
                }
            }
            Effect::Console(ConsoleEffect::FocusJobs(ids)) => {
                if let Some(jobs) = &self.jobs {
                    let _ = jobs.commands.send(WatchCommand::Focus(ids));
                }
            }
            Effect::Console(ConsoleEffect::SubmitFile { path }) => {
                tracing::info!("submit a file for transcription");
                // The watcher learns the job's submit time and audio
                // duration from the submission itself.
                let watcher = self.job_watcher();
                self.spawn(submit_file(client, tx, path, watcher));
            }
        }
    }

    /// Runs a pane's own effect as it declares: in its "latest wins" slot
    /// or to its end, its reports sent back wrapped by `report` (the
    /// pane's `Action` variant).
    fn run_pane_effect<E, R>(&mut self, effect: E, report: fn(R) -> Action)
    where
        E: PaneEffect<R>,
        R: Send + 'static,
    {
        let key = effect.latest_key();
        let input = TaskInput {
            client: self.client.clone(),
            store: self.store.clone(),
            account_left: Arc::clone(&self.account_left),
        };
        let tx = self.tx.clone();
        let work = effect.run(
            input,
            Report::new(move |result| tx.send(report(result)).is_ok()),
        );
        match key {
            Some(key) => self
                .pane_latest
                .entry((std::any::type_name::<E>(), key))
                .or_default()
                .replace(work),
            None => self.spawn(work),
        }
    }

    fn spawn(&mut self, work: impl Future<Output = ()> + Send + 'static) {
        self.tasks.push(tokio::spawn(work).abort_handle());
    }

    /// The job watcher's command channel, starting the watcher (and the
    /// task that turns its events into actions) on first use.
    fn job_watcher(&mut self) -> UnboundedSender<WatchCommand> {
        if let Some(jobs) = &self.jobs {
            return jobs.commands.clone();
        }
        // The Jobs pane shows at most `ROWS_MAX` jobs; the demo's never stop
        // coming, so the watcher forgets finished ones beyond that too.
        let config = SchedulerConfig {
            keep_finished: Some(crate::tui::panes::jobs::ROWS_MAX),
            ..SchedulerConfig::default()
        };
        let watcher = watcher::spawn(self.client.clone(), config);
        let mut events = watcher.events;
        let tx = self.tx.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if tx.send(Action::Jobs(JobsResult::Watch(event))).is_err() {
                    break;
                }
            }
        });
        let jobs = JobsWatch {
            commands: watcher.commands,
            watcher: watcher.task.abort_handle(),
            forward: forward.abort_handle(),
        };
        let commands = jobs.commands.clone();
        self.jobs = Some(jobs);
        commands
    }
}

/// Every pane's `Effect` variant, as one pattern (from the registry).
macro_rules! pane_effect_pattern {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        ($(Effect::$name(_))|*)
    };
}
use pane_effect_pattern;

/// [`Worker::start_pane`], from the registry: each pane's effects run as
/// its [`PaneEffect`] says, answering with its `Action` variant.
macro_rules! start_pane {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        impl Worker {
            /// A pane's own effect (`Effect::<Pane>`).
            fn start_pane(&mut self, effect: Effect) {
                match effect {
                    $(Effect::$name(effect) => {
                        self.run_pane_effect::<<$ty as Pane>::Effect, _>(effect, Action::$name)
                    })*
                    // `start` hands on the panes' variants only.
                    console => tracing::warn!(effect = ?console, "not a pane's effect; ignored"),
                }
            }
        }
    };
}
registry!(start_pane);

/// Uploads `path`, reporting progress (at most once per percent), creates
/// a transcript job from it and reports its id. Both requests are counted
/// in the watcher's account budget (the status bar's), and the watcher
/// learns the job's submit time and audio duration.
async fn submit_file(
    client: Client,
    tx: ActionTx,
    path: std::path::PathBuf,
    watcher: UnboundedSender<WatchCommand>,
) {
    let count_request = || {
        let _ = watcher.send(WatchCommand::OtherRequest);
    };
    let progress_tx = tx.clone();
    let last_percent = std::sync::atomic::AtomicU64::new(u64::MAX);
    let result = async {
        count_request();
        let upload = client
            .upload_file(&path, move |progress| {
                let percent = (progress.sent * 100)
                    .checked_div(progress.total)
                    .unwrap_or(100);
                let previous = last_percent.swap(percent, std::sync::atomic::Ordering::Relaxed);
                if previous != percent {
                    let _ = progress_tx.send(Action::Jobs(JobsResult::Uploading {
                        sent: progress.sent,
                        total: progress.total,
                    }));
                }
            })
            .await?;
        let request = NewTranscript {
            audio_url: upload.upload_url,
            ..NewTranscript::default()
        };
        count_request();
        let submitted = std::time::Instant::now();
        let transcript = client.create_transcript(&request).await?;
        let known = Known::submitted_from_file(&path, submitted).await;
        Ok((transcript.id, known))
    }
    .await
    .map_err(|error| Failure::from_api(&error));
    // The pane holds the row before the watcher can report on it (it
    // ignores reports on jobs it does not show).
    let known = match result {
        Ok((id, known)) => {
            let _ = tx.send(Action::Jobs(JobsResult::Submitted {
                result: Ok(id.clone()),
            }));
            (id, known)
        }
        Err(failure) => {
            let _ = tx.send(Action::Jobs(JobsResult::Submitted {
                result: Err(failure),
            }));
            return;
        }
    };
    let _ = watcher.send(WatchCommand::AddKnown {
        id: known.0,
        known: known.1,
    });
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The `Latest` slots abort their own tasks when dropped.
        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.stop_job_watcher();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::panes::health::tasks::HealthEffect;

    /// A task that runs until aborted; its receiver errs once it is.
    fn pending_task() -> (
        impl Future<Output = ()> + Send + 'static,
        tokio::sync::oneshot::Receiver<()>,
    ) {
        let (alive, gone) = tokio::sync::oneshot::channel::<()>();
        let work = async move {
            let _alive = alive;
            std::future::pending::<()>().await;
        };
        (work, gone)
    }

    struct NoClipboard;

    impl Clipboard for NoClipboard {
        fn copy(&mut self, _: &str) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn client_at(origin: &str) -> Client {
        let url = url::Url::parse(origin).unwrap();
        Client::new(
            earshot_core::api::Endpoints::all_at(&url),
            earshot_core::redact::SecretString::new("key_for_tests"),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn changing_account_stops_reads_lets_changes_finish_and_answers_on_the_new_channel() {
        let within = std::time::Duration::from_secs(10);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut worker = Worker::new(
            client_at("http://127.0.0.1:9/"),
            ActionTx::stamped(0, tx.clone()),
            Box::new(NoClipboard),
        );
        let (load, load_gone) = pending_task();
        worker
            .pane_latest
            .entry(("a pane's effect", "load"))
            .or_default()
            .replace(load);
        let (change, mut change_gone) = pending_task();
        worker.spawn(change);
        let left = Arc::clone(&worker.account_left);

        worker.change_account(
            client_at("http://127.0.0.1:10/"),
            Err("no store".into()),
            ActionTx::stamped(1, tx),
        );
        let aborted = tokio::time::timeout(within, load_gone).await;
        assert!(matches!(aborted, Ok(Err(_))), "the load still runs");
        assert!(
            change_gone
                .try_recv()
                .is_err_and(|e| e == tokio::sync::oneshot::error::TryRecvError::Empty),
            "a change in flight is left to finish"
        );
        assert!(
            left.load(Ordering::Relaxed),
            "work that must end cleanly (recover) is asked to stop"
        );
        assert!(matches!(&worker.store, Err(why) if why == "no store"));
        // What the worker sends from now on is the new account's.
        worker.start(Effect::Health(HealthEffect::Load {
            seq: 7,
            since_ms: 0,
        }));
        let answer = tokio::time::timeout(within, rx.recv()).await;
        assert!(
            matches!(
                &answer,
                Ok(Some(crate::tui::console::context::Stamped {
                    generation: 1,
                    action: Action::Health(crate::tui::panes::health::HealthResult::Loaded {
                        seq: 7,
                        result: Err(failure),
                    }),
                })) if failure.message == "no store"
            ),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn a_new_request_aborts_the_one_in_flight_and_drop_aborts_the_last() {
        let within = std::time::Duration::from_secs(10);
        let mut slot = Latest::default();
        let (first, first_gone) = pending_task();
        slot.replace(first);
        let (second, mut second_gone) = pending_task();
        slot.replace(second);
        let aborted = tokio::time::timeout(within, first_gone).await;
        assert!(matches!(aborted, Ok(Err(_))), "the first task still runs");
        assert!(
            second_gone
                .try_recv()
                .is_err_and(|e| e == tokio::sync::oneshot::error::TryRecvError::Empty)
        );
        drop(slot);
        let aborted = tokio::time::timeout(within, second_gone).await;
        assert!(
            matches!(aborted, Ok(Err(_))),
            "the last task outlived its slot"
        );
    }

    /// A pane effect that runs until aborted, holding `alive` (its
    /// receiver ends once every holder is gone), in the slot `key` names.
    #[derive(Clone, Debug)]
    struct Holds {
        alive: tokio::sync::mpsc::UnboundedSender<()>,
        key: Option<&'static str>,
    }

    impl PaneEffect<()> for Holds {
        fn latest_key(&self) -> Option<&'static str> {
            self.key
        }

        async fn run(self, _: TaskInput, _: Report<()>) {
            let _alive = self.alive;
            std::future::pending::<()>().await;
        }
    }

    fn holds(key: Option<&'static str>) -> (Holds, tokio::sync::mpsc::UnboundedReceiver<()>) {
        let (alive, gone) = tokio::sync::mpsc::unbounded_channel();
        (Holds { alive, key }, gone)
    }

    #[tokio::test]
    async fn a_pane_effect_replaces_its_kind_only_and_an_account_switch_stops_the_slots() {
        let within = std::time::Duration::from_secs(10);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut worker = Worker::new(
            client_at("http://127.0.0.1:9/"),
            tx.clone(),
            Box::new(NoClipboard),
        );
        let report = |()| Action::Failed(Failure::new("unused"));
        let (first, mut first_gone) = holds(Some("list"));
        worker.run_pane_effect(first, report);
        let (other_kind, mut other_gone) = holds(Some("detail"));
        worker.run_pane_effect(other_kind, report);
        let (to_its_end, mut end_gone) = holds(None);
        worker.run_pane_effect(to_its_end, report);
        let (second, mut second_gone) = holds(Some("list"));
        worker.run_pane_effect(second, report);

        let aborted = tokio::time::timeout(within, first_gone.recv()).await;
        assert_eq!(aborted, Ok(None), "the first list read still runs");
        for (what, gone) in [
            ("another kind", &mut other_gone),
            ("the newer read", &mut second_gone),
            ("a task run to its end", &mut end_gone),
        ] {
            assert_eq!(
                gone.try_recv(),
                Err(tokio::sync::mpsc::error::TryRecvError::Empty),
                "{what} was stopped"
            );
        }

        worker.change_account(
            client_at("http://127.0.0.1:10/"),
            Err("no store".into()),
            tx,
        );
        for gone in [&mut other_gone, &mut second_gone] {
            let aborted = tokio::time::timeout(within, gone.recv()).await;
            assert_eq!(aborted, Ok(None), "a slot outlived the account switch");
        }
        assert_eq!(
            end_gone.try_recv(),
            Err(tokio::sync::mpsc::error::TryRecvError::Empty),
            "a task run to its end is left to finish"
        );
    }
}
