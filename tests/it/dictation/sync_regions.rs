//! Sync's model header and raw key, and each region's own endpoint.

use crate::common::{API_KEY, wav};
use earshot_core::api::dictation::{AudioSource, DictationRequest};
use earshot_core::api::sync::SyncRequest;
use earshot_core::api::{Client, Endpoints, Region};
use earshot_core::redact::SecretString;

use super::{LIVE, assert_detail_shape, audio, count, harness, post, wav_file, wav_request};

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
