//! `POST /v2/upload` and the upload URLs it hands out
//! (`/_emulator/uploads/{token}`).

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::json;

use super::AUDIO_CAP;
use crate::SharedState;
use crate::problem::Problem;

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
pub(super) async fn upload(
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
pub(super) async fn uploaded(
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
