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

use crate::common;
use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{API_KEY, Harness, eventually, wav};
use earshot::api::dictation::{
    AudioSource, DictationError, DictationPath, DictationRequest, Refusal, RetryPolicy,
};
use earshot::api::sync::SyncRequest;
use earshot::api::types::dictation::{AudioFormat, Dictation, DictationConfig, Rewrite};
use earshot::api::{Client, Endpoints, ErrorBody, Region};
use earshot::emulator::{DictationTiming, EmulatorConfig, TimeScale};
use earshot::redact::SecretString;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const UTTERANCE: &str = "um so I think we should meet on Tuesday, no, Wednesday at noon";
const CLEANED: &str = "So I think we should meet on Wednesday at noon.";
const LIVE: &str = "POST /v1/transcribe/live";

// ---------------------------------------------------------------------------
// Fixtures and helpers
// ---------------------------------------------------------------------------

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

/// `{error, error_code: "bad_request"}`, nothing of the other shape.
fn assert_parse_shape(status: u16, body: &Value, expected: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error_code"], "bad_request", "{body}");
    let error = body["error"].as_str().expect("error is a string");
    assert!(
        error.contains(expected),
        "{error:?} should mention {expected:?}"
    );
    assert!(
        body.get("title").is_none() && body.get("detail").is_none(),
        "{body}"
    );
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

async fn dictation_counters(harness: &Harness) -> Value {
    let response = harness
        .http
        .get(format!("{}/_emulator/dictation", harness.base))
        .send()
        .await
        .unwrap();
    response.json().await.unwrap()
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

/// The field the client refused to send, if it refused one.
fn refused_field(error: &DictationError) -> Option<&'static str> {
    error.invalid().map(|invalid| invalid.field)
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

// ---------------------------------------------------------------------------
// Part 7 A, row by row
// ---------------------------------------------------------------------------

#[tokio::test]
async fn every_parse_error_uses_the_error_shape() {
    let h = harness().await;
    let clip = || audio("audio/wav", wav(1.0, None));
    let cases: Vec<(Vec<Part>, &str)> = vec![
        (
            vec![clip(), config(json!({}))],
            "`audio` came before `config`",
        ),
        (vec![clip()], "`audio` came before `config`"),
        (vec![config(json!({}))], "`audio` part is missing"),
        (
            vec![config(json!({})), audio("audio/wav", Vec::new())],
            "empty",
        ),
        (
            vec![
                Part {
                    name: "config",
                    content_type: Some("application/json"),
                    body: b"{\"language_codes\": [\"en\"".to_vec(),
                },
                clip(),
            ],
            "not valid JSON",
        ),
        (vec![], "no parts"),
    ];
    for (parts, expected) in cases {
        let (status, body) = dictation_post(&h, &parts).await;
        assert_parse_shape(status, &body, expected);
    }
    // A body that is not multipart at all.
    let answer = h
        .raw(
            reqwest::Method::POST,
            "/v1/transcribe/live",
            Some(API_KEY),
            Some("{}"),
        )
        .await;
    assert_parse_shape(answer.status, &answer.json(), "multipart/form-data");
}

#[tokio::test]
async fn every_validation_error_uses_the_detail_shape() {
    let h = harness().await;
    let clip = || audio("audio/wav", wav(1.0, None));
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"langauge_codes": ["en"]}),
            "unknown field `langauge_codes`",
        ),
        (
            json!({"language_codes": ["en", "tlh"]}),
            "\"tlh\" is not a supported",
        ),
        (json!({"stt_prompt": "a", "prompt": "b"}), "not both"),
        (
            json!({"keyterms_prompt": ["a"], "word_boost": ["b"]}),
            "keyterms_prompt and word_boost",
        ),
        (
            json!({"keyterms": ["a"], "word_boost": ["b"]}),
            "at most one of",
        ),
        (
            json!({"stt_prompt": "x".repeat(6001)}),
            "`stt_prompt`: must be at most 6000",
        ),
        (
            json!({"keyterms_prompt": vec!["k"; 101]}),
            "at most 100 items",
        ),
        (
            json!({"keyterms_prompt": vec!["k".repeat(100); 81]}),
            "8000 characters in total",
        ),
        (
            json!({"llm_instruction": "x".repeat(2049)}),
            "`llm_instruction`: must be at most 2048",
        ),
        (json!(["en"]), "must be a JSON object"),
    ];
    for (body, expected) in cases {
        let (status, answer) = dictation_post(&h, &[config(body), clip()]).await;
        assert_detail_shape(status, &answer, 400, expected);
        assert_eq!(answer["title"], "Bad Request");
    }
    // PCM says nothing of itself: rate and channels are required.
    let pcm = || audio("audio/pcm", vec![0u8; 3200]);
    let (status, answer) = dictation_post(&h, &[config(json!({"channels": 1})), pcm()]).await;
    assert_detail_shape(status, &answer, 400, "`sample_rate`: is required");
    let (status, answer) =
        dictation_post(&h, &[config(json!({"sample_rate": 16000})), pcm()]).await;
    assert_detail_shape(status, &answer, 400, "`channels`: is required");
    let (status, answer) = dictation_post(
        &h,
        &[config(json!({"sample_rate": 16000, "channels": 1})), pcm()],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["audio_duration_ms"], 100);
}

