//! Uploads and transcription: an uploaded WAV's `ICMT` text, audio at
//! another URL, `keep_jobs`, the JSON types the SDKs read, large uploads,
//! unreadable audio, and 400/404 for bad requests and unknown ids.

use std::time::Duration;

use crate::common::{API_KEY, launch, wav};
use earshot_core::redact::SecretString;
use earshot_emulator::{EmulatorConfig, TimeScale};
use reqwest::Method;
use serde_json::json;

use super::{
    FIXED_TEXT, Hook, assert_error, closed_port_url, get_status, post, start, submit, submit_url,
    text_of, upload, upload_silence, wait_done,
};

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
