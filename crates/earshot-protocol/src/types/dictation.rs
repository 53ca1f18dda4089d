//! Area A and B records: the dictation `config` part, the dictation answer
//! and the sync answer, with the documented limits of spec parts 2 A and
//! 8 A as constants (the client and the emulator check the same numbers).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Language codes `language_codes` may name (spec part 2 A).
pub const LANGUAGE_CODES: [&str; 32] = [
    "en", "es", "de", "fr", "it", "pt", "tr", "nl", "sv", "no", "da", "fi", "hi", "vi", "ar", "he",
    "ja", "ur", "zh", "ko", "ca", "gl", "ru", "ro", "et", "fa", "yue", "af", "mr", "zu", "xh",
    "nn",
];
/// Longest `stt_prompt`, in characters.
pub const STT_PROMPT_MAX_CHARS: usize = 6000;
/// Most `keyterms_prompt` items.
pub const KEYTERMS_MAX_ITEMS: usize = 100;
/// Most characters over every `keyterms_prompt` item.
pub const KEYTERMS_MAX_CHARS: usize = 8000;
/// Longest `llm_instruction`, in characters.
pub const LLM_INSTRUCTION_MAX_CHARS: usize = 2048;
/// Longest dictation audio (spec part 8 A).
pub const MAX_AUDIO: Duration = Duration::from_secs(120);
/// The rewrite's internal deadline (spec part 8 A).
pub const REWRITE_DEADLINE: Duration = Duration::from_secs(5);
/// The sync model header's value used in requests (spec part 2 B).
pub const DEFAULT_SYNC_MODEL: &str = "universal-3-5-pro";

/// The dictation `config` part: only the documented fields, under the
/// spec's own names (never the aliases `prompt`, `keyterms`, `word_boost`).
/// Fields left `None` are not sent; `{}` means every default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DictationConfig {
    /// Hz; required for `audio/pcm`, ignored for WAV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<u32>,
    /// Required for `audio/pcm`, ignored for WAV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<u16>,
    /// Default `["en"]`; each one of [`LANGUAGE_CODES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_codes: Option<Vec<String>>,
    /// The situation of the audio (not instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt_prompt: Option<String>,
    /// Names and jargon to bias transcription toward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyterms_prompt: Option<Vec<String>>,
    /// Replaces the default cleanup task of the rewrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_instruction: Option<String>,
}

/// The `audio` part's content type: the only two dictation takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AudioFormat {
    /// `audio/wav`: the header carries rate and channels.
    #[default]
    Wav,
    /// `audio/pcm`: raw 16-bit little-endian PCM; `sample_rate` and
    /// `channels` must be in the config.
    Pcm,
}

impl AudioFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            AudioFormat::Wav => "audio/wav",
            AudioFormat::Pcm => "audio/pcm",
        }
    }

    /// Reads a part's content type (parameters and case ignored).
    pub fn from_content_type(value: &str) -> Option<AudioFormat> {
        let essence = value.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("audio/wav") {
            Some(AudioFormat::Wav)
        } else if essence.eq_ignore_ascii_case("audio/pcm") {
            Some(AudioFormat::Pcm)
        } else {
            None
        }
    }
}

impl fmt::Display for AudioFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.content_type())
    }
}

/// One recognised word.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Word {
    pub text: String,
    /// 0 to 1.
    pub confidence: f64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The 200 answer of a dictation request (spec part 2 A). Unknown fields
/// are kept in `extra` and printed back by `--json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dictation {
    /// The verbatim transcript, never altered by the rewrite.
    pub text: String,
    #[serde(default)]
    pub words: Vec<Word>,
    /// Overall transcription confidence, 0 to 1.
    #[serde(default)]
    pub confidence: f64,
    /// The rewrite; null when it failed.
    #[serde(default)]
    pub llm_response: Option<String>,
    /// `timeout` or `error` when the rewrite failed; null on success.
    #[serde(default)]
    pub llm_error: Option<String>,
    #[serde(default)]
    pub audio_duration_ms: f64,
    /// The server's request id, to quote when reporting a problem.
    #[serde(default)]
    pub session_id: String,
    /// Total server-side processing time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_time_ms: Option<f64>,
    /// Authentication, part of `request_time_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_time_ms: Option<f64>,
    /// Transcription, part of `request_time_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_time_ms: Option<f64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What became of the rewrite. A failed rewrite is not a failed request
/// (spec part 7 A): the verbatim `text` stands in for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rewrite<'a> {
    Done(&'a str),
    /// `llm_error: "timeout"`: past the 5-second deadline.
    TimedOut,
    /// Any other `llm_error` value (`error` in the spec).
    Failed(&'a str),
    /// Neither a rewrite nor an error came back.
    Missing,
}

impl Dictation {
    pub fn rewrite(&self) -> Rewrite<'_> {
        match (self.llm_error.as_deref(), self.llm_response.as_deref()) {
            (Some("timeout"), _) => Rewrite::TimedOut,
            (Some(other), _) => Rewrite::Failed(other),
            (None, Some(text)) => Rewrite::Done(text),
            (None, None) => Rewrite::Missing,
        }
    }

    /// The text to use: the rewrite, or the verbatim text when it failed.
    pub fn best_text(&self) -> &str {
        match self.rewrite() {
            Rewrite::Done(text) => text,
            _ => &self.text,
        }
    }
}

/// The answer of sync `POST /transcribe`: `text`, the rest kept (spec:
/// other fields not shown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncTranscript {
    pub text: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SyncTranscript {
    /// A numeric field the spec does not show (e.g. the emulator's
    /// `request_time_ms`), when present.
    pub fn number(&self, field: &str) -> Option<f64> {
        self.extra.get(field).and_then(Value::as_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_serialises_only_what_is_set_under_the_spec_names() {
        assert_eq!(
            serde_json::to_string(&DictationConfig::default()).unwrap(),
            "{}"
        );
        let config = DictationConfig {
            sample_rate: Some(16_000),
            channels: Some(1),
            language_codes: Some(vec!["en".into(), "fr".into()]),
            stt_prompt: Some("a call".into()),
            keyterms_prompt: Some(vec!["Earshot".into()]),
            llm_instruction: Some("make a list".into()),
        };
        let value = serde_json::to_value(&config).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "channels",
                "keyterms_prompt",
                "language_codes",
                "llm_instruction",
                "sample_rate",
                "stt_prompt"
            ]
        );
    }

    #[test]
    fn content_types_ignore_case_and_parameters() {
        assert_eq!(
            AudioFormat::from_content_type("Audio/PCM; rate=16000"),
            Some(AudioFormat::Pcm)
        );
        assert_eq!(
            AudioFormat::from_content_type("audio/wav"),
            Some(AudioFormat::Wav)
        );
        assert_eq!(AudioFormat::from_content_type("audio/mpeg"), None);
    }

    #[test]
    fn a_failed_rewrite_falls_back_to_the_text() {
        let mut answer: Dictation = serde_json::from_value(serde_json::json!({
            "text": "um hello", "words": [{"text": "um", "confidence": 0.9}],
            "confidence": 0.9, "llm_response": null, "llm_error": "timeout",
            "audio_duration_ms": 1000, "session_id": "s", "region_hint": "eu"
        }))
        .unwrap();
        assert_eq!(answer.rewrite(), Rewrite::TimedOut);
        assert_eq!(answer.best_text(), "um hello");
        assert_eq!(answer.extra["region_hint"], "eu");
        answer.llm_error = None;
        answer.llm_response = Some("Hello.".into());
        assert_eq!(answer.best_text(), "Hello.");
    }
}
