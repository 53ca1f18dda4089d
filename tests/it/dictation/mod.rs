//! Dictation and sync (spec areas A and B) over real HTTP: every row of
//! the error table of part 7 A (both body shapes checked on the raw JSON),
//! both dictation paths and the missing unversioned alias, the client's
//! checks before sending, streaming from a slow pipe, the retry policy, the
//! rewrite and its failure, sync's model header, regional endpoints, and
//! the three commands (`dictate`, `transcribe`, `probe`).
//!
//! WAV fixtures are generated here (8 kHz mono 16-bit silence, with the
//! fixture's words in a `LIST/INFO` `ICMT` chunk): nothing binary is
//! committed.
//!
//! This module holds the fixtures the subjects share (WAV files, raw
//! multipart posts, the two error shapes, the emulator's counters); each
//! subject is a submodule.

mod answers;
mod client_checks;
mod commands;
mod error_table;
mod retries;
mod streaming;
mod sync_regions;

use crate::common;
use crate::common::{API_KEY, Harness, wav};
use earshot_core::api::dictation::{AudioSource, DictationError, DictationRequest, Refusal};
use earshot_core::api::types::dictation::{AudioFormat, Dictation, DictationConfig};
use earshot_core::redact::SecretString;
use earshot_emulator::{EmulatorConfig, TimeScale};
use serde_json::{Value, json};

const UTTERANCE: &str = "um so I think we should meet on Tuesday, no, Wednesday at noon";
const CLEANED: &str = "So I think we should meet on Wednesday at noon.";
const LIVE: &str = "POST /v1/transcribe/live";

/// A WAV file in a temporary directory (kept alive by the guard).
fn wav_file(seconds: f64, comment: Option<&str>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("utterance.wav");
    std::fs::write(&path, wav(seconds, comment)).unwrap();
    (dir, path)
}

/// An emulator (time × 0.01) with a dictation size cap, and a client.
async fn start(cap: u64) -> Harness {
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.time_scale = TimeScale::new(0.01).unwrap();
    config.dictation_audio_cap = cap;
    common::launch(config, None).await
}

async fn harness() -> Harness {
    start(25 * 1024 * 1024).await
}

/// One multipart part: name, content type, bytes.
struct Part {
    name: &'static str,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

fn config(body: Value) -> Part {
    Part {
        name: "config",
        content_type: Some("application/json"),
        body: body.to_string().into_bytes(),
    }
}

fn audio(content_type: &'static str, body: Vec<u8>) -> Part {
    Part {
        name: "audio",
        content_type: Some(content_type),
        body,
    }
}

fn multipart(parts: &[Part]) -> (String, Vec<u8>) {
    let boundary = "test-boundary-7d3a4e6b";
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n",
                part.name
            )
            .as_bytes(),
        );
        if let Some(content_type) = part.content_type {
            body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&part.body);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A raw multipart POST; status, headers and JSON body.
async fn post(
    harness: &Harness,
    path: &str,
    authorization: Option<&str>,
    headers: &[(&str, &str)],
    parts: &[Part],
) -> (u16, reqwest::header::HeaderMap, Value) {
    let (content_type, body) = multipart(parts);
    let mut request = harness
        .http
        .post(format!("{}{path}", harness.base))
        .header("content-type", content_type)
        .body(body);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("emulator answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn dictation_post(harness: &Harness, parts: &[Part]) -> (u16, Value) {
    let (status, _, body) = post(harness, "/v1/transcribe/live", Some(API_KEY), &[], parts).await;
    (status, body)
}

/// `{status, title, detail}`, nothing of the other shape.
fn assert_detail_shape(status: u16, body: &Value, expected_status: u16, expected: &str) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["status"], expected_status, "{body}");
    assert!(body["title"].is_string(), "{body}");
    let detail = body["detail"].as_str().expect("detail is a string");
    assert!(
        detail.contains(expected),
        "{detail:?} should mention {expected:?}"
    );
    assert!(body.get("error_code").is_none(), "{body}");
}

/// Answers of `route` with `status` so far.
async fn count(harness: &Harness, route: &str, status: u16) -> u64 {
    harness.stats().await["by_route"][route][status.to_string()]
        .as_u64()
        .unwrap_or(0)
}

async fn requests_to(harness: &Harness, route: &str) -> u64 {
    harness.stats().await["by_route"][route]
        .as_object()
        .map_or(0, |statuses| {
            statuses.values().filter_map(Value::as_u64).sum()
        })
}

fn wav_request() -> DictationRequest {
    DictationRequest::default()
}

/// Arms a fault: the next live dictation request answers `status`.
async fn fail_next_live(h: &Harness, status: u16) {
    h.arm_fault(json!({"path_prefix": "/v1/transcribe/live", "status": status}))
        .await;
}

/// Dictates `audio` as a WAV with the default request.
async fn dictate_wav(h: &Harness, audio: AudioSource) -> Result<Dictation, DictationError> {
    h.client.dictate(&wav_request(), audio).await
}

/// Dictates `file` with `request`.
async fn dictate_file(
    h: &Harness,
    request: &DictationRequest,
    file: &std::path::Path,
) -> Result<Dictation, DictationError> {
    h.client.dictate(request, AudioSource::file(file)).await
}

/// A refusal as (status, kind, requests sent, whether a retryable status
/// went unretried); panics on any other error.
fn refused(error: &DictationError) -> (u16, Refusal, u32, bool) {
    match error {
        DictationError::Refused {
            status,
            kind,
            attempts,
            not_retried,
            ..
        } => (*status, *kind, *attempts, *not_retried),
        other => panic!("not a refusal: {other}"),
    }
}

fn pcm_request(sample_rate: Option<u32>, channels: Option<u16>) -> DictationRequest {
    DictationRequest {
        config: DictationConfig {
            sample_rate,
            channels,
            ..DictationConfig::default()
        },
        format: AudioFormat::Pcm,
        ..DictationRequest::default()
    }
}

/// A readable pipe and the task writing into it.
fn pipe() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    tokio::io::duplex(64 * 1024)
}

/// Runs the `earshot` binary against the harness's emulator (no config
/// file: `--url` and `--api-key` say everything).
async fn earshot(h: &Harness, args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"))
        .args(args)
        .env("EARSHOT_CONFIG", dir.path().join("none.toml"))
        .env("EARSHOT_URL", &h.base)
        .env("EARSHOT_API_KEY", API_KEY)
        .env_remove("EARSHOT_PROFILE")
        .output()
        .await
        .expect("earshot runs")
}
