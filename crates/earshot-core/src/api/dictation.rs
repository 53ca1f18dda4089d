//! Area A calls: one dictation request, streamed.
//!
//! This module owns the dictation side of the client: the request itself
//! (the `config` rules of spec parts 2 A and 8 A, shared with the emulator,
//! are `earshot-protocol`'s, re-exported here), and the error table of part 7 A
//! ([`Refusal`], with what to do next). Two jobs live beside it: the
//! hand-built `multipart/form-data` body in `dictation/body.rs` (`config`
//! first, then `audio` streamed from any [`AsyncRead`] with chunked
//! transfer, so the upload starts before capture ends) and the one retry
//! policy of areas A and B in `dictation/retry.rs` ([`RetryPolicy`]). Sync
//! (area B) lives in [`super::sync`] and reuses both.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::types::dictation::{AudioFormat, Dictation, DictationConfig, MAX_AUDIO};
use super::validate::ValidationError;
use super::{ApiError, Client, ErrorBody, Region};
use crate::wav::{self, PrefixError, WavError};

mod body;
mod retry;
pub(crate) use body::Envelope;
pub use earshot_protocol::validate::dictation::{
    keyterms, language_codes, llm_instruction, stt_prompt,
};
pub(crate) use retry::with_retries;
pub use retry::{RetryCount, RetryPolicy};

/// A dictation request may take this long in all: the longest capture
/// (120 s, streamed in real time) plus the server's work.
const DICTATION_TIMEOUT: Duration = Duration::from_secs(200);
/// How much of a WAV file is read to find its `data` chunk: a little
/// first, more only when large chunks (a `LIST`, cover art) come before it.
const WAV_HEADER_WINDOWS: [u64; 2] = [64 * 1024, 1024 * 1024];

/// Which path serves the request: the same operation at both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum DictationPath {
    /// `/v1/transcribe/live`, the documented default.
    #[default]
    Live,
    /// `/v1/transcribe/stream`, the original path, still served.
    Stream,
}

impl DictationPath {
    pub fn path(self) -> &'static str {
        match self {
            DictationPath::Live => "/v1/transcribe/live",
            DictationPath::Stream => "/v1/transcribe/stream",
        }
    }
}

/// Where the audio comes from. Only a file can be read again, so only a
/// file is ever retried.
pub enum AudioSource {
    /// A file on disk: its header is checked before sending (a WAV over
    /// 120 s is refused), and each attempt reads it from the start.
    File(PathBuf),
    /// Anything else (stdin, a capture pipe): read once, as it comes.
    Reader(Box<dyn AsyncRead + Send + Unpin + 'static>),
}

impl AudioSource {
    pub fn file(path: impl Into<PathBuf>) -> AudioSource {
        AudioSource::File(path.into())
    }

    pub fn reader(reader: impl AsyncRead + Send + Unpin + 'static) -> AudioSource {
        AudioSource::Reader(Box::new(reader))
    }

    /// Whether a retry could send the same audio again.
    pub(crate) fn replayable(&self) -> bool {
        matches!(self, AudioSource::File(_))
    }
}

impl fmt::Debug for AudioSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AudioSource::File(path) => f.debug_tuple("File").field(path).finish(),
            AudioSource::Reader(_) => f.write_str("Reader(..)"),
        }
    }
}

/// Everything about one dictation call except the audio.
#[derive(Clone, Debug, Default)]
pub struct DictationRequest {
    pub config: DictationConfig,
    pub format: AudioFormat,
    pub region: Region,
    pub path: DictationPath,
    pub retry: RetryPolicy,
}

// ---------------------------------------------------------------------------
// Errors (spec part 7 A)
// ---------------------------------------------------------------------------

