//! The area's success answers as typed records, with the spec's field
//! names: dictation's transcript and rewrite with the server's timings,
//! and sync's plain transcript.

use serde::Serialize;

/// One recognised word of a dictation answer.
#[derive(Serialize)]
pub(super) struct Word {
    pub text: String,
    pub confidence: f64,
}

/// `POST /v1/dictation` (and `/stream`): 200.
#[derive(Serialize)]
pub(super) struct DictationAnswer {
    pub text: String,
    pub words: Vec<Word>,
    pub confidence: f64,
    pub llm_response: Option<String>,
    /// `"timeout"` or `"error"` when the rewrite failed.
    pub llm_error: Option<&'static str>,
    pub audio_duration_ms: u64,
    pub session_id: String,
    pub request_time_ms: f64,
    pub auth_time_ms: f64,
    pub sync_time_ms: f64,
}

/// Sync's `POST /transcribe`: 200.
#[derive(Serialize)]
pub(super) struct SyncAnswer {
    pub text: String,
    pub model: String,
    pub audio_duration_ms: u64,
    pub request_time_ms: f64,
}
