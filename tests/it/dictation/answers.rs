//! Both dictation paths (and no unversioned alias), the typed answer with
//! honest timings, the configurable server timing, and the rewrite: the
//! instruction changes it, never the text, and its failure is still a 200.

use crate::common;
use std::time::{Duration, Instant};

use crate::common::{API_KEY, wav};
use earshot_core::api::dictation::{AudioSource, DictationPath, DictationRequest};
use earshot_core::api::types::dictation::{DictationConfig, Rewrite};
use earshot_core::redact::SecretString;
use earshot_emulator::{DictationTiming, EmulatorConfig, TimeScale};
use serde_json::json;

use super::{
    CLEANED, LIVE, UTTERANCE, audio, config, count, dictate_file, dictate_wav, dictation_post,
    earshot, harness, post, wav_file, wav_request,
};

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
