//! Dictation and sync (spec areas A and B), read top to bottom:
//!
//! - [`routes`]: `POST /v1/transcribe/live` and `/v1/transcribe/stream`
//!   (one operation, no unversioned alias), the buffered `/v1/transcribe`,
//!   sync's `POST /transcribe`, and the control route
//!   `/_emulator/dictation` (counters; make the next rewrites time out or
//!   fail);
//! - the body: [`pump`] forwards the raw request body to the multipart
//!   reader as it arrives, enforces the size cap (413 as soon as it is
//!   crossed) and, once an answer has gone out early, drains the rest so
//!   the client can read that answer instead of a reset connection;
//! - [`dictate`]: authenticate, read `config` (validated before any audio
//!   is read), then stream `audio` through a [`Meter`] (WAV header or PCM
//!   byte count: duration, the 120 s limit, the fixture's `ICMT` text) and
//!   an emulated [`Transcriber`] that works while bytes arrive;
//! - [`rewrite`] (in `dictation/rewrite.rs`): the emulated rewrite (fillers dropped, "X, no, Y"
//!   resolved, `llm_instruction` applied visibly);
//! - [`sync`]: the sync endpoint.
//!
//! Decisions where the spec is silent are in `docs/decisions.md`
//! ("Dictation and sync").

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::multipart::{Field, MultipartRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::SharedState;
use super::clock::TimeScale;
use super::prerecorded::FIXED_TEXT;
use super::problem::Problem;
use crate::api::dictation as rules;
use crate::api::types::dictation::{AudioFormat, DictationConfig, MAX_AUDIO, REWRITE_DEADLINE};
use crate::wav::{self, DataChunk, WavInfo};

mod rewrite;
pub(crate) use rewrite::rewrite;

/// Largest dictation or sync request body when none is configured.
pub const DEFAULT_AUDIO_CAP: u64 = 25 * 1024 * 1024;
/// Emulated transcription works this many times faster than real time
/// unless configured ([`DictationTiming`]).
pub const DEFAULT_TRANSCRIBE_SPEED_UP: u32 = 100;
/// Emulated work left once the last audio byte is in, by default.
pub const DEFAULT_FINALIZE: Duration = Duration::from_millis(50);
/// Emulated rewrite time by default (well inside the 5 s deadline).
pub const DEFAULT_REWRITE_TIME: Duration = Duration::from_millis(100);

/// How long the emulated server takes over a dictation or sync request
/// (`earshot emulator --dictation-speed-up N --dictation-finalize-ms MS
/// --dictation-rewrite-ms MS`), before the time scale: transcription at
/// `speed_up` × real time while the audio arrives, `finalize` once it is
/// all in, then `rewrite`. What streaming saves is the transcription that
/// overlaps the upload, so benchmarks report it against these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DictationTiming {
    /// Transcription speed, × real time (at least 1).
    pub speed_up: u32,
    pub finalize: Duration,
    pub rewrite: Duration,
}

impl Default for DictationTiming {
    fn default() -> Self {
        DictationTiming {
            speed_up: DEFAULT_TRANSCRIBE_SPEED_UP,
            finalize: DEFAULT_FINALIZE,
            rewrite: DEFAULT_REWRITE_TIME,
        }
    }
}

impl DictationTiming {
    /// The transcription work for `audio` (before the time scale).
    fn transcription(&self, audio: Duration) -> Duration {
        audio / self.speed_up.max(1)
    }
}
/// After an early answer, the rest of the body is read (and dropped) for
/// at most this long, so the client sees the answer, not a reset.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// A WAV `data` chunk must start within this many bytes.
const WAV_HEADER_MAX: usize = 1024 * 1024;
/// Bytes kept after the `data` chunk, to find a trailing `LIST/INFO`.
const TRAILER_MAX: usize = 64 * 1024;
/// Compressed audio's duration is estimated at 128 kbit/s.
const COMPRESSED_BYTES_PER_SECOND: f64 = 16_000.0;
/// The config fields part 2 A accepts, aliases included.
const CONFIG_FIELDS: [&str; 9] = [
    "sample_rate",
    "channels",
    "language_codes",
    "stt_prompt",
    "prompt",
    "keyterms_prompt",
    "keyterms",
    "word_boost",
    "llm_instruction",
];
/// Content types the buffered `/v1/transcribe` takes besides WAV and PCM.
const COMPRESSED_TYPES: [&str; 12] = [
    "audio/mpeg",
    "audio/mp3",
    "audio/ogg",
    "audio/opus",
    "audio/flac",
    "audio/x-flac",
    "audio/webm",
    "audio/mp4",
    "audio/m4a",
    "audio/x-m4a",
    "audio/aac",
    "audio/x-wav",
];

/// How the next rewrites fail (`POST /_emulator/dictation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum LlmFailure {
    /// Waits out the 5 s deadline (× time scale), then `llm_error: timeout`.
    Timeout,
    /// `llm_error: error` at once.
    Error,
}

