//! The demo scenario: continuous, realistic traffic against a running
//! emulator, so every pane of the console has live data with no setup.
//!
//! [`start`] drives the emulator over HTTP exactly as a customer's platform
//! activity and a customer's integration would — the `/_emulator/*` control
//! routes stand in for callers talking to agents, the public API (through
//! [`crate::api::Client`]) for the integration — so the emulator needs no
//! hooks for it. It:
//!
//! 1. starts four webhook receivers on `127.0.0.1:0` (small axum servers):
//!    **healthy** (verifies the signature over the raw bytes → 200),
//!    **reserialises-body** (parses the JSON, re-serialises it pretty and
//!    verifies that → 401 `invalid signature`, the classic mistake),
//!    **slow** (answers after the scaled 15 s deadline → timeouts and
//!    retries) and **redirects** (301 to the healthy one → not followed);
//! 2. creates five subscriptions, each with its own generated secret: one
//!    per receiver plus a **paused** one (`enabled: false`);
//! 3. uploads one WAV built in code and, through a burst right away and
//!    then two loops, starts and completes sessions, places calls (mostly
//!    connected then ended, some failed) for three fixed agents
//!    ([`DEMO_AGENTS`]), and keeps the pre-recorded queue at the account's
//!    concurrency limit with three jobs waiting.
//!
//! Every request that fails is logged and skipped: the scenario keeps
//! running whatever the emulator answers. Randomness (gaps, agents, call
//! outcomes) comes from a tiny PRNG seeded by [`ScenarioConfig::seed`].
//! Dropping the [`Scenario`] (or [`Scenario::stop`]) ends its traffic and
//! closes its receivers. Decisions are in `docs/decisions.md`, "Demo
//! scenario".

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use url::Url;

use super::TimeScale;
use crate::api::types::agents::{EventKind, NewSubscription};
use crate::api::types::prerecorded::NewTranscript;
use crate::api::validate::UrlPolicy;
use crate::api::{ApiError, Client, Endpoints};
use crate::redact::SecretString;
use crate::signature::{self, Candidate};

/// The three agents the scenario's sessions and calls belong to. The first
/// is the one the `slow` subscription is scoped to.
pub const DEMO_AGENTS: [&str; 3] = [
    "0000de30-0000-4000-8000-000000000001",
    "0000de30-0000-4000-8000-000000000002",
    "0000de30-0000-4000-8000-000000000003",
];

/// The time scale `earshot emulator --traffic` and `earshot demo` use when
/// none is given: a 15 s deadline passes in 1.5 s, the first retries come
/// within seconds.
pub const DEMO_TIME_SCALE: f64 = 0.1;

/// Conversation ids kept by [`Scenario::recent_conversations`].
const RECENT_CONVERSATIONS: usize = 20;
/// Transcript ids kept by [`Scenario::job_ids`].
const RECENT_JOBS: usize = 200;
/// Jobs kept waiting as `queued` beyond the account's concurrency.
const QUEUE_BACKLOG: u64 = 3;
/// How long (wall clock) one job should take to process; the uploaded
/// audio is made long enough for that at the configured time scale.
const JOB_WALL_TIME: Duration = Duration::from_secs(2);
/// The emulator processes a job in a quarter of the audio's duration.
const PROCESSING_SPEED_UP: f64 = 4.0;
/// Bounds of the uploaded audio's length (8 kHz mono 16-bit: 16 kB/s).
const AUDIO_MIN: Duration = Duration::from_secs(2);
const AUDIO_MAX: Duration = Duration::from_secs(120);
/// Sustained and burst job submissions: far under the emulator's
/// pre-recorded limit (20,000 requests per 5 minutes is ~66/s).
const JOB_RATE_PER_SECOND: f64 = 3.0;
const JOB_BURST: f64 = 8.0;
/// Every third job asks for a webhook to the healthy receiver.
const JOB_WEBHOOK_EVERY: u64 = 3;
/// The header the healthy receiver expects on pre-recorded webhooks.
const TRANSCRIPT_TOKEN_HEADER: &str = "X-Demo-Token";
/// The sentence the uploaded WAV carries in its `ICMT` chunk.
const AUDIO_SENTENCE: &str = "Hi, this is the earshot demo. I'd like to move my appointment \
     to Tuesday, no, Wednesday morning, and please send the confirmation by email.";
