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
use earshot_core::api::ApiError;
use earshot_core::api::types::agents::{
    DeliveryRecord, NewSubscription, Subscription, SubscriptionPatch,
};
use earshot_core::redact::SecretString;

/// A message to `App::update`.
#[derive(Clone, Debug)]
pub enum Action {
    /// A key, a paste, a resize.
    Input(Event),
    /// A command run without its key (the keys and the `:` prompt run
    /// theirs inside `App::update`).
    #[cfg(test)]
    Run(Command),
    /// The clock, while something on screen counts down.
    Tick(Instant),
    /// The result of a subscriptions call.
    Subs(SubsResult),
    /// The result of a deliveries load.
    Deliveries(DeliveriesResult),
    /// The job watcher or a submission reports to the Jobs pane.
    Jobs(JobsResult),
    /// A Signatures pane body file was read.
    Sigs(SigsResult),
    /// One call of a Probe pane run ended.
    Probe(ProbeResult),
    /// The Inbox's receiver started, or received a request.
    Inbox(InboxResult),
    /// The incident history's store, sweep or recover answered.
    Health(HealthResult),
    /// The Events pane's list, an event in full, or a re-send answered.
    Events(EventsResult),
    /// Another pane (Health) opens a session or call in Deliveries.
    OpenInDeliveries(String),
    /// The sessions the incident history knows, for the Deliveries prompt.
    KnownSessions(Vec<String>),
    /// Another pane hands a delivery to the Signatures pane to check
    /// (`secret_hint` says whose secret signed it; never the secret).
    /// Without a header, the Inbox's capture of `delivery_id` fills it in.
    OpenInSignatures {
        header: Option<String>,
        body: Option<Vec<u8>>,
        secret_hint: Option<String>,
        delivery_id: Option<String>,
    },
    /// Background work failed outside any pane (e.g. the clipboard).
    Failed(Failure),
    /// SIGTERM, SIGHUP or SIGINT: leave now, restoring the terminal.
    Shutdown,
}

/// Results of the Subscriptions pane's platform calls.
#[derive(Clone, Debug)]
pub enum SubsResult {
    /// `seq` identifies the load; a superseded load's answer is dropped.
    Loaded {
        seq: u64,
        result: Result<Vec<Subscription>, Failure>,
    },
    /// Pause or resume.
    Patched {
        id: String,
        result: Result<Subscription, Failure>,
    },
    Created {
        result: Result<Subscription, Failure>,
    },
    Rotated {
        id: String,
        result: Result<Subscription, Failure>,
    },
    /// The staged rotation's check of the receiver answered.
    Checked {
        id: String,
        result: Result<earshot_core::history::rotation::CheckReport, Failure>,
    },
    /// What the watch after a rotation saw (each sweep).
    Watched {
        id: String,
        report: earshot_core::history::rotation::WatchReport,
    },
    Deleted {
        id: String,
        result: Result<(), Failure>,
    },
}

/// Results of the Deliveries pane's platform calls.
#[derive(Clone, Debug)]
pub enum DeliveriesResult {
    /// `seq` identifies the load; a superseded load's answer is dropped.
    Loaded {
        seq: u64,
        /// The load answered, as the worker names it: the pane matches an
        /// answer by `seq` alone and reads neither.
        #[expect(dead_code, reason = "the pane matches answers by `seq` alone")]
        id: String,
        #[expect(dead_code, reason = "the pane matches answers by `seq` alone")]
        latest: bool,
        result: Result<Vec<DeliveryRecord>, Failure>,
    },
    /// The session record with the stored events, put together; sent after
    /// each load's attempts, under the same `seq`.
    Session {
        seq: u64,
        id: String,
        result: Result<Box<earshot_core::history::session_view::SessionView>, Failure>,
    },
}

/// What reaches the Jobs pane from the background.
#[derive(Clone, Debug)]
pub enum JobsResult {
    /// The watcher's report.
    Watch(earshot_core::poll::watcher::WatchEvent),
    /// A file upload in progress (bytes sent of total).
    Uploading { sent: u64, total: u64 },
    /// Upload and `create_transcript` done: the new job's id.
    Submitted { result: Result<String, Failure> },
    /// Jobs submitted elsewhere (the demo's traffic) to watch too.
    Discovered(Vec<String>),
}

