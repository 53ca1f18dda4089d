//! Streaming from a slow pipe as it is written, and bad audio refused
//! before the pipe closes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::{API_KEY, Harness, eventually, wav};
use earshot_core::api::dictation::AudioSource;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{UTTERANCE, assert_detail_shape, audio, config, dictate_wav, harness, multipart, pipe};

async fn dictation_counters(harness: &Harness) -> Value {
    let response = harness
        .http
        .get(format!("{}/_emulator/dictation", harness.base))
        .send()
        .await
        .unwrap();
    response.json().await.unwrap()
}

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