/// Control requests give up after this long.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// How the scenario behaves.
#[derive(Clone, Debug)]
pub struct ScenarioConfig {
    /// Mean gap between generated conversation events (sessions, calls);
    /// sessions and connected calls last two to four paces.
    pub pace: Duration,
    /// Seeds the PRNG behind gaps, agents and call outcomes.
    pub seed: u64,
    /// The emulator's `--time-scale`: the slow receiver answers after the
    /// scaled 15 s deadline, and the audio is sized for ~2 s jobs.
    pub time_scale: TimeScale,
    /// Where jobs with a webhook report (`None`: the scenario's own
    /// healthy receiver); `earshot demo` points it at the console's Inbox.
    pub transcript_webhook: Option<Url>,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            pace: Duration::from_millis(1500),
            seed: 0x5eed_de30,
            time_scale: TimeScale::REAL_TIME,
            transcript_webhook: None,
        }
    }
}

/// One of the five subscriptions the scenario created.
#[derive(Clone, Debug)]
pub struct DemoSubscription {
    pub id: String,
    /// `healthy`, `reserialises-body`, `slow`, `redirects` or `paused`.
    pub role: &'static str,
    /// Where it delivers: the receiver's URL (the paused one names the
    /// healthy receiver, which also accepts its secret).
    pub url: String,
    /// Its signing secret, so a front end can explain a failure.
    pub secret: SecretString,
}

/// Why the scenario could not start.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("could not set up the demo scenario: {0}")]
    Setup(String),
    #[error("could not start the {role} demo receiver: {source}")]
    Receiver {
        role: &'static str,
        source: std::io::Error,
    },
    #[error(
        "could not create the {role} demo subscription: {source}{}",
        private_url_hint(source)
    )]
    Subscription {
        role: &'static str,
        source: ApiError,
    },
    #[error("could not upload the demo audio: {0}")]
    Upload(ApiError),
}

fn private_url_hint(error: &ApiError) -> &'static str {
    if error.status() == Some(400) {
        " (the demo's receivers are on 127.0.0.1: start the emulator with --allow-private-urls)"
    } else {
        ""
    }
}

/// The running scenario. Dropping it stops the traffic and the receivers.
pub struct Scenario {
    recent: Arc<Mutex<Recent>>,
    subscriptions: Vec<DemoSubscription>,
    tasks: Vec<JoinHandle<()>>,
}

impl Scenario {
    /// The latest session and call ids, newest first (at most 20).
    pub fn recent_conversations(&self) -> Vec<String> {
        lock(&self.recent).conversations.iter().cloned().collect()
    }

    /// Submitted transcript ids, newest first (at most 200).
    pub fn job_ids(&self) -> Vec<String> {
        lock(&self.recent).jobs.iter().cloned().collect()
    }

    /// Ids of the jobs submitted from now on, as they are submitted (one
    /// listener: a second call replaces the first's channel).
    pub fn job_feed(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        lock(&self.recent).job_feed = Some(tx);
        rx
    }

    /// The five subscriptions, in the order healthy, reserialises-body,
    /// slow, redirects, paused.
    pub fn subscriptions(&self) -> Vec<DemoSubscription> {
        self.subscriptions.clone()
    }

