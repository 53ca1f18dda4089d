//! Error answers in the spec's `{status, title, detail}` shape.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::api::validate::ValidationError;

/// An error answer: a status, its canonical title, and a detail sentence.
/// Handlers return `Result<_, Problem>` and use `?`.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    detail: String,
}

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            detail: detail.into(),
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, detail)
    }

    pub fn not_found(what: &str, id: &str) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, format!("no {what} with id {id:?}"))
    }

    pub fn conflict(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::CONFLICT, detail)
    }
}

impl From<ValidationError> for Problem {
    fn from(error: ValidationError) -> Problem {
        Problem::bad_request(error.to_string())
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let body = json!({ "status": self.status.as_u16(), "title": title, "detail": self.detail });
        (self.status, Json(body)).into_response()
    }
}
