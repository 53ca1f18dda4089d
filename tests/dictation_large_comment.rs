//! A dictation whose WAV carries a megabyte (just under: a WAV header may
//! take 1 MB) `ICMT` comment: it is answered with the transcript cut to
//! the documented 64 KiB, the self-correction rewrite stays linear (the
//! comment is full of
//! ", no," corrections), memory stays bounded, and a small request sent
//! meanwhile is served too.

use std::time::Duration;

use earshot_core::api::dictation::{AudioSource, DictationRequest};
use earshot_core::redact::SecretString;
use earshot_emulator::{EmulatorConfig, TimeScale};
use earshot_testkit::rss::peak_mib_of_self;
use earshot_testkit::{API_KEY, wav};

/// `ICMT` text taken at most (docs/decisions.md, "Emulator").
const COMMENT_MAX: usize = 64 * 1024;
const PEAK_LIMIT_MIB: u64 = 400;
const BOUND: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_megabyte_comment_is_cut_and_other_requests_are_served() {
    tokio::time::timeout(BOUND, async {
        let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
        config.time_scale = TimeScale::new(0.01).unwrap();
        let harness = earshot_testkit::launch(config, None).await;
        let dir = tempfile::tempdir().unwrap();
        let comment = "meet on tuesday, no, wednesday um at three, ".repeat(22_000);
        // Just under the 1 MB a WAV header may take before its `data` chunk.
        assert!(comment.len() > 960_000);
        let big = dir.path().join("big.wav");
        std::fs::write(&big, wav(1.0, Some(&comment))).unwrap();
        let small = dir.path().join("small.wav");
        std::fs::write(&small, wav(1.0, Some("hello there"))).unwrap();

        let request = DictationRequest::default();
        let (big_answer, small_answer) = tokio::join!(
            harness.client.dictate(&request, AudioSource::file(&big)),
            harness.client.dictate(&request, AudioSource::file(&small)),
        );
        let small_answer = small_answer.expect("the small request is answered");
        assert_eq!(small_answer.text, "hello there");
        let big_answer = big_answer.expect("the big request is answered");
        assert!(
            big_answer.text.len() <= COMMENT_MAX,
            "{}",
            big_answer.text.len()
        );
        assert!(
            big_answer
                .text
                .starts_with("meet on tuesday, no, wednesday")
        );
        let rewrite = big_answer.llm_response.as_deref().expect("a rewrite");
        assert!(
            rewrite.starts_with("Meet on wednesday at three,"),
            "{}",
            &rewrite[..80]
        );
        // Every correction resolved but perhaps the one the cut split.
        assert!(rewrite.matches("tuesday").count() <= 1);
        let peak = peak_mib_of_self();
        assert!(peak < PEAK_LIMIT_MIB, "peak RSS {peak} MiB");
        harness.emulator.shutdown().await;
    })
    .await
    .expect("the test ends in time");
}
