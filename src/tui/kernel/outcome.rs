//! What a pane's update returns besides its own state: its [`Outcome`],
//! with the console's work it asks for ([`ConsoleEffect`]), the typed
//! [`Handover`] to another pane, and a [`Failure`] worded for the status
//! bar.

use std::time::Instant;

use chrono::{DateTime, Local};
use earshot_core::api::ApiError;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::history::report::LatestChange;
use earshot_core::redact::SecretString;

/// What a pane's update produced besides its own state changes; `E` is
/// the pane's own effect (its `Pane::Effect`).
#[derive(Debug)]
pub(crate) struct Outcome<E> {
    /// The pane's own background work.
    pub(crate) effects: Vec<E>,
    /// Work the console runs for it.
    pub(crate) console: Vec<ConsoleEffect>,
    pub(crate) toast: Option<String>,
    pub(crate) failure: Option<Failure>,
    /// A platform call succeeded.
    pub(crate) succeeded: bool,
    /// A handover to another pane, which the console routes next (and
    /// shows that pane when the handover opens something in it).
    pub(crate) then: Option<Handover>,
    /// The account's request budget, as the status bar shows it.
    pub(crate) budget: Option<String>,
}

impl<E> Default for Outcome<E> {
    fn default() -> Self {
        Outcome {
            effects: Vec::new(),
            console: Vec::new(),
            toast: None,
            failure: None,
            succeeded: false,
            then: None,
            budget: None,
        }
    }
}

impl<E> Outcome<E> {
    /// Nothing for the console to do.
    pub(crate) fn is_empty(&self) -> bool {
        self.effects.is_empty()
            && self.console.is_empty()
            && self.toast.is_none()
            && self.failure.is_none()
            && !self.succeeded
            && self.then.is_none()
            && self.budget.is_none()
    }

    /// Adds `other` to this outcome, its effects wrapped by `wrap` (what
    /// `other` says replaces what this one said, as a second write to the
    /// same outcome would).
    pub(crate) fn merge<F>(&mut self, other: Outcome<F>, wrap: impl FnMut(F) -> E) {
        self.effects.extend(other.effects.into_iter().map(wrap));
        self.console.extend(other.console);
        if other.toast.is_some() {
            self.toast = other.toast;
        }
        if other.failure.is_some() {
            self.failure = other.failure;
        }
        self.succeeded |= other.succeeded;
        if other.then.is_some() {
            self.then = other.then;
        }
        if other.budget.is_some() {
            self.budget = other.budget;
        }
    }
}

/// Work a pane asks the console's worker for, which holds state no one
/// pane owns (the job watcher, the clipboard).
#[derive(Clone, Debug)]
pub(crate) enum ConsoleEffect {
    /// Watch these transcript jobs (starts the watcher on first use).
    WatchJobs(Vec<String>),
    /// The jobs on screen: polled first.
    FocusJobs(Vec<String>),
    /// Stop watching these jobs (the pane made room: they left the table).
    UnwatchJobs(Vec<String>),
    /// Upload a file, create a transcript job from it and watch it.
    SubmitFile { path: std::path::PathBuf },
    /// A pre-recorded webhook said this job changed: the watcher updates
    /// it without a request.
    JobWebhook {
        id: String,
        status: TranscriptStatus,
    },
    /// Copy to the operator's clipboard with OSC 52.
    Copy {
        what: &'static str,
        text: SecretString,
    },
}

/// A pane hands something to another pane, or the console hands a pane
/// what it was started with: the one typed message to a pane from outside
/// it. The console offers it to every pane ([`Pane::annotate`], then
/// [`Pane::receive`](super::Pane::receive)); the panes it concerns take it.
///
/// [`Pane::annotate`]: super::Pane::annotate
#[derive(Clone, Debug)]
pub(crate) enum Handover {
    /// Open a session or call in Deliveries (from Health).
    OpenInDeliveries(String),
    /// Check a delivery in the Signatures pane (`secret_hint` says whose
    /// secret signed it; never the secret). Without a header, the Inbox's
    /// capture of `delivery_id` fills it in. `refused`: a delivery its
    /// receiver refused with 401 (the form asks the receiver; the header,
    /// if any, must be the one that receiver got).
    OpenInSignatures {
        header: Option<String>,
        body: Option<Vec<u8>>,
        secret_hint: Option<String>,
        delivery_id: Option<String>,
        refused: Option<RefusedDelivery>,
    },
    /// The newest change earshot made to each subscription (the Health
    /// board read them), for the Subscriptions detail.
    SubscriptionChanges(Vec<(String, LatestChange)>),
    /// The Inbox answered a pre-recorded webhook for job `id`
    /// (`answered`: its HTTP status, at `at_ms`), saying the job is now
    /// `status` when it passed the checks, for the Jobs pane if it watches
    /// the job.
    WebhookForJob {
        id: String,
        status: Option<TranscriptStatus>,
        answered: u16,
        at_ms: i64,
    },
    /// Sweep the incident history if a sweep is due (the Events pane keeps
    /// it going while on screen, as the Health pane does).
    SweepIfDue(Instant),
    /// At the start: session and call ids to offer in Deliveries (most
    /// recent first; the first is loaded when nothing is on screen).
    RecentSessions(Vec<String>),
    /// At the start: transcript job ids to watch in Jobs.
    JobIds(Vec<String>),
    /// At the start: the WAV file the Probe pane offers first.
    ProbeFile(std::path::PathBuf),
    /// At the start: the receiver already running for the Inbox, its URL.
    Listening(String),
}

/// What a pane did with a [`Handover`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Received {
    /// Not this pane's.
    Ignored,
    /// Taken in the background.
    Kept,
    /// Taken, and the pane is to be on screen (it opened what it was
    /// handed).
    Shown,
}

/// A delivery its receiver refused with 401, handed to the Signatures
/// pane (which asks that receiver which secret it holds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RefusedDelivery {
    pub(crate) subscription_id: String,
    pub(crate) session_id: String,
    /// The event, when the handing pane knows it (Events).
    pub(crate) event_id: Option<String>,
    /// The attempt refused, when the handing pane knows it (Deliveries).
    pub(crate) delivery_id: Option<String>,
}

/// A failed call, as the status bar shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) status: Option<u16>,
    pub(crate) at: DateTime<Local>,
}

impl std::fmt::Display for Failure {
    /// The message (what a pane shows; the status bar adds the time).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: None,
            at: Local::now(),
        }
    }

    pub(crate) fn from_api(error: &ApiError) -> Failure {
        Failure {
            message: error.to_string(),
            status: error.status(),
            at: Local::now(),
        }
    }
}
