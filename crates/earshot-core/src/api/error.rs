//! [`ApiError`]: every way a platform call can fail, with what to do next.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::validate::{InvalidId, ValidationError};

/// A failed platform call. Its `Display` is a sentence for an operator.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Rejected before sending: the request breaks a documented rule.
    #[error("invalid request: {0}")]
    Invalid(#[from] ValidationError),
    /// Rejected before sending: an id that cannot be a path segment.
    #[error(transparent)]
    InvalidId(#[from] InvalidId),
    /// The server answered with a non-success status.
    #[error("{request} failed: HTTP {status}: {body}{}", hint_suffix(*.status))]
    Status {
        request: String,
        status: u16,
        body: ErrorBody,
        retry_after: Option<Duration>,
    },
    /// No answer: connection refused, reset, timed out, TLS failure.
    #[error(
        "{request} failed: could not reach the server: {detail}. Check the URL and network, then retry"
    )]
    Transport { request: String, detail: String },
    /// An answer that does not match the documented shape.
    #[error("{request}: the server's answer could not be read: {detail}")]
    Decode { request: String, detail: String },
    /// The HTTP client itself could not be built.
    #[error("could not set up the HTTP client: {detail}")]
    Setup { detail: String },
    /// Nothing the platform lists matches what was asked (a short id no
    /// subscription starts with): "not found", as a 404 would be.
    #[error("{0}")]
    NotFound(String),
}

impl ApiError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn transport(request: &str, source: &reqwest::Error) -> ApiError {
        ApiError::Transport {
            request: request.to_owned(),
            detail: crate::error_text::chain(source),
        }
    }
}

/// What to do next, by status; empty when the body says enough.
fn hint_suffix(status: u16) -> &'static str {
    match status {
        401 => {
            " — check the API key (`earshot config show`); the key goes in `Authorization` as is"
        }
        403 => " — the account's request limit is exhausted; wait a few minutes before retrying",
        404 => " — no such record; it may have been deleted (list again to refresh)",
        429 => " — rate limited; wait for Retry-After, then retry",
        500..=599 => " — the platform had a problem; retry shortly",
        _ => "",
    }
}

/// The body of an error answer, in whichever documented shape it came.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorBody {
    /// `{error, error_code}`: a dictation request-parse error.
    Parse { error: String, error_code: String },
    /// `{error}` alone: the pre-recorded API's (`/v2`) errors.
    Message(String),
    /// `{status, title, detail}`: a validation or HTTP error.
    Detail {
        status: u16,
        title: String,
        detail: String,
    },
    /// Anything else, kept verbatim (trimmed to a readable length).
    Text(String),
}

#[derive(Deserialize)]
struct ParseShape {
    error: String,
    error_code: String,
}

#[derive(Deserialize)]
struct MessageShape {
    error: String,
}

#[derive(Deserialize)]
struct DetailShape {
    #[serde(default)]
    status: u16,
    #[serde(default)]
    title: String,
    #[serde(default)]
    detail: String,
}

impl ErrorBody {
    /// Reads any documented shape, falling back to the raw text.
    pub fn parse(status: u16, bytes: &[u8]) -> ErrorBody {
        if let Ok(shape) = serde_json::from_slice::<ParseShape>(bytes) {
            return ErrorBody::Parse {
                error: shape.error,
                error_code: shape.error_code,
            };
        }
        if let Ok(shape) = serde_json::from_slice::<MessageShape>(bytes) {
            return ErrorBody::Message(shape.error);
        }
        if let Ok(shape) = serde_json::from_slice::<DetailShape>(bytes)
            && (!shape.title.is_empty() || !shape.detail.is_empty())
        {
            return ErrorBody::Detail {
                status: if shape.status == 0 {
                    status
                } else {
                    shape.status
                },
                title: shape.title,
                detail: shape.detail,
            };
        }
        const MAX: usize = 500;
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        let cut: String = text.chars().take(MAX).collect();
        ErrorBody::Text(if cut.len() < text.len() {
            format!("{cut}…")
        } else {
            cut
        })
    }

    /// The human-readable message alone.
    pub fn message(&self) -> &str {
        match self {
            ErrorBody::Parse { error, .. } | ErrorBody::Message(error) => error,
            ErrorBody::Detail { detail, title, .. } if detail.is_empty() => title,
            ErrorBody::Detail { detail, .. } => detail,
            ErrorBody::Text(text) => text,
        }
    }
}

impl fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorBody::Parse { error, error_code } => write!(f, "{error} ({error_code})"),
            ErrorBody::Message(error) => f.write_str(error),
            ErrorBody::Detail { title, detail, .. } if detail.is_empty() => f.write_str(title),
            ErrorBody::Detail { title, detail, .. } => write!(f, "{title}: {detail}"),
            ErrorBody::Text(text) if text.is_empty() => f.write_str("(empty body)"),
            ErrorBody::Text(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_shape_and_raw_text() {
        assert_eq!(
            ErrorBody::parse(
                400,
                br#"{"error":"config must come first","error_code":"bad_request"}"#
            ),
            ErrorBody::Parse {
                error: "config must come first".into(),
                error_code: "bad_request".into()
            }
        );
        assert_eq!(
            ErrorBody::parse(
                401,
                br#"{"status":401,"title":"Unauthorized","detail":"bad key"}"#
            ),
            ErrorBody::Detail {
                status: 401,
                title: "Unauthorized".into(),
                detail: "bad key".into()
            }
        );
        let message = ErrorBody::parse(404, br#"{"error":"no transcript with id \"x\""}"#);
        assert_eq!(
            message,
            ErrorBody::Message("no transcript with id \"x\"".into())
        );
        assert_eq!(message.to_string(), "no transcript with id \"x\"");
        assert_eq!(
            ErrorBody::parse(502, b"<html>bad gateway</html>\n"),
            ErrorBody::Text("<html>bad gateway</html>".into())
        );
    }

    #[test]
    fn status_errors_say_what_to_do_next() {
        let error = ApiError::Status {
            request: "list subscriptions".into(),
            status: 401,
            body: ErrorBody::Text("nope".into()),
            retry_after: None,
        };
        let text = error.to_string();
        assert!(
            text.contains("HTTP 401") && text.contains("check the API key"),
            "{text}"
        );
    }
}
