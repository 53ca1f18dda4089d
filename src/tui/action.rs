//! The console's messages: every [`Action`] `update` understands, and every
//! [`Effect`] (request for background work) it can answer with.
//!
//! Actions come from three places: the terminal (keys, paste, resize), the
//! clock (a tick, only while something counts down), and background tasks
//! (results of platform calls). Results carry a [`Failure`] rather than an
//! `ApiError`: a message already worded for an operator, with its time.
//! Secrets never travel in an `Action`; the one that must reach the
//! platform travels in an `Effect`, whose `Debug` masks it.

use std::time::Instant;

use chrono::{DateTime, Local};
use ratatui::crossterm::event::Event;

#[cfg(test)]
use super::command::Command;
use super::panes::{Pane, registry};
use earshot_core::api::ApiError;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::history::report::LatestChange;
use earshot_core::redact::SecretString;

/// [`Action`], with a variant per pane (its results) from the registry.
macro_rules! action_enum {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// A message to `App::update`.
        #[derive(Clone, Debug)]
        pub(crate) enum Action {
            /// A key, a paste, a resize.
            Input(Event),
            /// A command run without its key (the keys and the `:` prompt
            /// run theirs inside `App::update`).
            #[cfg(test)]
            Run(Command),
            /// The clock, while something on screen counts down.
            Tick(Instant),
            $(
                #[doc = concat!("What background work reports to the ", stringify!($id), " pane.")]
                $name(<$ty as Pane>::Result),
            )*
            /// Another pane (Health) opens a session or call in Deliveries.
            OpenInDeliveries(String),
            /// The sessions the incident history knows, for the Deliveries
            /// prompt.
            KnownSessions(Vec<String>),
            /// Another pane hands a delivery to the Signatures pane to check
            /// (`secret_hint` says whose secret signed it; never the secret).
            /// Without a header, the Inbox's capture of `delivery_id` fills
            /// it in.
            /// `refused`: a delivery its receiver refused with 401 (the
            /// form asks the receiver; the header, if any, must be the one
            /// that receiver got).
            OpenInSignatures {
                header: Option<String>,
                body: Option<Vec<u8>>,
                secret_hint: Option<String>,
                delivery_id: Option<String>,
                refused: Option<RefusedDelivery>,
            },
            /// The newest change earshot made to each subscription (the
            /// Health board read them), for the Subscriptions detail.
            SubscriptionChanges(Vec<(String, LatestChange)>),
            /// The Inbox answered a pre-recorded webhook for job `id`
            /// (`answered`: its HTTP status, at `at_ms`), saying the job is
            /// now `status` when it passed the checks, for the Jobs pane if
            /// it watches the job.
            WebhookForJob {
                id: String,
                status: Option<TranscriptStatus>,
                answered: u16,
                at_ms: i64,
            },
            /// Sweep the incident history if a sweep is due (the Events
            /// pane keeps it going while on screen, as the Health pane does).
            SweepIfDue(Instant),
            /// Background work failed outside any pane (e.g. the clipboard).
            Failed(Failure),
        }
    };
}
registry!(action_enum);

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

/// [`Effect`], with a variant per pane (its own background work, which
/// its folder declares and runs) from the registry.
macro_rules! effect_enum {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// Background work `update` asks for; the worker runs each in a task.
        #[derive(Clone, Debug)]
        pub(crate) enum Effect {
            $(
                #[doc = concat!("The ", stringify!($id), " pane's own work (its `Pane::Effect`).")]
                #[allow(dead_code, reason = "a pane with no effects of its own has a variant none can build")]
                $name(<$ty as Pane>::Effect),
            )*
            /// Every attempt of a session or call (`latest`: the newest per
            /// subscription); supersedes any deliveries load still running. The
            /// id also joins the incident history's known sessions.
            LoadDeliveries {
                seq: u64,
                id: String,
                latest: bool,
            },
            /// Watch these transcript jobs (starts the watcher on first use).
            WatchJobs(Vec<String>),
            /// The jobs on screen: polled first.
            FocusJobs(Vec<String>),
            /// Stop watching these jobs (the pane made room: they left the table).
            UnwatchJobs(Vec<String>),
            /// Upload a file, create a transcript job from it and watch it.
            SubmitFile {
                path: std::path::PathBuf,
            },
            /// A pre-recorded webhook said this job changed: the watcher updates
            /// it without a request.
            JobWebhook {
                id: String,
                status: earshot_core::api::types::prerecorded::TranscriptStatus,
            },
            /// Read the known sessions' ids for the Deliveries prompt (local).
            LoadKnownSessions,
            /// Re-send what a subscription missed for good since `since_ms`; the
            /// secret is masked in `Debug` and never stored.
            Recover {
                subscription_id: String,
                since_ms: i64,
                secret: SecretString,
            },
            /// Stop the recover in flight after the event being sent.
            CancelRecover,
            /// Switch the console to this profile of the config file (`:ctx`):
            /// the event loop opens it and, once it could, calls `App::switched`.
            SwitchProfile {
                name: String,
            },
            /// Copy to the operator's clipboard with OSC 52.
            Copy {
                what: &'static str,
                text: SecretString,
            },
        }
    };
}
registry!(effect_enum);