    /// Stops generating traffic and closes the receivers (requests in
    /// flight are answered first). Deliveries and jobs already handed to
    /// the emulator run their course there.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

#[derive(Default)]
struct Recent {
    conversations: VecDeque<String>,
    jobs: VecDeque<String>,
    /// Where new job ids go, once someone asked ([`Scenario::job_feed`]).
    job_feed: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

fn lock(recent: &Mutex<Recent>) -> std::sync::MutexGuard<'_, Recent> {
    recent.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn remember(list: &mut VecDeque<String>, id: String, cap: usize) {
    list.push_front(id);
    list.truncate(cap);
}

/// Starts the receivers, creates the subscriptions, uploads the audio,
/// generates a first burst (two sessions, two calls, a queue's worth of
/// jobs) and spawns the loops. `api_key` is the emulator's key.
pub async fn start(
    emulator_url: &Url,
    api_key: &SecretString,
    config: ScenarioConfig,
) -> Result<Scenario, ScenarioError> {
    let setup = |error: &dyn std::fmt::Display| ScenarioError::Setup(error.to_string());
    let api = Client::new(Endpoints::all_at(emulator_url), api_key.clone())
        .map_err(|error| setup(&error))?
        .with_url_policy(UrlPolicy::AnyHttp);
    let control = reqwest::Client::builder()
        .no_proxy()
        .timeout(CONTROL_TIMEOUT)
        .build()
        .map_err(|error| setup(&error))?;
    let new_secret = || -> Result<SecretString, ScenarioError> {
        signature::generate_secret()
            .map(SecretString::new)
            .map_err(|error| setup(&error))
    };
    let secrets = Secrets {
        healthy: new_secret()?,
        reserialiser: new_secret()?,
        slow: new_secret()?,
        redirects: new_secret()?,
        paused: new_secret()?,
        transcript_token: new_secret()?,
    };
    // The scenario owns every task from here on: an early return drops it,
    // which stops the receivers already started.
    let mut scenario = Scenario {
        recent: Arc::new(Mutex::new(Recent::default())),
        subscriptions: Vec::new(),
        tasks: Vec::new(),
    };
    let receivers = start_receivers(&secrets, config.time_scale, &mut scenario.tasks).await?;

    for planned in plan(&receivers, &secrets) {
        let Planned {
            mut subscription,
            events,
            agent_id,
            enabled,
        } = planned;
        let request = NewSubscription {
            url: subscription.url.clone(),
            events,
            secret: subscription.secret.clone(),
            agent_id: agent_id.map(str::to_owned),
            enabled: (!enabled).then_some(false),
        };
        let role = subscription.role;
        let created = api
            .create_subscription(&request)
            .await
            .map_err(|source| ScenarioError::Subscription { role, source })?;
        tracing::debug!(
            role,
            subscription = created.id,
            url = subscription.url,
            "demo subscription created"
        );
        subscription.id = created.id;
        scenario.subscriptions.push(subscription);
    }

    let audio_url = upload_audio(&api, config.time_scale).await?;
    let transcript_hook = config.transcript_webhook.clone().unwrap_or_else(|| {
        let mut own = receivers.healthy.clone();
        own.set_path("/transcripts");
        own
    });
    let traffic = Arc::new(Traffic {
        control,
        base: emulator_url.clone(),
        api,
        recent: scenario.recent.clone(),
        pace: config.pace,
        audio_url,
        transcript_hook: transcript_hook.to_string(),
        transcript_token: secrets.transcript_token.clone(),
    });

    // The first burst, awaited so that every pane has data at once.
    let mut lifecycles = JoinSet::new();
    let mut rng = Rng::new(config.seed);
    traffic
        .session(DEMO_AGENTS[0], &mut rng, &mut lifecycles)
        .await;
    traffic
        .session(DEMO_AGENTS[1], &mut rng, &mut lifecycles)
        .await;
    traffic
        .call(DEMO_AGENTS[2], true, &mut rng, &mut lifecycles)
        .await;
    traffic
        .call(DEMO_AGENTS[0], false, &mut rng, &mut lifecycles)
        .await;
    let mut jobs = JobPacer {
        allowance: JOB_BURST,
        submitted: 0,
    };
    traffic.fill_queue(&mut jobs).await;

    scenario.tasks.push(tokio::spawn(run_conversations(
        traffic.clone(),
        rng,
        lifecycles,
    )));
    scenario.tasks.push(tokio::spawn(run_jobs(traffic, jobs)));
    Ok(scenario)
}

/// A subscription to create: the record to keep, and what to ask for.
struct Planned {
    /// `id` is filled in once created.
    subscription: DemoSubscription,
    events: Vec<EventKind>,
    agent_id: Option<&'static str>,
    enabled: bool,
}

/// The five subscriptions. Every enabled one takes `session.started`, so
/// any session of the first agent shows all four behaviours; the rest of
/// the events are a mix, and `slow` is scoped to the first agent.
fn plan(receivers: &ReceiverUrls, secrets: &Secrets) -> [Planned; 5] {
    use EventKind::{CallConnected, CallEnded, CallFailed, SessionCompleted, SessionStarted};
    let planned = |role, url: &Url, secret: &SecretString, events: &[EventKind]| Planned {
        subscription: DemoSubscription {
            id: String::new(),
            role,
            url: url.to_string(),
            secret: secret.clone(),
        },
        events: events.to_vec(),
        agent_id: None,
        enabled: true,
    };
    [
        planned(
            "healthy",
            &receivers.healthy,
            &secrets.healthy,
            &EventKind::ALL,
        ),
        planned(
            "reserialises-body",
            &receivers.reserialiser,
            &secrets.reserialiser,
            &[SessionStarted, SessionCompleted, CallConnected, CallEnded],
        ),
        Planned {
            agent_id: Some(DEMO_AGENTS[0]),
            ..planned(
                "slow",
                &receivers.slow,
                &secrets.slow,
                &[SessionStarted, SessionCompleted, CallEnded],
            )
        },
        planned(
            "redirects",
            &receivers.redirects,
            &secrets.redirects,
            &[SessionStarted, CallConnected, CallFailed],
        ),
        Planned {
            enabled: false,
            ..planned(
                "paused",
                &receivers.healthy,
                &secrets.paused,
                &EventKind::ALL,
            )
        },
    ]
}

struct Secrets {
    healthy: SecretString,
    reserialiser: SecretString,
    slow: SecretString,
    redirects: SecretString,
    paused: SecretString,
    transcript_token: SecretString,
}

// ---------------------------------------------------------------------------
// Receivers
// ---------------------------------------------------------------------------

struct ReceiverUrls {
    healthy: Url,
    reserialiser: Url,
    slow: Url,
    redirects: Url,
}

/// Binds and serves the four receivers; their tasks go into `tasks`.
async fn start_receivers(
    secrets: &Secrets,
    scale: TimeScale,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<ReceiverUrls, ScenarioError> {
    let healthy = Router::new()
        .route("/webhooks", post(healthy_webhook))
        .route("/transcripts", post(healthy_transcript))
        .with_state(Arc::new(Healthy {
            secrets: vec![
                ("healthy", secrets.healthy.clone()),
                ("paused", secrets.paused.clone()),
            ],
            transcript_token: secrets.transcript_token.clone(),
        }));
    let healthy = serve("healthy", healthy, tasks).await?;
    let reserialiser = Router::new()
        .route("/webhooks", post(reserialising_webhook))
        .with_state(Arc::new(secrets.reserialiser.clone()));
    let reserialiser = serve("reserialises-body", reserialiser, tasks).await?;
    let deadline = scale.scale(super::delivery::DEADLINE);
    let slow = Router::new()
        .route("/webhooks", post(slow_webhook))
        .with_state(Arc::new(Slow {
            delay: (deadline * 2).max(deadline + Duration::from_millis(250)),
        }));
    let slow = serve("slow", slow, tasks).await?;
    let redirects = Router::new()
        .route("/webhooks", post(redirecting_webhook))
        .with_state(Arc::new(healthy.to_string()));
    let redirects = serve("redirects", redirects, tasks).await?;
    Ok(ReceiverUrls {
        healthy,
        reserialiser,
        slow,
        redirects,
    })
}

/// Serves `router` on `127.0.0.1:0`; the URL of its `/webhooks` route.
/// Aborting the task closes the listener and, gracefully, its connections.
async fn serve(
    role: &'static str,
    router: Router,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<Url, ScenarioError> {
    let bind = |source| ScenarioError::Receiver { role, source };
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    tasks.push(tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(role, "demo receiver stopped: {error}");
        }
    }));
    Url::parse(&format!("http://{addr}/webhooks"))
        .map_err(|error| ScenarioError::Setup(error.to_string()))
}

fn signature_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(signature::HEADER_NAME)
        .and_then(|value| value.to_str().ok())
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

struct Healthy {
    /// The healthy subscription's secret, and the paused one's (so that
    /// resuming it in the console shows deliveries succeeding).
    secrets: Vec<(&'static str, SecretString)>,
    transcript_token: SecretString,
}

/// Verifies the signature over the raw bytes, as a receiver should.
async fn healthy_webhook(
    State(receiver): State<Arc<Healthy>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(header) = signature_header(&headers) else {
        return (StatusCode::BAD_REQUEST, "missing X-SVC-Signature").into_response();
    };
    let candidates: Vec<Candidate> = receiver
        .secrets
        .iter()
        .map(|(label, secret)| Candidate {
            label,
            secret: secret.expose().as_bytes(),
        })
        .collect();
    let verdict = signature::verify(
        header,
        &body,
        &candidates,
        now(),
        signature::DEFAULT_TOLERANCE_SECS,
    );
    if verdict.is_valid() {
        (StatusCode::OK, "ok").into_response()
    } else {
        // A rotated secret the receiver was not told about lands here.
        tracing::debug!(%verdict, "demo healthy receiver rejected a delivery");
        (StatusCode::UNAUTHORIZED, "invalid signature").into_response()
    }
}

/// Pre-recorded webhooks carry the job's auth header, not a signature.
async fn healthy_transcript(State(receiver): State<Arc<Healthy>>, headers: HeaderMap) -> Response {
    let token = headers
        .get(TRANSCRIPT_TOKEN_HEADER)
        .and_then(|value| value.to_str().ok());
    if token == Some(receiver.transcript_token.expose()) {
        (StatusCode::OK, "ok").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, "missing or wrong X-Demo-Token").into_response()
    }
}

/// The classic mistake: parse the JSON, serialise it again (pretty), and
/// compute the HMAC over that. The bytes differ, so the check fails.
async fn reserialising_webhook(
    State(secret): State<Arc<SecretString>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(header) = signature_header(&headers) else {
        return (StatusCode::BAD_REQUEST, "missing X-SVC-Signature").into_response();
    };
    let reserialised =
        serde_json::from_slice::<Value>(&body).and_then(|value| serde_json::to_vec_pretty(&value));
    let Ok(reserialised) = reserialised else {
        return (StatusCode::BAD_REQUEST, "body is not JSON").into_response();
    };
    let candidate = Candidate {
        label: "current",
        secret: secret.expose().as_bytes(),
    };
    let verdict = signature::verify(
        header,
        &reserialised,
        &[candidate],
        now(),
        signature::DEFAULT_TOLERANCE_SECS,
    );
    if verdict.is_valid() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, "invalid signature").into_response()
    }
}

