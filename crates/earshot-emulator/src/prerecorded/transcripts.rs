//! The transcript routes: `POST /v2/transcript` (the body's rules) and
//! `GET /v2/transcript/{id}`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::queue::pump;
use super::records::Job;
use crate::SharedState;
use crate::problem::Problem;
use earshot_protocol::redact::SecretString;
use earshot_protocol::types::prerecorded::{NewTranscript, Transcript};
use earshot_protocol::validate::prerecorded::RESERVED_AUTH_HEADERS;

/// A validated `POST /v2/transcript` body.
struct NewJob {
    audio_url: String,
    webhook_url: Option<String>,
    webhook_auth: Option<(HeaderName, HeaderValue)>,
}

/// Parses and checks the body with the client's own rules
/// ([`NewTranscript::validate`]) plus the header names a call sets itself.
/// Fields beyond the four of part 2 D are accepted and ignored.
fn parse_create(body: &[u8]) -> Result<NewJob, Problem> {
    let object = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err(Problem::bad_request("the body must be a JSON object")),
        Err(error) => {
            return Err(Problem::bad_request(format!(
                "the body is not valid JSON: {error}"
            )));
        }
    };
    let field = |name: &'static str| -> Result<Option<String>, Problem> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(Problem::bad_request(format!("`{name}`: must be a string"))),
        }
    };
    let request = NewTranscript {
        audio_url: field("audio_url")?
            .ok_or_else(|| Problem::bad_request("`audio_url`: is required"))?,
        webhook_url: field("webhook_url")?,
        webhook_auth_header_name: field("webhook_auth_header_name")?,
        webhook_auth_header_value: field("webhook_auth_header_value")?.map(SecretString::new),
    };
    request.validate()?;
    let webhook_auth = match (
        &request.webhook_auth_header_name,
        &request.webhook_auth_header_value,
    ) {
        (Some(name), Some(value)) => {
            let invalid_name = || {
                Problem::bad_request(format!(
                    "`webhook_auth_header_name`: {name:?} is not a valid HTTP header name"
                ))
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid_name())?;
            if RESERVED_AUTH_HEADERS.contains(&name.as_str()) {
                return Err(Problem::bad_request(format!(
                    "`webhook_auth_header_name`: {name} is set by the webhook call itself; \
                     choose another name"
                )));
            }
            let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
                Problem::bad_request(
                    "`webhook_auth_header_value`: contains characters an HTTP header cannot carry",
                )
            })?;
            value.set_sensitive(true);
            Some((name, value))
        }
        _ => None,
    };
    Ok(NewJob {
        audio_url: request.audio_url,
        webhook_url: request.webhook_url,
        webhook_auth,
    })
}

/// `POST /v2/transcript`: 200 (as the platform, and its SDKs, expect) with
/// the record, `processing` when a slot is free, `queued` otherwise.
pub(crate) async fn create(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Response, Problem> {
    let new = parse_create(&body)?;
    let id = uuid::Uuid::new_v4().to_string();
    let job = Job::queued(id.clone(), new.audio_url, new.webhook_url, new.webhook_auth);
    let record = {
        let mut jobs = state.prerecorded.jobs();
        jobs.transcripts.insert(id.clone(), job);
        jobs.queue.push_back(id.clone());
        pump(&state, &mut jobs);
        jobs.transcripts.get(&id).map(Job::record)
    };
    let record = record.ok_or_else(|| Problem::not_found("transcript", &id))?;
    Ok(Json(record).into_response())
}

/// `GET /v2/transcript/{id}`.
pub(super) async fn get_transcript(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<Transcript>, Problem> {
    state
        .prerecorded
        .jobs()
        .transcripts
        .get(&id)
        .map(|job| Json(job.record()))
        .ok_or_else(|| Problem::not_found("transcript", &id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_body_rules() {
        let ok = |body: &str| parse_create(body.as_bytes()).map(|_| ());
        assert!(ok(r#"{"audio_url": "https://example.com/a.wav"}"#).is_ok());
        assert!(
            ok(r#"{"audio_url": "https://example.com/a.wav", "speaker_labels": true}"#).is_ok()
        );
        assert!(
            ok(r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "http://127.0.0.1:9/h?x=1",
                   "webhook_auth_header_name": "X-Token", "webhook_auth_header_value": "s3cret"}"#)
            .is_ok()
        );
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"audio_url": 5}"#,
            r#"{"audio_url": "not a url"}"#,
            r#"{"audio_url": "ftp://example.com/a.wav"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "mailto:a@b.c"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "X-Token"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "bad name", "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "Content-Type", "webhook_auth_header_value": "v"}"#,
            r#"{"audio_url": "https://example.com/a.wav", "webhook_url": "https://h/",
                "webhook_auth_header_name": "X-Token", "webhook_auth_header_value": "a\nb"}"#,
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
    }
}
