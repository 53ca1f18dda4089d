//! The verdict on one request: what kind of delivery it is, whether its
//! signature or auth header holds, whether it is a repeat, and what to
//! answer. Nothing a client sends is built into a JSON document before it
//! is known to be authentic.

use std::net::{IpAddr, Ipv4Addr};

use axum::http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use super::state::Shared;
use crate::receiver::capture::{CaptureEntry, Kind, VerdictCode};
use crate::receiver::fields::{Fields, Shape};
use crate::redact::SecretString;
use crate::signature::{self, InvalidReason, Verdict};

/// The addresses every pre-recorded delivery comes from (spec 5 D).
pub const PLATFORM_SOURCES: [Ipv4Addr; 2] = [
    Ipv4Addr::new(44, 238, 19, 20),
    Ipv4Addr::new(54, 220, 25, 36),
];

/// The parts of a request a verdict depends on.
pub(super) struct Incoming<'a> {
    pub(super) method: &'a Method,
    pub(super) headers: &'a HeaderMap,
    pub(super) peer: IpAddr,
    pub(super) body: &'a [u8],
    pub(super) now: i64,
}

/// What to answer.
pub(super) struct Judged {
    pub(super) status: StatusCode,
    pub(super) answer: Value,
    pub(super) signature: Option<Verdict>,
}

/// Sets `entry`'s verdict fields and says what to answer.
///
/// Nothing a client sends is built into a JSON document before it is known
/// to be authentic: a signed delivery is verified over the raw bytes
/// first, and every other body is only scanned for the few top-level
/// strings a verdict and the display need ([`Fields`]).
pub(super) fn judge(shared: &Shared, request: &Incoming, entry: &mut CaptureEntry) -> Judged {
    if request.method != Method::POST {
        return reject(
            entry,
            Kind::Other,
            VerdictCode::MethodNotAllowed,
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
            "post_only",
        );
    }
    if let Some(header) = request.headers.get(signature::HEADER_NAME) {
        return judge_agents(shared, request, header.as_bytes(), entry);
    }
    let fields = Fields::read(request.body);
    if let Some(payload) = fields.as_ref().and_then(PrerecordedPayload::from_fields) {
        return judge_prerecorded(shared, request, payload, entry);
    }
    let looks_like_agents = request.headers.contains_key("x-svc-event")
        || fields.as_ref().is_some_and(|fields| fields.has_event_id);
    if looks_like_agents {
        note_event(entry, request.headers, fields.as_ref());
        return invalid_signature(entry, "missing_header");
    }
    reject(
        entry,
        Kind::Other,
        VerdictCode::Unrecognized,
        StatusCode::BAD_REQUEST,
        "unrecognized request: expected a signed voice-agent delivery or a pre-recorded {transcript_id, status} webhook",
        "unrecognized",
    )
}

fn judge_agents(
    shared: &Shared,
    request: &Incoming,
    header: &[u8],
    entry: &mut CaptureEntry,
) -> Judged {
    entry.kind = Kind::Agents;
    if shared.verifier.is_empty() {
        note_event(entry, request.headers, Fields::read(request.body).as_ref());
        return invalid_signature(entry, "no_secret_configured");
    }
    // A header that is not even text cannot parse; let `verify` say so.
    let header = String::from_utf8_lossy(header);
    let verdict = shared.verifier.verify(
        &header,
        request.body,
        request.now,
        shared.config.tolerance_secs,
    );
    entry.matched = verdict.matched().map(str::to_owned);
    // Read only now: a forged body is scanned for its ids (to show and
    // capture them), never built into a document.
    let shape = Shape::of(request.body);
    note_event(entry, request.headers, shape.fields());
    let mut judged = match verdict.reason() {
        Some(reason) => invalid_signature(entry, signature_reason(reason)),
        None => accept_event(shared, &shape, entry),
    };
    judged.signature = Some(verdict);
    judged
}

/// A correctly signed body: it must be a JSON event with an `event_id`.
fn accept_event(shared: &Shared, shape: &Shape, entry: &mut CaptureEntry) -> Judged {
    let event_id = match shape {
        Shape::NotJson => Err("not_json"),
        Shape::OtherJson => Err("no_event_id"),
        Shape::Object(fields) => fields.event_id.as_deref().ok_or("no_event_id"),
    };
    match event_id {
        Ok(event_id) => {
            let fresh = shared.first_time(&format!("event:{event_id}"));
            accept(entry, Kind::Agents, !fresh)
        }
        Err(reason) => reject(
            entry,
            Kind::Agents,
            VerdictCode::MalformedPayload,
            StatusCode::BAD_REQUEST,
            "malformed payload",
            reason,
        ),
    }
}

fn judge_prerecorded(
    shared: &Shared,
    request: &Incoming,
    payload: PrerecordedPayload,
    entry: &mut CaptureEntry,
) -> Judged {
    entry.kind = Kind::Prerecorded;
    entry.untrusted_source = !shared.config.trust_any_source && !is_platform_source(request.peer);
    let key = format!("transcript:{}:{}", payload.transcript_id, payload.status);
    entry.transcript_id = Some(payload.transcript_id);
    entry.transcript_status = Some(payload.status);
    if let Some((name, expected)) = &shared.config.auth_header
        && let Err(reason) = check_auth(request.headers, name, expected)
    {
        return reject(
            entry,
            Kind::Prerecorded,
            VerdictCode::AuthFailed,
            StatusCode::UNAUTHORIZED,
            "auth failed",
            reason,
        );
    }
    let fresh = shared.first_time(&key);
    accept(entry, Kind::Prerecorded, !fresh)
}