/// Results of the Signatures pane's background work.
#[derive(Clone, Debug)]
pub enum SigsResult {
    /// `seq` identifies the read; a superseded read's answer is dropped.
    BodyLoaded {
        seq: u64,
        path: String,
        result: Result<Vec<u8>, String>,
    },
    /// A captured request was read for replay.
    CaptureLoaded {
        seq: u64,
        result: Result<earshot_core::receiver::capture::Replay, String>,
    },
}

/// One call of a Probe pane run, as it ended; `seq` identifies the run
/// (a superseded run's answers are dropped). `latency_ms` is measured here.
#[derive(Clone, Debug)]
pub enum ProbeResult {
    Dictation {
        seq: u64,
        region: earshot_core::api::Region,
        latency_ms: f64,
        result: Result<Box<earshot_core::api::types::dictation::Dictation>, Failure>,
    },
    Sync {
        seq: u64,
        region: earshot_core::api::Region,
        latency_ms: f64,
        result: Result<earshot_core::api::types::dictation::SyncTranscript, Failure>,
    },
}

/// What reaches the Inbox pane.
#[derive(Clone, Debug)]
pub enum InboxResult {
    /// The receiver asked for with `seq` listens at this URL, or not.
    Started {
        seq: u64,
        result: Result<String, Failure>,
    },
    /// A request the receiver answered.
    Received(Box<earshot_core::receiver::listen::Received>),
}

/// What reaches the Health pane.
#[derive(Clone, Debug)]
pub enum HealthResult {
    /// The board read from the store; `seq` identifies the read.
    Loaded {
        seq: u64,
        result: Result<earshot_core::history::report::Board, Failure>,
    },
    /// One subscription's failing sessions, read with the board `seq`.
    Sessions {
        seq: u64,
        subscription_id: String,
        result: Result<Vec<earshot_core::store::deliveries::FailingSession>, Failure>,
    },
    /// A sweep ended (an `Err` is the platform's or the network's).
    Swept(Result<earshot_core::history::sweep::SweepReport, Failure>),
    /// The store could not be opened for a sweep: local, not the platform.
    NoStore(String),
    /// What recover would send for `subscription_id` (before it asks).
    Planned {
        subscription_id: String,
        result: Result<earshot_core::history::recover::Preview, Failure>,
    },
    /// Recover sent `done` of `total` events; `sent` is the last one.
    RecoverProgress {
        done: usize,
        total: usize,
        sent: Option<Box<earshot_core::history::recover::Sent>>,
    },
    /// Recover ended: its summary line.
    Recovered(Result<String, Failure>),
    /// The incidents read with `seq`.
    Incidents {
        seq: u64,
        result: Result<Vec<earshot_core::history::incidents::Incident>, Failure>,
    },
    /// An acknowledgement was stored (its line) or not.
    Acknowledged(Result<String, Failure>),
}

/// What reaches the Events pane.
#[derive(Clone, Debug)]
pub enum EventsResult {
    /// The list read from the store; `seq` identifies the read.
    Loaded {
        seq: u64,
        result: Result<Vec<earshot_core::history::event_list::EventRow>, Failure>,
    },
    /// One event in full (`None`: the store no longer holds it).
    Detail {
        seq: u64,
        result: Result<Option<Box<earshot_core::history::event_list::EventDetail>>, Failure>,
    },
    /// A re-send ended.
    Resent(Result<Resent, Failure>),
}

/// A re-send's answer: whether a 2xx came, and the line saying so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resent {
    pub delivered: bool,
    pub summary: String,
}

/// Where the Events pane re-sends an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResendTarget {
    /// A subscription's URL (the send is recorded in the store).
    Subscription(String),
    /// Any URL the operator gives, e.g. a receiver under development.
    Url(String),
}

