//! The emulator's pre-recorded transcription API (spec areas D and E) over
//! real HTTP: uploads, transcript jobs and their FIFO queue, the account's
//! concurrency and balance, webhooks and their retries, the HTTP and
//! polling rate limits, and the API key check.
//!
//! WAV fixtures are built here (8 kHz mono 16-bit silence, with the
//! transcript in a `LIST/INFO` `ICMT` chunk when a test wants one).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{API_KEY, Harness, Options, RawAnswer, eventually, launch, start_with, wav};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, FixedOffset};
use earshot::emulator::{EmulatorConfig, TimeScale};
use earshot::redact::SecretString;
use reqwest::Method;
use serde_json::{Value, json};

const FIXED_TEXT: &str = "This is an emulated transcript: the emulator does not recognise speech.";

// ---------------------------------------------------------------------------
// Fixtures and helpers
// ---------------------------------------------------------------------------

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

/// Waits for each job to finish, in order: their records.
async fn wait_all_done(harness: &Harness, ids: &[String]) -> Vec<Value> {
    let mut records = Vec::new();
    for id in ids {
        records.push(wait_done(harness, id).await);
    }
    records
}

/// The API path of a created job.
fn path_of(created: &Value) -> String {
    format!("/v2/transcript/{}", created["id"].as_str().unwrap())
}

/// The status of an authenticated GET of `path`.
async fn get_status(harness: &Harness, path: &str) -> u16 {
    harness.authed(Method::GET, path, None).await.status
}

/// `stats` counted `count` answers with `status` on `route`.
fn assert_route_count(stats: &Value, route: &str, status: &str, count: u64) {
    assert_eq!(stats["by_route"][route][status], count, "{stats}");
}

