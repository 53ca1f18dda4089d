//! The demo's four webhook receivers (healthy, reserialises-body, slow,
//! redirects): small axum servers on `127.0.0.1:0`, each showing one way a
//! customer's endpoint answers deliveries.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use url::Url;

use super::{ScenarioError, Secrets, TRANSCRIPT_TOKEN_HEADER};
use earshot_emulator::TimeScale;
use earshot_protocol::redact::SecretString;
use earshot_protocol::signature::{self, Candidate};

pub(super) struct ReceiverUrls {
    pub(super) healthy: Url,
    pub(super) reserialiser: Url,
    pub(super) slow: Url,
    pub(super) redirects: Url,
}

/// Binds and serves the four receivers; their tasks go into `tasks`.
pub(super) async fn start_receivers(
    secrets: &Secrets,
    scale: TimeScale,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<ReceiverUrls, ScenarioError> {
    let healthy = Router::new()
        .route("/webhooks", post(healthy_webhook))
        .route("/transcripts", post(healthy_transcript))
        .with_state(Arc::new(Healthy {
            secrets: vec![
                ("healthy", secrets.healthy.clone()),
                ("paused", secrets.paused.clone()),
            ],
            transcript_token: secrets.transcript_token.clone(),
        }));
    let healthy = serve("healthy", healthy, tasks).await?;
    let reserialiser = Router::new()
        .route("/webhooks", post(reserialising_webhook))
        .with_state(Arc::new(secrets.reserialiser.clone()));
    let reserialiser = serve("reserialises-body", reserialiser, tasks).await?;
    let deadline = scale.scale(earshot_emulator::DELIVERY_DEADLINE);
    let slow = Router::new()
        .route("/webhooks", post(slow_webhook))
        .with_state(Arc::new(Slow {
            delay: (deadline * 2).max(deadline + Duration::from_millis(250)),
        }));
    let slow = serve("slow", slow, tasks).await?;
    let redirects = Router::new()
        .route("/webhooks", post(redirecting_webhook))
        .with_state(Arc::new(healthy.to_string()));
    let redirects = serve("redirects", redirects, tasks).await?;
    Ok(ReceiverUrls {
        healthy,
        reserialiser,
        slow,
        redirects,
    })
}

/// Serves `router` on `127.0.0.1:0`; the URL of its `/webhooks` route.
/// Aborting the task closes the listener and, gracefully, its connections.
async fn serve(
    role: &'static str,
    router: Router,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<Url, ScenarioError> {
    let bind = |source| ScenarioError::Receiver { role, source };
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    tasks.push(tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(role, "demo receiver stopped: {error}");
        }
    }));
    Url::parse(&format!("http://{addr}/webhooks"))
        .map_err(|error| ScenarioError::Setup(error.to_string()))
}

fn signature_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(signature::HEADER_NAME)
        .and_then(|value| value.to_str().ok())
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

struct Healthy {
    /// The healthy subscription's secret, and the paused one's (so that
    /// resuming it in the console shows deliveries succeeding).
    secrets: Vec<(&'static str, SecretString)>,
    transcript_token: SecretString,
}

/// Verifies the signature over the raw bytes, as a receiver should.
async fn healthy_webhook(
    State(receiver): State<Arc<Healthy>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(header) = signature_header(&headers) else {
        return (StatusCode::BAD_REQUEST, "missing X-SVC-Signature").into_response();
    };
    let candidates = Candidate::all(&receiver.secrets);
    let verdict = signature::verify(
        header,
        &body,
        &candidates,
        now(),
        signature::DEFAULT_TOLERANCE_SECS,
    );
    if verdict.is_valid() {
        (StatusCode::OK, "ok").into_response()
    } else {
        // A rotated secret the receiver was not told about lands here.
        tracing::debug!(%verdict, "demo healthy receiver rejected a delivery");
        (StatusCode::UNAUTHORIZED, "invalid signature").into_response()
    }
}

/// Pre-recorded webhooks carry the job's auth header, not a signature.
async fn healthy_transcript(State(receiver): State<Arc<Healthy>>, headers: HeaderMap) -> Response {
    let token = headers
        .get(TRANSCRIPT_TOKEN_HEADER)
        .and_then(|value| value.to_str().ok());
    if token == Some(receiver.transcript_token.expose()) {
        (StatusCode::OK, "ok").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, "missing or wrong X-Demo-Token").into_response()
    }
}

/// The classic mistake: parse the JSON, serialise it again (pretty), and
/// compute the HMAC over that. The bytes differ, so the check fails.
async fn reserialising_webhook(
    State(secret): State<Arc<SecretString>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(header) = signature_header(&headers) else {
        return (StatusCode::BAD_REQUEST, "missing X-SVC-Signature").into_response();
    };
    let reserialised =
        serde_json::from_slice::<Value>(&body).and_then(|value| serde_json::to_vec_pretty(&value));
    let Ok(reserialised) = reserialised else {
        return (StatusCode::BAD_REQUEST, "body is not JSON").into_response();
    };
    let candidate = Candidate {
        label: "current",
        secret: secret.expose().as_bytes(),
    };
    let verdict = signature::verify(
        header,
        &reserialised,
        &[candidate],
        now(),
        signature::DEFAULT_TOLERANCE_SECS,
    );
    if verdict.is_valid() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, "invalid signature").into_response()
    }
}

struct Slow {
    /// Longer than the emulator's scaled delivery deadline.
    delay: Duration,
}

/// Answers 200, but only after the platform has given up waiting.
async fn slow_webhook(State(receiver): State<Arc<Slow>>) -> Response {
    tokio::time::sleep(receiver.delay).await;
    (StatusCode::OK, "ok, eventually").into_response()
}

/// A receiver that moved: 301 to the healthy one (deliveries do not
/// follow redirects).
async fn redirecting_webhook(State(location): State<Arc<String>>) -> Response {
    (
        StatusCode::MOVED_PERMANENTLY,
        [(LOCATION, location.as_str())],
        "moved permanently",
    )
        .into_response()
}
