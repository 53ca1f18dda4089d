//! Pre-recorded transcription (spec areas D and E), read top to bottom:
//!
//! - routes under `/v2` (raw API key in `authorization`, then the rate
//!   limits of [`super::limits`]): [`upload`] stores audio bytes and hands
//!   out an `upload_url` served at `/_emulator/uploads/{token}`;
//!   [`create`] queues a transcript job; [`get_transcript`] reads it;
//! - the job queue: [`pump`] starts queued jobs FIFO while fewer than the
//!   account's effective concurrency are processing; [`run_job`] fetches
//!   the audio, reads its length ([`inspect`]), takes a quarter of it
//!   (× `--time-scale`), and ends `completed` or `error`;
//! - the webhook: [`deliver_webhook`] POSTs `{transcript_id, status}` up to
//!   10 times, 10 s apart, and records each answer's status on the job;
//! - the account (`/_emulator/account`): balance and concurrency.
//!
//! Decisions where the spec is silent are in `docs/decisions.md`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use url::Url;

use super::problem::Problem;
use super::{EmulatorConfig, SharedState, limits};
use crate::api::prerecorded::RESERVED_AUTH_HEADERS;
use crate::api::types::prerecorded::{
    NewTranscript, Transcript, TranscriptStatus, TranscriptWebhook,
};
use crate::redact::SecretString;
use crate::wav;

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

/// The emulated account's settings (`/_emulator/account`).
#[derive(Clone, Copy, Debug)]
struct Account {
    balance: f64,
    concurrency: u32,
}

impl Account {
    /// Spec part 8 E rule 3: a negative balance allows one job at a time.
    fn effective_concurrency(self) -> u32 {
        if self.balance < 0.0 {
            1
        } else {
            self.concurrency
        }
    }
}

/// One transcript job as the emulator holds it.
struct Job {
    id: String,
    status: TranscriptStatus,
    audio_url: String,
    webhook_url: Option<String>,
    webhook_auth: Option<(HeaderName, HeaderValue)>,
    text: Option<String>,
    error: Option<String>,
    webhook_status_code: Option<u16>,
    audio_duration: Option<Duration>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
}

impl Job {
    /// The record as `GET /v2/transcript/{id}` shows it, with the JSON
    /// types the platform's SDKs read: `audio_duration` whole seconds,
    /// `webhook_auth` a bool, `words` with times in milliseconds.
    fn record(&self) -> Transcript {
        let mut extra = Map::new();
        extra.insert("audio_url".into(), json!(self.audio_url));
        extra.insert(
            "audio_duration".into(),
            json!(self.audio_duration.map(whole_seconds)),
        );
        let words = self
            .text
            .as_deref()
            .map(|text| timed_words(text, self.audio_duration.unwrap_or_default()));
        let confidence = words.as_ref().map(|words| mean_confidence(words));
        extra.insert("words".into(), json!(words));
        extra.insert("confidence".into(), json!(confidence));
        extra.insert("webhook_url".into(), json!(self.webhook_url));
        extra.insert("webhook_auth".into(), json!(self.webhook_auth.is_some()));
        extra.insert(
            "webhook_auth_header_name".into(),
            json!(self.webhook_auth.as_ref().map(|(name, _)| name.as_str())),
        );
        extra.insert("created_at".into(), json!(self.created_at));
        extra.insert("started_at".into(), json!(self.started_at));
        extra.insert("finished_at".into(), json!(self.finished_at));
        Transcript {
            id: self.id.clone(),
            status: self.status.clone(),
            text: self.text.clone(),
            error: self.error.clone(),
            webhook_status_code: self.webhook_status_code,
            extra,
        }
    }
}

/// `audio_duration` as the platform's SDKs type it: an integer number of
/// seconds, rounded to the nearest (half up).
fn whole_seconds(duration: Duration) -> u64 {
    (duration.as_millis() as u64 + 500) / 1000
}

/// One entry of a record's `words`.
#[derive(Debug, PartialEq, serde::Serialize)]
struct TimedWord {
    text: String,
    /// Milliseconds from the start of the audio.
    start: u64,
    end: u64,
    confidence: f64,
    speaker: Option<String>,
}

