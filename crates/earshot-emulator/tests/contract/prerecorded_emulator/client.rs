//! earshot's own client against these answers: a 200 accepted and the
//! error message read.

use crate::common::{Options, start_with, wav};

#[tokio::test]
async fn the_client_accepts_200_and_reads_the_error_message() {
    use earshot_core::api::ErrorBody;
    use earshot_core::api::types::prerecorded::NewTranscript;

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
    let earshot_core::api::ApiError::Status { body, .. } = &missing else {
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
