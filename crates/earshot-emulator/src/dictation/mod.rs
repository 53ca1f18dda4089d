//! Dictation and sync (spec areas A and B): the routes, this area's share
//! of the emulator state, and what every handler shares (the two error
//! shapes, the key check, waiting time). The jobs, read top to bottom:
//!
//! - [`routes`] (here): `POST /v1/transcribe/live` and `/v1/transcribe/stream`
//!   (one operation, no unversioned alias), the buffered `/v1/transcribe`,
//!   sync's `POST /transcribe`, and the control route
//!   `/_emulator/dictation` (counters; make the next rewrites time out or
//!   fail);
//! - [`body`]: the pump forwards the raw request body to the multipart
//!   reader as it arrives, enforces the size cap (413 as soon as it is
//!   crossed) and, once an answer has gone out early, drains the rest so
//!   the client can read that answer instead of a reset connection;
//! - [`config`]: the `config` part, validated before any audio is read;
//! - [`meter`]: the audio's duration (WAV header or PCM byte count), the
//!   120 s limit and the fixture's `ICMT` text, learnt as bytes arrive;
//! - [`timing`]: how long the emulated transcription and rewrite take;
//! - [`dictate`]: one dictation request: authenticate, read `config`,
//!   stream `audio` through a meter and an emulated transcriber that
//!   works while bytes arrive, answer;
//! - [`rewrite`]: the emulated rewrite (fillers dropped, "X, no, Y"
//!   resolved, `llm_instruction` applied visibly);
//! - [`sync`]: the sync endpoint;
//! - [`control`]: the `/_emulator/dictation` handlers.
//!
//! Decisions where the spec is silent are in `docs/decisions.md`
//! ("Emulator").

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::DefaultBodyLimit;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::SharedState;
use super::problem::Problem;
use earshot_protocol::types::dictation::MAX_AUDIO;

mod answers;
mod body;
mod config;
mod control;
mod dictate;
mod meter;
mod rewrite;
mod sync;
#[cfg(test)]
mod tests;
mod timing;

pub(crate) use dictate::words;
pub(crate) use rewrite::rewrite;
pub use timing::DictationTiming;

/// Largest dictation or sync request body when none is configured.
pub const DEFAULT_AUDIO_CAP: u64 = 25 * 1024 * 1024;

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
        .route("/v1/transcribe/live", post(dictate::live))
        .route("/v1/transcribe/stream", post(dictate::live))
        .route("/v1/transcribe", post(dictate::buffered))
        .route("/transcribe", post(sync::sync))
        // The cap is ours (the body pump); axum's 2 MB default would cut audio.
        .layer(DefaultBodyLimit::disable())
        .route(
            "/_emulator/dictation",
            axum::routing::get(control::control_get)
                .post(control::control_arm)
                .delete(control::control_clear),
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

impl From<earshot_protocol::validate::ValidationError> for Refuse {
    fn from(error: earshot_protocol::validate::ValidationError) -> Self {
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

fn millis(duration: Duration) -> f64 {
    round3(duration.as_secs_f64() * 1000.0)
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}
