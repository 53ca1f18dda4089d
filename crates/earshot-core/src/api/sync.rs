//! Area B calls: sync transcription of one WAV file.
//!
//! `POST {sync_url}/transcribe` (or the US / EU address) with one multipart
//! part `audio`, the raw key in `Authorization` and the model in
//! `X-SVC-Model`. The spec shows no sync errors, so they come back as
//! [`ApiError`] with the generic hints; retries follow the dictation
//! policy ([`RetryPolicy`]), the one place for areas A and B.

use std::path::Path;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};

use super::dictation::{Envelope, RetryPolicy, open_audio, with_retries};
use super::types::dictation::{DEFAULT_SYNC_MODEL, SyncTranscript};
use super::validate::ValidationError;
use super::{ApiError, Client, Region};

/// The model header (spec part 2 B).
pub const MODEL_HEADER: &str = "X-SVC-Model";
/// A sync request may take this long (upload and transcription).
const SYNC_TIMEOUT: Duration = Duration::from_secs(300);

/// One sync call, except the audio.
#[derive(Clone, Debug)]
pub struct SyncRequest {
    pub region: Region,
    /// The `X-SVC-Model` value.
    pub model: String,
    pub retry: RetryPolicy,
}

impl Default for SyncRequest {
    fn default() -> Self {
        SyncRequest {
            region: Region::Global,
            model: DEFAULT_SYNC_MODEL.to_owned(),
            retry: RetryPolicy::default(),
        }
    }
}

impl Client {
    /// Transcribes a WAV file with the sync endpoint of `request.region`,
    /// streaming it from disk.
    pub async fn transcribe_sync(
        &self,
        request: &SyncRequest,
        path: &Path,
    ) -> Result<SyncTranscript, ApiError> {
        let model = reqwest::header::HeaderValue::from_str(request.model.trim())
            .ok()
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                ValidationError::new(
                    "model",
                    "must be a non-empty header value (for example universal-3-5-pro)",
                )
            })?;
        open_audio(path).await?;
        let label = format!("sync transcription ({})", request.region);
        let url = Self::url(self.endpoints.sync(request.region), "/transcribe");
        let bytes = with_retries(request.retry, true, || {
            let url = url.clone();
            let model = model.clone();
            let label = label.as_str();
            async move {
                let (file, len) = open_audio(path).await?;
                let envelope = Envelope::new(None, "audio/wav", "audio.wav");
                let builder = self
                    .http
                    .post(url)
                    .header(AUTHORIZATION, self.key_header())
                    .header(MODEL_HEADER, model)
                    .header(CONTENT_TYPE, envelope.content_type())
                    .header(CONTENT_LENGTH, envelope.len(len))
                    .timeout(SYNC_TIMEOUT)
                    .body(envelope.body(file));
                Self::send(label, builder).await
            }
        })
        .await
        .map_err(|(error, _, _)| error)?;
        serde_json::from_slice(&bytes).map_err(|error| ApiError::Decode {
            request: label,
            detail: error.to_string(),
        })
    }
}
