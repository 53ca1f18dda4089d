//! The platform emulator: one axum listener serving every spec area by path.
//!
//! [`Emulator::start`] binds, spawns the server and returns a handle with
//! its URL and API key; tests start it on `127.0.0.1:0`, `earshot emulator`
//! runs it headless, `earshot demo` runs it in-process. Where the spec is
//! silent, the choices are written down in `docs/decisions.md`.

mod agents;
mod auth;
mod clock;
mod control;
mod delivery;
mod dictation;
mod faults;
mod limits;
mod prerecorded;
mod problem;
pub mod scenario;
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

use earshot_core::http_server::{self, ServerLimits};
use earshot_core::redact::SecretString;

pub use clock::TimeScale;
pub use dictation::DictationTiming;

/// How an emulator behaves; the flags of `earshot emulator`.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// The one API key the emulated account accepts.
    pub api_key: SecretString,
    /// Lets subscriptions point at `http://127.0.0.1:PORT` receivers.
    pub allow_private_urls: bool,
    /// Every platform duration (deadlines, retries, artifact delays) × this.
    pub time_scale: TimeScale,
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
}

/// What `earshot demo` and `earshot emulator --traffic` remember of their
/// endless traffic: the newest 500 sessions and calls.
pub const DEMO_KEEP_CONVERSATIONS: usize = 500;

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
            concurrency: prerecorded::DEFAULT_CONCURRENCY,
            http_limit: limits::DEFAULT_HTTP_LIMIT,
            poll_limit: limits::DEFAULT_POLL_LIMIT,
            dictation_audio_cap: dictation::DEFAULT_AUDIO_CAP,
            dictation_timing: DictationTiming::default(),
            server_limits: ServerLimits::default(),
            keep_conversations: None,
            keep_jobs: None,
            recording_bytes: None,
        }
    }

    /// Bounded for traffic that never stops (the demo scenario): keeps
    /// [`DEMO_KEEP_CONVERSATIONS`] sessions and calls and
    /// [`DEMO_KEEP_JOBS`] finished jobs, so memory levels off.
    pub fn for_endless_traffic(mut self) -> Self {
        self.keep_conversations = Some(DEMO_KEEP_CONVERSATIONS);
        self.keep_jobs = Some(DEMO_KEEP_JOBS);
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
}

pub(crate) type SharedState = Arc<State>;

/// A running emulator. Dropping it does not stop it; call [`shutdown`].
///
/// [`shutdown`]: Emulator::shutdown
pub struct Emulator {
    addr: SocketAddr,
    url: Url,
    api_key: SecretString,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
}

impl Emulator {
    /// Binds `listen` (port 0 picks a free one) and starts serving.
    /// Refuses a key that is empty or could not travel in a header
    /// (`InvalidInput`): such a key would let anyone in, or no one.
    pub async fn start(listen: SocketAddr, config: EmulatorConfig) -> std::io::Result<Emulator> {
        earshot_core::api::validate::api_key(config.api_key.expose()).map_err(|error| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, error.to_string())
        })?;
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let base_url = Url::parse(&format!("http://{addr}/"))
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        let api_key = config.api_key.clone();
        let server_limits = config.server_limits;
        let state = Arc::new(State::new(config, base_url.clone())?);
        let router = router(state);
        let (stop, mut stopped) = watch::channel(false);
        let server = tokio::spawn(http_server::serve(
            listener,
            router,
            server_limits,
            async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            },
        ));
        Ok(Emulator {
            addr,
            url: base_url,
            api_key,
            stop,
            server,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT/`: every area is served at this one origin.
    pub fn url(&self) -> Url {
        self.url.clone()
    }

    pub fn api_key(&self) -> &SecretString {
        &self.api_key
    }

    /// Stops accepting requests and waits (briefly) for the server to end.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.server).await;
    }

    /// Resolves when the server ends on its own (it should not).
    pub async fn wait(self) -> std::io::Result<()> {
        match self.server.await {
            Ok(result) => result,
            Err(error) => Err(std::io::Error::other(error.to_string())),
        }
    }
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
        .layer(axum::middleware::from_fn(problem::in_area_shape))
        .with_state(state)
}

impl State {
    /// Empty records for an emulator reachable at `base_url`.
    fn new(config: EmulatorConfig, base_url: Url) -> std::io::Result<State> {
        let other = |error: reqwest::Error| std::io::Error::other(error.to_string());
        let deliveries = delivery::Engine::new(config.time_scale).map_err(other)?;
        let prerecorded = prerecorded::Prerecorded::new(&config).map_err(other)?;
        let limits = limits::Limits::new(config.http_limit, config.poll_limit);
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
    earshot_core::wav::encode_pcm16(rate, 1, &vec![0u8; frames * 2], comment)
}