#[tokio::test]
async fn a_missing_or_wrong_key_or_a_bearer_prefix_is_401() {
    let h = harness().await;
    let parts = || [config(json!({})), audio("audio/wav", wav(1.0, None))];
    let bearer = format!("Bearer {API_KEY}");
    for (authorization, expected) in [
        (None, "missing Authorization"),
        (Some("not-the-key"), "invalid API key"),
        (Some(bearer.as_str()), "without the `Bearer ` prefix"),
    ] {
        let (status, _, body) = post(&h, "/v1/transcribe/live", authorization, &[], &parts()).await;
        assert_detail_shape(status, &body, 401, expected);
        assert_eq!(body["title"], "Unauthorized");
    }
    let wrong = Client::new(
        Endpoints::all_at(&h.emulator.url()),
        SecretString::new("wrong-key"),
    )
    .unwrap();
    let (_dir, file) = wav_file(1.0, None);
    let error = wrong
        .dictate(&wav_request(), AudioSource::file(&file))
        .await
        .unwrap_err();
    let expected = (401, Refusal::Unauthorized, 1, false);
    assert_eq!(refused(&error), expected, "{error}");
    assert!(error.to_string().contains("no `Bearer ` prefix"), "{error}");
}

#[tokio::test]
async fn over_the_size_cap_is_413_even_mid_upload() {
    let cap = 64 * 1024;
    let h = start(cap).await;

    // A file: its Content-Length is over the cap, refused before reading.
    let (_dir, file) = wav_file(10.0, None);
    let error = dictate_wav(&h, AudioSource::file(&file)).await.unwrap_err();
    assert_eq!(error.status(), Some(413), "{error}");

    // A chunked stream: 256 KB at once, then the pipe stays open. The 413
    // must arrive while the capture is still going, as a 413 (not a
    // broken pipe).
    let (reader, mut writer) = pipe();
    let done = Arc::new(AtomicBool::new(false));
    let writer_done = done.clone();
    let writer = tokio::spawn(async move {
        let second = vec![1u8; 32 * 1024];
        for _ in 0..8 {
            if writer.write_all(&second).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let _ = writer.write_all(&second).await;
        writer_done.store(true, Ordering::SeqCst);
    });
    let started = Instant::now();
    let error = h
        .client
        .dictate(
            &pcm_request(Some(16_000), Some(1)),
            AudioSource::reader(reader),
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "answered late");
    assert!(!done.load(Ordering::SeqCst), "the capture had ended");
    assert_eq!(refused(&error), (413, Refusal::TooLarge, 1, false));
    let DictationError::Refused { body, .. } = &error else {
        unreachable!("a refusal");
    };
    assert!(
        matches!(body, ErrorBody::Detail { status: 413, detail, .. } if detail.contains("cap")),
        "{body:?}"
    );
    writer.abort();
}

#[tokio::test]
async fn other_audio_types_are_415_pointing_to_the_buffered_endpoint() {
    let h = harness().await;
    for content_type in [Some("audio/mpeg"), Some("audio/ogg"), None] {
        let parts = [
            config(json!({})),
            Part {
                name: "audio",
                content_type,
                body: b"ID3\x04\0\0\0\0\0\0 not really an mp3".to_vec(),
            },
        ];
        let (status, body) = dictation_post(&h, &parts).await;
        assert_detail_shape(status, &body, 415, "/v1/transcribe");
        assert_eq!(body["title"], "Unsupported Media Type");
    }
    // The buffered endpoint takes the compressed format.
    let (status, _, body) = post(
        &h,
        "/v1/transcribe",
        Some(API_KEY),
        &[],
        &[config(json!({})), audio("audio/mpeg", vec![0xFF; 32_000])],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["audio_duration_ms"], 2000);
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .contains("emulated transcript")
    );
}