/// Area A and B's share of the emulator state.
#[derive(Default)]
pub(crate) struct Dictation {
    /// One entry per coming request whose rewrite must fail.
    llm_failures: Mutex<VecDeque<LlmFailure>>,
    /// Dictation configs that passed validation.
    configs_validated: AtomicU64,
    /// Audio bytes read from dictation and sync bodies.
    audio_bytes: AtomicU64,
    /// Dictation and sync requests being handled.
    in_flight: AtomicU64,
    /// Dictation requests answered 200.
    completed: AtomicU64,
}

impl Dictation {
    fn failures(&self) -> std::sync::MutexGuard<'_, VecDeque<LlmFailure>> {
        self.llm_failures
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn snapshot(&self) -> Value {
        let failures: Vec<LlmFailure> = self.failures().iter().copied().collect();
        json!({
            "configs_validated": self.configs_validated.load(Ordering::Relaxed),
            "audio_bytes_received": self.audio_bytes.load(Ordering::Relaxed),
            "in_flight": self.in_flight.load(Ordering::Relaxed),
            "completed": self.completed.load(Ordering::Relaxed),
            "llm_failures": failures,
        })
    }
}

/// Counts a request in flight until dropped.
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) fn routes() -> Router<SharedState> {
    Router::new()
        .route("/v1/transcribe/live", post(live))
        .route("/v1/transcribe/stream", post(live))
        .route("/v1/transcribe", post(buffered))
        .route("/transcribe", post(sync))
        // The cap is ours ([`pump`]); axum's 2 MB default would cut audio.
        .layer(DefaultBodyLimit::disable())
        .route(
            "/_emulator/dictation",
            axum::routing::get(control_get)
                .post(control_arm)
                .delete(control_clear),
        )
}

// ---------------------------------------------------------------------------
// Answers: the two documented error shapes
// ---------------------------------------------------------------------------

/// A refusal: `{error, error_code: "bad_request"}` for a body that cannot
/// be parsed, `{status, title, detail}` for everything else.
#[derive(Debug)]
enum Refuse {
    Parse(String),
    Problem(Problem),
}

impl From<Problem> for Refuse {
    fn from(problem: Problem) -> Self {
        Refuse::Problem(problem)
    }
}

impl From<crate::api::validate::ValidationError> for Refuse {
    fn from(error: crate::api::validate::ValidationError) -> Self {
        Refuse::Problem(error.into())
    }
}

impl IntoResponse for Refuse {
    fn into_response(self) -> Response {
        match self {
            Refuse::Parse(error) => (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": error, "error_code": "bad_request" })),
            )
                .into_response(),
            Refuse::Problem(problem) => problem.into_response(),
        }
    }
}

fn parse_error(message: impl Into<String>) -> Refuse {
    Refuse::Parse(message.into())
}

fn too_large(cap: u64) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is larger than the {cap}-byte cap ({:.1} MB); send at most {} s of audio, mono or at a lower sample rate",
            cap as f64 / (1024.0 * 1024.0),
            MAX_AUDIO.as_secs()
        ),
    )
}

fn too_long(duration: Duration) -> Problem {
    Problem::bad_request(format!(
        "`audio`: lasts more than {} s ({:.1} s so far); dictation takes at most {} s",
        MAX_AUDIO.as_secs(),
        duration.as_secs_f64(),
        MAX_AUDIO.as_secs()
    ))
}

// ---------------------------------------------------------------------------
// Authentication (spec part 5 A; sync: see docs/decisions.md)
// ---------------------------------------------------------------------------

/// The raw key in `Authorization`; a `Bearer ` prefix is a 401.
fn check_key(headers: &HeaderMap, expected: &str) -> Result<(), Problem> {
    let expected = expected.as_bytes();
    let detail = match headers.get(AUTHORIZATION).map(|value| value.as_bytes()) {
        None => "missing Authorization header; send the API key as is",
        Some(key) if super::auth::key_matches(key, expected) => return Ok(()),
        Some(key)
            if key
                .strip_prefix(b"Bearer ")
                .is_some_and(|rest| super::auth::key_matches(rest, expected)) =>
        {
            "send the API key as is in Authorization, without the `Bearer ` prefix"
        }
        Some(_) => "invalid API key",
    };
    Err(Problem::new(StatusCode::UNAUTHORIZED, detail))
}

// ---------------------------------------------------------------------------
// The body pump: size cap, early answers, draining
// ---------------------------------------------------------------------------

/// The request body as the multipart reader sees it, fed by [`pump`].
struct Inflow {
    /// Set when the body crossed the cap: the reader's error is a 413.
    over_cap: Arc<AtomicBool>,
    cap: u64,
}

impl Inflow {
    /// Starts the pump on `request`'s body and hands back a request whose
    /// body is the pump's output (headers and extensions kept).
    fn start(request: Request, cap: u64) -> (Inflow, Request) {
        let (parts, body) = request.into_parts();
        let (sender, receiver) = mpsc::channel(4);
        let over_cap = Arc::new(AtomicBool::new(false));
        tokio::spawn(pump(body, cap, sender, over_cap.clone()));
        let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        let request = Request::from_parts(parts, Body::from_stream(stream));
        (Inflow { over_cap, cap }, request)
    }

