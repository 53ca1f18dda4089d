//! The bodies the battery sends: voice-agent events shaped exactly as spec
//! part 2 C (and as the emulator sends them), and the pre-recorded
//! `{transcript_id, status}` call of part 6 D. Every body is serialised once;
//! a repeat sends the same bytes.

use chrono::{DateTime, Duration, FixedOffset, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::types::agents::{CallObject, EventKind, EventObject, SessionObject, WebhookEvent};

/// The account the battery's events belong to.
const ACCOUNT_ID: i64 = 4242;
/// The agent the battery's events belong to.
const AGENT_ID: &str = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f";
/// The caller and the number called: obviously fictional (555-01xx).
const FROM_NUMBER: &str = "+15555550123";
const TO_NUMBER: &str = "+15555550188";
/// Presigned artifact URLs work this long after the event (spec part 8 C).
const ARTIFACT_LIFETIME_SECS: i64 = 3600;

/// One event ready to send: its kind, `event_id` and serialised body.
#[derive(Debug, Clone)]
pub struct EventBody {
    pub kind: EventKind,
    pub event_id: String,
    pub bytes: Vec<u8>,
}

/// A field `earshot trigger --set` could not set.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    #[error("{event} has no field `{path}` (its fields: {known})")]
    NoSuchField {
        event: &'static str,
        path: String,
        known: String,
    },
    #[error("`{path}` cannot take that value: {source}")]
    WrongType {
        path: String,
        source: serde_json::Error,
    },
    #[error("the event could not be made: {0}")]
    Made(serde_json::Error),
}

/// An event of `kind` as [`event`] makes it, with each `(path, value)` of
/// `sets` in place (`call.from_number`, `session.duration_seconds`; a
/// field the event has, of the type the platform sends), serialised in
/// the platform's field order.
pub fn with_fields(
    kind: EventKind,
    at: DateTime<Utc>,
    sets: &[(String, Value)],
) -> Result<EventBody, SetError> {
    let made = event(kind, at).map_err(SetError::Made)?;
    let original: Value = serde_json::from_slice(&made.bytes).map_err(SetError::Made)?;
    let mut document = original.clone();
    for (path, value) in sets {
        let mut place = &mut document;
        for key in path.split('.') {
            if place.get(key).is_none() {
                return Err(SetError::NoSuchField {
                    event: kind.as_str(),
                    path: path.clone(),
                    known: field_paths(&original).join(", "),
                });
            }
            place = &mut place[key];
        }
        *place = value.clone();
    }
    let typed: WebhookEvent =
        serde_json::from_value(document).map_err(|source| SetError::WrongType {
            path: sets
                .iter()
                .map(|(path, _)| path.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            source,
        })?;
    Ok(EventBody {
        kind,
        event_id: typed.event_id.clone(),
        bytes: serde_json::to_vec(&typed).map_err(SetError::Made)?,
    })
}

/// Every leaf of `document` as a dotted path (`call.from_number`).
fn field_paths(document: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    if let Value::Object(fields) = document {
        for (key, value) in fields {
            match value {
                Value::Object(_) => {
                    paths.extend(
                        field_paths(value)
                            .into_iter()
                            .map(|path| format!("{key}.{path}")),
                    );
                }
                _ => paths.push(key.clone()),
            }
        }
    }
    paths
}

/// A fresh conversation id: `ses_…` or `call_…` and 32 hex digits.
fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

fn utc(at: DateTime<Utc>) -> DateTime<FixedOffset> {
    at.fixed_offset()
}

/// An event of `kind` about a fresh session or call, happening at `at`.
pub(crate) fn event(kind: EventKind, at: DateTime<Utc>) -> Result<EventBody, serde_json::Error> {
    let object = if kind.is_call() {
        EventObject::Call(call(kind, &new_id("call"), at))
    } else {
        EventObject::Session(session(kind, at))
    };
    serialise(kind, at, object)
}

/// `call.ended` then `call.connected` for one call (ended at `at`): the
/// order in which they arrive in the out-of-order case.
pub(crate) fn ended_then_connected(
    at: DateTime<Utc>,
) -> Result<(EventBody, EventBody), serde_json::Error> {
    let call_id = new_id("call");
    let connected_at = at - Duration::seconds(118);
    let ended = serialise(
        EventKind::CallEnded,
        at,
        EventObject::Call(call(EventKind::CallEnded, &call_id, at)),
    )?;
    let connected = serialise(
        EventKind::CallConnected,
        connected_at,
        EventObject::Call(call(EventKind::CallConnected, &call_id, connected_at)),
    )?;
    Ok((ended, connected))
}

fn serialise(
    kind: EventKind,
    at: DateTime<Utc>,
    object: EventObject,
) -> Result<EventBody, serde_json::Error> {
    let event = WebhookEvent {
        event_id: uuid::Uuid::new_v4().to_string(),
        event: kind.as_str().to_owned(),
        timestamp: utc(at),
        object,
    };
    Ok(EventBody {
        kind,
        bytes: serde_json::to_vec(&event)?,
        event_id: event.event_id,
    })
}

/// `session.started` (status `created`, nulls as documented) or
/// `session.completed` (ended, `s3_prefix` null).
fn session(kind: EventKind, at: DateTime<Utc>) -> SessionObject {
    let session_id = new_id("ses");
    let started = kind == EventKind::SessionStarted;
    let created_at = if started {
        at
    } else {
        at - Duration::seconds(95)
    };
    SessionObject {
        s3_prefix: started.then(|| format!("accounts/{ACCOUNT_ID}/sessions/{session_id}/")),
        session_id,
        account_id: ACCOUNT_ID,
        agent_id: AGENT_ID.to_owned(),
        status: if started { "created" } else { "completed" }.to_owned(),
        duration_seconds: (!started).then_some(95.0),
        public_close_reason: (!started).then(|| "client_disconnected".to_owned()),
        created_at: utc(created_at),
        ended_at: (!started).then(|| utc(at)),
        extra: Map::new(),
    }
}

/// A `call` object as of `kind` at `at`. `ended_at` is null until the call
/// ends (as the emulator sends it); the artifact URLs only in `call.ended`.
fn call(kind: EventKind, call_id: &str, at: DateTime<Utc>) -> CallObject {
    let (status, created_at, ended_at) = match kind {
        EventKind::CallConnected => ("connected", at, None),
        EventKind::CallFailed => ("failed", at, Some(at)),
        _ => ("ended", at - Duration::seconds(118), Some(at)),
    };
    let artifacts = (kind == EventKind::CallEnded).then(|| {
        (
            presigned_url(call_id, "recording.wav", at),
            presigned_url(call_id, "transcript.json", at),
        )
    });
    let (recording_url, transcript_url) = artifacts.unzip();
    CallObject {
        call_id: call_id.to_owned(),
        session_id: call_id.to_owned(),
        account_id: ACCOUNT_ID,
        agent_id: AGENT_ID.to_owned(),
        status: status.to_owned(),
        direction: "inbound".to_owned(),
        from_number: FROM_NUMBER.to_owned(),
        to_number: TO_NUMBER.to_owned(),
        created_at: utc(created_at),
        ended_at: ended_at.map(utc),
        recording_url,
        transcript_url,
        extra: Map::new(),
    }
}

/// An https URL shaped like an object-store presigned URL valid one hour.
/// It points at `example.com`: nothing is there to download.
fn presigned_url(call_id: &str, file: &str, at: DateTime<Utc>) -> String {
    let signature = uuid::Uuid::new_v4().simple().to_string().repeat(2);
    format!(
        "https://artifacts.example.com/accounts/{ACCOUNT_ID}/calls/{call_id}/{file}\
         ?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date={}&X-Amz-Expires={ARTIFACT_LIFETIME_SECS}\
         &X-Amz-SignedHeaders=host&X-Amz-Signature={signature}",
        at.format("%Y%m%dT%H%M%SZ")
    )
}

/// The pre-recorded webhook body, fields in the platform's order.
#[derive(Serialize)]
struct TranscriptWebhook<'a> {
    transcript_id: &'a str,
    status: &'a str,
}