#[tokio::test]
async fn injected_429_502_503_504_use_the_detail_shape() {
    let h = harness().await;
    for status in [429u16, 502, 503, 504] {
        fail_next_live(&h, status).await;
        let (got, headers, body) = post(
            &h,
            "/v1/transcribe/live",
            Some(API_KEY),
            &[],
            &[config(json!({})), audio("audio/wav", wav(0.5, None))],
        )
        .await;
        assert_detail_shape(got, &body, status, "fault injected");
        if status == 429 {
            assert_eq!(headers["retry-after"], "1");
        }
    }
}

// ---------------------------------------------------------------------------
// Paths, response, rewrite
// ---------------------------------------------------------------------------

#[tokio::test]
async fn both_paths_serve_dictation_and_there_is_no_unversioned_alias() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    for path in [DictationPath::Live, DictationPath::Stream] {
        let request = DictationRequest {
            path,
            ..wav_request()
        };
        let answer = dictate_file(&h, &request, &file).await.unwrap();
        assert_eq!(answer.text, UTTERANCE);
    }
    assert_eq!(count(&h, LIVE, 200).await, 1);
    assert_eq!(count(&h, "POST /v1/transcribe/stream", 200).await, 1);
    for alias in [
        "/transcribe/live",
        "/transcribe/stream",
        "/v1/transcribe/live/",
    ] {
        let (status, _, _) = post(
            &h,
            alias,
            Some(API_KEY),
            &[],
            &[config(json!({})), audio("audio/wav", wav(0.5, None))],
        )
        .await;
        assert_eq!(status, 404, "{alias}");
    }
}

#[tokio::test]
async fn the_answer_is_typed_with_honest_timings() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    let answer = dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert_eq!(answer.text, UTTERANCE);
    assert_eq!(answer.rewrite(), Rewrite::Done(CLEANED));
    assert_eq!(answer.llm_error, None);
    assert_eq!(answer.audio_duration_ms, 2000.0);
    assert_eq!(answer.words.len(), 13);
    assert_eq!(answer.words[0].text, "um");
    assert!(
        answer
            .words
            .iter()
            .all(|word| (0.0..=1.0).contains(&word.confidence))
    );
    assert!((0.0..=1.0).contains(&answer.confidence));
    uuid::Uuid::parse_str(&answer.session_id).expect("session_id is a uuid");
    let request = answer.request_time_ms.unwrap();
    let auth = answer.auth_time_ms.unwrap();
    let sync = answer.sync_time_ms.unwrap();
    assert!(
        auth >= 0.0 && sync > 0.0 && auth + sync <= request,
        "{answer:?}"
    );

    // The raw answer has every documented field.
    let (status, body) = dictation_post(
        &h,
        &[
            config(json!({})),
            audio("audio/wav", wav(1.0, Some("hello"))),
        ],
    )
    .await;
    assert_eq!(status, 200);
    for field in [
        "text",
        "words",
        "confidence",
        "llm_response",
        "llm_error",
        "audio_duration_ms",
        "session_id",
        "request_time_ms",
        "auth_time_ms",
        "sync_time_ms",
    ] {
        assert!(body.get(field).is_some(), "{field} missing: {body}");
    }
}