/// What a refusal of part 7 A means, by status (and, for 400, by body
/// shape: `{error, error_code}` is a broken body, `{status, title,
/// detail}` a config that failed validation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 400 `{error, error_code}`: the multipart body could not be read.
    MalformedBody,
    /// 400 `{status, title, detail}`: the config (or audio) broke a rule.
    InvalidRequest,
    /// 401: no key, a wrong key, or a `Bearer ` prefix.
    Unauthorized,
    /// 413: over the size cap, possibly before the upload finished.
    TooLarge,
    /// 415: not `audio/wav` or `audio/pcm`.
    UnsupportedAudio,
    /// 429.
    RateLimited,
    /// 502: the transcription upstream is unavailable.
    UpstreamUnavailable,
    /// 503: the server is at capacity.
    AtCapacity,
    /// 504: the transcription upstream timed out.
    UpstreamTimeout,
    /// Any status the table does not list.
    Other,
}

impl Refusal {
    pub(crate) fn classify(status: u16, body: &ErrorBody) -> Refusal {
        match status {
            400 if matches!(body, ErrorBody::Parse { .. }) => Refusal::MalformedBody,
            400 => Refusal::InvalidRequest,
            401 => Refusal::Unauthorized,
            413 => Refusal::TooLarge,
            415 => Refusal::UnsupportedAudio,
            429 => Refusal::RateLimited,
            502 => Refusal::UpstreamUnavailable,
            503 => Refusal::AtCapacity,
            504 => Refusal::UpstreamTimeout,
            _ => Refusal::Other,
        }
    }

    /// What an operator does next.
    pub(crate) fn advice(self) -> &'static str {
        match self {
            Refusal::MalformedBody => {
                "the server could not read the multipart body (config first, then non-empty audio); this is a client bug, report it with the message above"
            }
            Refusal::InvalidRequest => {
                "fix the field or audio the message names (the client checks the documented rules, so the server knows one more)"
            }
            Refusal::Unauthorized => {
                "check the API key (`earshot config show`); dictation takes the raw key in Authorization, with no `Bearer ` prefix"
            }
            Refusal::TooLarge => {
                "the audio is over the server's size cap; send at most 2 min, or record mono or at a lower sample rate"
            }
            Refusal::UnsupportedAudio => {
                "dictation takes only audio/wav or audio/pcm; send compressed audio to the buffered /v1/transcribe endpoint instead"
            }
            Refusal::RateLimited => {
                "rate limited; wait a little (Retry-After, when given) and retry"
            }
            Refusal::UpstreamUnavailable => {
                "the transcription upstream is unavailable; retry in a minute, or try another region (`earshot probe FILE` compares them)"
            }
            Refusal::AtCapacity => "the server is at capacity; wait a little and retry",
            Refusal::UpstreamTimeout => {
                "the transcription upstream timed out; retry, or try another region (`earshot probe FILE` compares them)"
            }
            Refusal::Other => {
                "unexpected answer; retry shortly, and quote the status when reporting it"
            }
        }
    }
}

/// A failed dictation call.
#[derive(Debug, thiserror::Error)]
pub enum DictationError {
    /// Refused before sending (the request breaks a rule), not sent
    /// (transport), or an answer that could not be read.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The server answered with an error status of part 7 A.
    #[error(
        "{request} failed: HTTP {status}: {body} — {}{}",
        kind.advice(),
        attempts_note(*attempts, *not_retried)
    )]
    Refused {
        request: String,
        status: u16,
        kind: Refusal,
        body: ErrorBody,
        retry_after: Option<Duration>,
        /// Requests sent, the last one included.
        attempts: u32,
        /// A retryable status that was not retried because the audio came
        /// from a stream that cannot be read again.
        not_retried: bool,
    },
}

fn attempts_note(attempts: u32, not_retried: bool) -> String {
    if not_retried {
        " (not retried: the audio came from a stream that cannot be read again)".to_owned()
    } else if attempts > 1 {
        format!(" (after {attempts} attempts)")
    } else {
        String::new()
    }
}

impl DictationError {
    pub fn status(&self) -> Option<u16> {
        match self {
            DictationError::Refused { status, .. } => Some(*status),
            DictationError::Api(error) => error.status(),
        }
    }

    /// Requests that reached the server's answer (0 when none did).
    pub fn attempts(&self) -> u32 {
        match self {
            DictationError::Refused { attempts, .. } => *attempts,
            DictationError::Api(_) => 0,
        }
    }

