//! The client's own checks before sending, and the emulator's refusal of
//! streams over 120 s.

use std::io::Cursor;

use crate::common::wav;
use earshot_core::api::ErrorBody;
use earshot_core::api::dictation::{AudioSource, DictationError, DictationRequest, Refusal};
use earshot_core::api::types::dictation::DictationConfig;

use super::{
    LIVE, dictate_file, dictate_wav, harness, pcm_request, pipe, requests_to, wav_file, wav_request,
};

/// The field the client refused to send, if it refused one.
fn refused_field(error: &DictationError) -> Option<&'static str> {
    error.invalid().map(|invalid| invalid.field)
}

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
    assert!(invalid.rule.contains("lasts 2 min 1 s"), "{invalid}");
    assert!(invalid.rule.contains("at most 2 min "), "{invalid}");
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
