//! An emulator of the speech-to-text platform earshot operates, to run as
//! a local platform inside your own tests: one HTTP listener (axum) that
//! serves every area of the platform interface at one origin, in memory.
//!
//! What it emulates, by path:
//!
//! - **dictation and sync** (`POST /v1/transcribe`, `/v1/transcribe/live`,
//!   `/transcribe`): the text is the `ICMT` comment of an uploaded WAV, or
//!   a fixed sentence; no speech is recognised;
//! - **voice agent webhooks** (`/v1/webhook-subscriptions`,
//!   `/v1/sessions/{id}/webhook-deliveries`, `/v1/sessions/{id}`):
//!   subscriptions with the platform's validation, and deliveries signed
//!   `X-SVC-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` with the
//!   platform's deadline, retries and delivery records;
//! - **pre-recorded transcription** (`/v2/upload`, `/v2/transcript`): a
//!   job queue limited by the account's concurrency, webhooks with their
//!   custom auth header, and the request and polling rate limits (403,
//!   429 with `Retry-After`).
//!
//! Nothing on the platform makes a session or a call happen through its
//! API, and a test needs failures on demand: the [`Emulator`] handle does
//! both, in process — [`start_session`](Emulator::start_session),
//! [`start_call`](Emulator::start_call), [`arm_fault`](Emulator::arm_fault),
//! [`update_account`](Emulator::update_account), [`stats`](Emulator::stats)
//! — and the same operations are open to any language at `/_emulator/...`
//! (no authentication). What a Rust test asserts on and asks for (below)
//! is in process only. Every platform duration (the 15 s delivery
//! deadline, retry intervals, processing, the 90 s artifact delay) is
//! multiplied by the time scale, so a test of retries takes milliseconds;
//! or they wait for a clock the test moves (below).
//!
//! # Embedding it
//!
//! Add it as a dev-dependency (`earshot-emulator = { path = ".../crates/earshot-emulator" }`
//! or the git repository), then start one per test with
//! [`Emulator::builder`] on a free port of `127.0.0.1` and talk to it over
//! HTTP with any client, passing [`Emulator::api_key`] in `Authorization`
//! (the raw key; `Bearer ` is accepted too):
//!
//! ```rust
//! use earshot_emulator::Emulator;
//! use serde_json::{Value, json};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let emulator = Emulator::builder()
//!         .time_scale(0.01) // a 15 s deadline passes in 150 ms
//!         .allow_private_urls(true) // receivers on 127.0.0.1, over http
//!         .start()
//!         .await?;
//!     let http = reqwest::Client::builder().no_proxy().build()?;
//!     let subscriptions = emulator.url().join("v1/webhook-subscriptions")?;
//!
//!     let created: Value = http
//!         .post(subscriptions.clone())
//!         .header("Authorization", emulator.api_key().expose())
//!         .json(&json!({
//!             "url": "http://127.0.0.1:9/hooks",
//!             "events": ["session.started", "session.completed"],
//!             "secret": "whsec_an_example_secret_of_32_chars_or_more",
//!         }))
//!         .send()
//!         .await?
//!         .error_for_status()?
//!         .json()
//!         .await?;
//!     assert_eq!(created["secret_version"], 1);
//!
//!     let listed: Value = http
//!         .get(subscriptions)
//!         .header("Authorization", emulator.api_key().expose())
//!         .send()
//!         .await?
//!         .error_for_status()?
//!         .json()
//!         .await?;
//!     assert_eq!(listed["subscriptions"][0]["id"], created["id"]);
//!
//!     // The platform's activity, on demand: `session.started` is signed
//!     // and sent to the subscription above (nothing listens on port 9,
//!     // so its delivery is retried in the background).
//!     let session = emulator.start_session(None)?;
//!     assert!(session.starts_with("ses_"));
//!     // The key stays out of logs: `{:?}` shows it masked.
//!     assert!(!format!("{emulator:?}").contains(emulator.api_key().expose()));
//!
//!     emulator.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! # Asserting on what it got
//!
//! The handle keeps a [`journal`](Emulator::journal) of every request
//! (method, path, [`Route`], status, the start of its body, when), and
//! checks expectations set with [`expect`](Emulator::expect):
//! [`verify`](Emulator::verify) returns a [`VerifyError`] whose text is a
//! diff (expected, received, and the journal's lines for the route); a
//! test that forgets to verify gets the same diff as a panic when the
//! emulator is dropped. [`settled`](Emulator::settled) returns once no job
//! is queued or processing and no webhook delivery is pending, woken by
//! the emulator's state rather than by polling:
//!
//! ```rust
//! use std::time::Duration;
//! use earshot_emulator::{Emulator, Route};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let emulator = Emulator::builder().time_scale(0.01).start().await?;
//!     emulator.expect(Route::ListSubscriptions).times(1);
//!     emulator.expect(Route::DeleteSubscription).never();
//!
//!     let http = reqwest::Client::builder().no_proxy().build()?;
//!     http.get(emulator.url().join("v1/webhook-subscriptions")?)
//!         .header("Authorization", emulator.api_key().expose())
//!         .send()
//!         .await?;
//!
//!     let journal = emulator.journal();
//!     assert_eq!(journal[0].route, Some(Route::ListSubscriptions));
//!     assert_eq!(journal[0].status, 200);
//!     emulator.settled_within(Duration::from_secs(5)).await?;
//!     emulator.verify()?; // else dropping `emulator` checks, and panics
//!     Ok(())
//! }
//! ```
//!
//! # Deliveries on demand
//!
//! [`deliver`](Emulator::deliver) sends an event the platform already sent
//! to a subscription once more, as a [`Delivery`] says: a duplicate, an
//! out-of-order pair, signed with another secret, with a stale or future
//! `t`, or late. These are the cases `earshot check-receiver` runs
//! ([`protocol::delivery::cases`]), prepared by the same code, so the
//! receiver a Rust test checks gets what the command line would send.
//! `tests/api/deliveries.rs` in this crate shows each against a receiver.
//!
//! # A clock you move
//!
//! With [`manual_clock`](EmulatorBuilder::manual_clock), the platform's
//! scheduled work — delivery retries (5 s, 30 s, 2 min, 10 min, 30 min),
//! pre-recorded processing and webhook retries, the 90 s before a
//! session's artifacts are listed, the hour a presigned link works —
//! waits until the test moves time with [`advance`](Emulator::advance),
//! which returns once the work due by then has run (each attempt made and
//! answered). A test of the last retry takes milliseconds and never waits
//! for one. This tests a small axum receiver that is down at first and
//! must handle a duplicate once:
//!
//! ```rust
//! use std::{sync::Arc, time::Duration};
//! use axum::{Json, Router, extract::State, http::StatusCode, routing::post};
//! use earshot_emulator::{Delivery, Emulator, Route};
//! use serde_json::{Value, json};
//! use tokio::sync::Mutex;
//!
//! /// The app under test: down for its first request, then handles each event once.
//! async fn hook(State(done): State<Arc<Mutex<Vec<String>>>>, Json(event): Json<Value>) -> StatusCode {
//!     let (mut done, id) = (done.lock().await, event["event_id"].as_str().unwrap_or("?").to_owned());
//!     if done.is_empty() { done.push("was down".into()); return StatusCode::SERVICE_UNAVAILABLE; }
//!     if !done.contains(&id) { done.push(id) } // a duplicate is answered, not handled twice
//!     StatusCode::OK
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let done = Arc::new(Mutex::new(Vec::new()));
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//!     let url = format!("http://{}/hooks", listener.local_addr()?);
//!     let app = Router::new().route("/hooks", post(hook)).with_state(done.clone());
//!     tokio::spawn(async move { axum::serve(listener, app).await });
//!     let emulator = Emulator::builder().manual_clock().allow_private_urls(true).start().await?;
//!     emulator.expect(Route::CreateSubscription).times(1);
//!     let created: Value = reqwest::Client::builder().no_proxy().build()?
//!         .post(emulator.url().join("v1/webhook-subscriptions")?)
//!         .header("Authorization", emulator.api_key().expose())
//!         .json(&json!({ "url": url, "events": ["session.started"],
//!                        "secret": "whsec_an_example_secret_of_32_chars_or_more" }))
//!         .send().await?.error_for_status()?.json().await?;
//!     emulator.start_session(None)?; // `session.started`: the app is down, 503
//!     emulator.advance(Duration::from_secs(5)).await?; // the retry due 5 s later: 200
//!     let event = done.lock().await[1].clone();
//!     let subscription = created["id"].as_str().ok_or("no subscription id")?;
//!     let answers = emulator.deliver(subscription, Delivery::duplicate_of(&event)).await?;
//!     assert_eq!(answers[0].status, Some(200));
//!     assert_eq!(*done.lock().await, ["was down", event.as_str()]); // handled once
//!     assert_eq!(emulator.journal().len(), 1); // only the subscription reached the platform
//!     emulator.verify()?;
//!     Ok(())
//! }
//! ```
//!
//! [`Emulator::start`] with an [`EmulatorConfig`] is the same, with every
//! setting in one struct (what `earshot emulator` and `earshot demo` use).
//! The crate `earshot-demo` drives endless demo traffic against a running
//! emulator.
//!
//! # What it builds
//!
//! It depends on `earshot-protocol` (what the platform speaks) and
//! `earshot-http` (serving with bounds) only: no SQLite, metrics or
//! configuration crate, and no TLS crate unless its `tls` feature is on,
//! which lets it make https requests: deliveries and webhooks to https
//! receivers, an https `audio_url` (without it, those fail to connect).
//! Where the platform's specification is silent, the choices are written
//! down in `docs/decisions.md`.