#[tokio::test]
async fn the_server_timing_is_configurable_and_reported() {
    // Transcription at real time and 10 s of finalising, × 0.01: the
    // answer's sync_time_ms is the emulated work, (2 s + 10 s) × 0.01.
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.time_scale = TimeScale::new(0.01).unwrap();
    config.dictation_timing = DictationTiming {
        speed_up: 1,
        finalize: Duration::from_secs(10),
        rewrite: Duration::from_secs(3),
    };
    let h = common::launch(config, None).await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        dictate_wav(&h, AudioSource::file(&file)),
    )
    .await
    .expect("answered in time")
    .unwrap();
    assert_eq!(answer.sync_time_ms, Some(120.0), "{answer:?}");
    assert_eq!(answer.rewrite(), Rewrite::Done(CLEANED));
    // The defaults stay what they were: 100× real time, 50 ms, 100 ms.
    assert_eq!(
        DictationTiming::default(),
        DictationTiming {
            speed_up: 100,
            finalize: Duration::from_millis(50),
            rewrite: Duration::from_millis(100),
        }
    );
}

#[tokio::test]
async fn the_instruction_changes_the_rewrite_and_never_the_text() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some("um buy milk. then call Ana, no, Bea. uh done"));
    let request = |instruction: &str| DictationRequest {
        config: DictationConfig {
            llm_instruction: Some(instruction.to_owned()),
            ..DictationConfig::default()
        },
        ..wav_request()
    };
    let list = dictate_file(&h, &request("Turn this into a bulleted list"), &file)
        .await
        .unwrap();
    assert_eq!(list.text, "um buy milk. then call Ana, no, Bea. uh done");
    assert_eq!(
        list.llm_response.as_deref(),
        Some("- Buy milk\n- Then call Bea\n- Done")
    );
    let loud = dictate_file(&h, &request("all in uppercase"), &file)
        .await
        .unwrap();
    assert_eq!(
        loud.llm_response.as_deref(),
        Some("BUY MILK. THEN CALL BEA. DONE.")
    );
}

#[tokio::test]
async fn a_failed_rewrite_is_a_200_with_the_text() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    h.control("/_emulator/dictation", json!({"llm": "timeout"}))
        .await;
    let started = Instant::now();
    let answer = dictate_wav(&h, AudioSource::file(&file))
        .await
        .expect("a rewrite timeout is not a failed request");
    assert!(started.elapsed() >= Duration::from_millis(50), "5 s × 0.01");
    assert_eq!(answer.llm_error.as_deref(), Some("timeout"));
    assert_eq!(answer.llm_response, None);
    assert_eq!(answer.rewrite(), Rewrite::TimedOut);
    assert_eq!(answer.best_text(), UTTERANCE);

    h.control("/_emulator/dictation", json!({"llm": "error"}))
        .await;
    let answer = dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert_eq!(answer.rewrite(), Rewrite::Failed("error"));
    // Armed once each: the next rewrite works again.
    let answer = dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert_eq!(answer.rewrite(), Rewrite::Done(CLEANED));

    // The command prints the text and says the rewrite timed out (exit 0).
    h.control("/_emulator/dictation", json!({"llm": "timeout"}))
        .await;
    let output = earshot(&h, &["dictate", file.to_str().unwrap()]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("text:    {UTTERANCE}")),
        "{stdout}"
    );
    assert!(stdout.contains("rewrite timed out"), "{stdout}");
}

// ---------------------------------------------------------------------------
// The client's own checks
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_client_refuses_bad_requests_before_sending() {
    let h = harness().await;
    let (reader, _writer) = pipe();
    let error = h
        .client
        .dictate(&pcm_request(None, Some(1)), AudioSource::reader(reader))
        .await
        .unwrap_err();
    assert_eq!(refused_field(&error), Some("sample_rate"));

    let (_dir, file) = wav_file(1.0, None);
    let bad_language = DictationRequest {
        config: DictationConfig {
            language_codes: Some(vec!["english".into()]),
            ..DictationConfig::default()
        },
        ..wav_request()
    };
    let error = dictate_file(&h, &bad_language, &file).await.unwrap_err();
    assert_eq!(refused_field(&error), Some("language_codes"));

    // A WAV over 120 s, read from its header.
    let (_long_dir, long) = wav_file(121.0, None);
    let error = dictate_wav(&h, AudioSource::file(&long)).await.unwrap_err();
    let invalid = error.invalid().expect("refused before sending");
    assert_eq!(invalid.field, "audio");
    assert!(invalid.rule.contains("121.0 s"), "{invalid}");
    assert_eq!(requests_to(&h, LIVE).await, 0, "nothing was sent");
}