    /// The rule broken, when the request was refused before sending.
    pub fn invalid(&self) -> Option<&ValidationError> {
        match self {
            DictationError::Api(ApiError::Invalid(invalid)) => Some(invalid),
            _ => None,
        }
    }
}

impl From<ValidationError> for DictationError {
    fn from(error: ValidationError) -> Self {
        DictationError::Api(ApiError::Invalid(error))
    }
}

// ---------------------------------------------------------------------------
// Checking a file before sending
// ---------------------------------------------------------------------------

/// Opens `path` for reading if it is a regular file (a FIFO or a device
/// is refused at once, never waited on), with an error naming it.
pub(crate) async fn open_audio(path: &Path) -> Result<(tokio::fs::File, u64), ValidationError> {
    let file = crate::bounded_file::open(path, crate::bounded_file::AUDIO_FILE)
        .map_err(|error| ValidationError::new("audio", error.to_string()))?;
    let file = tokio::fs::File::from_std(file);
    let len = file
        .metadata()
        .await
        .map_err(|error| {
            ValidationError::new("audio", format!("cannot read {}: {error}", path.display()))
        })?
        .len();
    Ok((file, len))
}

/// The duration of a WAV file, from its header and its length on disk.
pub(crate) async fn wav_file_duration(path: &Path) -> Result<Duration, ValidationError> {
    let mut outcome = Err(String::new());
    for window in WAV_HEADER_WINDOWS {
        let (file, len) = open_audio(path).await?;
        let mut prefix = Vec::new();
        file.take(window)
            .read_to_end(&mut prefix)
            .await
            .map_err(|error| {
                ValidationError::new("audio", format!("cannot read {}: {error}", path.display()))
            })?;
        outcome = wav::duration_of_prefix(&prefix, len).map_err(|error| match error {
            PrefixError::Wav(WavError::NotWav) => {
                "no RIFF/WAVE header (for raw PCM, say so: audio/pcm)".to_owned()
            }
            other => other.to_string(),
        });
        if outcome.is_ok() || len <= window {
            break;
        }
    }
    outcome.map_err(|why| {
        ValidationError::new(
            "audio",
            format!(
                "{} is not a WAV file dictation can take: {why}",
                path.display()
            ),
        )
    })
}

/// Refuses audio longer than the documented 120 s.
fn check_duration(duration: Duration, path: &Path) -> Result<(), ValidationError> {
    if duration > MAX_AUDIO {
        return Err(ValidationError::new(
            "audio",
            format!(
                "{} lasts {}; dictation takes at most {} (use pre-recorded transcription, `earshot jobs submit`, for longer audio)",
                path.display(),
                crate::duration_text::of(duration),
                crate::duration_text::of(MAX_AUDIO)
            ),
        ));
    }
    Ok(())
}