mod advance;
mod agents;
mod auth;
mod builder;
mod clock;
mod control;
mod delivery;
mod dictation;
mod error;
mod expect;
mod faults;
mod handle;
mod journal;
mod limits;
mod on_demand;
mod prerecorded;
mod problem;
mod route;
mod settled;
mod stats;
mod store;
#[cfg(test)]
mod traffic_bounds;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use url::Url;

use earshot_http::server as http_server;

pub use advance::{MAX_CLOCK_MOVE, NoManualClock};
pub use builder::EmulatorBuilder;
pub use clock::TimeScale;
pub use control::{CallOutcome, NewCall};
/// How long the platform waits for a receiver's answer (15 s, before the
/// time scale): a receiver slower than this times out.
pub use delivery::DEADLINE as DELIVERY_DEADLINE;
pub use dictation::DictationTiming;
/// The protocol both the platform and its clients speak (signatures,
/// the on-demand deliveries' cases), for a test that checks what its
/// receiver got without another dependency.
pub use earshot_protocol as protocol;
pub use earshot_protocol::delivery::Delivery;
pub use error::{ControlError, StartError};
pub use expect::{ExpectRoute, Times, Unmet, VerifyError};
pub use faults::Fault;
pub use journal::{JOURNAL_BODY_LIMIT, JOURNAL_KEEP, JournalEntry};
pub use on_demand::DeliveryAnswer;
pub use prerecorded::{AccountChange, AccountSnapshot};
pub use route::Route;
pub use settled::{Busy, NotSettled};
pub use stats::StatsSnapshot;
// Types that appear in this crate's public signatures, so an embedder
// needs no other crate to name them.
pub use earshot_http::server::ServerLimits;
pub use earshot_protocol::redact::SecretString;
pub use earshot_protocol::validate::ValidationError;