struct Slow {
    /// Longer than the emulator's scaled delivery deadline.
    delay: Duration,
}

/// Answers 200, but only after the platform has given up waiting.
async fn slow_webhook(State(receiver): State<Arc<Slow>>) -> Response {
    tokio::time::sleep(receiver.delay).await;
    (StatusCode::OK, "ok, eventually").into_response()
}

/// A receiver that moved: 301 to the healthy one (deliveries do not
/// follow redirects).
async fn redirecting_webhook(State(location): State<Arc<String>>) -> Response {
    (
        StatusCode::MOVED_PERMANENTLY,
        [(LOCATION, location.as_str())],
        "moved permanently",
    )
        .into_response()
}

// ---------------------------------------------------------------------------
// Audio
// ---------------------------------------------------------------------------

/// The uploaded audio's length: long enough for jobs of about
/// [`JOB_WALL_TIME`] at this time scale, within [`AUDIO_MIN`]..[`AUDIO_MAX`].
fn audio_length(scale: TimeScale) -> Duration {
    JOB_WALL_TIME
        .mul_f64(PROCESSING_SPEED_UP / scale.factor())
        .clamp(AUDIO_MIN, AUDIO_MAX)
}

/// 8 kHz mono 16-bit PCM: a quiet 440 Hz tone of `length`, with `sentence`
/// in a `LIST/INFO/ICMT` chunk (the emulator's "transcript" of it).
fn demo_wav(length: Duration, sentence: &str) -> Vec<u8> {
    const RATE: u32 = 8000;
    let frames = (f64::from(RATE) * length.as_secs_f64()) as u32;
    let mut data = Vec::with_capacity(frames as usize * 2);
    for n in 0..frames {
        let phase = 2.0 * std::f64::consts::PI * 440.0 * f64::from(n) / f64::from(RATE);
        let sample = (phase.sin() * 2000.0) as i16;
        data.extend_from_slice(&sample.to_le_bytes());
    }
    crate::wav::encode_pcm16(RATE, 1, &data, Some(sentence))
}