/// Duration of a raw PCM file of `len` bytes (16-bit samples).
fn pcm_duration(len: u64, sample_rate: u32, channels: u16) -> Duration {
    let per_second = u64::from(sample_rate) * u64::from(channels) * 2;
    if per_second == 0 {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(len as f64 / per_second as f64)
}

// ---------------------------------------------------------------------------
// The call
// ---------------------------------------------------------------------------

impl Client {
    /// Sends one dictation request: checks the config (and a file's
    /// length), streams `config` then `audio`, and retries under
    /// `request.retry` when the audio is a file.
    pub async fn dictate(
        &self,
        request: &DictationRequest,
        audio: AudioSource,
    ) -> Result<Dictation, DictationError> {
        request.config.validate(request.format)?;
        let label = format!("dictation ({}, {})", request.region, request.path.path());
        let url = Self::url(
            self.endpoints.dictation(request.region),
            request.path.path(),
        );
        let config = serde_json::to_vec(&request.config).map_err(|error| {
            ValidationError::new("config", format!("cannot be serialised: {error}"))
        })?;
        let filename = match request.format {
            AudioFormat::Wav => "audio.wav",
            AudioFormat::Pcm => "audio.pcm",
        };
        let replayable = audio.replayable();
        let result = match audio {
            AudioSource::File(path) => {
                let (_, len) = open_audio(&path).await?;
                let duration = match request.format {
                    AudioFormat::Wav => wav_file_duration(&path).await?,
                    AudioFormat::Pcm => pcm_duration(
                        len,
                        request.config.sample_rate.unwrap_or(0),
                        request.config.channels.unwrap_or(0),
                    ),
                };
                check_duration(duration, &path)?;
                with_retries(request.retry, true, || {
                    let path = path.clone();
                    let url = url.clone();
                    let label = label.as_str();
                    let config = config.as_slice();
                    async move {
                        let (file, len) = open_audio(&path).await?;
                        let envelope =
                            Envelope::new(Some(config), request.format.content_type(), filename);
                        let builder = self
                            .dictation_request(url, &envelope)
                            .header(CONTENT_LENGTH, envelope.len(len))
                            .body(envelope.body(file));
                        Self::send(label, builder).await
                    }
                })
                .await
            }
            AudioSource::Reader(reader) => {
                let envelope =
                    Envelope::new(Some(&config), request.format.content_type(), filename);
                let builder = self
                    .dictation_request(url, &envelope)
                    .body(envelope.body(reader));
                let mut reader = Some(builder);
                with_retries(request.retry, false, || {
                    let builder = reader.take();
                    let label = label.as_str();
                    async move {
                        match builder {
                            Some(builder) => Self::send(label, builder).await,
                            None => Err(ApiError::Setup {
                                detail: "a stream cannot be sent twice".into(),
                            }),
                        }
                    }
                })
                .await
            }
        };
        let bytes = result.map_err(|(error, attempts, not_retried)| {
            refused(error, attempts, not_retried && !replayable)
        })?;
        serde_json::from_slice(&bytes).map_err(|error| {
            DictationError::Api(ApiError::Decode {
                request: label,
                detail: error.to_string(),
            })
        })
    }

    fn dictation_request(&self, url: url::Url, envelope: &Envelope) -> reqwest::RequestBuilder {
        self.http
            .post(url)
            .header(AUTHORIZATION, self.key_header())
            .header(CONTENT_TYPE, envelope.content_type())
            .timeout(DICTATION_TIMEOUT)
    }
}

/// A status answer becomes a [`DictationError::Refused`]; anything else
/// stays an [`ApiError`].
fn refused(error: ApiError, attempts: u32, not_retried: bool) -> DictationError {
    match error {
        ApiError::Status {
            request,
            status,
            body,
            retry_after,
        } => DictationError::Refused {
            kind: Refusal::classify(status, &body),
            request,
            status,
            body,
            retry_after,
            attempts,
            not_retried,
        },
        other => DictationError::Api(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::dictation::LANGUAGE_CODES;

    fn config() -> DictationConfig {
        DictationConfig::default()
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases: Vec<(DictationConfig, AudioFormat, &str, &str)> = vec![
            (
                DictationConfig {
                    language_codes: Some(vec!["en".into(), "klingon".into()]),
                    ..config()
                },
                AudioFormat::Wav,
                "language_codes",
                "\"klingon\" is not a supported",
            ),
            (
                DictationConfig {
                    stt_prompt: Some("x".repeat(6001)),
                    ..config()
                },
                AudioFormat::Wav,
                "stt_prompt",
                "at most 6000 characters (got 6001)",
            ),
            (
                DictationConfig {
                    keyterms_prompt: Some(vec!["k".into(); 101]),
                    ..config()
                },
                AudioFormat::Wav,
                "keyterms_prompt",
                "at most 100 items (got 101)",
            ),
            (
                DictationConfig {
                    keyterms_prompt: Some(vec!["k".repeat(100); 81]),
                    ..config()
                },
                AudioFormat::Wav,
                "keyterms_prompt",
                "8000 characters in total (got 8100)",
            ),
            (
                DictationConfig {
                    llm_instruction: Some("é".repeat(2049)),
                    ..config()
                },
                AudioFormat::Wav,
                "llm_instruction",
                "at most 2048 characters (got 2049)",
            ),
            (
                DictationConfig {
                    channels: Some(1),
                    ..config()
                },
                AudioFormat::Pcm,
                "sample_rate",
                "required when the audio is audio/pcm",
            ),
            (
                DictationConfig {
                    sample_rate: Some(16_000),
                    ..config()
                },
                AudioFormat::Pcm,
                "channels",
                "required when the audio is audio/pcm",
            ),
        ];
        for (config, format, field, rule) in cases {
            let error = config.validate(format).expect_err(field);
            assert_eq!(error.field, field);
            assert!(error.rule.contains(rule), "{error}");
        }
    }

    #[test]
    fn limits_are_inclusive_and_count_characters() {
        let at_limit = DictationConfig {
            language_codes: Some(LANGUAGE_CODES.iter().map(|c| (*c).to_owned()).collect()),
            stt_prompt: Some("é".repeat(6000)),
            keyterms_prompt: Some(vec!["k".repeat(80); 100]),
            llm_instruction: Some("x".repeat(2048)),
            ..config()
        };
        assert!(at_limit.validate(AudioFormat::Wav).is_ok());
        let pcm = DictationConfig {
            sample_rate: Some(16_000),
            channels: Some(1),
            ..config()
        };
        assert!(pcm.validate(AudioFormat::Pcm).is_ok());
        // WAV ignores rate and channels: none needed.
        assert!(config().validate(AudioFormat::Wav).is_ok());
    }

    #[test]
    fn retry_policy_follows_part_7_a() {
        let policy = RetryPolicy::default();
        let mut count = RetryCount::default();
        // 502/504: once, together.
        assert_eq!(
            policy.next_delay(502, None, &mut count),
            Some(Duration::ZERO)
        );
        assert_eq!(policy.next_delay(504, None, &mut count), None);
        // 429/503: back off, doubling, Retry-After first.
        let mut count = RetryCount::default();
        assert_eq!(
            policy.next_delay(503, None, &mut count),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            policy.next_delay(429, Some(Duration::from_secs(2)), &mut count),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            policy.next_delay(503, None, &mut count),
            Some(Duration::from_secs(2))
        );
        assert_eq!(policy.next_delay(503, None, &mut count), None);
        // A Retry-After past the longest wait is surfaced, not slept on.
        let mut count = RetryCount::default();
        assert_eq!(
            policy.next_delay(429, Some(Duration::from_secs(3600)), &mut count),
            None
        );
        // Other statuses are never retried.
        for status in [400, 401, 413, 415, 500] {
            assert_eq!(policy.next_delay(status, None, &mut count), None);
        }
        assert_eq!(
            RetryPolicy::NEVER.next_delay(503, None, &mut RetryCount::default()),
            None
        );
    }

    #[test]
    fn refusals_are_classified_by_status_and_body_shape() {
        let parse = ErrorBody::Parse {
            error: "audio before config".into(),
            error_code: "bad_request".into(),
        };
        let detail = ErrorBody::Detail {
            status: 400,
            title: "Bad Request".into(),
            detail: "unknown field".into(),
        };
        assert_eq!(Refusal::classify(400, &parse), Refusal::MalformedBody);
        assert_eq!(Refusal::classify(400, &detail), Refusal::InvalidRequest);
        assert_eq!(Refusal::classify(415, &detail), Refusal::UnsupportedAudio);
        assert!(
            Refusal::UnsupportedAudio
                .advice()
                .contains("/v1/transcribe")
        );
        assert!(Refusal::Unauthorized.advice().contains("Bearer"));
    }

    #[test]
    fn the_envelope_puts_config_first() {
        let envelope = Envelope::new(Some(b"{}"), "audio/pcm", "audio.pcm");
        let head = String::from_utf8(envelope.head.to_vec()).unwrap();
        let config = head.find("name=\"config\"").unwrap();
        let audio = head.find("name=\"audio\"").unwrap();
        assert!(config < audio);
        assert!(head.ends_with("Content-Type: audio/pcm\r\n\r\n"));
        assert!(
            String::from_utf8(envelope.tail.to_vec())
                .unwrap()
                .contains(&format!("--{}--", envelope.boundary))
        );
        assert_eq!(
            envelope.len(10),
            (envelope.head.len() + 10 + envelope.tail.len()) as u64
        );
    }
}