/// POSTs `change` to the account control route: the account after it.
async fn set_account(harness: &Harness, change: Value) -> Value {
    harness.control("/_emulator/account", change).await
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

/// The most jobs processing at one moment, from their start and finish
/// times (a job's slot frees at its `finished_at`).
fn most_at_once(records: &[Value]) -> usize {
    records
        .iter()
        .map(|record| {
            let at = time(record, "started_at");
            records
                .iter()
                .filter(|other| time(other, "started_at") <= at && at < time(other, "finished_at"))
                .count()
        })
        .max()
        .unwrap_or(0)
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

// ---------------------------------------------------------------------------
// Uploads and transcription
// ---------------------------------------------------------------------------

#[tokio::test]
async fn an_uploaded_wav_is_transcribed_with_its_icmt_text() {
    let harness = start(0.01).await;
    let audio = wav(4.0, Some("hello from the fixture"));
    let upload_url = upload(&harness, audio.clone()).await;
    assert!(upload_url.starts_with(&harness.base), "{upload_url}");
    let served = harness.http.get(&upload_url).send().await.unwrap();
    assert_eq!(served.status().as_u16(), 200);
    assert_eq!(served.bytes().await.unwrap().as_ref(), audio.as_slice());

    let created = submit_url(&harness, &upload_url).await;
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    assert_eq!(created["status"], "processing");
    assert_eq!(created["audio_url"], upload_url.as_str());
    for null in ["webhook_url", "text", "error", "webhook_status_code"] {
        assert!(created[null].is_null(), "{null} in {created}");
    }

    let done = wait_done(&harness, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "hello from the fixture");
    assert!(done["error"].is_null());
    assert_eq!(done["audio_duration"], 4);
    harness.emulator.shutdown().await;
}

/// `earshot demo` runs forever: with `keep_jobs` the emulator forgets the
/// oldest finished jobs (their GET is a 404) and keeps the newest.
#[tokio::test]
async fn with_keep_jobs_the_oldest_finished_jobs_are_forgotten() {
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.time_scale = TimeScale::new(0.01).unwrap();
    config.allow_private_urls = true;
    config.keep_jobs = Some(2);
    let harness = launch(config, None).await;
    let upload_url = upload_silence(&harness).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = text_of(&submit_url(&harness, &upload_url).await, "id");
        // One at a time, so they finish in submission order.
        wait_done(&harness, &id).await;
        ids.push(id);
    }
    let paths: Vec<String> = ids
        .iter()
        .map(|id| format!("/v2/transcript/{id}"))
        .collect();
    assert_eq!(
        get_status(&harness, &paths[0]).await,
        404,
        "the oldest finished job is forgotten"
    );
    assert_eq!(get_status(&harness, &paths[1]).await, 200);
    assert_eq!(get_status(&harness, &paths[2]).await, 200);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn audio_at_another_url_is_downloaded_and_gets_the_fixed_sentence() {
    let harness = start(0.01).await;
    let audio = wav(2.0, None);
    let host = Hook::start(move |_| (200, Duration::ZERO, audio.clone())).await;
    let created = submit(
        &harness,
        json!({ "audio_url": host.url("/files/a.wav?sig=1") }),
    )
    .await;
    let done = wait_done(&harness, created["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], FIXED_TEXT);
    assert_eq!(done["audio_duration"], 2);
    let calls = host.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].uri.to_string(), "/files/a.wav?sig=1");
    harness.emulator.shutdown().await;
}

/// The record's fields with the JSON types the official SDKs read (the
/// Python SDK validates them: a fractional `audio_duration` fails it).
#[tokio::test]
async fn records_have_the_json_types_the_sdks_read() {
    let harness = start(0.01).await;
    let mut done = Vec::new();
    for (seconds, whole) in [(2.25, 2), (2.5, 3)] {
        let audio_url = upload(&harness, wav(seconds, Some("one two, three."))).await;
        // Fields the SDKs send by default, beyond the spec's four.
        let created = submit(
            &harness,
            json!({ "audio_url": audio_url, "language_code": "en_us", "punctuate": true,
                    "format_text": true, "speech_models": ["universal"], "speaker_labels": false }),
        )
        .await;
        assert!(created["audio_duration"].is_null(), "{created}");
        assert!(created["words"].is_null(), "{created}");
        assert_eq!(created["webhook_auth"], false, "{created}");
        let record = wait_done(&harness, &text_of(&created, "id")).await;
        assert_eq!(record["status"], "completed", "{record}");
        assert!(record["audio_duration"].is_u64(), "{record}");
        assert_eq!(record["audio_duration"], whole, "{seconds} s: {record}");
        done.push((seconds, record));
    }
    for (seconds, record) in done {
        assert!(record["id"].is_string() && record["audio_url"].is_string());
        assert!(record["error"].is_null() && record["webhook_status_code"].is_null());
        assert_eq!(record["webhook_auth"], false);
        let words = record["words"].as_array().expect("words when completed");
        let texts: Vec<&str> = words.iter().map(|w| w["text"].as_str().unwrap()).collect();
        assert_eq!(texts, ["one", "two", "three"]);
        let mut previous_end = 0;
        for word in words {
            let (start, end) = (word["start"].as_u64(), word["end"].as_u64());
            let (start, end) = (start.expect("start in ms"), end.expect("end in ms"));
            assert!(previous_end <= start && start < end, "{word}");
            previous_end = end;
            let confidence = word["confidence"].as_f64().expect("confidence");
            assert!((0.0..=1.0).contains(&confidence), "{word}");
        }
        assert_eq!(previous_end, (seconds * 1000.0) as u64);
        let confidence = record["confidence"].as_f64().expect("confidence");
        assert!((0.0..=1.0).contains(&confidence), "{record}");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn uploads_larger_than_two_megabytes_are_accepted() {
    let harness = start(0.01).await;
    let audio = wav(200.0, None); // 3.2 MB
    let upload_url = upload(&harness, audio.clone()).await;
    let served = harness.http.get(&upload_url).send().await.unwrap();
    assert_eq!(served.bytes().await.unwrap().len(), audio.len());
    let empty = harness.authed(Method::POST, "/v2/upload", None).await;
    assert_eq!(empty.status, 400, "{}", empty.text);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn unreadable_audio_ends_in_error_with_a_message() {
    let harness = start(0.01).await;
    let missing = Hook::answering(404).await;
    let not_audio = Hook::start(|_| (200, Duration::ZERO, b"<html>hello</html>".to_vec())).await;
    let broken_wav = {
        let mut bytes = wav(1.0, None);
        bytes.truncate(24); // inside the `fmt ` chunk
        Hook::start(move |_| (200, Duration::ZERO, bytes.clone())).await
    };
    let cases = [
        (missing.url("/gone.wav"), "404"),
        (closed_port_url().await, "could not download"),
        (not_audio.url("/page"), "not point to an audio file"),
        (broken_wav.url("/short.wav"), "cannot be read"),
        (
            format!("{}/_emulator/uploads/nosuchtoken", harness.base),
            "404",
        ),
    ];
    for (audio_url, expected) in cases {
        let created = submit_url(&harness, &audio_url).await;
        let done = wait_done(&harness, created["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "error", "{audio_url}: {done}");
        let message = done["error"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{audio_url}: {message:?}");
        assert!(done["text"].is_null());
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn invalid_requests_get_400_and_unknown_ids_404() {
    let harness = start(0.01).await;
    let bad_bodies = [
        json!({}),
        json!({ "audio_url": 7 }),
        json!({ "audio_url": "not a url" }),
        json!({ "audio_url": "https://example.com/a.wav", "webhook_url": "ftp://example.com/" }),
        json!({ "audio_url": "https://example.com/a.wav", "webhook_url": "https://example.com/",
                "webhook_auth_header_name": "X-Token" }),
        json!({ "audio_url": "https://example.com/a.wav", "webhook_url": "https://example.com/",
                "webhook_auth_header_value": "s3cret" }),
        json!({ "audio_url": "https://example.com/a.wav", "webhook_url": "https://example.com/",
                "webhook_auth_header_name": "X Token", "webhook_auth_header_value": "s3cret" }),
    ];
    for body in bad_bodies {
        let answer = post(&harness, "/v2/transcript", body.clone()).await;
        assert_error(&answer, 400);
    }
    let not_json = harness
        .authed(Method::POST, "/v2/transcript", Some("{not json"))
        .await;
    assert_error(&not_json, 400);
    let unknown = harness
        .authed(Method::GET, "/v2/transcript/no-such-id", None)
        .await;
    assert_error(&unknown, 404);
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// The job queue and the account
// ---------------------------------------------------------------------------

#[tokio::test]
async fn jobs_over_the_concurrency_limit_queue_and_start_in_submission_order() {
    let harness = start_limited(0.05, 2).await;
    // 8 s of audio: 2 s of processing, 100 ms at this scale.
    let audio_url = upload(&harness, wav(8.0, None)).await;
    let mut ids = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let created = submit_url(&harness, &audio_url).await;
        statuses.push(text_of(&created, "status"));
        ids.push(text_of(&created, "id"));
    }
    assert_eq!(
        statuses,
        ["processing", "processing", "queued", "queued", "queued"]
    );
    let records = wait_all_done(&harness, &ids).await;
    assert!(records.iter().all(|record| record["status"] == "completed"));
    let starts: Vec<_> = records.iter().map(|r| time(r, "started_at")).collect();
    assert!(
        starts.windows(2).all(|pair| pair[0] <= pair[1]),
        "started out of submission order: {starts:?}"
    );
    assert_eq!(most_at_once(&records), 2);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_negative_balance_lets_running_jobs_finish_then_runs_one_at_a_time() {
    let harness = start(0.05).await;
    let audio_url = upload(&harness, wav(8.0, None)).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let created = submit_url(&harness, &audio_url).await;
        assert_eq!(created["status"], "processing");
        ids.push(text_of(&created, "id"));
    }
    let account = set_account(&harness, json!({ "balance": -1 })).await;
    assert_eq!(account["effective_concurrency"], 1, "{account}");
    assert_eq!(account["concurrency"], 5, "{account}");
    for _ in 0..2 {
        let created = submit_url(&harness, &audio_url).await;
        assert_eq!(created["status"], "queued");
        ids.push(text_of(&created, "id"));
    }
    let records = wait_all_done(&harness, &ids).await;
    // Both running jobs finished; the queued ones ran alone, in order.
    assert_eq!(most_at_once(&records[..2]), 2);
    let running_done = time(&records[0], "finished_at").max(time(&records[1], "finished_at"));
    assert!(time(&records[2], "started_at") >= running_done);
    assert!(time(&records[3], "started_at") >= time(&records[2], "finished_at"));

    let account = set_account(&harness, json!({ "balance": 10.5 })).await;
    assert_eq!(account["effective_concurrency"], 5, "{account}");
    assert_eq!(account["balance"], 10.5);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn raising_the_concurrency_starts_queued_jobs_at_once() {
    let harness = start_limited(0.05, 1).await;
    // 80 s of audio: 20 s of processing, 1 s at this scale.
    let audio_url = upload(&harness, wav(80.0, None)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let created = submit_url(&harness, &audio_url).await;
        ids.push(text_of(&created, "id"));
    }
    assert_eq!(transcript(&harness, &ids[2]).await["status"], "queued");
    let account = set_account(&harness, json!({ "concurrency": 3 })).await;
    assert_eq!(account["processing"], 3, "{account}");
    assert_eq!(account["queued"], 0, "{account}");
    for id in &ids {
        assert_eq!(transcript(&harness, id).await["status"], "processing");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_account_route_reads_and_rejects_bad_changes() {
    let harness = start(0.01).await;
    let account = harness.control_get("/_emulator/account").await;
    assert_eq!(account["concurrency"], 5, "{account}");
    assert_eq!(account["effective_concurrency"], 5, "{account}");
    assert!(account["balance"].as_f64().is_some_and(|b| b > 0.0));
    for bad in [
        json!({ "concurrency": 0 }),
        json!({ "concurrency": 1.5 }),
        json!({ "balance": "lots" }),
        json!({ "credit": 1 }),
    ] {
        let answer = harness
            .raw(
                Method::POST,
                "/_emulator/account",
                None,
                Some(&bad.to_string()),
            )
            .await;
        // The emulator's own routes keep the spec's `{status, title, detail}`.
        assert_eq!(answer.status, 400, "{}", answer.text);
        let body = answer.json();
        assert_eq!(body["status"], 400, "{body}");
        assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// Webhooks
// ---------------------------------------------------------------------------

/// Submits a job for `audio_url` with `extra` fields; waits for its end.
async fn run_job(harness: &Harness, audio_url: &str, extra: Value) -> String {
    let mut body = json!({ "audio_url": audio_url });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let created = submit(harness, body).await;
    let id = text_of(&created, "id");
    wait_done(harness, &id).await;
    id
}

/// Submits a job for `audio_url` that calls `webhook_url`; waits for its
/// end.
async fn job_with_webhook(harness: &Harness, audio_url: &str, webhook_url: &str) -> String {
    run_job(harness, audio_url, json!({ "webhook_url": webhook_url })).await
}

/// Waits until `hook` has `count` calls and the emulator has no webhook
/// left to send (no attempt running, no retry waiting), and returns every
/// call: one that should not come would have come by then.
async fn calls_settled(harness: &Harness, hook: &Hook, count: usize) -> Vec<Call> {
    eventually(Duration::from_secs(10), "webhook calls", || async {
        (hook.calls().len() >= count).then_some(())
    })
    .await;
    harness.wait_deliveries_idle().await;
    hook.calls()
}

#[tokio::test]
async fn webhooks_carry_the_custom_header_exactly_when_it_is_set() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(200).await;
    let audio_url = upload_silence(&harness).await;
    let with = run_job(
        &harness,
        &audio_url,
        json!({
            "webhook_url": receiver.url("/with"),
            "webhook_auth_header_name": "X-Webhook-Token",
            "webhook_auth_header_value": "s3cret value",
        }),
    )
    .await;
    let without = job_with_webhook(&harness, &audio_url, &receiver.url("/without")).await;
    let calls = calls_settled(&harness, &receiver, 2).await;
    assert_eq!(calls.len(), 2);
    let call = |path: &str| {
        calls
            .iter()
            .find(|call| call.uri.path() == path)
            .unwrap_or_else(|| panic!("a call to {path}"))
            .clone()
    };
    let (first, second) = (call("/with"), call("/without"));
    assert_eq!(first.headers["x-webhook-token"], "s3cret value");
    assert!(second.headers.get("x-webhook-token").is_none());
    for (call, id) in [(&first, &with), (&second, &without)] {
        assert_eq!(call.headers["content-type"], "application/json");
        let body: Value = serde_json::from_slice(&call.body).unwrap();
        assert_eq!(body, json!({ "transcript_id": id, "status": "completed" }));
    }
    assert_eq!(transcript(&harness, &without).await["webhook_auth"], false);
    let record = transcript(&harness, &with).await;
    assert_eq!(record["webhook_auth"], true);
    assert_eq!(record["webhook_status_code"], 200);
    assert_eq!(record["webhook_url"], receiver.url("/with"));
    assert_eq!(record["webhook_auth_header_name"], "x-webhook-token");
    assert!(!record.to_string().contains("s3cret"), "{record}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn webhook_urls_keep_their_query_parameters_and_errors_are_announced() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(204).await;
    let url = receiver.url("/hooks/transcripts?customer=42&trace=a%2Fb");
    let id = job_with_webhook(&harness, &closed_port_url().await, &url).await;
    let calls = calls_settled(&harness, &receiver, 1).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].uri.to_string(),
        "/hooks/transcripts?customer=42&trace=a%2Fb"
    );
    let body: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert_eq!(body, json!({ "transcript_id": id, "status": "error" }));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 204);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_4xx_answer_fails_the_webhook_without_retry() {
    let harness = start(0.01).await;
    let audio_url = upload_silence(&harness).await;
    for status in [401, 429] {
        let receiver = Hook::answering(status).await;
        let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
        // A retry would come 100 ms (10 s scaled) after the answer.
        let calls = calls_settled(&harness, &receiver, 1).await;
        assert_eq!(calls.len(), 1, "{status}");
        assert_eq!(
            transcript(&harness, &id).await["webhook_status_code"],
            status
        );
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_failing_webhook_is_tried_ten_times_ten_seconds_apart() {
    let harness = start(0.01).await;
    let receiver = Hook::answering(503).await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
    let calls = calls_settled(&harness, &receiver, 10).await;
    assert_eq!(calls.len(), 10, "ten attempts in all, then given up");
    for pair in calls.windows(2) {
        let gap = pair[1].at - pair[0].at;
        // 10 s scaled is 100 ms.
        assert!(gap >= Duration::from_millis(95), "{gap:?}");
        assert!(gap < Duration::from_millis(1000), "{gap:?}");
    }
    assert!(calls.iter().all(|call| call.body == calls[0].body));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 503);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn timeouts_and_redirects_are_retried_until_a_2xx() {
    let harness = start(0.01).await;
    // 500; then slower than the 10 s (100 ms) deadline; then a redirect
    // (not followed); then 202.
    let receiver = Hook::start(|index| match index {
        0 => (500, Duration::ZERO, Vec::new()),
        1 => (200, Duration::from_millis(400), Vec::new()),
        2 => (301, Duration::ZERO, Vec::new()),
        _ => (202, Duration::ZERO, Vec::new()),
    })
    .await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &receiver.url("/hook")).await;
    let calls = calls_settled(&harness, &receiver, 4).await;
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|call| call.uri.path() == "/hook"));
    assert_eq!(transcript(&harness, &id).await["webhook_status_code"], 202);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_never_answers_leaves_the_status_code_null() {
    let harness = start(0.001).await;
    let audio_url = upload_silence(&harness).await;
    let id = job_with_webhook(&harness, &audio_url, &closed_port_url().await).await;
    // Every attempt is over once nothing is left to send.
    harness.wait_deliveries_idle().await;
    let record = transcript(&harness, &id).await;
    assert_eq!(record["status"], "completed");
    assert!(record["webhook_status_code"].is_null(), "{record}");
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// Rate limits and authentication
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_poll_limit_refuses_the_next_get_of_one_transcript_with_retry_after() {
    let harness = start_with(Options {
        poll_limit: 5,
        ..Options::default()
    })
    .await;
    let audio_url = upload_silence(&harness).await;
    let first = submit_url(&harness, &audio_url).await;
    let other = submit_url(&harness, &audio_url).await;
    let path = path_of(&first);
    for _ in 0..5 {
        assert_eq!(get_status(&harness, &path).await, 200);
    }
    let refused = harness.authed(Method::GET, &path, None).await;
    let message = assert_error(&refused, 429);
    let retry_after: u64 = refused
        .headers
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .expect("Retry-After in whole seconds");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    // The Node SDK shows only the message: it carries the wait too.
    assert!(
        message.contains(&format!("retry after {retry_after} s")),
        "{message}"
    );
    // Another transcript has its own allowance.
    let other_path = path_of(&other);
    assert_eq!(get_status(&harness, &other_path).await, 200);
    let stats = harness.stats().await;
    assert_route_count(&stats, "GET /v2/transcript/{id}", "429", 1);
    assert_route_count(&stats, "GET /v2/transcript/{id}", "200", 6);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_request_over_the_http_limit_gets_403_and_only_keyed_requests_count() {
    let harness = start_with(Options {
        http_limit: 4,
        ..Options::default()
    })
    .await;
    // Refused for the key: not the account's requests, not counted.
    for _ in 0..3 {
        let answer = harness
            .raw(Method::GET, "/v2/transcript/x", Some("wrong"), None)
            .await;
        assert_eq!(answer.status, 401);
    }
    // Control routes are not part of the API.
    harness.stats().await;
    let audio_url = upload_silence(&harness).await; // 1
    let created = submit_url(&harness, &audio_url).await; // 2
    let path = path_of(&created);
    assert_eq!(get_status(&harness, &path).await, 200); // 3
    let invalid = post(&harness, "/v2/transcript", json!({})).await; // 4
    assert_eq!(invalid.status, 400);
    let refused = harness.authed(Method::GET, &path, None).await;
    assert_error(&refused, 403);
    let refused = post(
        &harness,
        "/v2/transcript",
        json!({ "audio_url": audio_url }),
    )
    .await;
    assert_error(&refused, 403);
    let stats = harness.stats().await;
    assert_route_count(&stats, "GET /v2/transcript/{id}", "403", 1);
    assert_route_count(&stats, "POST /v2/transcript", "403", 1);
    assert_eq!(stats["by_status"]["403"], 2, "{stats}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_poll_refused_with_429_still_counts_toward_the_http_limit() {
    let harness = start_with(Options {
        http_limit: 3,
        poll_limit: 1,
        ..Options::default()
    })
    .await;
    let created = submit(
        &harness,
        json!({ "audio_url": "http://127.0.0.1:9/none.wav" }),
    )
    .await; // 1
    let path = path_of(&created);
    assert_eq!(get_status(&harness, &path).await, 200); // 2
    assert_eq!(get_status(&harness, &path).await, 429); // 3
    let refused = harness
        .authed(Method::GET, "/v2/transcript/another", None)
        .await;
    assert_error(&refused, 403);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_api_wants_the_raw_key_in_authorization() {
    let harness = start(0.01).await;
    let paths = [
        (Method::GET, "/v2/transcript/x"),
        (Method::POST, "/v2/transcript"),
        (Method::POST, "/v2/upload"),
    ];
    for (method, path) in paths {
        for key in [None, Some("wrong-key"), Some(&*format!("Bearer {API_KEY}"))] {
            let answer = harness.raw(method.clone(), path, key, Some("{}")).await;
            let message = assert_error(&answer, 401);
            assert!(message.contains("API key"), "{message}");
        }
    }
    let bearer = harness
        .raw(
            Method::GET,
            "/v2/transcript/x",
            Some(&format!("Bearer {API_KEY}")),
            None,
        )
        .await;
    assert!(bearer.json()["error"].as_str().unwrap().contains("Bearer"));
    let raw = harness.authed(Method::GET, "/v2/transcript/x", None).await;
    assert_eq!(raw.status, 404);
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// earshot's own client against these answers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_client_accepts_200_and_reads_the_error_message() {
    use earshot::api::ErrorBody;
    use earshot::api::types::prerecorded::NewTranscript;

    let harness = start_with(Options {
        poll_limit: 1,
        ..Options::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.wav");
    std::fs::write(&file, wav(1.0, Some("client words"))).unwrap();
    let upload = harness.client.upload_file(&file, |_| {}).await.unwrap();
    let created = harness
        .client
        .create_transcript(&NewTranscript {
            audio_url: upload.upload_url,
            ..NewTranscript::default()
        })
        .await
        .unwrap();
    harness.client.get_transcript(&created.id).await.unwrap();

    let limited = harness
        .client
        .get_transcript(&created.id)
        .await
        .unwrap_err();
    assert_eq!(limited.status(), Some(429));
    assert!(limited.retry_after().is_some(), "{limited}");
    let missing = harness
        .client
        .get_transcript("no-such-id")
        .await
        .unwrap_err();
    assert_eq!(missing.status(), Some(404));
    let earshot::api::ApiError::Status { body, .. } = &missing else {
        panic!("{missing:?}");
    };
    assert!(matches!(body, ErrorBody::Message(_)), "{body:?}");
    assert_eq!(body.message(), "no transcript with id \"no-such-id\"");
    let text = missing.to_string();
    assert!(
        text.contains("HTTP 404: no transcript with id \"no-such-id\" —"),
        "{text}"
    );
    harness.emulator.shutdown().await;
}