    /// A multipart read error: 413 when the cap was crossed, else the body
    /// could not be parsed.
    fn refuse(&self, error: impl std::fmt::Display) -> Refuse {
        if self.over_cap.load(Ordering::SeqCst) {
            too_large(self.cap).into()
        } else {
            parse_error(format!("the multipart body could not be read: {error}"))
        }
    }
}

/// Forwards the body's chunks as they arrive; past `cap` bytes, or once
/// the handler has answered, reads the rest and drops it (for at most
/// [`DRAIN_LIMIT`]), so the client is not reset before reading the answer.
async fn pump(
    body: Body,
    cap: u64,
    sender: mpsc::Sender<Result<Bytes, std::io::Error>>,
    over_cap: Arc<AtomicBool>,
) {
    let mut chunks = body.into_data_stream();
    let mut total = 0u64;
    let mut forwarding = true;
    let mut drain_until = None;
    loop {
        let next = match drain_until {
            None => chunks.next().await,
            Some(deadline) => match tokio::time::timeout_at(deadline, chunks.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let chunk = match next {
            None => break,
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => {
                if forwarding {
                    let _ = sender
                        .send(Err(std::io::Error::other(format!(
                            "the upload was interrupted: {error}"
                        ))))
                        .await;
                }
                break;
            }
        };
        total += chunk.len() as u64;
        if !forwarding {
            continue;
        }
        let refused = if total > cap {
            over_cap.store(true, Ordering::SeqCst);
            let _ = sender
                .send(Err(std::io::Error::other("the body is over the size cap")))
                .await;
            true
        } else {
            sender.send(Ok(chunk)).await.is_err()
        };
        if refused {
            forwarding = false;
            drain_until = Some(tokio::time::Instant::now() + DRAIN_LIMIT);
        }
    }
}

/// `Content-Length` over the cap: refused before reading.
fn declared_len(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok())
}

// ---------------------------------------------------------------------------
// The config part (spec parts 2 A and 7 A)
// ---------------------------------------------------------------------------

/// Reads a well-formed config object with the client's own rules
/// ([`DictationConfig::validate_fields`]) plus what only a server sees:
/// unknown fields, aliases sent together, wrong JSON types. `null` means
/// "not given" for every field.
fn parse_config(value: Value) -> Result<DictationConfig, Refuse> {
    let Value::Object(map) = value else {
        return Err(
            Problem::bad_request("`config`: must be a JSON object ({} for the defaults)").into(),
        );
    };
    if let Some(unknown) = map
        .keys()
        .find(|key| !CONFIG_FIELDS.contains(&key.as_str()))
    {
        return Err(Problem::bad_request(format!(
            "`config`: unknown field `{unknown}`; accepted: sample_rate, channels, language_codes, stt_prompt (alias prompt), keyterms_prompt (legacy keyterms, word_boost), llm_instruction"
        ))
        .into());
    }
    if map.contains_key("stt_prompt") && map.contains_key("prompt") {
        return Err(
            Problem::bad_request("`stt_prompt`: send it or its alias `prompt`, not both").into(),
        );
    }
    let keyterm_names: Vec<&str> = ["keyterms_prompt", "keyterms", "word_boost"]
        .into_iter()
        .filter(|name| map.contains_key(*name))
        .collect();
    if keyterm_names.len() > 1 {
        return Err(Problem::bad_request(format!(
            "`keyterms_prompt`: send at most one of keyterms_prompt, keyterms, word_boost (the last two are legacy aliases); got {}",
            keyterm_names.join(" and ")
        ))
        .into());
    }
    let given = |name: &str| map.get(name).filter(|value| !value.is_null());
    let mut config = DictationConfig {
        sample_rate: match given("sample_rate") {
            None => None,
            Some(value) => Some(integer(value, "sample_rate", u64::from(u32::MAX))? as u32),
        },
        channels: match given("channels") {
            None => None,
            Some(value) => Some(integer(value, "channels", u64::from(u16::MAX))? as u16),
        },
        language_codes: match given("language_codes") {
            None => None,
            Some(value) => {
                let codes = strings(value, "language_codes")?;
                rules::language_codes("language_codes", &codes)?;
                Some(codes)
            }
        },
        ..DictationConfig::default()
    };
    for name in ["stt_prompt", "prompt"] {
        if let Some(value) = given(name) {
            let prompt = string(value, name)?;
            rules::stt_prompt(name, &prompt)?;
            config.stt_prompt = Some(prompt);
        }
    }
    for name in ["keyterms_prompt", "keyterms", "word_boost"] {
        if let Some(value) = given(name) {
            let terms = strings(value, name)?;
            rules::keyterms(name, &terms)?;
            config.keyterms_prompt = Some(terms);
        }
    }
    if let Some(value) = given("llm_instruction") {
        config.llm_instruction = Some(string(value, "llm_instruction")?);
    }
    config.validate_fields()?;
    Ok(config)
}

fn integer(value: &Value, name: &str, max: u64) -> Result<u64, Problem> {
    value
        .as_u64()
        .filter(|number| (1..=max).contains(number))
        .ok_or_else(|| {
            Problem::bad_request(format!("`{name}`: must be an integer from 1 to {max}"))
        })
}

fn string(value: &Value, name: &str) -> Result<String, Problem> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Problem::bad_request(format!("`{name}`: must be a string")))
}

