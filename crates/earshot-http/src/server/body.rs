//! Request bodies within their limits: every body is wrapped
//! ([`bound_body`]) so that it fails when late, when it pauses too long, or
//! when it would take the server past its body budget, which is answered
//! 503 ([`over_budget`]); each request's share of the budget is given back
//! when it ends ([`Charge`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use tokio::time::Instant;

use super::Shared;
use super::connections::{ConnState, Connection};
use super::limits::unavailable;

/// Why a request body ended early. Handlers find it in the chain of the
/// body's error ([`BodyError::find`]).
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body was not whole within `ServerLimits::body`.
    #[error("the request body did not arrive in time")]
    Late,
    /// The body paused for `ServerLimits::body_idle`.
    #[error("the request body paused too long")]
    Stalled,
    /// Taking the next bytes would go past `ServerLimits::body_budget`.
    #[error("the server holds as many request bytes as it may ({budget} bytes); retry")]
    OverBudget { budget: usize },
}

impl BodyError {
    /// The `BodyError` that caused `error`, if one did.
    pub fn find<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e BodyError> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(found) = error.downcast_ref::<BodyError>() {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// The request was refused for the budget (answer 503, retry).
    pub fn is_over_budget(&self) -> bool {
        matches!(self, BodyError::OverBudget { .. })
    }
}

/// The answer to a request over the body budget: 503, `Retry-After`, and
/// the connection closed (its body is not read).
pub fn over_budget() -> Response {
    unavailable(
        "the server holds as many request bytes as it may; retry",
        "busy",
    )
}

/// One request's share of the server: the budget bytes its body holds
/// (given back when the last holder, the layer or the body, drops it) and
/// whether its body was refused for the budget.
struct Charge {
    shared: Arc<Shared>,
    taken: AtomicUsize,
    refused: AtomicBool,
    connection: Option<Arc<ConnState>>,
    /// The answer is out of the handler: a body ending later changes
    /// nothing.
    answered: AtomicBool,
}

impl Charge {
    fn new(shared: Arc<Shared>, connection: Option<Arc<ConnState>>) -> Charge {
        Charge {
            shared,
            taken: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            connection,
            answered: AtomicBool::new(false),
        }
    }

    /// The body is whole: the handler works on the answer, and its
    /// connection is not one to close for a new client meanwhile.
    fn body_done(&self) {
        if let Some(connection) = &self.connection
            && !self.answered.load(Ordering::Acquire)
        {
            connection.serving.store(true, Ordering::Release);
        }
    }

    /// The answer left the handler (once; later calls do nothing).
    fn answered(&self) {
        if self.answered.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(connection) = &self.connection {
            connection.serving.store(false, Ordering::Release);
            connection
                .last_byte
                .store(self.shared.now_ms(), Ordering::Release);
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.answered();
        self.shared.give_back(*self.taken.get_mut());
    }
}

/// `body`, failing when it is late ([`BodyError::Late`]), pauses too long
/// ([`BodyError::Stalled`]) or would go past the body budget
/// ([`BodyError::OverBudget`]); its bytes are charged to `charge`.
fn bounded(body: Body, charge: Arc<Charge>) -> Body {
    let limits = charge.shared.limits;
    let budget = limits.body_budget;
    let deadline = Instant::now() + limits.body;
    let stream = body.into_data_stream();
    let chunks = futures_util::stream::unfold(Some(stream), move |stream| {
        let charge = charge.clone();
        async move {
            let mut stream = stream?;
            let pause = Instant::now() + limits.body_idle;
            let (wait, late) = if deadline <= pause {
                (deadline, BodyError::Late)
            } else {
                (pause, BodyError::Stalled)
            };
            let error = match tokio::time::timeout_at(wait, stream.next()).await {
                Ok(Some(Ok(bytes))) => {
                    if charge.shared.take(bytes.len()) {
                        charge.taken.fetch_add(bytes.len(), Ordering::AcqRel);
                        return Some((Ok::<Bytes, axum::BoxError>(bytes), Some(stream)));
                    }
                    charge.refused.store(true, Ordering::Release);
                    BodyError::OverBudget { budget }.into()
                }
                Ok(Some(Err(error))) => axum::BoxError::from(error),
                Ok(None) => {
                    charge.body_done();
                    return None;
                }
                Err(_) => late.into(),
            };
            Some((Err(error), None))
        }
    });
    Body::from_stream(chunks)
}

/// Replaces the request body with one that fails (and so ends the request
/// and its connection) when the body is late, pauses too long, or would go
/// past the body budget; answers 503 for a request over the budget.
pub(super) async fn bound_body(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let connection = parts
        .extensions
        .get::<ConnectInfo<Connection>>()
        .map(|ConnectInfo(connection)| connection.clone());
    if let Some(connection) = &connection {
        parts.extensions.insert(ConnectInfo(connection.peer));
    }
    // A declared length that fits the budget on its own but not beside
    // what is held now: refused before a byte is read. (One larger than
    // the whole budget is the handler's to refuse, as too large.)
    let budget = shared.limits.body_budget;
    let declared = body
        .size_hint()
        .exact()
        .and_then(|len| usize::try_from(len).ok());
    if let Some(len) = declared
        && len <= budget
        && shared.held.load(Ordering::Acquire).saturating_add(len) > budget
    {
        tracing::debug!(len, "request refused: over the body budget");
        return over_budget();
    }
    let charge = Arc::new(Charge::new(
        shared.clone(),
        connection.map(|connection| connection.state),
    ));
    if body.is_end_stream() {
        charge.body_done();
    }
    let body = bounded(body, charge.clone());
    let response = next.run(Request::from_parts(parts, body)).await;
    charge.answered();
    if charge.refused.load(Ordering::Acquire) {
        tracing::debug!("request refused: over the body budget");
        return over_budget();
    }
    response
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    #[tokio::test]
    async fn a_body_past_the_budget_fails_and_every_byte_is_given_back() {
        let shared = Shared::with_budget(2 * 1024 * 1024);
        let chunk = Bytes::from(vec![0u8; 1024 * 1024]);
        let chunks = futures_util::stream::iter(
            [chunk.clone(), chunk.clone(), chunk].map(Ok::<_, io::Error>),
        );
        let charge = Arc::new(Charge::new(shared.clone(), None));
        let body = bounded(Body::from_stream(chunks), charge.clone());
        let error = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect_err("the third MiB is past the budget");
        let found = BodyError::find(&error).expect("a body error in the chain");
        assert!(found.is_over_budget(), "{found}");
        assert!(charge.refused.load(Ordering::Acquire));
        assert_eq!(shared.held.load(Ordering::Acquire), 2 * 1024 * 1024);
        drop(charge);
        assert_eq!(shared.held.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_body_within_the_budget_is_whole() {
        let shared = Shared::with_budget(2 * 1024 * 1024);
        let chunks = futures_util::stream::iter(
            [Bytes::from_static(b"abc"), Bytes::from_static(b"def")].map(Ok::<_, io::Error>),
        );
        let charge = Arc::new(Charge::new(shared.clone(), None));
        let body = bounded(Body::from_stream(chunks), charge.clone());
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(&bytes[..], b"abcdef");
        assert_eq!(shared.held.load(Ordering::Acquire), 6);
        drop(charge);
        assert_eq!(shared.held.load(Ordering::Acquire), 0);
    }
}