/// How an emulator behaves; the flags of `earshot emulator`.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// The one API key the emulated account accepts.
    pub api_key: SecretString,
    /// Lets subscriptions point at `http://127.0.0.1:PORT` receivers.
    pub allow_private_urls: bool,
    /// Every platform duration (deadlines, retries, artifact delays) × this.
    pub time_scale: TimeScale,
    /// Scheduled work (retries, processing, the artifact delay, link
    /// expiry) waits for [`Emulator::advance`] instead of real time; I/O
    /// deadlines and dictation still pass at `time_scale`.
    pub manual_clock: bool,
    /// Pre-recorded jobs processing at once (`--concurrency`).
    pub concurrency: u32,
    /// Pre-recorded API requests per five minutes (`--http-limit`).
    pub http_limit: u32,
    /// GETs per minute of one transcript (`--poll-limit`).
    pub poll_limit: u32,
    /// Largest dictation or sync request body, in bytes (413 past it).
    pub dictation_audio_cap: u64,
    /// How long emulated transcription, finalising and rewriting take.
    pub dictation_timing: DictationTiming,
    /// Connections, header, idle and body timeouts of the listener.
    pub server_limits: ServerLimits,
    /// Sessions and calls remembered (with their delivery attempts and
    /// artifacts); older ones are forgotten. `None`: all (the default);
    /// `earshot demo` sets [`DEMO_KEEP_CONVERSATIONS`].
    pub keep_conversations: Option<usize>,
    /// Finished pre-recorded jobs remembered; older finished ones are
    /// forgotten (their GET answers 404). `None`: all (the default);
    /// `earshot demo` sets [`DEMO_KEEP_JOBS`].
    pub keep_jobs: Option<usize>,
    /// The size of every recording artifact, in bytes: a WAV of silence
    /// generated while it is served (never held whole). `None`: one second
    /// of 8 kHz audio (16 KB). The session download measurement sets 100 MB.
    pub recording_bytes: Option<u64>,
    /// Requests the journal keeps ([`Emulator::journal`]); older ones are
    /// let go (expectations still count them). Default [`JOURNAL_KEEP`];
    /// `earshot demo` keeps [`DEMO_KEEP_JOURNAL`].
    pub journal_keep: usize,
}

