//! Sync's `POST /transcribe` ([`sync`]): one `audio` part (WAV), the raw
//! key, `X-SVC-Model`; every error as `{status, title, detail}`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::Json;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::answers::SyncAnswer;
use super::body::{Inflow, declared_len};
use super::{InFlight, Refuse, Waiting, check_key, millis, too_large};
use crate::SharedState;
use crate::prerecorded::FIXED_TEXT;
use crate::problem::Problem;
use earshot_protocol::wav;

/// `POST /transcribe`: one `audio` part (WAV), the raw key, `X-SVC-Model`.
pub(super) async fn sync(State(state): State<SharedState>, request: Request) -> Response {
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
    Ok(Json(SyncAnswer {
        text: info.comment.unwrap_or_else(|| FIXED_TEXT.to_owned()),
        model,
        audio_duration_ms: (duration.as_secs_f64() * 1000.0).round() as u64,
        request_time_ms: millis(processing),
    })
    .into_response())
}

/// Sync answers every error as `{status, title, detail}`.
fn sync_refusal(refuse: Refuse) -> Refuse {
    match refuse {
        Refuse::Parse(message) => Problem::bad_request(message).into(),
        other => other,
    }
}
