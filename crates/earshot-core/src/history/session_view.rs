//! One session or call put together: the record `GET /v1/sessions/{id}`
//! returned (unknown fields kept), the events the observer stored, the
//! presigned links of `call.ended` or of the artifacts list with their
//! expiry, why the artifacts list is empty, and the session's deliveries.
//!
//! [`build`] is a pure function of its inputs and `now`, and [`stored`]
//! reads those inputs from the store, so the CLI (`earshot sessions get`)
//! and the console render the same facts.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::api::types::agents::{DeliveryRecord, DeliveryStatus, SessionRecord};
use crate::store::events::{self, StoredEvent};
use crate::store::{Store, StoreError, deliveries};

/// Spec part 8 C: artifacts appear typically about 90 s after completion.
pub const ARTIFACT_DELAY_SECS: i64 = 90;
/// Spec part 8 C: recording and transcript URLs work one hour after the event.
pub const LINK_LIFETIME_SECS: i64 = 3_600;

/// What `earshot sessions get` and the console show of one session or call.
/// Its `Debug` shows no personal data: links redacted, numbers masked, the
/// record and artifacts (which carry the presigned URLs) only counted.
#[derive(Clone, PartialEq, Serialize)]
pub struct SessionView {
    pub session_id: String,
    /// `session` or `call`, when the events or the record say.
    pub kind: Option<String>,
    pub status: Option<String>,
    /// The record as returned; `None` when it could not be fetched.
    pub record: Option<SessionRecord>,
    /// The stored events, oldest first.
    pub events: Vec<EventTime>,
    /// Why the store's events of the session are not known (the read
    /// failed, or there is no store): then `events` is empty because
    /// nothing was read, not because the observer saw none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_unknown: Option<String>,
    /// The record's `artifacts` entries, as returned.
    pub artifacts: Vec<Value>,
    /// Why `artifacts` is empty (spec terms), when it is.
    pub artifacts_note: Option<String>,
    /// Recording and transcript links, with when they stop working.
    pub links: Vec<Link>,
    /// The caller's number (personal data: shown masked unless asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_number: Option<String>,
    pub deliveries: DeliverySummary,
}

/// One stored event's name and time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventTime {
    pub event: String,
    pub event_id: String,
    pub at: DateTime<Utc>,
}

/// Where a link's expiry time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpirySource {
    /// The artifacts entry's `expires_at`.
    Listing,
    /// The URL's own signature fields (`X-Amz-Date` + `X-Amz-Expires`,
    /// or `Expires`).
    Url,
    /// The event's `timestamp` plus the spec's one hour.
    EventPlusHour,
}

/// A presigned recording or transcript link; its `Debug` redacts the URL.
#[derive(Clone, PartialEq, Serialize)]
pub struct Link {
    /// `recording` or `transcript` (or the listing's own `kind`).
    pub kind: String,
    /// The full URL: personal data, never logged; see [`Link::shown`].
    pub url: String,
    pub expires_at: Option<DateTime<Utc>>,
    pub expiry_source: Option<ExpirySource>,
    /// `call.ended` or `artifacts`.
    pub from: &'static str,
}

impl std::fmt::Debug for SessionView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let masked = |number: &Option<String>| number.as_deref().map(crate::redact::mask_phone);
        f.debug_struct("SessionView")
            .field("session_id", &self.session_id)
            .field("kind", &self.kind)
            .field("status", &self.status)
            .field("record", &self.record.as_ref().map(|_| "(fetched)"))
            .field("events", &self.events)
            .field("events_unknown", &self.events_unknown)
            .field("artifacts", &self.artifacts.len())
            .field("artifacts_note", &self.artifacts_note)
            .field("links", &self.links)
            .field("from_number", &masked(&self.from_number))
            .field("to_number", &masked(&self.to_number))
            .field("deliveries", &self.deliveries)
            .finish()
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("kind", &self.kind)
            .field("url", &self.shown())
            .field("expires_at", &self.expires_at)
            .field("expiry_source", &self.expiry_source)
            .field("from", &self.from)
            .finish()
    }
}

impl Link {
    /// The URL as messages show it (query and most of the name hidden).
    pub fn shown(&self) -> String {
        crate::redact::redact_url(&self.url)
    }