/// A failed call, as the status bar shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub status: Option<u16>,
    pub at: DateTime<Local>,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Failure {
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

/// Background work `update` asks for; the event loop runs each in a task.
#[derive(Clone, Debug)]
pub enum Effect {
    /// Supersedes any load still running.
    LoadSubscriptions {
        seq: u64,
        include_disabled: bool,
    },
    CreateSubscription(NewSubscription),
    /// Every attempt of a session or call (`latest`: the newest per
    /// subscription); supersedes any deliveries load still running. The
    /// id also joins the incident history's known sessions.
    LoadDeliveries {
        seq: u64,
        id: String,
        latest: bool,
    },
    /// Pause or resume (the patch carries `enabled`).
    PatchSubscription {
        id: String,
        patch: SubscriptionPatch,
    },
    RotateSecret {
        id: String,
        secret: SecretString,
    },
    /// Check a receiver accepts the new secret (and the current one, when
    /// given) before a rotation; both are masked in `Debug`.
    CheckRotation {
        id: String,
        url: String,
        new: SecretString,
        current: Option<SecretString>,
    },
    /// Watch a rotated subscription's deliveries (replacing any watch).
    WatchRotation {
        id: String,
        rotated_ms: i64,
    },
    /// Stop the watch (the dialog closed).
    StopRotationWatch,
    DeleteSubscription {
        id: String,
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
    /// Read a body file for the Signatures pane (local, not a platform
    /// call).
    ReadBodyFile {
        seq: u64,
        path: String,
    },
    /// Read one request from a capture file (`line`: its line; `None`:
    /// the last signed one) for the Signatures pane (local).
    ReadCapture {
        seq: u64,
        path: String,
        line: Option<usize>,
    },
    /// Dictation and sync in every region of `regions` at once (the
    /// Probe pane); supersedes any probe still running.
    RunProbe {
        seq: u64,
        file: std::path::PathBuf,
        regions: Vec<earshot_core::api::Region>,
        options: earshot_core::api::probe::ProbeOptions,
    },
    /// Start the local webhook receiver (replacing a running one).
    StartListener {
        seq: u64,
        bind: std::net::SocketAddr,
        /// Labelled `current` / `previous`; masked in `Debug`.
        secrets: Vec<(String, SecretString)>,
    },
    /// A pre-recorded webhook said this job changed: the watcher updates
    /// it without a request.
    JobWebhook {
        id: String,
        status: earshot_core::api::types::prerecorded::TranscriptStatus,
    },
    /// Read the Health board from the store (local).
    LoadHealth {
        seq: u64,
        since_ms: i64,
    },
    /// Read one subscription's failing sessions from the store (local).
    LoadFailingSessions {
        seq: u64,
        subscription_id: String,
        since_ms: i64,
    },
    /// Read the incidents seen since `since_ms` (resolved ones with
    /// `all`) from the store (local).
    LoadIncidents {
        seq: u64,
        since_ms: i64,
        all: bool,
    },
    /// Acknowledge an incident as the operator's login name (local).
    AckIncident {
        id: String,
        note: Option<String>,
    },
    /// Sweep the known sessions' delivery records into the store.
    SweepHistory,
    /// Read the known sessions' ids for the Deliveries prompt (local).
    LoadKnownSessions,
    /// Re-send what a subscription missed for good since `since_ms`; the
    /// secret is masked in `Debug` and never stored.
    Recover {
        subscription_id: String,
        since_ms: i64,
        secret: SecretString,
    },
    /// Read the Events list from the store (local).
    LoadEvents {
        seq: u64,
        query: earshot_core::history::event_query::EventQuery,
        since_ms: i64,
        limit: usize,
    },
    /// Read one event in full from the store (local).
    LoadEventDetail {
        seq: u64,
        event_id: String,
    },
    /// Re-send one observed event, signed anew with `secret` (masked in
    /// `Debug`, never stored).
    ResendEvent {
        event_id: String,
        target: ResendTarget,
        secret: SecretString,
    },
    /// What recover would send (local: the store as last swept).
    PlanRecover {
        subscription_id: String,
        since_ms: i64,
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
    Quit,
}