/// `{transcript_id, status}` (spec 6 D), both strings.
struct PrerecordedPayload {
    transcript_id: String,
    status: String,
}

impl PrerecordedPayload {
    fn from_fields(fields: &Fields) -> Option<Self> {
        Some(Self {
            transcript_id: fields.transcript_id.clone()?,
            status: fields.status.clone()?,
        })
    }
}

/// The configured header with the configured value, compared in constant
/// time; the error is the reason code.
fn check_auth(
    headers: &HeaderMap,
    name: &str,
    expected: &SecretString,
) -> Result<(), &'static str> {
    let Some(value) = headers.get(name) else {
        return Err("missing_header");
    };
    let matches: bool = value.as_bytes().ct_eq(expected.expose().as_bytes()).into();
    if matches { Ok(()) } else { Err("wrong_value") }
}

fn is_platform_source(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => PLATFORM_SOURCES.contains(&v4),
        IpAddr::V6(_) => false,
    }
}

/// `event` and `event_id` of a voice-agent payload (the `X-SVC-Event`
/// header when the body does not say).
fn note_event(entry: &mut CaptureEntry, headers: &HeaderMap, fields: Option<&Fields>) {
    entry.event = fields.and_then(|fields| fields.event.clone()).or_else(|| {
        headers
            .get("x-svc-event")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    });
    entry.event_id = fields.and_then(|fields| fields.event_id.clone());
}

/// The JSON `reason` of a 401 for a signature that does not verify.
fn signature_reason(reason: &InvalidReason) -> &'static str {
    match reason {
        InvalidReason::MalformedHeader(_) => "malformed_header",
        InvalidReason::TimestampOutsideTolerance { skew_secs, .. } if *skew_secs > 0 => {
            "timestamp_too_old"
        }
        InvalidReason::TimestampOutsideTolerance { .. } => "timestamp_in_future",
        InvalidReason::NoMatchingSignature { .. } => "no_matching_signature",
    }
}

fn accept(entry: &mut CaptureEntry, kind: Kind, duplicate: bool) -> Judged {
    entry.kind = kind;
    entry.status = StatusCode::OK.as_u16();
    entry.duplicate = duplicate;
    entry.verdict = if duplicate {
        VerdictCode::Duplicate
    } else {
        VerdictCode::Ok
    };
    let answer = if duplicate {
        json!({ "ok": true, "duplicate": true })
    } else {
        json!({ "ok": true })
    };
    Judged {
        status: StatusCode::OK,
        answer,
        signature: None,
    }
}

fn reject(
    entry: &mut CaptureEntry,
    kind: Kind,
    verdict: VerdictCode,
    status: StatusCode,
    error: &str,
    reason: &str,
) -> Judged {
    entry.kind = kind;
    entry.status = status.as_u16();
    entry.verdict = verdict;
    entry.reason = Some(reason.to_owned());
    Judged {
        status,
        answer: json!({ "error": error, "reason": reason }),
        signature: None,
    }
}

/// A voice-agent delivery whose signature does not hold, and why.
fn invalid_signature(entry: &mut CaptureEntry, reason: &str) -> Judged {
    reject(
        entry,
        Kind::Agents,
        VerdictCode::InvalidSignature,
        StatusCode::UNAUTHORIZED,
        "invalid signature",
        reason,
    )
}

pub(super) fn too_large(entry: &mut CaptureEntry) -> Judged {
    reject(
        entry,
        Kind::Other,
        VerdictCode::TooLarge,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body too large",
        "too_large",
    )
}

/// The event could not be stored: 503, so the platform tries again.
pub(super) fn store_failed(entry: &mut CaptureEntry, error: &str) -> Judged {
    tracing::error!(error, "event not stored");
    entry.verdict = VerdictCode::StoreFailed;
    entry.status = StatusCode::SERVICE_UNAVAILABLE.as_u16();
    entry.reason = Some("store_failed".to_owned());
    Judged {
        status: StatusCode::SERVICE_UNAVAILABLE,
        answer: json!({ "error": "the event could not be stored; retry", "reason": "store_failed" }),
        signature: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_sources_are_the_two_fixed_addresses() {
        assert!(is_platform_source("44.238.19.20".parse().unwrap()));
        assert!(is_platform_source("54.220.25.36".parse().unwrap()));
        assert!(!is_platform_source("127.0.0.1".parse().unwrap()));
        assert!(!is_platform_source("::1".parse().unwrap()));
    }

    #[test]
    fn auth_header_must_match_exactly() {
        let mut headers = HeaderMap::new();
        let expected = SecretString::new("s3cret value");
        assert_eq!(
            check_auth(&headers, "x-token", &expected),
            Err("missing_header")
        );
        headers.insert("x-token", "s3cret valu".parse().unwrap());
        assert_eq!(
            check_auth(&headers, "x-token", &expected),
            Err("wrong_value")
        );
        headers.insert("x-token", "s3cret value".parse().unwrap());
        assert_eq!(check_auth(&headers, "X-Token", &expected), Ok(()));
    }
}