/// What `earshot demo` and `earshot emulator --traffic` remember of their
/// endless traffic: the newest 500 sessions and calls.
pub const DEMO_KEEP_CONVERSATIONS: usize = 500;

/// What `earshot demo` and `earshot emulator --traffic` keep in the
/// journal of their endless traffic: the newest 1,000 requests.
pub const DEMO_KEEP_JOURNAL: usize = 1_000;

/// What `earshot demo` and `earshot emulator --traffic` remember of their
/// endless jobs: the newest 1,000 finished ones (the Jobs pane holds at
/// most as many rows).
pub const DEMO_KEEP_JOBS: usize = 1_000;

impl EmulatorConfig {
    /// A config with a freshly generated API key and real-time durations.
    pub fn new(api_key: SecretString) -> Self {
        Self {
            api_key,
            allow_private_urls: false,
            time_scale: TimeScale::REAL_TIME,
            manual_clock: false,
            concurrency: prerecorded::DEFAULT_CONCURRENCY,
            http_limit: limits::DEFAULT_HTTP_LIMIT,
            poll_limit: limits::DEFAULT_POLL_LIMIT,
            dictation_audio_cap: dictation::DEFAULT_AUDIO_CAP,
            dictation_timing: DictationTiming::default(),
            server_limits: ServerLimits::default(),
            keep_conversations: None,
            keep_jobs: None,
            recording_bytes: None,
            journal_keep: JOURNAL_KEEP,
        }
    }

    /// Bounded for traffic that never stops (the demo scenario): keeps
    /// [`DEMO_KEEP_CONVERSATIONS`] sessions and calls and
    /// [`DEMO_KEEP_JOBS`] finished jobs, so memory levels off.
    pub fn for_endless_traffic(mut self) -> Self {
        self.keep_conversations = Some(DEMO_KEEP_CONVERSATIONS);
        self.keep_jobs = Some(DEMO_KEEP_JOBS);
        self.journal_keep = DEMO_KEEP_JOURNAL;
        self
    }
}

/// What every route handler shares.
pub(crate) struct State {
    config: EmulatorConfig,
    /// Where this emulator is reachable, for the URLs it hands out.
    base_url: Url,
    store: Mutex<store::Store>,
    stats: stats::Stats,
    faults: faults::Faults,
    deliveries: delivery::Engine,
    prerecorded: prerecorded::Prerecorded,
    limits: limits::Limits,
    dictation: dictation::Dictation,
    journal: journal::Journal,
    /// Ticks when a job finishes or a delivery ends (for `settled`).
    activity: settled::Activity,
    /// What scheduled work waits on (`clock.rs`).
    clock: clock::Clock,
}

pub(crate) type SharedState = Arc<State>;

/// A running emulator: its address and API key, and the control
/// operations of a test (`handle.rs`). `Debug` shows the key masked.
///
/// Dropping it stops the server: it stops accepting connections at once
/// (a connect to [`addr`] is then refused) and finishes the answers in
/// flight in the background. [`shutdown`] does the same and waits
/// (briefly) for the server to end.
///
/// [`addr`]: Emulator::addr
/// [`shutdown`]: Emulator::shutdown
#[must_use = "dropping the Emulator stops its server"]
pub struct Emulator {
    addr: SocketAddr,
    url: Url,
    api_key: SecretString,
    state: SharedState,
    stop: watch::Sender<bool>,
    /// `None` only once [`shutdown`](Emulator::shutdown) or
    /// [`wait`](Emulator::wait) took it.
    server: Option<JoinHandle<std::io::Result<()>>>,
    open: http_server::OpenConnections,
    expectations: expect::Shared,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("url", &self.url.as_str())
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// An emulator set up knob by knob, with the defaults of `earshot
    /// emulator`: `Emulator::builder().time_scale(0.01).start().await?`.
    pub fn builder() -> EmulatorBuilder {
        EmulatorBuilder::default()
    }