/// The transcript's words (as dictation splits them, with the same stable
/// confidences) spread evenly over the audio.
fn timed_words(text: &str, audio: Duration) -> Vec<TimedWord> {
    let words = super::dictation::words(text);
    let total = audio.as_millis() as u64;
    let count = words.len() as u64;
    words
        .into_iter()
        .zip(0u64..)
        .map(|((text, confidence), index)| TimedWord {
            text,
            start: total * index / count,
            end: total * (index + 1) / count,
            confidence,
            speaker: None,
        })
        .collect()
}

/// The transcript's `confidence`: the mean of its words' (0 with none).
fn mean_confidence(words: &[TimedWord]) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let mean = words.iter().map(|word| word.confidence).sum::<f64>() / words.len() as f64;
    (mean * 1000.0).round() / 1000.0
}

#[derive(Default)]
struct Jobs {
    transcripts: HashMap<String, Job>,
    /// Ids waiting as `queued`, oldest first.
    queue: VecDeque<String>,
    processing: u32,
    uploads: HashMap<String, Bytes>,
    /// Finished job ids, oldest first, for `EmulatorConfig::keep_jobs`.
    finished: VecDeque<String>,
}

impl Jobs {
    /// Records `id` as finished; beyond `keep`, forgets the oldest finished.
    fn finished(&mut self, id: &str, keep: Option<usize>) {
        let Some(keep) = keep else { return };
        self.finished.push_back(id.to_owned());
        while self.finished.len() > keep {
            if let Some(oldest) = self.finished.pop_front() {
                self.transcripts.remove(&oldest);
            }
        }
    }
}

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
        let fetch = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(FETCH_TIMEOUT)
            .build()?;
        let hooks = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(WEBHOOK_USER_AGENT)
            .build()?;
        Ok(Prerecorded {
            account: Mutex::new(Account {
                balance: DEFAULT_BALANCE,
                concurrency: config.concurrency.max(1),
            }),
            jobs: Mutex::new(Jobs::default()),
            fetch,
            hooks,
        })
    }

    fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
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

// ---------------------------------------------------------------------------
// Uploads
// ---------------------------------------------------------------------------

fn too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the audio is larger than {} MB; upload a shorter or compressed file",
            AUDIO_CAP / (1024 * 1024)
        ),
    )
}

/// `POST /v2/upload`: the raw body, streamed, at most [`AUDIO_CAP`] bytes.
async fn upload(
    State(state): State<SharedState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|len| len > AUDIO_CAP) {
        return Err(too_large());
    }
    let mut audio = Vec::with_capacity(declared.unwrap_or(0).min(16 * 1024 * 1024) as usize);
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| {
            Problem::bad_request(format!("the upload was interrupted: {error}"))
        })?;
        if (audio.len() + chunk.len()) as u64 > AUDIO_CAP {
            return Err(too_large());
        }
        audio.extend_from_slice(&chunk);
    }
    if audio.is_empty() {
        return Err(Problem::bad_request(
            "the body is empty; send the audio file's bytes as the request body",
        ));
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let upload_url = format!("{}_emulator/uploads/{token}", state.base_url);
    state
        .prerecorded
        .jobs()
        .uploads
        .insert(token, Bytes::from(audio));
    Ok(Json(json!({ "upload_url": upload_url })).into_response())
}

