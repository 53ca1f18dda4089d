//! Part 7 A row by row: parse errors in the `error` shape, validation
//! errors in the `detail` shape, 401s, the size cap (413, even mid-upload),
//! 415 for other audio types, and injected 429/502/503/504.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{API_KEY, wav};
use earshot_core::api::dictation::{AudioSource, DictationError, Refusal};
use earshot_core::api::{Client, Endpoints, ErrorBody};
use earshot_core::redact::SecretString;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{
    Part, assert_detail_shape, audio, config, dictate_wav, dictation_post, fail_next_live, harness,
    pcm_request, pipe, post, refused, start, wav_file, wav_request,
};

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
