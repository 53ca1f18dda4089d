//! API-key checks for the voice agent API: the raw key or `Bearer <key>`.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::SharedState;
use super::problem::Problem;

/// Middleware for `{agents_url}` routes (spec part 5 C).
pub(crate) async fn agents_key(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let Some(presented) = presented else {
        return Problem::new(
            StatusCode::UNAUTHORIZED,
            "missing Authorization header; send the API key",
        )
        .into_response();
    };
    let key = presented.strip_prefix("Bearer ").unwrap_or(presented);
    if !key_matches(key, state.config.api_key.expose()) {
        return Problem::new(StatusCode::UNAUTHORIZED, "invalid API key").into_response();
    }
    next.run(request).await
}

fn key_matches(presented: &str, expected: &str) -> bool {
    presented.as_bytes().ct_eq(expected.as_bytes()).into()
}
