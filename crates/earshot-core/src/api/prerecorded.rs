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

/// Header names a pre-recorded webhook's auth header may not take: the
/// webhook call sets them itself (the emulator refuses them; `earshot
/// check-receiver` does too).
pub const RESERVED_AUTH_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "user-agent",
];

impl NewTranscript {
    /// `audio_url` and `webhook_url` are http(s) URLs (query kept as given);
    /// the webhook auth header name and value come both or neither.
    pub fn validate(&self) -> Result<(), ValidationError> {
        http_url("audio_url", &self.audio_url)?;
        if let Some(webhook) = &self.webhook_url {
            http_url("webhook_url", webhook)?;
        }
        match (
            &self.webhook_auth_header_name,
            &self.webhook_auth_header_value,
        ) {
            (None, None) => Ok(()),
            (Some(name), Some(value)) => {
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    ValidationError::new(
                        "webhook_auth_header_name",
                        format!("{name:?} is not a valid HTTP header name"),
                    )
                })?;
                reqwest::header::HeaderValue::from_str(value.expose()).map_err(|_| {
                    ValidationError::new(
                        "webhook_auth_header_value",
                        "contains characters an HTTP header cannot carry",
                    )
                })?;
                if self.webhook_url.is_none() {
                    return Err(ValidationError::new(
                        "webhook_auth_header_name",
                        "only makes sense with a webhook_url",
                    ));
                }
                Ok(())
            }
            (Some(_), None) => Err(ValidationError::new(
                "webhook_auth_header_value",
                "is required when webhook_auth_header_name is set (give both or neither)",
            )),
            (None, Some(_)) => Err(ValidationError::new(
                "webhook_auth_header_name",
                "is required when webhook_auth_header_value is set (give both or neither)",
            )),
        }
    }
}

fn http_url(field: &'static str, raw: &str) -> Result<(), ValidationError> {
    super::validate::http_url(raw)
        .map(drop)
        .map_err(|why| ValidationError::new(field, why.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::SecretString;

    fn request() -> NewTranscript {
        NewTranscript {
            audio_url: "https://cdn.example.com/a.wav".into(),
            ..NewTranscript::default()
        }
    }

    #[test]
    fn webhook_auth_needs_both_name_and_value() {
        let mut only_name = request();
        only_name.webhook_url = Some("https://hooks.example.com/x?job=7".into());
        only_name.webhook_auth_header_name = Some("X-Token".into());
        assert_eq!(
            only_name.validate().unwrap_err().field,
            "webhook_auth_header_value"
        );

        let mut only_value = request();
        only_value.webhook_url = Some("https://hooks.example.com/x".into());
        only_value.webhook_auth_header_value = Some(SecretString::new("s3cret"));
        assert_eq!(
            only_value.validate().unwrap_err().field,
            "webhook_auth_header_name"
        );

        let mut both = only_name.clone();
        both.webhook_auth_header_value = Some(SecretString::new("s3cret"));
        assert!(both.validate().is_ok());
    }

    #[test]
    fn urls_must_be_http() {
        let mut bad = request();
        bad.audio_url = "ftp://x/a.wav".into();
        assert_eq!(bad.validate().unwrap_err().field, "audio_url");
        let mut bad_hook = request();
        bad_hook.webhook_url = Some("not a url".into());
        assert_eq!(bad_hook.validate().unwrap_err().field, "webhook_url");
    }

    #[test]
    fn the_webhook_query_is_sent_as_given() {
        let mut with_query = request();
        with_query.webhook_url = Some("https://hooks.example.com/x?job=7&team=a%20b".into());
        let body = serde_json::to_value(&with_query).unwrap();
        assert_eq!(
            body["webhook_url"],
            "https://hooks.example.com/x?job=7&team=a%20b"
        );
        assert!(body.get("webhook_auth_header_name").is_none());
    }
}
