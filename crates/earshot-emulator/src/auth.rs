//! API-key checks: the one comparison every area uses ([`key_matches`],
//! which never matches an empty key), and the voice agent API's middleware
//! (the raw key or `Bearer <key>`).

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
    if !key_matches(key.as_bytes(), state.config.api_key.expose().as_bytes()) {
        return Problem::new(StatusCode::UNAUTHORIZED, "invalid API key").into_response();
    }
    next.run(request).await
}

/// Whether `presented` is the account's key, in constant time. An empty
/// key never matches (the emulator refuses to start with one, and this is
/// the second lock).
pub(crate) fn key_matches(presented: &[u8], expected: &[u8]) -> bool {
    !expected.is_empty() && bool::from(presented.ct_eq(expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_key_never_matches() {
        assert!(!key_matches(b"", b""));
        assert!(!key_matches(b"anything", b""));
        assert!(key_matches(b"emu_key", b"emu_key"));
        assert!(!key_matches(b"", b"emu_key"));
    }
}