fn strings(value: &Value, name: &str) -> Result<Vec<String>, Problem> {
    let items = value
        .as_array()
        .ok_or_else(|| Problem::bad_request(format!("`{name}`: must be an array of strings")))?;
    items
        .iter()
        .map(|item| {
            item.as_str().map(str::to_owned).ok_or_else(|| {
                Problem::bad_request(format!("`{name}`: must be an array of strings"))
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Audio: duration and text as the bytes arrive
// ---------------------------------------------------------------------------

/// What the audio part holds, learnt as it arrives.
enum Meter {
    Pcm {
        bytes_per_second: u64,
        bytes: u64,
    },
    Wav(Box<WavMeter>),
    /// The buffered endpoint's compressed formats: length estimated.
    Compressed {
        bytes: u64,
    },
}

#[derive(Default)]
struct WavMeter {
    /// Every byte before the `data` chunk's header (and, until it is
    /// found, what has arrived so far).
    header: Vec<u8>,
    /// Set once the `data` chunk's header has arrived.
    info: Option<WavInfo>,
    /// The declared `data` size, unless it is a streaming placeholder.
    declared: Option<u64>,
    data: u64,
    /// Bytes after the declared `data` (for a trailing `LIST/INFO`).
    trailer: Vec<u8>,
}

fn not_wav(why: &str) -> Problem {
    Problem::bad_request(format!(
        "`audio`: is not a WAV file this service reads ({why}); raw samples go as audio/pcm"
    ))
}

impl Meter {
    fn new(format: AudioFormat, config: &DictationConfig) -> Meter {
        match format {
            AudioFormat::Wav => Meter::Wav(Box::default()),
            AudioFormat::Pcm => Meter::Pcm {
                bytes_per_second: u64::from(config.sample_rate.unwrap_or(1))
                    * u64::from(config.channels.unwrap_or(1))
                    * 2,
                bytes: 0,
            },
        }
    }

    /// Takes the next bytes; the audio they add, or why the audio is
    /// refused (not a WAV, over 120 s).
    fn feed(&mut self, chunk: &[u8]) -> Result<Duration, Problem> {
        let before = self.duration();
        match self {
            Meter::Pcm { bytes, .. } | Meter::Compressed { bytes } => *bytes += chunk.len() as u64,
            Meter::Wav(meter) => meter.feed(chunk)?,
        }
        let after = self.duration();
        if after > MAX_AUDIO {
            return Err(too_long(after));
        }
        Ok(after.saturating_sub(before))
    }

    fn duration(&self) -> Duration {
        match self {
            Meter::Pcm {
                bytes_per_second,
                bytes,
            } => Duration::from_secs_f64(*bytes as f64 / (*bytes_per_second).max(1) as f64),
            Meter::Compressed { bytes } => {
                Duration::from_secs_f64(*bytes as f64 / COMPRESSED_BYTES_PER_SECOND)
            }
            Meter::Wav(meter) => meter.duration(meter.data),
        }
    }

    /// The audio's duration and `ICMT` text, once every byte is in.
    fn finish(self, received: u64) -> Result<(Duration, Option<String>), Refuse> {
        if received == 0 {
            return Err(parse_error(
                "the `audio` part is empty; send the audio after `config`",
            ));
        }
        let duration = self.duration();
        match self {
            Meter::Wav(meter) => {
                let Some(info) = &meter.info else {
                    return Err(not_wav("the audio ends before its `data` chunk").into());
                };
                if meter.data == 0 {
                    return Err(parse_error(
                        "the `audio` part holds no samples (empty `data` chunk)",
                    ));
                }
                let comment = info.comment.clone().or_else(|| meter.trailing_comment());
                Ok((duration, comment))
            }
            _ => Ok((duration, None)),
        }
    }
}

impl WavMeter {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Problem> {
        if self.info.is_some() {
            self.data_bytes(chunk);
            return Ok(());
        }
        self.header.extend_from_slice(chunk);
        let DataChunk::At {
            header_end,
            declared,
        } = wav::locate_data(&self.header).map_err(|_| not_wav("no RIFF/WAVE header"))?
        else {
            if self.header.len() > WAV_HEADER_MAX {
                return Err(not_wav("no `data` chunk in the first 1 MB"));
            }
            return Ok(());
        };
        // Read the format (and a LIST before the data) from the header
        // alone, with a zero-length `data` chunk closing it.
        let info = wav::parse_head(&self.header[..header_end - 8])
            .map_err(|error| not_wav(&error.to_string()))?;
        self.declared = wav::declared_data_len(declared);
        let rest = self.header.split_off(header_end);
        self.header.truncate(header_end - 8);
        self.info = Some(info);
        if let Some(declared) = self.declared {
            let duration = self.duration(declared);
            if duration > MAX_AUDIO {
                return Err(Problem::bad_request(format!(
                    "`audio`: the WAV header declares {:.1} s; dictation takes at most {} s",
                    duration.as_secs_f64(),
                    MAX_AUDIO.as_secs()
                )));
            }
        }
        self.data_bytes(&rest);
        Ok(())
    }

    fn data_bytes(&mut self, bytes: &[u8]) {
        let take = match self.declared {
            Some(declared) => (declared.saturating_sub(self.data)).min(bytes.len() as u64) as usize,
            None => bytes.len(),
        };
        self.data += take as u64;
        let rest = &bytes[take..];
        let room = TRAILER_MAX.saturating_sub(self.trailer.len());
        self.trailer
            .extend_from_slice(&rest[..rest.len().min(room)]);
    }

    fn duration(&self, data: u64) -> Duration {
        match &self.info {
            Some(info) => WavInfo {
                data_len: data,
                ..info.clone()
            }
            .duration(),
            None => Duration::ZERO,
        }
    }

    /// An `ICMT` in chunks after the `data` chunk.
    fn trailing_comment(&self) -> Option<String> {
        let declared = self.declared?;
        let skip = usize::from(declared % 2 == 1).min(self.trailer.len());
        let mut probe = self.header.clone();
        probe.extend_from_slice(b"data\0\0\0\0");
        probe.extend_from_slice(&self.trailer[skip..]);
        wav::parse(&probe).ok()?.comment
    }
}

/// Emulated transcription: work of 1/[`DictationTiming::speed_up`] of the
/// audio's length (× time scale), done as the audio arrives, plus
/// [`DictationTiming::finalize`] once it is all in.
struct Transcriber {
    scale: TimeScale,
    timing: DictationTiming,
    busy_until: tokio::time::Instant,
    work: Duration,
}

impl Transcriber {
    fn new(scale: TimeScale, timing: DictationTiming) -> Self {
        Transcriber {
            scale,
            timing,
            busy_until: tokio::time::Instant::now(),
            work: Duration::ZERO,
        }
    }

    fn feed(&mut self, audio: Duration) {
        let cost = self.scale.scale(self.timing.transcription(audio));
        self.busy_until = self.busy_until.max(tokio::time::Instant::now()) + cost;
        self.work += cost;
    }

    /// Waits for the work still queued; how long that was.
    async fn finish(&mut self) -> Duration {
        let cost = self.scale.scale(self.timing.finalize);
        let start = tokio::time::Instant::now();
        self.busy_until = self.busy_until.max(start) + cost;
        self.work += cost;
        tokio::time::sleep_until(self.busy_until).await;
        start.elapsed()
    }
}

// ---------------------------------------------------------------------------
// Dictation
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `/live` and `/stream`: WAV or PCM, transcribed as it arrives.
    Streaming,
    /// `/v1/transcribe`: the whole audio first; compressed formats too.
    Buffered,
}

async fn live(State(state): State<SharedState>, request: Request) -> Response {
    dictate(state, request, Mode::Streaming)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn buffered(State(state): State<SharedState>, request: Request) -> Response {
    dictate(state, request, Mode::Buffered)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// Time spent waiting for the client's bytes (not processing time).
#[derive(Default)]
struct Waiting(Duration);

impl Waiting {
    async fn on<T>(&mut self, future: impl std::future::Future<Output = T>) -> T {
        let start = Instant::now();
        let value = future.await;
        self.0 += start.elapsed();
        value
    }
}

/// One dictation request, from the key check to the answer.
async fn dictate(state: SharedState, request: Request, mode: Mode) -> Result<Response, Refuse> {
    let started = Instant::now();
    let _in_flight = InFlight::enter(&state.dictation.in_flight);
    let cap = state.config.dictation_audio_cap;
    // The pump starts first: any early answer below (401, 413) leaves it
    // draining what the client still sends.
    let (inflow, request) = Inflow::start(request, cap);
    let auth_started = Instant::now();
    check_key(request.headers(), state.config.api_key.expose())?;
    let auth_time = auth_started.elapsed();
    if declared_len(request.headers()).is_some_and(|len| len > cap) {
        return Err(too_large(cap).into());
    }
    let mut multipart = Multipart::from_request(request, &state).await.map_err(
        |rejection: MultipartRejection| {
            parse_error(format!(
                "the body must be multipart/form-data with a boundary, `config` then `audio`: {}",
                rejection.body_text()
            ))
        },
    )?;
    let mut waiting = Waiting::default();

    // Part 1: config, validated before any audio is read.
    let config = {
        let field = waiting
            .on(multipart.next_field())
            .await
            .map_err(|error| inflow.refuse(error))?
            .ok_or_else(|| {
                parse_error("the body has no parts; send `config` (JSON) first, then `audio`")
            })?;
        match field.name() {
            Some("config") => {}
            Some("audio") => {
                return Err(parse_error(
                    "`audio` came before `config`; the `config` part must come first",
                ));
            }
            other => {
                return Err(parse_error(format!(
                    "unexpected first part {:?}; the body has two parts, `config` then `audio`",
                    other.unwrap_or("")
                )));
            }
        }
        let raw = waiting
            .on(field.bytes())
            .await
            .map_err(|error| inflow.refuse(error))?;
        let value: Value = serde_json::from_slice(&raw)
            .map_err(|error| parse_error(format!("`config` is not valid JSON: {error}")))?;
        parse_config(value)?
    };
    state
        .dictation
        .configs_validated
        .fetch_add(1, Ordering::Relaxed);

    // Part 2: audio, read as it arrives.
    let mut transcriber = Transcriber::new(state.config.time_scale, state.config.dictation_timing);
    let (format_label, meter, received) = {
        let field = waiting
            .on(multipart.next_field())
            .await
            .map_err(|error| inflow.refuse(error))?
            .ok_or_else(|| parse_error("the `audio` part is missing; send it after `config`"))?;
        match field.name() {
            Some("audio") => {}
            Some("config") => return Err(parse_error("`config` was sent twice")),
            other => {
                return Err(parse_error(format!(
                    "unexpected part {:?} after `config`; the second part must be `audio`",
                    other.unwrap_or("")
                )));
            }
        }
        let content_type = field.content_type().unwrap_or("").to_owned();
        let mut meter = audio_meter(mode, &content_type, &config)?;
        read_audio(
            &state,
            &inflow,
            field,
            &mut meter,
            &mut transcriber,
            mode,
            &mut waiting,
        )
        .await?
    };
    // Exactly two parts.
    if let Some(extra) = waiting
        .on(multipart.next_field())
        .await
        .map_err(|error| inflow.refuse(error))?
    {
        return Err(parse_error(format!(
            "unexpected part {:?} after `audio`; the body has exactly two parts",
            extra.name().unwrap_or("")
        )));
    }
    drop(multipart);
    let (duration, comment) = meter.finish(received)?;
    if mode == Mode::Buffered {
        transcriber.feed(duration);
    }
    let finish_wait = transcriber.finish().await;

    let text = comment.unwrap_or_else(|| FIXED_TEXT.to_owned());
    // CPU work (up to [`wav::COMMENT_MAX`] of text) runs off the request
    // workers, so other requests are not held up.
    let (text, words, confidence) = off_workers({
        let text = text.clone();
        move || {
            let words = words(&text);
            let confidence = if words.is_empty() {
                0.0
            } else {
                round3(words.iter().map(|(_, c)| c).sum::<f64>() / words.len() as f64)
            };
            let words: Vec<Value> = words
                .into_iter()
                .map(|(text, confidence)| json!({ "text": text, "confidence": confidence }))
                .collect();
            (text, words, confidence)
        }
    })
    .await?;
    let rewrite_started = Instant::now();
    let failure = state.dictation.failures().pop_front();
    let (llm_response, llm_error) = match failure {
        Some(LlmFailure::Timeout) => {
            tokio::time::sleep(state.config.time_scale.scale(REWRITE_DEADLINE)).await;
            (None, Some("timeout"))
        }
        Some(LlmFailure::Error) => (None, Some("error")),
        None => {
            let rewrite_time = state.config.dictation_timing.rewrite;
            tokio::time::sleep(state.config.time_scale.scale(rewrite_time)).await;
            let (text, instruction) = (text.clone(), config.llm_instruction.clone());
            let rewritten = off_workers(move || rewrite(&text, instruction.as_deref())).await?;
            (Some(rewritten), None)
        }
    };
    let rewrite_time = rewrite_started.elapsed();
    // Processing is the handler's time less waiting for the client's
    // bytes; its parts are the key check, the emulated transcription
    // (which overlapped the upload when streaming) and the rewrite.
    let other = started
        .elapsed()
        .saturating_sub(waiting.0 + finish_wait + rewrite_time + auth_time);
    let request_time = auth_time + transcriber.work + rewrite_time + other;
    state.dictation.completed.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(format = format_label, ?duration, "dictation answered");
    Ok(Json(json!({
        "text": text,
        "words": words,
        "confidence": confidence,
        "llm_response": llm_response,
        "llm_error": llm_error,
        "audio_duration_ms": (duration.as_secs_f64() * 1000.0).round() as u64,
        "session_id": uuid::Uuid::new_v4().to_string(),
        "request_time_ms": millis(request_time),
        "auth_time_ms": millis(auth_time),
        "sync_time_ms": millis(transcriber.work),
    }))
    .into_response())
}

/// The meter for an `audio` part of `content_type`, or the 415 / 400 that
/// refuses it before any audio is read.
fn audio_meter(mode: Mode, content_type: &str, config: &DictationConfig) -> Result<Meter, Refuse> {
    if let Some(format) = AudioFormat::from_content_type(content_type) {
        config.validate_for(format)?;
        return Ok(Meter::new(format, config));
    }
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let shown = if essence.is_empty() {
        "has no Content-Type".to_owned()
    } else {
        format!("is {essence}")
    };
    match mode {
        Mode::Buffered if essence == "audio/x-wav" => Ok(Meter::new(AudioFormat::Wav, config)),
        Mode::Buffered if COMPRESSED_TYPES.contains(&essence.as_str()) => {
            Ok(Meter::Compressed { bytes: 0 })
        }
        Mode::Buffered => Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the `audio` part {shown}; /v1/transcribe takes audio/wav, audio/pcm, {}",
                COMPRESSED_TYPES.join(", ")
            ),
        )
        .into()),
        Mode::Streaming => Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the `audio` part {shown}; this endpoint takes audio/wav or audio/pcm only. Send compressed audio (MP3, Ogg, FLAC, WebM, MP4) to the buffered /v1/transcribe endpoint"
            ),
        )
        .into()),
    }
}

