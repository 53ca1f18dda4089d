//! Area D calls: upload audio, create a transcript job, read it back.
//!
//! All at `{base_url}` with the raw API key in `authorization`. Rate-limit
//! answers (429 with `Retry-After`, 403 for the account) come back as
//! [`ApiError::Status`]; pacing requests is the watcher's job (`poll/`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};

use super::types::prerecorded::{NewTranscript, Transcript, Upload};
use super::validate::ValidationError;
use super::{ApiError, Client};

pub use earshot_protocol::validate::prerecorded::RESERVED_AUTH_HEADERS;

/// An upload may take this long in all before it is abandoned.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(3600);
/// Bytes read from disk per chunk of the streamed upload body.
const UPLOAD_CHUNK: usize = 64 * 1024;

/// How far an upload has got, reported after every chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadProgress {
    pub sent: u64,
    pub total: u64,
}

impl Client {
    fn prerecorded_request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, Self::url(&self.endpoints.prerecorded, path))
            .header(AUTHORIZATION, self.key_header())
    }

    /// Streams a file to `POST /v2/upload` (never whole in memory),
    /// calling `progress` as bytes go out. Returns the `upload_url`.
    pub async fn upload_file(
        &self,
        path: &Path,
        progress: impl Fn(UploadProgress) + Send + Sync + 'static,
    ) -> Result<Upload, ApiError> {
        let unreadable = |error: std::io::Error| {
            ApiError::Invalid(ValidationError::new(
                "file",
                format!("cannot read {}: {error}", path.display()),
            ))
        };
        // A FIFO or a device is refused at once, never waited on.
        let file = crate::bounded_file::open(path, crate::bounded_file::AUDIO_FILE)
            .map_err(|error| ApiError::Invalid(ValidationError::new("file", error.to_string())))?;
        let file = tokio::fs::File::from_std(file);
        let total = file.metadata().await.map_err(unreadable)?.len();
        let progress = Arc::new(progress);
        let mut sent = 0u64;
        let chunks =
            tokio_util::io::ReaderStream::with_capacity(file, UPLOAD_CHUNK).map(move |chunk| {
                if let Ok(bytes) = &chunk {
                    sent += bytes.len() as u64;
                    progress(UploadProgress { sent, total });
                }
                chunk
            });
        let request = self
            .prerecorded_request(Method::POST, "/v2/upload")
            .header(CONTENT_TYPE, "application/octet-stream")
            .header(CONTENT_LENGTH, total)
            .timeout(UPLOAD_TIMEOUT)
            .body(reqwest::Body::wrap_stream(chunks));
        Self::send_json("upload audio", request).await
    }

    /// Starts a transcript job after checking the request's rules.
    pub async fn create_transcript(&self, request: &NewTranscript) -> Result<Transcript, ApiError> {
        request.validate()?;
        let builder = self
            .prerecorded_request(Method::POST, "/v2/transcript")
            .json(request);
        Self::send_json("create transcript", builder).await
    }

    pub async fn get_transcript(&self, id: &str) -> Result<Transcript, ApiError> {
        let path = format!("/v2/transcript/{}", super::path_segment(id)?);
        let request = self.prerecorded_request(Method::GET, &path);
        Self::send_json("get transcript", request).await
    }
}
