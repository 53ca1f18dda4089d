//! The one retry policy of part 7 A: a 502 on a file retried once, a 503
//! or 429 backed off and retried, a consumed stream never retried.

use std::io::Cursor;
use std::time::{Duration, Instant};

use crate::common::wav;
use earshot_core::api::dictation::{AudioSource, DictationRequest, Refusal, RetryPolicy};
use serde_json::json;

use super::{
    LIVE, count, dictate_file, dictate_wav, fail_next_live, harness, refused, requests_to,
    wav_file, wav_request,
};

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