/// `GET /_emulator/uploads/{token}`: the bytes of an upload (no auth, like
/// a presigned URL; the emulator binds loopback by default).
async fn uploaded(
    State(state): State<SharedState>,
    Path(token): Path<String>,
) -> Result<Response, Problem> {
    let bytes = state
        .prerecorded
        .jobs()
        .uploads
        .get(&token)
        .cloned()
        .ok_or_else(|| Problem::not_found("upload", &token))?;
    Ok(([(CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

// ---------------------------------------------------------------------------
// Transcript jobs
// ---------------------------------------------------------------------------

/// A validated `POST /v2/transcript` body.
struct NewJob {
    audio_url: String,
    webhook_url: Option<String>,
    webhook_auth: Option<(HeaderName, HeaderValue)>,
}

/// Parses and checks the body with the client's own rules
/// ([`NewTranscript::validate`]) plus the header names a call sets itself.
/// Fields beyond the four of part 2 D are accepted and ignored.
fn parse_create(body: &[u8]) -> Result<NewJob, Problem> {
    let object = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err(Problem::bad_request("the body must be a JSON object")),
        Err(error) => {
            return Err(Problem::bad_request(format!(
                "the body is not valid JSON: {error}"
            )));
        }
    };
    let field = |name: &'static str| -> Result<Option<String>, Problem> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(Problem::bad_request(format!("`{name}`: must be a string"))),
        }
    };
    let request = NewTranscript {
        audio_url: field("audio_url")?
            .ok_or_else(|| Problem::bad_request("`audio_url`: is required"))?,
        webhook_url: field("webhook_url")?,
        webhook_auth_header_name: field("webhook_auth_header_name")?,
        webhook_auth_header_value: field("webhook_auth_header_value")?.map(SecretString::new),
    };
    request.validate()?;
    let webhook_auth = match (
        &request.webhook_auth_header_name,
        &request.webhook_auth_header_value,
    ) {
        (Some(name), Some(value)) => {
            let invalid_name = || {
                Problem::bad_request(format!(
                    "`webhook_auth_header_name`: {name:?} is not a valid HTTP header name"
                ))
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid_name())?;
            if RESERVED_AUTH_HEADERS.contains(&name.as_str()) {
                return Err(Problem::bad_request(format!(
                    "`webhook_auth_header_name`: {name} is set by the webhook call itself; \
                     choose another name"
                )));
            }
            let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
                Problem::bad_request(
                    "`webhook_auth_header_value`: contains characters an HTTP header cannot carry",
                )
            })?;
            value.set_sensitive(true);
            Some((name, value))
        }
        _ => None,
    };
    Ok(NewJob {
        audio_url: request.audio_url,
        webhook_url: request.webhook_url,
        webhook_auth,
    })
}

/// `POST /v2/transcript`: 200 (as the platform, and its SDKs, expect) with
/// the record, `processing` when a slot is free, `queued` otherwise.
async fn create(State(state): State<SharedState>, body: Bytes) -> Result<Response, Problem> {
    let new = parse_create(&body)?;
    let id = uuid::Uuid::new_v4().to_string();
    let job = Job {
        id: id.clone(),
        status: TranscriptStatus::Queued,
        audio_url: new.audio_url,
        webhook_url: new.webhook_url,
        webhook_auth: new.webhook_auth,
        text: None,
        error: None,
        webhook_status_code: None,
        audio_duration: None,
        created_at: Utc::now(),
        started_at: None,
        finished_at: None,
    };
    let record = {
        let mut jobs = state.prerecorded.jobs();
        jobs.transcripts.insert(id.clone(), job);
        jobs.queue.push_back(id.clone());
        pump(&state, &mut jobs);
        jobs.transcripts.get(&id).map(Job::record)
    };
    let record = record.ok_or_else(|| Problem::not_found("transcript", &id))?;
    Ok(Json(record).into_response())
}