/// `{transcript_id, status}` for a fresh transcript id.
pub(crate) fn transcript(status: &str) -> Result<Vec<u8>, serde_json::Error> {
    let transcript_id = uuid::Uuid::new_v4().to_string();
    serde_json::to_vec(&TranscriptWebhook {
        transcript_id: &transcript_id,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parsed(body: &EventBody) -> Value {
        serde_json::from_slice(&body.bytes).unwrap()
    }

    #[test]
    fn session_started_has_created_status_and_documented_nulls() {
        let body = parsed(&event(EventKind::SessionStarted, Utc::now()).unwrap());
        let session = &body["session"];
        assert_eq!(body["event"], "session.started");
        assert_eq!(session["status"], "created");
        for field in ["duration_seconds", "ended_at", "public_close_reason"] {
            assert!(session[field].is_null(), "{field}");
        }
        assert!(session["s3_prefix"].is_string());
        let keys: Vec<&str> = session
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 9, "{keys:?}");
    }

    #[test]
    fn session_completed_has_null_s3_prefix() {
        let body = parsed(&event(EventKind::SessionCompleted, Utc::now()).unwrap());
        assert_eq!(body["session"]["status"], "completed");
        assert!(body["session"]["s3_prefix"].is_null());
        assert!(body["session"]["ended_at"].is_string());
    }

    #[test]
    fn call_events_carry_urls_only_when_ended() {
        let (ended, connected) = ended_then_connected(Utc::now()).unwrap();
        let (ended, connected) = (parsed(&ended), parsed(&connected));
        assert_eq!(ended["call"]["call_id"], connected["call"]["call_id"]);
        assert_eq!(ended["call"]["session_id"], ended["call"]["call_id"]);
        assert!(connected["call"]["recording_url"].is_null());
        assert!(connected["call"]["transcript_url"].is_null());
        for field in ["recording_url", "transcript_url"] {
            let url = ended["call"][field].as_str().unwrap();
            assert!(url.starts_with("https://"), "{url}");
        }
        assert_ne!(ended["event_id"], connected["event_id"]);
    }

    #[test]
    fn timestamps_carry_an_offset() {
        let body = parsed(&event(EventKind::CallFailed, Utc::now()).unwrap());
        let stamp = body["timestamp"].as_str().unwrap();
        assert!(DateTime::parse_from_rfc3339(stamp).is_ok(), "{stamp}");
        assert!(stamp.ends_with("+00:00") || stamp.ends_with('Z'), "{stamp}");
    }

    #[test]
    fn transcript_body_lists_id_then_status() {
        let body = String::from_utf8(transcript("error").unwrap()).unwrap();
        assert!(body.starts_with("{\"transcript_id\":\""), "{body}");
        assert!(body.ends_with(",\"status\":\"error\"}"), "{body}");
    }
}
