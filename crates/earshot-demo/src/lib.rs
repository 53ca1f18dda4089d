//! earshot-demo: the demo scenario, continuous and realistic traffic
//! against a running emulator, so every pane of the console has live data
//! with no setup (`earshot demo`, `earshot emulator --traffic`).
//!
//! A crate over both `earshot-emulator` and `earshot-core`: it plays the
//! customer's integration with the platform client, which the emulator
//! itself does not depend on.
//!
//! [`start`] drives the emulator over HTTP exactly as a customer's platform
//! activity and a customer's integration would — the `/_emulator/*` control
//! routes stand in for callers talking to agents, the public API (through
//! [`earshot_core::api::Client`]) for the integration — so the emulator needs no
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
//! closes its receivers. Decisions are in `docs/decisions.md`,
//! "Emulator".

mod audio;
mod receivers;
mod traffic;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::{JoinHandle, JoinSet};
use url::Url;

use earshot_core::api::types::agents::{EventKind, NewSubscription};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{ApiError, Client, Endpoints};
use earshot_emulator::TimeScale;
use earshot_protocol::redact::SecretString;
use earshot_protocol::signature;

use audio::upload_audio;
use receivers::{ReceiverUrls, start_receivers};
use traffic::{JobPacer, Rng, Traffic, run_conversations, run_jobs};

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

/// Platform events one generated conversation brings on average: a
/// session or a connected call two (its start and its end), a failed call
/// one, in the mix `traffic::run_conversations` draws (45 %, 43 %, 12 %).
pub const EVENTS_PER_CONVERSATION: f64 = 0.45 * 2.0 + 0.43 * 2.0 + 0.12;

impl ScenarioConfig {
    /// The pace at which the conversations bring about `events_per_second`
    /// platform events a second (sessions and calls; the jobs' pace is
    /// their own); `None` for a rate that is not a positive number, or one
    /// so high the gap between conversations would be under a millisecond.
    pub fn pace_for_rate(events_per_second: f64) -> Option<Duration> {
        if !(events_per_second.is_finite() && events_per_second > 0.0) {
            return None;
        }
        let pace = Duration::try_from_secs_f64(EVENTS_PER_CONVERSATION / events_per_second).ok()?;
        (pace >= Duration::from_millis(1)).then_some(pace)
    }
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

    /// [`Scenario::stop`], returning once every task of the scenario has
    /// ended: from then on it sends nothing (a test hook: "stopping ends
    /// the traffic" without watching the counts for a while).
    pub async fn stopped(mut self) {
        let tasks = std::mem::take(&mut self.tasks);
        abort_all(&tasks);
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        abort_all(&self.tasks);
    }
}

fn abort_all(tasks: &[JoinHandle<()>]) {
    for task in tasks {
        task.abort();
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
    let control = earshot_http::client_builder()
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