/// Uploads the demo WAV once (through a temporary file, as `upload_file`
/// streams from disk); its `upload_url`.
async fn upload_audio(api: &Client, scale: TimeScale) -> Result<String, ScenarioError> {
    let setup = |error: std::io::Error| ScenarioError::Setup(format!("demo audio file: {error}"));
    let file = tempfile::NamedTempFile::new().map_err(setup)?;
    tokio::fs::write(file.path(), demo_wav(audio_length(scale), AUDIO_SENTENCE))
        .await
        .map_err(setup)?;
    let upload = api
        .upload_file(file.path(), |_| {})
        .await
        .map_err(ScenarioError::Upload)?;
    Ok(upload.upload_url)
}

// ---------------------------------------------------------------------------
// Traffic
// ---------------------------------------------------------------------------

/// What the loops share: the two HTTP clients and where things go.
struct Traffic {
    control: reqwest::Client,
    base: Url,
    api: Client,
    recent: Arc<Mutex<Recent>>,
    pace: Duration,
    audio_url: String,
    transcript_hook: String,
    transcript_token: SecretString,
}

/// Paces job submissions: a token bucket refilled at
/// [`JOB_RATE_PER_SECOND`], holding at most [`JOB_BURST`].
struct JobPacer {
    allowance: f64,
    submitted: u64,
}

