//! Area C records: subscriptions, delivery records, sessions, event payloads.

use std::fmt;

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::redact::SecretString;

/// The five voice-agent events a subscription can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventKind {
    #[serde(rename = "session.started")]
    SessionStarted,
    #[serde(rename = "session.completed")]
    SessionCompleted,
    #[serde(rename = "call.connected")]
    CallConnected,
    #[serde(rename = "call.ended")]
    CallEnded,
    #[serde(rename = "call.failed")]
    CallFailed,
}

impl EventKind {
    pub const ALL: [EventKind; 5] = [
        EventKind::SessionStarted,
        EventKind::SessionCompleted,
        EventKind::CallConnected,
        EventKind::CallEnded,
        EventKind::CallFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStarted => "session.started",
            EventKind::SessionCompleted => "session.completed",
            EventKind::CallConnected => "call.connected",
            EventKind::CallEnded => "call.ended",
            EventKind::CallFailed => "call.failed",
        }
    }

    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// Phone calls emit only `call.*`; sessions only `session.*`.
    pub fn is_call(self) -> bool {
        matches!(
            self,
            EventKind::CallConnected | EventKind::CallEnded | EventKind::CallFailed
        )
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A webhook subscription as the platform returns it (never with a secret).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    pub id: String,
    pub url: String,
    /// Kept as strings so an event added later by the platform still shows.
    pub events: Vec<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    #[serde(default)]
    pub secret_version: u32,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn enabled_by_default() -> bool {
    true
}

/// `GET /v1/webhook-subscriptions` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubscriptionList {
    pub subscriptions: Vec<Subscription>,
    #[serde(default)]
    pub has_more: bool,
}

/// The body of `POST /v1/webhook-subscriptions`.
#[derive(Clone, Debug, Serialize)]
pub struct NewSubscription {
    pub url: String,
    pub events: Vec<EventKind>,
    #[serde(serialize_with = "super::expose_secret")]
    pub secret: SecretString,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// The body of `PATCH /v1/webhook-subscriptions/{id}`: any of four fields.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SubscriptionPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventKind>>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::expose_optional_secret"
    )]
    pub secret: Option<SecretString>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// Delivery status; a value the spec does not list is kept, not rejected.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
    Other(String),
}

impl DeliveryStatus {
    pub fn as_str(&self) -> &str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::Other(other) => other,
        }
    }
}

impl fmt::Display for DeliveryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeliveryStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DeliveryStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            "pending" => DeliveryStatus::Pending,
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            _ => DeliveryStatus::Other(text),
        })
    }
}

/// One delivery attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    pub id: String,
    pub subscription_id: String,
    /// For a call, equals the `call_id`.
    pub session_id: String,
    pub status: DeliveryStatus,
    pub attempt_count: u32,
    pub http_status_code: Option<u16>,
    /// `HTTP <status>: <message>` on failure.
    pub error: Option<String>,
    pub delivered_at: Option<DateTime<FixedOffset>>,
    pub next_retry_at: Option<DateTime<FixedOffset>>,
    pub created_at: DateTime<FixedOffset>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /v1/sessions/{id}/webhook-deliveries[/latest]` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryRecord>,
    #[serde(default)]
    pub has_more: bool,
}

/// `GET /v1/sessions/{id}`: only `artifacts` is documented.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    #[serde(default)]
    pub artifacts: Vec<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The body of one webhook delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookEvent {
    /// Stable across retries: the receiver's deduplication key.
    pub event_id: String,
    pub event: String,
    pub timestamp: DateTime<FixedOffset>,
    #[serde(flatten)]
    pub object: EventObject,
}

/// The payload object: `session` for session events, `call` for call events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventObject {
    Session(SessionObject),
    Call(CallObject),
}

/// The `session` object of `session.*` events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionObject {
    pub session_id: String,
    pub account_id: i64,
    pub agent_id: String,
    pub status: String,
    pub duration_seconds: Option<f64>,
    pub public_close_reason: Option<String>,
    /// Null in `session.completed`.
    pub s3_prefix: Option<String>,
    pub created_at: DateTime<FixedOffset>,
    pub ended_at: Option<DateTime<FixedOffset>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `call` object of `call.*` events. `from_number` is personal data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallObject {
    pub call_id: String,
    /// Same value as `call_id`.
    pub session_id: String,
    pub account_id: i64,
    pub agent_id: String,
    pub status: String,
    pub direction: String,
    pub from_number: String,
    pub to_number: String,
    pub created_at: DateTime<FixedOffset>,
    /// The spec types this as a timestamp; it is null until the call ends.
    pub ended_at: Option<DateTime<FixedOffset>>,
    /// Null in `call.connected`; presigned, one hour, in `call.ended`.
    pub recording_url: Option<String>,
    pub transcript_url: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
