//! Area D records: transcript jobs and the pre-recorded webhook body.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A transcript job's status. A value the spec does not list is kept and
/// shown, not rejected.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TranscriptStatus {
    Queued,
    Processing,
    Completed,
    Error,
    Other(String),
}

impl TranscriptStatus {
    pub fn as_str(&self) -> &str {
        match self {
            TranscriptStatus::Queued => "queued",
            TranscriptStatus::Processing => "processing",
            TranscriptStatus::Completed => "completed",
            TranscriptStatus::Error => "error",
            TranscriptStatus::Other(other) => other,
        }
    }

    pub fn parse(text: &str) -> TranscriptStatus {
        match text {
            "queued" => TranscriptStatus::Queued,
            "processing" => TranscriptStatus::Processing,
            "completed" => TranscriptStatus::Completed,
            "error" => TranscriptStatus::Error,
            other => TranscriptStatus::Other(other.to_owned()),
        }
    }

    /// `completed` and `error` never change again: polling stops.
    pub fn is_terminal(&self) -> bool {
        matches!(self, TranscriptStatus::Completed | TranscriptStatus::Error)
    }
}

impl fmt::Display for TranscriptStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TranscriptStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TranscriptStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(TranscriptStatus::parse(&String::deserialize(deserializer)?))
    }
}

/// `GET /v2/transcript/{id}`: the documented fields, the rest kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub id: String,
    pub status: TranscriptStatus,
    #[serde(default)]
    pub text: Option<String>,
    /// The message when `status` is `error`.
    #[serde(default)]
    pub error: Option<String>,
    /// The HTTP status the platform got from the webhook receiver.
    #[serde(default)]
    pub webhook_status_code: Option<u16>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The body of `POST /v2/transcript`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NewTranscript {
    pub audio_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_auth_header_name: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::types::expose_optional_secret"
    )]
    pub webhook_auth_header_value: Option<crate::redact::SecretString>,
}

/// `POST /v2/upload` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Upload {
    pub upload_url: String,
}

/// The body of a pre-recorded webhook delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranscriptWebhook {
    pub transcript_id: String,
    pub status: TranscriptStatus,
}