impl Traffic {
    /// Sends a control request; its JSON answer, or `None` (the reason
    /// logged).
    async fn control(&self, method: reqwest::Method, path: &str, body: Value) -> Option<Value> {
        let url = match self.base.join(path.trim_start_matches('/')) {
            Ok(url) => url,
            Err(error) => {
                tracing::warn!(path, "demo: bad control URL: {error}");
                return None;
            }
        };
        let mut request = self.control.request(method.clone(), url);
        if method != reqwest::Method::GET {
            request = request.json(&body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(path, "demo: {method} failed: {}", super::root_cause(&error));
                return None;
            }
        };
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            let first_line = text.lines().next().unwrap_or_default();
            tracing::warn!(path, %status, "demo: {method} refused: {first_line}");
            return None;
        }
        match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!(path, "demo: unreadable answer: {error}");
                None
            }
        }
    }

    fn remember_conversation(&self, id: String) {
        remember(
            &mut lock(&self.recent).conversations,
            id,
            RECENT_CONVERSATIONS,
        );
    }

    /// How long a session or connected call lasts: two to four paces.
    fn hold(&self, rng: &mut Rng) -> Duration {
        self.pace.mul_f64(rng.between(2.0, 4.0))
    }

    /// Starts a session for `agent`; completing it is scheduled in `later`.
    async fn session(self: &Arc<Self>, agent: &str, rng: &mut Rng, later: &mut JoinSet<()>) {
        let answer = self
            .control(
                reqwest::Method::POST,
                "/_emulator/sessions",
                json!({ "agent_id": agent }),
            )
            .await;
        let Some(id) = answer.and_then(|answer| id_in(&answer, "session_id")) else {
            return;
        };
        tracing::debug!(session = id, agent, "demo: session started");
        self.remember_conversation(id.clone());
        let hold = self.hold(rng);
        let traffic = self.clone();
        later.spawn(async move {
            tokio::time::sleep(hold).await;
            let path = format!("/_emulator/sessions/{id}/complete");
            if traffic
                .control(reqwest::Method::POST, &path, json!({}))
                .await
                .is_some()
            {
                tracing::debug!(session = id, "demo: session completed");
            }
        });
    }

    /// Places a call for `agent`: connected (its end scheduled in `later`)
    /// or failed.
    async fn call(
        self: &Arc<Self>,
        agent: &str,
        connected: bool,
        rng: &mut Rng,
        later: &mut JoinSet<()>,
    ) {
        let outcome = if connected { "connected" } else { "failed" };
        let answer = self
            .control(
                reqwest::Method::POST,
                "/_emulator/calls",
                json!({ "agent_id": agent, "outcome": outcome }),
            )
            .await;
        let Some(id) = answer.and_then(|answer| id_in(&answer, "call_id")) else {
            return;
        };
        tracing::debug!(call = id, agent, outcome, "demo: call placed");
        self.remember_conversation(id.clone());
        if !connected {
            return;
        }
        let hold = self.hold(rng);
        let traffic = self.clone();
        later.spawn(async move {
            tokio::time::sleep(hold).await;
            let path = format!("/_emulator/calls/{id}/end");
            if traffic
                .control(reqwest::Method::POST, &path, json!({}))
                .await
                .is_some()
            {
                tracing::debug!(call = id, "demo: call ended");
            }
        });
    }

    /// Submits jobs until the account's slots are full and
    /// [`QUEUE_BACKLOG`] wait, as far as the pacer allows.
    async fn fill_queue(&self, pacer: &mut JobPacer) {
        let Some(account) = self
            .control(reqwest::Method::GET, "/_emulator/account", Value::Null)
            .await
        else {
            return;
        };
        let count = |field: &str| account.get(field).and_then(Value::as_u64);
        let (Some(slots), Some(processing), Some(queued)) = (
            count("effective_concurrency"),
            count("processing"),
            count("queued"),
        ) else {
            tracing::warn!("demo: the account answer lacks the queue counts");
            return;
        };
        let wanted = (slots + QUEUE_BACKLOG).saturating_sub(processing + queued);
        for _ in 0..wanted {
            if pacer.allowance < 1.0 {
                break;
            }
            pacer.allowance -= 1.0;
            pacer.submitted += 1;
            self.submit_job(pacer.submitted.is_multiple_of(JOB_WEBHOOK_EVERY))
                .await;
        }
    }

    async fn submit_job(&self, with_webhook: bool) {
        let mut request = NewTranscript {
            audio_url: self.audio_url.clone(),
            ..NewTranscript::default()
        };
        if with_webhook {
            request.webhook_url = Some(self.transcript_hook.clone());
            request.webhook_auth_header_name = Some(TRANSCRIPT_TOKEN_HEADER.to_owned());
            request.webhook_auth_header_value = Some(self.transcript_token.clone());
        }
        match self.api.create_transcript(&request).await {
            Ok(transcript) => {
                tracing::debug!(
                    transcript = transcript.id,
                    status = transcript.status.as_str(),
                    "demo: job submitted"
                );
                let mut recent = lock(&self.recent);
                if let Some(feed) = &recent.job_feed
                    && feed.send(transcript.id.clone()).is_err()
                {
                    recent.job_feed = None;
                }
                remember(&mut recent.jobs, transcript.id, RECENT_JOBS);
            }
            Err(error) => tracing::warn!("demo: {error}"),
        }
    }
}