#[tokio::test]
async fn the_emulator_refuses_streams_over_120_s() {
    let h = harness().await;
    // A WAV stream: the client cannot know its length; the header says it.
    let long = wav(121.0, None);
    let error = dictate_wav(&h, AudioSource::reader(Cursor::new(long)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            DictationError::Refused { status: 400, kind: Refusal::InvalidRequest, body: ErrorBody::Detail { detail, .. }, .. }
                if detail.contains("declares 121.0 s")
        ),
        "{error}"
    );
    // Raw PCM: counted as it arrives (8 kHz mono, 121 s).
    let pcm = vec![0u8; 121 * 16_000];
    let error = h
        .client
        .dictate(
            &pcm_request(Some(8000), Some(1)),
            AudioSource::reader(Cursor::new(pcm)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            DictationError::Refused { status: 400, body: ErrorBody::Detail { detail, .. }, .. }
                if detail.contains("at most 120 s")
        ),
        "{error}"
    );
}

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_slow_pipe_is_streamed_as_it_is_written() {
    let h = harness().await;
    let clip = wav(3.0, Some(UTTERANCE));
    let (reader, mut writer) = pipe();
    let base = h.base.clone();
    let http = h.http.clone();
    let first = clip[..clip.len() / 3].to_vec();
    let rest = clip[clip.len() / 3..].to_vec();
    let first_len = first.len() as u64;
    // Write a third, wait until the server has validated the config and
    // read those bytes, then write the rest slowly and close the pipe.
    let capture = tokio::spawn(async move {
        writer.write_all(&first).await.unwrap();
        let seen = eventually(
            Duration::from_secs(3),
            "the server reading the first bytes",
            || {
                let http = http.clone();
                let base = base.clone();
                async move {
                    let counters: Value = http
                        .get(format!("{base}/_emulator/dictation"))
                        .send()
                        .await
                        .ok()?
                        .json()
                        .await
                        .ok()?;
                    (counters["configs_validated"] == 1
                        && counters["audio_bytes_received"].as_u64() >= Some(first_len))
                    .then_some(counters)
                }
            },
        )
        .await;
        for piece in rest.chunks(8 * 1024) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            writer.write_all(piece).await.unwrap();
        }
        drop(writer);
        seen
    });
    let answer = dictate_wav(&h, AudioSource::reader(reader)).await.unwrap();
    let seen_before_close = capture.await.unwrap();
    assert_eq!(seen_before_close["in_flight"], 1);
    assert_eq!(answer.text, UTTERANCE);
    assert_eq!(answer.audio_duration_ms, 3000.0);
    assert_eq!(
        dictation_counters(&h).await["audio_bytes_received"],
        clip.len() as u64
    );
}

#[tokio::test]
async fn bad_audio_is_refused_before_the_pipe_closes() {
    let h = harness().await;
    let (reader, mut writer) = pipe();
    let closed = Arc::new(AtomicBool::new(false));
    let closed_by_writer = closed.clone();
    tokio::spawn(async move {
        // An MP3 sent as audio/wav (a few KB: the multipart reader holds
        // back a boundary's length until it knows the part goes on).
        let mut mp3 = b"ID3\x04\0\0\0\0\0\0".to_vec();
        mp3.resize(4096, 0xFF);
        let _ = writer.write_all(&mp3).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        closed_by_writer.store(true, Ordering::SeqCst);
    });
    let error = dictate_wav(&h, AudioSource::reader(reader))
        .await
        .unwrap_err();
    assert!(
        !closed.load(Ordering::SeqCst),
        "waited for the pipe to close"
    );
    assert_eq!(error.status(), Some(400), "{error}");
    assert!(error.to_string().contains("not a WAV"), "{error}");

    // A config the server refuses, in a raw streamed request whose audio
    // never ends: the 400 comes back while the body is still open.
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let (content_type, head) = multipart(&[
        config(json!({"foo": true})),
        audio("audio/wav", wav(0.5, None)),
    ]);
    // Everything but the end of the audio part: the body stays open.
    let head = head[..head.len() - "\r\n--test-boundary-7d3a4e6b--\r\n".len()].to_vec();
    sender.send(Ok(head)).await.unwrap();
    let body = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let response = h
        .http
        .post(format!("{}/v1/transcribe/live", h.base))
        .header("authorization", API_KEY)
        .header("content-type", content_type)
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await
        .unwrap();
    assert!(!sender.is_closed(), "the body was still open");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_detail_shape(400, &body, 400, "unknown field `foo`");
}