/// Reads the `audio` part: each chunk is metered (and, when streaming,
/// transcribed) as it arrives. Buffered mode keeps the bytes until the end.
async fn read_audio(
    state: &SharedState,
    inflow: &Inflow,
    mut field: Field<'_>,
    meter: &mut Meter,
    transcriber: &mut Transcriber,
    mode: Mode,
    waiting: &mut Waiting,
) -> Result<(&'static str, Meter, u64), Refuse> {
    let mut received = 0u64;
    let mut held: Vec<Bytes> = Vec::new();
    while let Some(chunk) = waiting
        .on(field.chunk())
        .await
        .map_err(|error| inflow.refuse(error))?
    {
        received += chunk.len() as u64;
        state
            .dictation
            .audio_bytes
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        match mode {
            Mode::Streaming => {
                let added = meter.feed(&chunk)?;
                transcriber.feed(added);
            }
            Mode::Buffered => held.push(chunk),
        }
    }
    for chunk in held {
        meter.feed(&chunk)?;
    }
    let label = match meter {
        Meter::Pcm { .. } => "audio/pcm",
        Meter::Wav(_) => "audio/wav",
        Meter::Compressed { .. } => "compressed",
    };
    let meter = std::mem::replace(meter, Meter::Compressed { bytes: 0 });
    Ok((label, meter, received))
}