/// A non-empty string field of a control answer.
fn id_in(answer: &Value, field: &str) -> Option<String> {
    let id = answer.get(field).and_then(Value::as_str);
    if id.is_none() {
        tracing::warn!(field, "demo: the control answer lacks the id");
    }
    id.filter(|id| !id.is_empty()).map(str::to_owned)
}

/// Sessions and calls, one every half to one and a half paces: 45 %
/// sessions, 43 % connected calls, 12 % failed calls, agents at random.
async fn run_conversations(traffic: Arc<Traffic>, mut rng: Rng, mut later: JoinSet<()>) {
    loop {
        tokio::time::sleep(traffic.pace.mul_f64(rng.between(0.5, 1.5))).await;
        // Reap finished lifecycles so the set does not grow.
        while later.try_join_next().is_some() {}
        let agent = DEMO_AGENTS[rng.index(DEMO_AGENTS.len())];
        let roll = rng.unit();
        if roll < 0.45 {
            traffic.session(agent, &mut rng, &mut later).await;
        } else {
            traffic.call(agent, roll < 0.88, &mut rng, &mut later).await;
        }
    }
}

/// Tops the pre-recorded queue up every third of a pace (0.1 s to 0.5 s):
/// often enough that the backlog never drains between two top-ups.
async fn run_jobs(traffic: Arc<Traffic>, mut pacer: JobPacer) {
    let tick = (traffic.pace / 3).clamp(Duration::from_millis(100), Duration::from_millis(500));
    loop {
        tokio::time::sleep(tick).await;
        pacer.allowance =
            (pacer.allowance + JOB_RATE_PER_SECOND * tick.as_secs_f64()).min(JOB_BURST);
        traffic.fill_queue(&mut pacer).await;
    }
}