    /// "expires in 41 min", "expired 12 min ago", or "expiry unknown".
    pub fn expiry(&self, now: DateTime<Utc>) -> String {
        match self.expires_at {
            Some(at) => expiry_phrase(at, now),
            None => "expiry unknown".to_owned(),
        }
    }

    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// The deliveries of the session, as stored by the sweep.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeliverySummary {
    pub attempts: usize,
    pub delivered: usize,
    pub failed: usize,
    pub pending: usize,
    /// The newest attempt per subscription.
    pub latest: Vec<LatestAttempt>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatestAttempt {
    pub subscription_id: String,
    pub status: String,
    pub attempt_count: u32,
    pub http_status_code: Option<u16>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl DeliverySummary {
    pub fn of(records: &[DeliveryRecord]) -> DeliverySummary {
        let mut summary = DeliverySummary {
            attempts: records.len(),
            ..DeliverySummary::default()
        };
        let mut latest: BTreeMap<&str, &DeliveryRecord> = BTreeMap::new();
        for record in records {
            match record.status {
                DeliveryStatus::Delivered => summary.delivered += 1,
                DeliveryStatus::Failed => summary.failed += 1,
                DeliveryStatus::Pending => summary.pending += 1,
                DeliveryStatus::Other(_) => {}
            }
            let newer = latest
                .get(record.subscription_id.as_str())
                .is_none_or(|seen| {
                    (seen.created_at, seen.attempt_count)
                        <= (record.created_at, record.attempt_count)
                });
            if newer {
                latest.insert(&record.subscription_id, record);
            }
        }
        summary.latest = latest
            .into_values()
            .map(|record| LatestAttempt {
                subscription_id: record.subscription_id.clone(),
                status: record.status.as_str().to_owned(),
                attempt_count: record.attempt_count,
                http_status_code: record.http_status_code,
                error: record.error.clone(),
                created_at: record.created_at.to_utc(),
            })
            .collect();
        summary
    }

    /// `3 attempts: 2 delivered, 1 failed` (or `no attempts stored`).
    pub fn line(&self) -> String {
        if self.attempts == 0 {
            return "no attempts stored".to_owned();
        }
        let mut parts = Vec::new();
        for (count, word) in [
            (self.delivered, "delivered"),
            (self.failed, "failed"),
            (self.pending, "pending"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {word}"));
            }
        }
        let plural = if self.attempts == 1 { "" } else { "s" };
        format!("{} attempt{plural}: {}", self.attempts, parts.join(", "))
    }
}

/// What the store holds of `session_id`: its observed events and its
/// delivery attempts, the inputs of [`build`] besides the record.
pub fn stored(
    store: &Store,
    session_id: &str,
) -> Result<(Vec<StoredEvent>, Vec<DeliveryRecord>), StoreError> {
    Ok((
        events::for_session(store, session_id)?,
        deliveries::for_session(store, session_id)?,
    ))
}

/// Puts the pieces together. `record` is `None` when the platform could
/// not be asked; `events` and `deliveries` are what the store holds.
pub fn build(
    session_id: &str,
    record: Option<SessionRecord>,
    events: &[StoredEvent],
    deliveries: &[DeliveryRecord],
    now: DateTime<Utc>,
) -> SessionView {
    let payloads: Vec<(&StoredEvent, Value)> = events
        .iter()
        .filter_map(|event| Some((event, serde_json::from_slice(&event.body).ok()?)))
        .collect();
    let object_of = |payload: &Value| -> Option<Value> {
        payload
            .get("call")
            .or_else(|| payload.get("session"))
            .cloned()
    };
    let latest_object = payloads.iter().rev().find_map(|(_, p)| object_of(p));
    let event_kind = payloads.iter().find_map(|(event, _)| {
        if event.event.starts_with("call.") {
            Some("call")
        } else if event.event.starts_with("session.") {
            Some("session")
        } else {
            None
        }
    });
    let record_field = |name: &str| -> Option<String> {
        record
            .as_ref()
            .and_then(|record| record.extra.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let kind = event_kind
        .map(str::to_owned)
        .or_else(|| record_field("kind"));
    let status = record_field("status").or_else(|| {
        latest_object
            .as_ref()
            .and_then(|object| object.get("status")?.as_str().map(str::to_owned))
    });
    let number = |name: &str| {
        latest_object
            .as_ref()
            .and_then(|object| object.get(name)?.as_str().map(str::to_owned))
    };
    let artifacts = record
        .as_ref()
        .map(|record| record.artifacts.clone())
        .unwrap_or_default();

    let mut links = Vec::new();
    if let Some((event, payload)) = payloads
        .iter()
        .rev()
        .find(|(event, _)| event.event == "call.ended")
    {
        let event_at = ms_to_time(event.occurred_ms);
        for (kind, field) in [
            ("recording", "recording_url"),
            ("transcript", "transcript_url"),
        ] {
            let Some(url) = payload
                .get("call")
                .and_then(|call| call.get(field))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let (expires_at, expiry_source) = match listing_expiry(&artifacts, url) {
                Some(at) => (Some(at), Some(ExpirySource::Listing)),
                None => match url_expiry(url) {
                    Some(at) => (Some(at), Some(ExpirySource::Url)),
                    None => (
                        event_at.map(|at| at + chrono::Duration::seconds(LINK_LIFETIME_SECS)),
                        event_at.map(|_| ExpirySource::EventPlusHour),
                    ),
                },
            };
            links.push(Link {
                kind: kind.to_owned(),
                url: url.to_owned(),
                expires_at,
                expiry_source,
                from: "call.ended",
            });
        }
    }
    for entry in &artifacts {
        let Some(url) = entry.get("url").and_then(Value::as_str) else {
            continue;
        };
        if links.iter().any(|link| link.url == url) {
            continue;
        }
        let kind = entry
            .get("kind")
            .or_else(|| entry.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("artifact");
        let (expires_at, expiry_source) = match listing_expiry(&artifacts, url) {
            Some(at) => (Some(at), Some(ExpirySource::Listing)),
            None => {
                let at = url_expiry(url);
                (at, at.map(|_| ExpirySource::Url))
            }
        };
        links.push(Link {
            kind: kind.to_owned(),
            url: url.to_owned(),
            expires_at,
            expiry_source,
            from: "artifacts",
        });
    }

    let artifacts_note = if record.is_some() && artifacts.is_empty() {
        Some(empty_artifacts_note(
            kind.as_deref(),
            status.as_deref(),
            &payloads,
            record.as_ref(),
            now,
        ))
    } else {
        None
    };

    SessionView {
        session_id: session_id.to_owned(),
        kind,
        status,
        record,
        events: events
            .iter()
            .filter_map(|event| {
                Some(EventTime {
                    event: event.event.clone(),
                    event_id: event.event_id.clone(),
                    at: ms_to_time(event.occurred_ms)?,
                })
            })
            .collect(),
        events_unknown: None,
        artifacts,
        artifacts_note,
        links,
        from_number: number("from_number"),
        to_number: number("to_number"),
        deliveries: DeliverySummary::of(deliveries),
    }
}

/// Why the artifacts list is empty, in the spec's terms.
fn empty_artifacts_note(
    kind: Option<&str>,
    status: Option<&str>,
    payloads: &[(&StoredEvent, Value)],
    record: Option<&SessionRecord>,
    now: DateTime<Utc>,
) -> String {
    let is_call = kind == Some("call");
    if is_call && payloads.iter().any(|(e, _)| e.event == "call.failed") {
        return "none: the call failed, so nothing was recorded".to_owned();
    }
    let (end_event, verb) = if is_call {
        ("call.ended", "ended")
    } else {
        ("session.completed", "completed")
    };
    let ended_at = payloads
        .iter()
        .rev()
        .find(|(event, _)| event.event == end_event)
        .and_then(|(event, _)| ms_to_time(event.occurred_ms))
        .or_else(|| {
            record
                .and_then(|record| record.extra.get("ended_at"))
                .and_then(Value::as_str)
                .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
                .map(|at| at.to_utc())
        });
    let open = matches!(
        status,
        Some("created" | "connected" | "in_progress" | "active")
    );
    match ended_at {
        Some(at) if !open => {
            let ago = (now - at).num_seconds().max(0);
            let late = if ago > ARTIFACT_DELAY_SECS * 3 {
                "; later than usual"
            } else {
                ""
            };
            // The time itself, not "N s ago": a pane shows this line
            // long after it was read.
            format!(
                "not written yet: usually within about {} of {end_event} ({verb} {} UTC{late})",
                span(ARTIFACT_DELAY_SECS),
                crate::clock_text::utc_clock(at.timestamp_millis())
            )
        }
        _ if is_call => "call still open".to_owned(),
        _ => "session still open".to_owned(),
    }
}

/// "expires in 41 min" when `at` is after `now`, else "expired 12 min ago".
pub(crate) fn expiry_phrase(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    if seconds > 0 {
        format!("expires in {}", span(seconds))
    } else {
        format!("expired {} ago", span(-seconds))
    }
}

/// A span of whole seconds (none when negative): `35 s`, `41 min`,
/// `2 h 5 min`, `3 d 4 h`.
pub(crate) fn span(seconds: i64) -> String {
    crate::duration_text::of_secs(seconds.max(0).unsigned_abs())
}

fn ms_to_time(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// The `expires_at` of the artifacts entry with this exact URL.
fn listing_expiry(artifacts: &[Value], url: &str) -> Option<DateTime<Utc>> {
    artifacts
        .iter()
        .find(|entry| entry.get("url").and_then(Value::as_str) == Some(url))
        .and_then(|entry| entry.get("expires_at")?.as_str())
        .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .map(|at| at.to_utc())
}

/// The expiry a presigned URL carries itself: S3's `X-Amz-Date` plus
/// `X-Amz-Expires`, or an `Expires`/`expires` Unix time.
pub(crate) fn url_expiry(text: &str) -> Option<DateTime<Utc>> {
    let url = url::Url::parse(text).ok()?;
    let mut amz_date = None;
    let mut amz_expires = None;
    let mut expires = None;
    for (name, value) in url.query_pairs() {
        match name.as_ref() {
            "X-Amz-Date" => amz_date = Some(value.into_owned()),
            "X-Amz-Expires" => amz_expires = value.parse::<i64>().ok(),
            "Expires" | "expires" => expires = value.parse::<i64>().ok(),
            _ => {}
        }
    }
    if let (Some(date), Some(lifetime)) = (amz_date, amz_expires) {
        let signed = NaiveDateTime::parse_from_str(&date, "%Y%m%dT%H%M%SZ").ok()?;
        return Some(signed.and_utc() + chrono::Duration::seconds(lifetime));
    }
    Utc.timestamp_opt(expires?, 0).single()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    fn event(name: &str, at_text: &str, payload: Value) -> StoredEvent {
        let mut body = payload;
        body["event"] = json!(name);
        body["event_id"] = json!(format!("ev-{name}"));
        body["timestamp"] = json!(at_text);
        StoredEvent {
            event_id: format!("ev-{name}"),
            event: name.to_owned(),
            session_id: "call_1".to_owned(),
            occurred_ms: at(at_text).timestamp_millis(),
            body: serde_json::to_vec(&body).unwrap(),
        }
    }

    fn record(body: Value) -> SessionRecord {
        serde_json::from_value(body).unwrap()
    }

    fn ended_call() -> Vec<StoredEvent> {
        vec![
            event(
                "call.connected",
                "2026-11-23T12:00:00Z",
                json!({"call": {"status": "connected", "from_number": "+15555550189",
                    "recording_url": null, "transcript_url": null}}),
            ),
            event(
                "call.ended",
                "2026-11-23T12:05:00Z",
                json!({"call": {"status": "ended", "from_number": "+15555550189",
                    "recording_url": "https://files.example/r/rec.wav?sig=abc",
                    "transcript_url": "https://files.example/r/tr.json?sig=def"}}),
            ),
        ]
    }

    #[test]
    fn call_links_expire_an_hour_after_call_ended() {
        let view = build(
            "call_1",
            Some(record(
                json!({"artifacts": [], "status": "ended", "vendor_field": 7}),
            )),
            &ended_call(),
            &[],
            at("2026-11-23T12:24:00Z"),
        );
        assert_eq!(view.kind.as_deref(), Some("call"));
        assert_eq!(view.links.len(), 2);
        let now = at("2026-11-23T12:24:00Z");
        assert_eq!(view.links[0].expiry(now), "expires in 41 min");
        assert_eq!(
            view.links[0].expiry(at("2026-11-23T13:17:00Z")),
            "expired 12 min ago"
        );
        assert_eq!(
            view.links[0].expiry_source,
            Some(ExpirySource::EventPlusHour)
        );
        assert_eq!(view.from_number.as_deref(), Some("+15555550189"));
        // Unknown fields of the record are kept.
        let record = view.record.unwrap();
        assert_eq!(record.extra["vendor_field"], json!(7));
    }

    #[test]
    fn debug_shows_no_presigned_url_and_no_number() {
        let view = build(
            "call_1",
            Some(record(json!({"artifacts": [
                {"kind": "recording", "url": "https://files.example/r/rec.wav?sig=abc"}
            ]}))),
            &ended_call(),
            &[],
            at("2026-11-23T12:24:00Z"),
        );
        let debug = format!("{view:?}");
        for private in ["sig=abc", "sig=def", "+15555550189", "5555550189"] {
            assert!(!debug.contains(private), "{private} in {debug}");
        }
        assert!(debug.contains("files.example"), "{debug}");
    }

    #[test]
    fn empty_artifacts_say_why() {
        let completed = vec![event(
            "session.completed",
            "2026-11-23T12:00:00Z",
            json!({"session": {"status": "completed"}}),
        )];
        let view = build(
            "ses_1",
            Some(record(json!({"artifacts": [], "status": "completed"}))),
            &completed,
            &[],
            at("2026-11-23T12:00:35Z"),
        );
        assert_eq!(
            view.artifacts_note.as_deref(),
            Some(
                "not written yet: usually within about 1 min 30 s of session.completed (completed 12:00:00 UTC)"
            )
        );
        let open = build(
            "ses_2",
            Some(record(json!({"artifacts": [], "status": "created"}))),
            &[],
            &[],
            at("2026-11-23T12:00:35Z"),
        );
        assert_eq!(open.artifacts_note.as_deref(), Some("session still open"));
        let listed = build(
            "ses_3",
            Some(record(json!({"artifacts": [{"kind": "recording",
                "url": "https://files.example/a?Expires=1795000000",
                "expires_at": "2026-11-23T13:00:00Z"}]}))),
            &[],
            &[],
            at("2026-11-23T12:00:35Z"),
        );
        assert_eq!(listed.artifacts_note, None);
        assert_eq!(listed.links[0].expiry_source, Some(ExpirySource::Listing));
        assert_eq!(
            listed.links[0].expiry(at("2026-11-23T12:00:35Z")),
            "expires in 59 min"
        );
    }

    #[test]
    fn presigned_urls_carry_their_own_expiry() {
        let s3 = "https://b.s3.amazonaws.com/k?X-Amz-Date=20261123T120000Z&X-Amz-Expires=3600&X-Amz-Signature=x";
        assert_eq!(url_expiry(s3), Some(at("2026-11-23T13:00:00Z")));
        let plain = "http://127.0.0.1:9/_emulator/artifacts/t?kind=recording&expires=1795000000";
        assert_eq!(
            url_expiry(plain).map(|t| t.timestamp()),
            Some(1_795_000_000)
        );
        assert_eq!(url_expiry("https://x.example/a"), None);
    }

    #[test]
    fn spans_read_like_an_operator_speaks() {
        assert_eq!(span(35), "35 s");
        assert_eq!(span(41 * 60 + 5), "41 min");
        assert_eq!(span(2 * 3600 + 5 * 60), "2 h 5 min");
        assert_eq!(span(3 * 86_400 + 4 * 3600), "3 d 4 h");
    }

    #[test]
    fn deliveries_summarise_per_subscription() {
        let attempt = |id: &str, sub: &str, status: &str, n: u32| -> DeliveryRecord {
            serde_json::from_value(json!({
                "id": id, "subscription_id": sub, "session_id": "call_1",
                "status": status, "attempt_count": n, "http_status_code": null,
                "error": null, "delivered_at": null, "next_retry_at": null,
                "created_at": format!("2026-11-23T12:0{n}:00Z"),
            }))
            .unwrap()
        };
        let summary = DeliverySummary::of(&[
            attempt("d1", "sub_a", "failed", 1),
            attempt("d2", "sub_a", "delivered", 2),
            attempt("d3", "sub_b", "delivered", 1),
        ]);
        assert_eq!(summary.line(), "3 attempts: 2 delivered, 1 failed");
        assert_eq!(summary.latest.len(), 2);
        assert_eq!(summary.latest[0].status, "delivered");
        assert_eq!(DeliverySummary::default().line(), "no attempts stored");
    }
}
