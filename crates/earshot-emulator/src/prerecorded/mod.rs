//! Pre-recorded transcription (spec areas D and E), read top to bottom:
//!
//! - routes under `/v2` (raw API key in `authorization`, then the rate
//!   limits of [`super::limits`]): [`upload`] stores audio bytes and hands
//!   out an `upload_url` served at `/_emulator/uploads/{token}`;
//!   [`create`] queues a transcript job; [`get_transcript`] reads it;
//! - the job queue ([`queue`]): [`pump`](queue::pump) starts queued jobs
//!   FIFO while fewer than the account's effective concurrency are
//!   processing; `run_job` fetches the audio, reads its length (`inspect`),
//!   takes a quarter of it (× `--time-scale`), and ends `completed` or
//!   `error`;
//! - the webhook ([`webhook`]): [`deliver_webhook`](webhook::deliver_webhook)
//!   POSTs `{transcript_id, status}` up to 10 times, 10 s apart, and
//!   records each answer's status on the job;
//! - the account (`/_emulator/account`, [`account`]): balance and
//!   concurrency.
//!
//! Decisions where the spec is silent are in `docs/decisions.md`.

pub(crate) mod account;
mod queue;
mod records;
mod transcripts;
mod uploads;
mod webhook;

use std::sync::Mutex;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::problem::Problem;
use super::{EmulatorConfig, SharedState, limits};

pub use account::{AccountChange, AccountSnapshot};
pub(crate) use account::{get_account, set_account};
use records::{Account, Jobs};
pub(crate) use transcripts::create;
use transcripts::get_transcript;
use uploads::{upload, uploaded};

/// Parallel jobs when no `--concurrency` is given (spec: not shown).
pub const DEFAULT_CONCURRENCY: u32 = 5;
/// The account balance a fresh emulator starts with (spec: not shown).
const DEFAULT_BALANCE: f64 = 100.0;
/// The largest upload or fetched audio file.
const AUDIO_CAP: u64 = 200 * 1024 * 1024;
/// Fetching `audio_url` gives up after this long (real time: network I/O
/// is not emulated, so it is not scaled).
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Processing takes the audio's duration divided by this (DESIGN.md §5).
const SPEED_UP: u32 = 4;
/// Assumed bit rate of compressed audio whose length is estimated.
const COMPRESSED_BYTES_PER_SECOND: f64 = 16_000.0;
/// The transcript of audio that carries none in an `ICMT` chunk.
pub(crate) const FIXED_TEXT: &str =
    "This is an emulated transcript: the emulator does not recognise speech.";
/// The receiver's deadline (spec part 8 D), before scaling.
const WEBHOOK_DEADLINE: Duration = Duration::from_secs(10);
/// Attempts per webhook, the first included (spec part 8 D).
const WEBHOOK_ATTEMPTS: u32 = 10;
/// Wait between the end of a failed attempt and the next (spec part 8 D).
const WEBHOOK_INTERVAL: Duration = Duration::from_secs(10);
/// The `User-Agent` of webhook calls (the platform's delivery agent).
const WEBHOOK_USER_AGENT: &str = super::delivery::DELIVERY_USER_AGENT;

/// Area D's share of the emulator state.
pub(crate) struct Prerecorded {
    account: Mutex<Account>,
    jobs: Mutex<Jobs>,
    /// Fetches `audio_url` (redirects followed, as for any download).
    fetch: reqwest::Client,
    /// Calls webhooks (redirects not followed).
    hooks: reqwest::Client,
}

impl Prerecorded {
    pub fn new(config: &EmulatorConfig) -> Result<Prerecorded, reqwest::Error> {
        let fetch = earshot_http::client_builder()
            .no_proxy()
            .connect_timeout(FETCH_TIMEOUT)
            .build()?;
        let hooks = earshot_http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(WEBHOOK_USER_AGENT)
            .build()?;
        Ok(Prerecorded {
            account: Mutex::new(Account {
                balance: DEFAULT_BALANCE,
                concurrency: config.concurrency.max(1),
            }),
            jobs: Mutex::new(Jobs::keeping(config.keep_jobs)),
            fetch,
            hooks,
        })
    }

    fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Jobs held, waiting, processing, finished ids held for `keep_jobs`,
    /// and uploads (for the bounds tests).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> [usize; 5] {
        let jobs = self.jobs();
        [
            jobs.transcripts.len(),
            jobs.queue.len(),
            jobs.processing as usize,
            jobs.finished.len(),
            jobs.uploads.len(),
        ]
    }

    fn account(&self) -> Account {
        *self
            .account
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

pub(crate) fn routes(state: SharedState) -> Router<SharedState> {
    let api = Router::new()
        .route("/v2/upload", post(upload))
        .route("/v2/transcript", post(create))
        .route(
            "/v2/transcript/{id}",
            get(get_transcript).layer(middleware::from_fn_with_state(
                state.clone(),
                limits::poll_limit,
            )),
        )
        // Inner first: the key check runs before the limits count.
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            limits::http_limit,
        ))
        .route_layer(middleware::from_fn_with_state(state, api_key));
    let files = Router::new().route("/_emulator/uploads/{token}", get(uploaded));
    api.merge(files)
}

// ---------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------

/// Spec part 5 D: `authorization` carries the API key, as is.
async fn api_key(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let expected = state.config.api_key.expose().as_bytes();
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let detail = match presented {
        None => "missing authorization header; send the API key",
        Some(key) if super::auth::key_matches(key, expected) => return next.run(request).await,
        Some(key)
            if key
                .strip_prefix(b"Bearer ")
                .is_some_and(|rest| super::auth::key_matches(rest, expected)) =>
        {
            "send the API key as is in the authorization header, without the `Bearer ` prefix"
        }
        Some(_) => "invalid API key",
    };
    Problem::new(StatusCode::UNAUTHORIZED, detail).into_response()
}
