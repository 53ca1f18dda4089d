//! Unit tests of the dictation module's pure parts: the rewrite, the
//! config rules, the audio meter.

use std::time::Duration;

use serde_json::json;

use super::Refuse;
use super::config::parse_config;
use super::meter::Meter;
use super::rewrite;
use earshot_protocol::types::dictation::{AudioFormat, DictationConfig};

#[test]
fn the_rewrite_drops_fillers_and_resolves_corrections() {
    assert_eq!(
        rewrite(
            "um so I think we should meet on Tuesday, no, Wednesday at noon",
            None
        ),
        "So I think we should meet on Wednesday at noon."
    );
    assert_eq!(
        rewrite("uh let's meet at three, no, at four, er, ok", None),
        "Let's meet at four, ok."
    );
    assert_eq!(rewrite("no, really", None), "No, really.");
}

#[test]
fn instructions_change_the_rewrite_visibly() {
    let text = "um buy milk. then call Ana, no, Bea. uh done";
    assert_eq!(
        rewrite(text, Some("Make a bulleted list")),
        "- Buy milk\n- Then call Bea\n- Done"
    );
    assert_eq!(
        rewrite("um hello there", Some("in UPPERCASE please")),
        "HELLO THERE."
    );
    assert_eq!(rewrite("um hello there", Some("a note")), "Hello there.");
}

#[test]
fn config_rules_and_aliases() {
    let ok = parse_config(
        json!({"prompt": "a meeting", "word_boost": ["Ana"], "llm_instruction": null}),
    )
    .unwrap();
    assert_eq!(ok.stt_prompt.as_deref(), Some("a meeting"));
    assert_eq!(ok.keyterms_prompt, Some(vec!["Ana".to_owned()]));
    for (body, expected) in [
        (json!({"foo": 1}), "unknown field `foo`"),
        (json!({"stt_prompt": "a", "prompt": "b"}), "not both"),
        (json!({"keyterms": [], "word_boost": []}), "at most one of"),
        (
            json!({"language_codes": ["xx"]}),
            "not a supported language",
        ),
        (json!({"sample_rate": -1}), "integer from 1"),
        (json!([]), "JSON object"),
        (
            json!({"prompt": "x".repeat(6001)}),
            "`prompt`: must be at most 6000",
        ),
    ] {
        let Err(Refuse::Problem(problem)) = parse_config(body.clone()) else {
            panic!("{body} accepted");
        };
        let text = format!("{problem:?}");
        assert!(text.contains(expected), "{body}: {text}");
    }
}

#[test]
fn the_wav_meter_reads_headers_split_anywhere() {
    let wav = crate::test_wav(8000, 2.0, Some("hello there"));
    for split in [1, 7, 20, 44, 60, wav.len() - 1] {
        let mut meter = Meter::new(AudioFormat::Wav, &DictationConfig::default());
        meter.feed(&wav[..split]).unwrap();
        meter.feed(&wav[split..]).unwrap();
        let (duration, comment) = meter.finish(wav.len() as u64).unwrap();
        assert_eq!(duration, Duration::from_secs(2), "split at {split}");
        assert_eq!(comment.as_deref(), Some("hello there"));
    }
    let mut meter = Meter::new(AudioFormat::Wav, &DictationConfig::default());
    assert!(meter.feed(b"ID3\x04 this is an mp3 file").is_err());
}

#[test]
fn pcm_over_120_seconds_is_refused_as_it_arrives() {
    let config = DictationConfig {
        sample_rate: Some(8000),
        channels: Some(1),
        ..DictationConfig::default()
    };
    let mut meter = Meter::new(AudioFormat::Pcm, &config);
    let second = vec![0u8; 16_000];
    for _ in 0..120 {
        meter.feed(&second).unwrap();
    }
    assert!(meter.feed(&[0, 0]).is_err());
}
