//! Error answers, each in the documented shape of the area it belongs to.
//!
//! Handlers return [`Problem`] (a status and a sentence) without caring
//! about shapes. [`Problem::into_response`] renders the spec's
//! `{status, title, detail}` and tags the response with the problem;
//! [`in_area_shape`], one layer on the whole router, re-renders tagged
//! answers under `/v2` as the pre-recorded API's `{"error": "<message>"}`
//! (the shape its official SDKs read), and turns every other error answer
//! that is not JSON (axum's own rejections: a body over the limit, a path
//! that does not decode, a wrong method) into a problem of the same status.
//! [`no_route`] is the router's fallback; a request target longer than
//! [`MAX_URI_BYTES`] is refused before routing. Headers such as
//! `Retry-After` and `Allow` are kept. [`parse_body`] reads a JSON control
//! body, answering a 400 problem when it does not fit.

use axum::Json;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use earshot_protocol::validate::ValidationError;

/// An error answer: a status, its canonical title, and a detail sentence.
/// Handlers return `Result<_, Problem>` and use `?`.
#[derive(Clone, Debug)]
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

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The body of this problem in `area`'s shape.
    fn body(&self, area: Area) -> serde_json::Value {
        match area {
            Area::Prerecorded => json!({ "error": self.detail }),
            Area::Other => {
                let title = self.status.canonical_reason().unwrap_or("Error");
                json!({ "status": self.status.as_u16(), "title": title, "detail": self.detail })
            }
        }
    }
}

impl From<ValidationError> for Problem {
    fn from(error: ValidationError) -> Problem {
        Problem::bad_request(error.to_string())
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body(Area::Other))).into_response();
        response.extensions_mut().insert(self);
        response
    }
}

/// Which documented error shape a path's answers take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Area {
    /// `/v2`: the pre-recorded API, `{"error": "<message>"}`.
    Prerecorded,
    /// Dictation, sync, agents `/v1` and the emulator's own routes:
    /// `{status, title, detail}` (dictation's `{error, error_code}` parse
    /// errors are rendered by its handler and left alone).
    Other,
}

impl Area {
    fn of(path: &str) -> Area {
        if path == "/v2" || path.starts_with("/v2/") {
            Area::Prerecorded
        } else {
            Area::Other
        }
    }
}

/// The longest request target (path and query) the emulator reads; longer
/// ones get 414 (hyper itself answers 414, without a body, past 64 KiB).
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;
/// The most of a rejection's plain-text body kept as the problem's detail.
const MAX_REJECTION_BYTES: usize = 4 * 1024;

/// The router's fallback: a path no route serves.
pub(crate) async fn no_route(method: Method, uri: axum::http::Uri) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        format!("no such endpoint: {method} {}", uri.path()),
    )
}

/// Middleware on the whole router: every error answer in the shape of the
/// area its request's path belongs to.
pub(crate) async fn in_area_shape(request: Request, next: Next) -> Response {
    let area = Area::of(request.uri().path());
    let target_len = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target_len > MAX_URI_BYTES {
        let problem = Problem::new(
            StatusCode::URI_TOO_LONG,
            format!(
                "the request target is {target_len} bytes long; at most {MAX_URI_BYTES} are read"
            ),
        );
        return render(problem.clone().into_response(), &problem, area);
    }
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    if let Some(problem) = response.extensions_mut().remove::<Problem>() {
        return match area {
            Area::Other => response,
            Area::Prerecorded => render(response, &problem, area),
        };
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_REJECTION_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let detail = if !text.is_empty() {
        text
    } else if status == StatusCode::METHOD_NOT_ALLOWED {
        // axum adds `Allow` outside this layer, so it is named, not copied.
        format!("{method} is not allowed on {path}; the Allow header lists the methods that are")
    } else {
        status.canonical_reason().unwrap_or("error").to_owned()
    };
    let problem = Problem::new(status, detail);
    render(Response::from_parts(parts, Body::empty()), &problem, area)
}

/// `response`'s status and headers with `problem` in `area`'s shape.
fn render(response: Response, problem: &Problem, area: Area) -> Response {
    let (mut parts, _) = response.into_parts();
    let body = problem.body(area).to_string();
    parts.headers.remove(CONTENT_LENGTH);
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(body))
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"))
}

/// A control body: empty means `{}`; anything else must match `T`.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body)
        .map_err(|error| Problem::bad_request(format!("invalid body: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_are_told_apart_by_path() {
        assert_eq!(Area::of("/v2/transcript/x"), Area::Prerecorded);
        assert_eq!(Area::of("/v2"), Area::Prerecorded);
        assert_eq!(Area::of("/v2x"), Area::Other);
        assert_eq!(Area::of("/v1/webhook-subscriptions"), Area::Other);
        assert_eq!(Area::of("/_emulator/stats"), Area::Other);
    }
}
