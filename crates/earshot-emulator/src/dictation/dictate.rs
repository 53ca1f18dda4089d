//! One dictation request ([`dictate`]), from the key check to the answer:
//! authenticate, read `config` (validated before any audio is read), then
//! stream `audio` through a [`Meter`] and an emulated [`Transcriber`] that
//! works while bytes arrive, then the emulated rewrite.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::Json;
use axum::body::Bytes;
use axum::extract::multipart::{Field, MultipartRejection};
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::answers::{DictationAnswer, Word};
use super::body::{Inflow, declared_len};
use super::config::parse_config;
use super::meter::Meter;
use super::timing::Transcriber;
use super::{
    InFlight, LlmFailure, Refuse, Waiting, check_key, millis, parse_error, rewrite, round3,
    too_large,
};
use crate::SharedState;
use crate::prerecorded::FIXED_TEXT;
use crate::problem::Problem;
use earshot_protocol::types::dictation::{AudioFormat, DictationConfig, REWRITE_DEADLINE};

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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `/live` and `/stream`: WAV or PCM, transcribed as it arrives.
    Streaming,
    /// `/v1/transcribe`: the whole audio first; compressed formats too.
    Buffered,
}

pub(super) async fn live(State(state): State<SharedState>, request: Request) -> Response {
    dictate(state, request, Mode::Streaming)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

pub(super) async fn buffered(State(state): State<SharedState>, request: Request) -> Response {
    dictate(state, request, Mode::Buffered)
        .await
        .unwrap_or_else(IntoResponse::into_response)
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
            let words: Vec<Word> = words
                .into_iter()
                .map(|(text, confidence)| Word { text, confidence })
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
    Ok(Json(DictationAnswer {
        text,
        words,
        confidence,
        llm_response,
        llm_error,
        audio_duration_ms: (duration.as_secs_f64() * 1000.0).round() as u64,
        session_id: uuid::Uuid::new_v4().to_string(),
        request_time_ms: millis(request_time),
        auth_time_ms: millis(auth_time),
        sync_time_ms: millis(transcriber.work),
    })
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