/// `GET /v2/transcript/{id}`.
async fn get_transcript(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<Transcript>, Problem> {
    state
        .prerecorded
        .jobs()
        .transcripts
        .get(&id)
        .map(|job| Json(job.record()))
        .ok_or_else(|| Problem::not_found("transcript", &id))
}

/// Starts queued jobs, oldest first, while the account has free slots.
/// Called with the jobs locked whenever a slot may have freed up.
fn pump(state: &SharedState, jobs: &mut Jobs) {
    let limit = state.prerecorded.account().effective_concurrency();
    while jobs.processing < limit {
        let Some(id) = jobs.queue.pop_front() else {
            return;
        };
        let Some(job) = jobs.transcripts.get_mut(&id) else {
            continue;
        };
        job.status = TranscriptStatus::Processing;
        job.started_at = Some(Utc::now());
        jobs.processing += 1;
        tokio::spawn(run_job(state.clone(), id));
    }
}

/// What the emulator learnt from an audio file.
#[derive(Debug, PartialEq)]
struct Audio {
    duration: Duration,
    /// The transcript carried in a WAV `ICMT` chunk.
    comment: Option<String>,
}

/// Fetch, "transcribe", finish; then the webhook, if any.
async fn run_job(state: SharedState, id: String) {
    let audio_url = match state.prerecorded.jobs().transcripts.get(&id) {
        Some(job) => job.audio_url.clone(),
        None => return,
    };
    let outcome = match fetch_audio(&state, &audio_url).await {
        Ok(bytes) => inspect(&bytes),
        Err(message) => Err(message),
    };
    let outcome = match outcome {
        Ok(audio) => {
            if let Some(job) = state.prerecorded.jobs().transcripts.get_mut(&id) {
                job.audio_duration = Some(audio.duration);
            }
            let work = state.config.time_scale.scale(audio.duration / SPEED_UP);
            tokio::time::sleep(work).await;
            Ok(audio.comment.unwrap_or_else(|| FIXED_TEXT.to_owned()))
        }
        Err(message) => Err(message),
    };
    let webhook = {
        let mut jobs = state.prerecorded.jobs();
        jobs.processing = jobs.processing.saturating_sub(1);
        let webhook = jobs.transcripts.get_mut(&id).and_then(|job| {
            match outcome {
                Ok(text) => {
                    job.status = TranscriptStatus::Completed;
                    job.text = Some(text);
                }
                Err(message) => {
                    job.status = TranscriptStatus::Error;
                    job.error = Some(message);
                }
            }
            job.finished_at = Some(Utc::now());
            let url = job.webhook_url.clone()?;
            Some((url, job.webhook_auth.clone(), job.status.clone()))
        });
        jobs.finished(&id, state.config.keep_jobs);
        pump(&state, &mut jobs);
        webhook
    };
    if let Some((url, auth, status)) = webhook {
        deliver_webhook(&state, &id, status, &url, auth).await;
    }
}

/// The bytes at `audio_url`: the emulator's own uploads from memory, any
/// other URL by HTTP GET. The error is the message the job shows.
async fn fetch_audio(state: &SharedState, audio_url: &str) -> Result<Bytes, String> {
    let url =
        Url::parse(audio_url).map_err(|error| format!("audio_url is not a valid URL: {error}"))?;
    let own_upload = (url.origin() == state.base_url.origin())
        .then(|| url.path().strip_prefix("/_emulator/uploads/"))
        .flatten();
    if let Some(token) = own_upload {
        return state
            .prerecorded
            .jobs()
            .uploads
            .get(token)
            .cloned()
            .ok_or_else(|| {
                "could not download audio_url: HTTP 404 Not Found (no such upload)".to_owned()
            });
    }
    let download = async {
        let response = state
            .prerecorded
            .fetch
            .get(url)
            .send()
            .await
            .map_err(|error| {
                format!(
                    "could not download audio_url: {}",
                    super::root_cause(&error)
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "could not download audio_url: HTTP {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_owned());
        }
        let too_large = || {
            format!(
                "the audio file is larger than {} MB",
                AUDIO_CAP / (1024 * 1024)
            )
        };
        if response.content_length().is_some_and(|len| len > AUDIO_CAP) {
            return Err(too_large());
        }
        let mut audio = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|error| {
                format!(
                    "could not download audio_url: {}",
                    super::root_cause(&error)
                )
            })?;
            if (audio.len() + chunk.len()) as u64 > AUDIO_CAP {
                return Err(too_large());
            }
            audio.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(audio))
    };
    match tokio::time::timeout(FETCH_TIMEOUT, download).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "could not download audio_url: no answer within {} s",
            FETCH_TIMEOUT.as_secs()
        )),
    }
}

/// Compressed formats recognised by their first bytes, whose duration is
/// estimated from their size.
fn compressed_format(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [b'I', b'D', b'3', ..] => Some("MP3"),
        [0xFF, second, ..] if second & 0xE0 == 0xE0 => Some("MP3"),
        [b'O', b'g', b'g', b'S', ..] => Some("Ogg"),
        [b'f', b'L', b'a', b'C', ..] => Some("FLAC"),
        [0x1A, 0x45, 0xDF, 0xA3, ..] => Some("WebM"),
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => Some("MP4"),
        _ => None,
    }
}

