//! The emulator's pre-recorded transcription API (spec areas D and E) over
//! real HTTP: uploads, transcript jobs and their FIFO queue, the account's
//! concurrency and balance, webhooks and their retries, the HTTP and
//! polling rate limits, and the API key check.
//!
//! WAV fixtures are built here (8 kHz mono 16-bit silence, with the
//! transcript in a `LIST/INFO` `ICMT` chunk when a test wants one).
//!
//! This module holds the fixtures the subjects share (starting the
//! emulator, submitting and waiting for jobs, the recording [`Hook`]
//! server, the `/v2` error shape); each subject is a submodule.

mod client;
mod limits_auth;
mod queue;
mod uploads;
mod webhooks;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{API_KEY, Harness, Options, RawAnswer, eventually, start_with, wav};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, FixedOffset};
use reqwest::Method;
use serde_json::{Value, json};

const FIXED_TEXT: &str = "This is an emulated transcript: the emulator does not recognise speech.";

/// An emulator at `time_scale` with a polling limit no test trips by
/// accident (the limit tests set their own).
async fn start(time_scale: f64) -> Harness {
    start_limited(time_scale, Options::default().concurrency).await
}

/// [`start`], with `concurrency` jobs processing at once.
async fn start_limited(time_scale: f64, concurrency: u32) -> Harness {
    start_with(Options {
        time_scale,
        concurrency,
        poll_limit: 100_000,
        ..Options::default()
    })
    .await
}

/// POSTs a job for `audio_url`: the created record.
async fn submit_url(harness: &Harness, audio_url: &str) -> Value {
    submit(harness, json!({ "audio_url": audio_url })).await
}

/// Uploads a second of silence: its URL.
async fn upload_silence(harness: &Harness) -> String {
    upload(harness, wav(1.0, None)).await
}

/// A record's string field (panics when absent).
fn text_of(record: &Value, field: &str) -> String {
    record[field].as_str().unwrap().to_owned()
}

/// The status of an authenticated GET of `path`.
async fn get_status(harness: &Harness, path: &str) -> u16 {
    harness.authed(Method::GET, path, None).await.status
}

async fn post(harness: &Harness, path: &str, body: Value) -> RawAnswer {
    harness
        .authed(Method::POST, path, Some(&body.to_string()))
        .await
}

/// `POST /v2/upload`; the `upload_url`.
async fn upload(harness: &Harness, audio: Vec<u8>) -> String {
    let response = harness
        .http
        .post(format!("{}/v2/upload", harness.base))
        .header("authorization", API_KEY)
        .body(audio)
        .send()
        .await
        .expect("upload answers");
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.expect("upload answer is JSON");
    body["upload_url"]
        .as_str()
        .expect("upload_url is a string")
        .to_owned()
}

/// `POST /v2/transcript`; the record (asserts 200, as the SDKs expect).
async fn submit(harness: &Harness, body: Value) -> Value {
    let answer = post(harness, "/v2/transcript", body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json()
}

async fn transcript(harness: &Harness, id: &str) -> Value {
    let (status, body) = harness.get(&format!("/v2/transcript/{id}")).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Polls until the job is `completed` or `error`; its record.
async fn wait_done(harness: &Harness, id: &str) -> Value {
    eventually(Duration::from_secs(10), "the job to finish", || async {
        let record = transcript(harness, id).await;
        matches!(record["status"].as_str(), Some("completed" | "error")).then_some(record)
    })
    .await
}

fn time(record: &Value, field: &str) -> DateTime<FixedOffset> {
    let text = record[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} set in {record}"));
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|error| panic!("{field}: {error}"))
}

/// One request a [`Hook`] got.
#[derive(Clone, Debug)]
struct Call {
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    at: Instant,
}

/// What a [`Hook`] answers: status, delay, body.
type Script = Arc<dyn Fn(usize) -> (u16, Duration, Vec<u8>) + Send + Sync>;

/// A loopback HTTP server that records every request (with its URI) and
/// answers as scripted: a webhook receiver or an audio host.
struct Hook {
    addr: std::net::SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Hook {
    async fn start(
        script: impl Fn(usize) -> (u16, Duration, Vec<u8>) + Send + Sync + 'static,
    ) -> Hook {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let state = (calls.clone(), Arc::new(script) as Script);
        let app = Router::new().fallback(hook).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Hook { addr, calls }
    }

    /// Always answers `status` at once.
    async fn answering(status: u16) -> Hook {
        Hook::start(move |_| (status, Duration::ZERO, b"answer".to_vec())).await
    }

    fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.addr)
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

async fn hook(
    State((calls, script)): State<(Arc<Mutex<Vec<Call>>>, Script)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let index = {
        let mut calls = calls.lock().unwrap();
        calls.push(Call {
            uri,
            headers,
            body,
            at: Instant::now(),
        });
        calls.len() - 1
    };
    let (status, delay, body) = script(index);
    tokio::time::sleep(delay).await;
    (StatusCode::from_u16(status).unwrap(), body).into_response()
}

/// A loopback address nothing listens on.
async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/audio.wav")
}

/// A `/v2` error answer: `status`, and the body the platform's SDKs read,
/// `{"error": "<message>"}` and nothing else. The message.
fn assert_error(answer: &RawAnswer, status: u16) -> String {
    assert_eq!(answer.status, status, "{}", answer.text);
    let content_type = answer.content_type();
    assert_eq!(content_type, "application/json", "{}", answer.text);
    let body = answer.json();
    let object = body.as_object().expect("an object");
    assert_eq!(object.len(), 1, "{body}");
    let message = body["error"].as_str().unwrap_or_default().to_owned();
    assert!(!message.is_empty(), "{body}");
    message
}