    /// Binds `listen` (port 0 picks a free one) and starts serving in the
    /// background of the current tokio runtime. Refuses a key that is
    /// empty or could not travel in a header
    /// ([`StartError::InvalidApiKey`]): such a key would let anyone in, or
    /// no one.
    pub async fn start(listen: SocketAddr, config: EmulatorConfig) -> Result<Emulator, StartError> {
        earshot_protocol::validate::api_key(config.api_key.expose())
            .map_err(StartError::InvalidApiKey)?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| StartError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(StartError::LocalAddr)?;
        let base_url = base_url(addr)?;
        let api_key = config.api_key.clone();
        let server_limits = config.server_limits;
        let state = Arc::new(State::new(config, base_url.clone())?);
        let router = router(state.clone());
        let (stop, mut stopped) = watch::channel(false);
        let (open, serving) =
            http_server::server(listener, router, server_limits, None, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            });
        let server = tokio::spawn(serving);
        Ok(Emulator {
            addr,
            url: base_url,
            api_key,
            state,
            stop,
            server: Some(server),
            open,
            expectations: expect::Shared::default(),
        })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many connections it holds open now (at most
    /// [`ServerLimits::max_connections`](http_server::ServerLimits)).
    pub fn open_connections(&self) -> usize {
        self.open.count()
    }

    /// `http://HOST:PORT/`: every area is served at this one origin, so
    /// it is the base of the agents, pre-recorded, dictation and sync
    /// URLs alike (`url().join("v1/webhook-subscriptions")`).
    pub fn url(&self) -> Url {
        self.url.clone()
    }

    /// The API key the emulated account accepts; `.expose()` gives the
    /// text for a header. Its `Debug` and `Display` are masked.
    pub fn api_key(&self) -> &SecretString {
        &self.api_key
    }

    /// Stops accepting requests and waits (briefly) for the server to end.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
        }
    }

    /// Resolves when the server ends on its own (it should not).
    pub async fn wait(mut self) -> std::io::Result<()> {
        let Some(server) = self.server.take() else {
            return Ok(());
        };
        match server.await {
            Ok(result) => result,
            Err(error) => Err(std::io::Error::other(error.to_string())),
        }
    }
}

impl Drop for Emulator {
    /// Stops the server (see [`Emulator`]); the task finishes the answers
    /// in flight on its own. Then checks the expectations if
    /// [`verify`](Emulator::verify) was not called since the last was set,
    /// and panics with their diff if one is not met (not while the thread
    /// is already panicking).
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.verify_on_drop();
    }
}

/// `http://ADDR/` (an IPv6 address in brackets, as `SocketAddr` prints it).
fn base_url(addr: SocketAddr) -> Result<Url, StartError> {
    Url::parse(&format!("http://{addr}/"))
        .map_err(|error| StartError::LocalAddr(std::io::Error::other(error.to_string())))
}

fn router(state: SharedState) -> Router {
    Router::new()
        .merge(agents::routes(state.clone()))
        .merge(prerecorded::routes(state.clone()))
        .merge(dictation::routes())
        .merge(control::routes())
        .fallback(problem::no_route)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            faults::inject,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            stats::count,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            journal::record,
        ))
        .layer(axum::middleware::from_fn(problem::in_area_shape))
        .with_state(state)
}

impl State {
    /// Empty records for an emulator reachable at `base_url`.
    fn new(config: EmulatorConfig, base_url: Url) -> Result<State, StartError> {
        let client = |error: reqwest::Error| StartError::HttpClient(Box::new(error));
        let deliveries = delivery::Engine::new(config.time_scale).map_err(client)?;
        let prerecorded = prerecorded::Prerecorded::new(&config).map_err(client)?;
        let limits = limits::Limits::new(config.http_limit, config.poll_limit);
        let journal = journal::Journal::new(config.journal_keep);
        let clock = if config.manual_clock {
            clock::Clock::Manual(Arc::new(clock::ManualClock::new()))
        } else {
            clock::Clock::Scaled(config.time_scale)
        };
        Ok(State {
            config,
            base_url,
            store: Mutex::new(store::Store::default()),
            stats: stats::Stats::default(),
            faults: faults::Faults::default(),
            deliveries,
            prerecorded,
            limits,
            dictation: dictation::Dictation::default(),
            journal,
            activity: settled::Activity::default(),
            clock,
        })
    }

    /// The store, even if a panicking task poisoned the lock (the data is
    /// plain records; a half-finished update is better than no emulator).
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, store::Store> {
        self.store
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// A WAV of mono 16-bit silence for the unit tests, with an optional
/// comment (what the emulated transcript says).
#[cfg(test)]
pub(crate) fn test_wav(rate: u32, seconds: f64, comment: Option<&str>) -> Vec<u8> {
    let frames = (f64::from(rate) * seconds) as usize;
    earshot_protocol::wav::encode_pcm16(rate, 1, &vec![0u8; frames * 2], comment)
}