// ---------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------

/// Seedable randomness for the traffic's pace and choices.
struct Rng(fastrand::Rng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0.f64()
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    fn index(&mut self, len: usize) -> usize {
        self.0.usize(..len.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_wav_parses_with_its_sentence_and_length() {
        let wav = demo_wav(Duration::from_secs(3), AUDIO_SENTENCE);
        let info = crate::wav::parse(&wav).unwrap();
        assert_eq!(info.sample_rate, 8000);
        assert_eq!(info.channels, 1);
        assert_eq!(info.bits_per_sample, 16);
        assert!(!info.truncated);
        assert_eq!(info.duration(), Duration::from_secs(3));
        assert_eq!(info.comment.as_deref(), Some(AUDIO_SENTENCE));
    }

    #[test]
    fn audio_is_sized_for_two_second_jobs_within_bounds() {
        let at = |factor| audio_length(TimeScale::new(factor).unwrap());
        assert_eq!(at(0.1), Duration::from_secs(80));
        assert_eq!(at(1.0), Duration::from_secs(8));
        assert_eq!(at(0.001), AUDIO_MAX);
        assert_eq!(at(100.0), AUDIO_MIN);
    }

    #[test]
    fn the_rng_is_seeded_and_in_range() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| rng.index(3)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            let x = rng.between(0.5, 1.5);
            assert!((0.5..1.5).contains(&x));
        }
        assert!(draw(3).iter().all(|&i| i < 3));
    }
}