fn millis(duration: Duration) -> f64 {
    round3(duration.as_secs_f64() * 1000.0)
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Runs `work` on the blocking pool; a panic in it is a 500.
async fn off_workers<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refuse> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        tracing::error!(%error, "dictation work failed");
        Refuse::from(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the emulator failed to build the transcript",
        ))
    })
}

/// The transcript's words (punctuation trimmed) with a confidence each:
/// stable per word, between 0.80 and 0.99.
pub(crate) fn words(text: &str) -> Vec<(String, f64)> {
    text.split_whitespace()
        .map(|token| token.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
        .filter(|word| !word.is_empty())
        .map(|word| {
            let hash = word.bytes().fold(0u32, |hash, byte| {
                hash.wrapping_mul(31).wrapping_add(u32::from(byte))
            });
            (word.to_owned(), round3(0.80 + f64::from(hash % 20) / 100.0))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The emulated rewrite
// --------------------------------------------------------------------------

/// `POST /transcribe`: one `audio` part (WAV), the raw key, `X-SVC-Model`.
async fn sync(State(state): State<SharedState>, request: Request) -> Response {
    sync_inner(state, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn sync_inner(state: SharedState, request: Request) -> Result<Response, Refuse> {
    let started = Instant::now();
    let _in_flight = InFlight::enter(&state.dictation.in_flight);
    let cap = state.config.dictation_audio_cap;
    let (inflow, request) = Inflow::start(request, cap);
    check_key(request.headers(), state.config.api_key.expose())?;
    let model = request
        .headers()
        .get("x-svc-model")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            Problem::bad_request(
                "missing X-SVC-Model header; name the model to use (for example universal-3-5-pro)",
            )
        })?;
    if declared_len(request.headers()).is_some_and(|len| len > cap) {
        return Err(too_large(cap).into());
    }
    let mut multipart = Multipart::from_request(request, &state)
        .await
        .map_err(|rejection| {
            Problem::bad_request(format!(
                "the body must be multipart/form-data with an `audio` part: {}",
                rejection.body_text()
            ))
        })?;
    let mut waiting = Waiting::default();
    let mut audio = Vec::new();
    let mut seen_audio = false;
    while let Some(mut field) = waiting
        .on(multipart.next_field())
        .await
        .map_err(|error| sync_refusal(inflow.refuse(error)))?
    {
        if field.name() != Some("audio") || seen_audio {
            return Err(Problem::bad_request(format!(
                "unexpected part {:?}; the body has one part, `audio`",
                field.name().unwrap_or("")
            ))
            .into());
        }
        seen_audio = true;
        while let Some(chunk) = waiting
            .on(field.chunk())
            .await
            .map_err(|error| sync_refusal(inflow.refuse(error)))?
        {
            state
                .dictation
                .audio_bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            audio.extend_from_slice(&chunk);
        }
    }
    if audio.is_empty() {
        return Err(Problem::bad_request(
            "the `audio` part is missing or empty; send the WAV file as the `audio` part",
        )
        .into());
    }
    let info = wav::parse(&audio).map_err(|error| {
        Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the `audio` part is not a WAV file the emulator reads ({error})"),
        )
    })?;
    let duration = info.duration();
    let timing = state.config.dictation_timing;
    let work = state
        .config
        .time_scale
        .scale(timing.transcription(duration) + timing.finalize);
    tokio::time::sleep(work).await;
    let processing = started.elapsed().saturating_sub(waiting.0);
    Ok(Json(json!({
        "text": info.comment.unwrap_or_else(|| FIXED_TEXT.to_owned()),
        "model": model,
        "audio_duration_ms": (duration.as_secs_f64() * 1000.0).round() as u64,
        "request_time_ms": millis(processing),
    }))
    .into_response())
}

/// Sync answers every error as `{status, title, detail}`.
fn sync_refusal(refuse: Refuse) -> Refuse {
    match refuse {
        Refuse::Parse(message) => Problem::bad_request(message).into(),
        other => other,
    }
}

// ---------------------------------------------------------------------------
// Control: /_emulator/dictation
// ---------------------------------------------------------------------------

/// `POST /_emulator/dictation`: the next `count` dictation rewrites fail.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArmLlm {
    llm: LlmFailure,
    #[serde(default = "one")]
    count: u32,
}

/// Most rewrite failures one control call may arm.
const MAX_ARMED: u32 = 10_000;

fn one() -> u32 {
    1
}

async fn control_get(State(state): State<SharedState>) -> Json<Value> {
    Json(state.dictation.snapshot())
}

async fn control_arm(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<Value>, Problem> {
    let arm: ArmLlm = super::problem::parse_body(&body)?;
    if !(1..=MAX_ARMED).contains(&arm.count) {
        return Err(Problem::bad_request(format!(
            "`count`: must be from 1 to {MAX_ARMED}"
        )));
    }
    state
        .dictation
        .failures()
        .extend(std::iter::repeat_n(arm.llm, arm.count as usize));
    Ok(Json(state.dictation.snapshot()))
}

async fn control_clear(State(state): State<SharedState>) -> Json<Value> {
    state.dictation.failures().clear();
    Json(state.dictation.snapshot())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rewrite_drops_fillers_and_resolves_corrections() {
        assert_eq!(
            rewrite(
                "um so I think we should meet on Tuesday, no, Wednesday at noon",
                None
            ),
            "So I think we should meet on Wednesday at noon."
        );
        assert_eq!(
            rewrite("uh let's meet at three, no, at four, er, ok", None),
            "Let's meet at four, ok."
        );
        assert_eq!(rewrite("no, really", None), "No, really.");
    }

    #[test]
    fn instructions_change_the_rewrite_visibly() {
        let text = "um buy milk. then call Ana, no, Bea. uh done";
        assert_eq!(
            rewrite(text, Some("Make a bulleted list")),
            "- Buy milk\n- Then call Bea\n- Done"
        );
        assert_eq!(
            rewrite("um hello there", Some("in UPPERCASE please")),
            "HELLO THERE."
        );
        assert_eq!(rewrite("um hello there", Some("a note")), "Hello there.");
    }

    #[test]
    fn config_rules_and_aliases() {
        let ok = parse_config(
            json!({"prompt": "a meeting", "word_boost": ["Ana"], "llm_instruction": null}),
        )
        .unwrap();
        assert_eq!(ok.stt_prompt.as_deref(), Some("a meeting"));
        assert_eq!(ok.keyterms_prompt, Some(vec!["Ana".to_owned()]));
        for (body, expected) in [
            (json!({"foo": 1}), "unknown field `foo`"),
            (json!({"stt_prompt": "a", "prompt": "b"}), "not both"),
            (json!({"keyterms": [], "word_boost": []}), "at most one of"),
            (
                json!({"language_codes": ["xx"]}),
                "not a supported language",
            ),
            (json!({"sample_rate": -1}), "integer from 1"),
            (json!([]), "JSON object"),
            (
                json!({"prompt": "x".repeat(6001)}),
                "`prompt`: must be at most 6000",
            ),
        ] {
            let Err(Refuse::Problem(problem)) = parse_config(body.clone()) else {
                panic!("{body} accepted");
            };
            let text = format!("{problem:?}");
            assert!(text.contains(expected), "{body}: {text}");
        }
    }

    #[test]
    fn the_wav_meter_reads_headers_split_anywhere() {
        let wav = wav::tests::pcm_wav(8000, 1, 2.0, Some("hello there"));
        for split in [1, 7, 20, 44, 60, wav.len() - 1] {
            let mut meter = Meter::new(AudioFormat::Wav, &DictationConfig::default());
            meter.feed(&wav[..split]).unwrap();
            meter.feed(&wav[split..]).unwrap();
            let (duration, comment) = meter.finish(wav.len() as u64).unwrap();
            assert_eq!(duration, Duration::from_secs(2), "split at {split}");
            assert_eq!(comment.as_deref(), Some("hello there"));
        }
        let mut meter = Meter::new(AudioFormat::Wav, &DictationConfig::default());
        assert!(meter.feed(b"ID3\x04 this is an mp3 file").is_err());
    }

    #[test]
    fn pcm_over_120_seconds_is_refused_as_it_arrives() {
        let config = DictationConfig {
            sample_rate: Some(8000),
            channels: Some(1),
            ..DictationConfig::default()
        };
        let mut meter = Meter::new(AudioFormat::Pcm, &config);
        let second = vec![0u8; 16_000];
        for _ in 0..120 {
            meter.feed(&second).unwrap();
        }
        assert!(meter.feed(&[0, 0]).is_err());
    }
}