/// The duration (and `ICMT` transcript) of audio bytes, or why they are not
/// audio the emulator can process.
fn inspect(bytes: &[u8]) -> Result<Audio, String> {
    match wav::parse(bytes) {
        Ok(info) if info.data_len == 0 => Err("the WAV file contains no audio samples".into()),
        Ok(info) => Ok(Audio {
            duration: info.duration(),
            comment: info.comment,
        }),
        Err(wav::WavError::NotWav) => match compressed_format(bytes) {
            Some(_) => Ok(Audio {
                duration: Duration::from_secs_f64(bytes.len() as f64 / COMPRESSED_BYTES_PER_SECOND),
                comment: None,
            }),
            None => Err(
                "audio_url does not point to an audio file (the format is not recognised)".into(),
            ),
        },
        Err(error) => Err(format!("the audio file cannot be read: {error}")),
    }
}

// ---------------------------------------------------------------------------
// Webhooks (spec part 6 D)
// ---------------------------------------------------------------------------

/// How one webhook attempt ended.
#[derive(Debug, PartialEq)]
enum Attempt {
    /// 2xx: done.
    Delivered,
    /// 4xx: failed for good, no retry.
    Rejected,
    /// 3xx (not followed), 5xx, timeout, connection error: tried again.
    Retry,
}

fn classify(status: u16) -> Attempt {
    match status {
        200..=299 => Attempt::Delivered,
        400..=499 => Attempt::Rejected,
        _ => Attempt::Retry,
    }
}

/// Up to [`WEBHOOK_ATTEMPTS`] POSTs of `{transcript_id, status}` to exactly
/// `url`, each answer's status recorded as `webhook_status_code`.
async fn deliver_webhook(
    state: &SharedState,
    id: &str,
    status: TranscriptStatus,
    url: &str,
    auth: Option<(HeaderName, HeaderValue)>,
) {
    let body = match serde_json::to_vec(&TranscriptWebhook {
        transcript_id: id.to_owned(),
        status,
    }) {
        Ok(body) => Bytes::from(body),
        Err(error) => {
            tracing::error!("could not serialise the webhook of {id}: {error}");
            return;
        }
    };
    let scale = state.config.time_scale;
    for attempt in 1..=WEBHOOK_ATTEMPTS {
        let mut request = state
            .prerecorded
            .hooks
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some((name, value)) = &auth {
            request = request.header(name.clone(), value.clone());
        }
        let deadline = tokio::time::Instant::now() + scale.scale(WEBHOOK_DEADLINE);
        let call = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            // Read (a bounded start of) the answer: a short one lets the
            // connection be reused, an endless one costs a few KiB.
            let _ = crate::http_answer::read(response, crate::http_answer::ANSWER_LIMIT, deadline)
                .await;
            Ok::<u16, reqwest::Error>(status)
        };
        let outcome = match tokio::time::timeout_at(deadline, call).await {
            Ok(Ok(code)) => {
                if let Some(job) = state.prerecorded.jobs().transcripts.get_mut(id) {
                    job.webhook_status_code = Some(code);
                }
                classify(code)
            }
            Ok(Err(error)) => {
                tracing::debug!(
                    transcript = id,
                    attempt,
                    "webhook: {}",
                    super::root_cause(&error)
                );
                Attempt::Retry
            }
            Err(_) => {
                tracing::debug!(transcript = id, attempt, "webhook: no answer in time");
                Attempt::Retry
            }
        };
        tracing::debug!(transcript = id, attempt, ?outcome, "webhook attempt");
        if outcome != Attempt::Retry {
            return;
        }
        if attempt < WEBHOOK_ATTEMPTS {
            tokio::time::sleep(scale.scale(WEBHOOK_INTERVAL)).await;
        }
    }
    tracing::info!(
        transcript = id,
        "webhook failed after {WEBHOOK_ATTEMPTS} attempts"
    );
}

// ---------------------------------------------------------------------------
// The account (`/_emulator/account`)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountChange {
    #[serde(default)]
    balance: Option<f64>,
    #[serde(default)]
    concurrency: Option<u32>,
}