// ---------------------------------------------------------------------------
// Retries (one policy: part 7 A)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_502_on_a_file_is_retried_once_then_surfaced() {
    let h = harness().await;
    let (_dir, file) = wav_file(1.0, Some("hello"));
    fail_next_live(&h, 502).await;
    let answer = dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert_eq!(answer.text, "hello");
    assert_eq!(
        (count(&h, LIVE, 502).await, count(&h, LIVE, 200).await),
        (1, 1)
    );

    h.arm_fault(json!({"path_prefix": "/v1/transcribe/live", "status": 502, "count": 2}))
        .await;
    let error = dictate_wav(&h, AudioSource::file(&file)).await.unwrap_err();
    let expected = (502, Refusal::UpstreamUnavailable, 2, false);
    assert_eq!(refused(&error), expected, "{error}");
    assert!(error.to_string().contains("after 2 attempts"), "{error}");
    assert_eq!(count(&h, LIVE, 502).await, 3, "exactly two more requests");

    // 504 then 502: one retry for both together.
    fail_next_live(&h, 504).await;
    fail_next_live(&h, 502).await;
    let error = dictate_wav(&h, AudioSource::file(&file)).await.unwrap_err();
    assert_eq!((error.status(), error.attempts()), (Some(502), 2));
}

#[tokio::test]
async fn a_503_or_429_backs_off_and_retries() {
    let h = harness().await;
    let (_dir, file) = wav_file(1.0, None);
    fail_next_live(&h, 503).await;
    let started = Instant::now();
    dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "backed off"
    );
    assert_eq!(
        (count(&h, LIVE, 503).await, count(&h, LIVE, 200).await),
        (1, 1)
    );

    // 429 waits for its Retry-After (1 s).
    fail_next_live(&h, 429).await;
    let started = Instant::now();
    dictate_wav(&h, AudioSource::file(&file)).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "honoured Retry-After"
    );
    assert_eq!(count(&h, LIVE, 429).await, 1);

    // Never: surfaced at once.
    fail_next_live(&h, 503).await;
    let never = DictationRequest {
        retry: RetryPolicy::NEVER,
        ..wav_request()
    };
    let error = dictate_file(&h, &never, &file).await.unwrap_err();
    assert_eq!((error.status(), error.attempts()), (Some(503), 1));
}

#[tokio::test]
async fn a_consumed_stream_is_never_retried() {
    let h = harness().await;
    fail_next_live(&h, 502).await;
    let clip = wav(1.0, None);
    let error = dictate_wav(&h, AudioSource::reader(Cursor::new(clip)))
        .await
        .unwrap_err();
    let expected = (502, Refusal::UpstreamUnavailable, 1, true);
    assert_eq!(refused(&error), expected, "{error}");
    assert!(
        error.to_string().contains("cannot be read again"),
        "{error}"
    );
    assert_eq!(requests_to(&h, LIVE).await, 1);
}

// ---------------------------------------------------------------------------
// Sync and regions
// ---------------------------------------------------------------------------