fn account_answer(state: &SharedState) -> Json<Value> {
    let account = state.prerecorded.account();
    let jobs = state.prerecorded.jobs();
    Json(json!({
        "balance": account.balance,
        "concurrency": account.concurrency,
        "effective_concurrency": account.effective_concurrency(),
        "processing": jobs.processing,
        "queued": jobs.queue.len(),
    }))
}

/// `GET /_emulator/account`.
pub(crate) async fn get_account(State(state): State<SharedState>) -> Json<Value> {
    account_answer(&state)
}

/// `POST /_emulator/account {"balance"?, "concurrency"?}`: changes the
/// account; queued jobs start at once if the new limit allows.
pub(crate) async fn set_account(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<Value>, Problem> {
    let change: AccountChange = super::problem::parse_body(&body)?;
    if change.concurrency == Some(0) {
        return Err(Problem::bad_request("`concurrency`: must be at least 1"));
    }
    {
        let mut account = state
            .prerecorded
            .account
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(balance) = change.balance {
            account.balance = balance;
        }
        if let Some(concurrency) = change.concurrency {
            account.concurrency = concurrency;
        }
    }
    pump(&state, &mut state.prerecorded.jobs());
    Ok(account_answer(&state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_balance_limits_the_account_to_one_job() {
        let account = Account {
            balance: 3.0,
            concurrency: 7,
        };
        assert_eq!(account.effective_concurrency(), 7);
        let broke = Account {
            balance: -0.01,
            ..account
        };
        assert_eq!(broke.effective_concurrency(), 1);
        let zero = Account {
            balance: 0.0,
            ..account
        };
        assert_eq!(zero.effective_concurrency(), 7);
    }

    #[test]
    fn webhook_answers_are_classified_by_part_6_d() {
        assert_eq!(classify(200), Attempt::Delivered);
        assert_eq!(classify(204), Attempt::Delivered);
        for status in [400, 401, 404, 408, 410, 429] {
            assert_eq!(classify(status), Attempt::Rejected, "{status}");
        }
        for status in [301, 302, 500, 502, 503] {
            assert_eq!(classify(status), Attempt::Retry, "{status}");
        }
    }

    #[test]
    fn inspect_reads_wav_estimates_compressed_and_refuses_the_rest() {
        let wav = wav::tests::pcm_wav(8000, 1, 2.0, Some("the fixture's words"));
        assert_eq!(
            inspect(&wav),
            Ok(Audio {
                duration: Duration::from_secs(2),
                comment: Some("the fixture's words".into()),
            })
        );
        let mut mp3 = b"ID3\x04\0\0\0\0\0\0".to_vec();
        mp3.resize(32_000, 0);
        assert_eq!(
            inspect(&mp3).map(|audio| audio.duration),
            Ok(Duration::from_secs(2))
        );
        assert!(
            inspect(b"<html>not found</html>").is_err_and(|e| e.contains("not point to an audio"))
        );
        assert!(inspect(&wav[..30]).is_err_and(|e| e.contains("cannot be read")));
        let silent = wav::tests::pcm_wav(8000, 1, 0.0, None);
        assert!(inspect(&silent).is_err_and(|e| e.contains("no audio samples")));
    }

    #[test]
    fn create_body_rules() {
        let ok = |body: &str| parse_create(body.as_bytes()).map(|_| ());
        assert!(ok(r#"{"audio_url": "https://example.com/a.wav"}"#).is_ok());
        assert!(
            ok(r#"{"audio_url": "https://example.com/a.wav", "speaker_labels": true}"#).is_ok()
        );
        assert!(
            ok(r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "http://127.0.0.1:9/h?x=1",
                   "webhook_auth_header_name": "X-Token", "webhook_auth_header_value": "s3cret"}"#)
            .is_ok()
        );
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"audio_url": 5}"#,
            r#"{"audio_url": "not a url"}"#,
            r#"{"audio_url": "ftp://example.com/a.wav"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "mailto:a@b.c"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "X-Token"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "bad name", "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "Content-Type", "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "X-Token", "webhook_auth_header_value": "a\nb"}"#,
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
    }
}