#[tokio::test]
async fn sync_requires_the_model_header_and_the_raw_key() {
    let h = harness().await;
    let parts = || [audio("audio/wav", wav(1.0, Some("sync words")))];
    let (status, _, body) = post(&h, "/transcribe", Some(API_KEY), &[], &parts()).await;
    assert_detail_shape(status, &body, 400, "X-SVC-Model");
    let bearer = format!("Bearer {API_KEY}");
    let (status, _, body) = post(
        &h,
        "/transcribe",
        Some(&bearer),
        &[("x-svc-model", "universal-3-5-pro")],
        &parts(),
    )
    .await;
    assert_detail_shape(status, &body, 401, "Bearer");
    let (status, _, body) = post(
        &h,
        "/transcribe",
        Some(API_KEY),
        &[("x-svc-model", "universal-3-5-pro")],
        &parts(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["text"], "sync words");

    let (_dir, file) = wav_file(1.0, Some("sync words"));
    let answer = h
        .client
        .transcribe_sync(
            &SyncRequest {
                model: "my-model".into(),
                ..SyncRequest::default()
            },
            &file,
        )
        .await
        .unwrap();
    assert_eq!(answer.text, "sync words");
    assert_eq!(answer.extra["model"], "my-model", "the header was sent");
    assert_eq!(SyncRequest::default().model, "universal-3-5-pro");
}

#[tokio::test]
async fn each_region_goes_to_its_own_endpoint() {
    let global = harness().await;
    let us = harness().await;
    let eu = harness().await;
    let endpoints = Endpoints {
        dictation: global.emulator.url(),
        dictation_us: us.emulator.url(),
        dictation_eu: eu.emulator.url(),
        sync: global.emulator.url(),
        sync_us: us.emulator.url(),
        sync_eu: eu.emulator.url(),
        ..Endpoints::all_at(&global.emulator.url())
    };
    let client = Client::new(endpoints, SecretString::new(API_KEY)).unwrap();
    let (_dir, file) = wav_file(1.0, None);
    let emulators = [
        (Region::Global, &global),
        (Region::Us, &us),
        (Region::Eu, &eu),
    ];
    for (index, (region, _)) in emulators.iter().enumerate() {
        let request = DictationRequest {
            region: *region,
            ..wav_request()
        };
        client
            .dictate(&request, AudioSource::file(&file))
            .await
            .unwrap();
        client
            .transcribe_sync(
                &SyncRequest {
                    region: *region,
                    ..SyncRequest::default()
                },
                &file,
            )
            .await
            .unwrap();
        for (other, (_, emulator)) in emulators.iter().enumerate() {
            let expected = u64::from(other <= index);
            assert_eq!(count(emulator, LIVE, 200).await, expected, "{region:?}");
            assert_eq!(count(emulator, "POST /transcribe", 200).await, expected);
        }
    }
}

// ---------------------------------------------------------------------------
// The commands
// ---------------------------------------------------------------------------

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

#[tokio::test]
async fn dictate_transcribe_and_probe_commands() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    let path = file.to_str().unwrap();

    let output = earshot(&h, &["dictate", path, "--endpoint", "stream"]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("rewrite: {CLEANED}")), "{stdout}");
    assert_eq!(count(&h, "POST /v1/transcribe/stream", 200).await, 1);

    let output = earshot(&h, &["dictate", path, "--json", "--instruction", "a list"]).await;
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        json["llm_response"],
        format!("- {}", CLEANED.trim_end_matches('.'))
    );

    // PCM without a sample rate: exit 2, nothing sent.
    let before = requests_to(&h, LIVE).await;
    let output = earshot(&h, &["dictate", "-", "--pcm", "--channels", "1"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("`sample_rate`"));
    assert_eq!(requests_to(&h, LIVE).await, before);

    let output = earshot(&h, &["transcribe", path, "--model", "m-1"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{UTTERANCE}\n")
    );

    let output = earshot(&h, &["probe", path]).await;
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    for region in ["global", "us", "eu"] {
        assert!(
            table
                .lines()
                .any(|line| line.starts_with(region) && line.matches("200 ok").count() == 2),
            "{table}"
        );
    }
    let output = earshot(&h, &["probe", path, "--json"]).await;
    let probes: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(probes.as_array().map(Vec::len), Some(6));
    assert!(
        probes
            .as_array()
            .unwrap()
            .iter()
            .all(|probe| probe["ok"] == true)
    );

    // A failing region shows in the table and the exit code.
    h.arm_fault(json!({"path_prefix": "/transcribe", "status": 503}))
        .await;
    let output = earshot(&h, &["probe", path]).await;
    assert_eq!(output.status.code(), Some(1));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("503 FAILED"), "{table}");
}
