//! The receiver's server: [`start`] binds and serves it (through
//! [`crate::http_server`], with its limits and timeouts), [`Listener`]
//! stops it, and the one handler every request goes through reads the
//! body within its bounds, has it judged, kept and captured, answers, and
//! queues it for the reader.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{SecondsFormat, Utc};

use super::judge::{Incoming, Judged, judge, store_failed, too_large};
use super::requests::{self, Received, Requests, queued_cost};
use super::state::Shared;
use super::{ListenConfig, MAX_BODY_BYTES};
use crate::http_server::{self, BodyError, Running, ServerLimits};
use crate::receiver::capture::{
    self, CaptureEntry, CaptureError, CaptureWriter, Kind, VerdictCode,
};
use crate::store::events::ObservedEvent;

/// The receiver could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Capture(#[from] CaptureError),
}

/// A running receiver; stops when [`stop`](Listener::stop)ped or dropped.
#[derive(Debug)]
pub struct Listener {
    pub addr: SocketAddr,
    /// Serving https.
    tls: bool,
    server: Running,
}

impl Listener {
    /// `http://HOST:PORT` (`https://` with TLS): point subscriptions and
    /// webhook URLs here (any path is accepted).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// How many connections it holds open now.
    pub fn open_connections(&self) -> usize {
        self.server.open_connections()
    }

    /// Stops accepting, lets open requests finish (briefly), and returns.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// Starts the receiver on `bind` (port 0 picks one): the running listener
/// and the stream of every request it gets.
pub async fn start(
    bind: SocketAddr,
    config: ListenConfig,
) -> Result<(Listener, Requests), ListenError> {
    start_with_limits(bind, config, ServerLimits::webhooks()).await
}

/// [`start`] with other connection limits and timeouts than a webhook
/// receiver's ([`ServerLimits::webhooks`]).
pub async fn start_with_limits(
    bind: SocketAddr,
    config: ListenConfig,
    limits: ServerLimits,
) -> Result<(Listener, Requests), ListenError> {
    let writer = match &config.capture {
        Some(path) => Some(CaptureWriter::open(path)?),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| ListenError::Bind { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ListenError::Bind { addr: bind, source })?;
    let (outbox, requests) = requests::bounded(config.queue_bytes);
    let tls = config.tls.clone();
    let tls_on = tls.is_some();
    let shared = Arc::new(Shared::new(config, writer, outbox));
    let app = Router::new().fallback(receive).with_state(shared);
    Ok((
        Listener {
            addr,
            tls: tls_on,
            server: Running::spawn(
                listener,
                app,
                limits,
                tls.as_ref().map(crate::tls::ServerTls::acceptor),
            ),
        },
        requests,
    ))
}

/// Every request: its body read within [`MAX_BODY_BYTES`] and the
/// server's budget, judged, kept in the store, captured, answered, and
/// queued for the reader (503 while the reader is too far behind).
async fn receive(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let now = Utc::now();
    let (parts, body) = request.into_parts();
    let mut entry = CaptureEntry::unjudged(
        now.to_rfc3339_opts(SecondsFormat::Millis, true),
        now.timestamp(),
        SocketAddr::new(peer.ip().to_canonical(), peer.port()).to_string(),
        parts.method.to_string(),
        parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned()),
        header_pairs(&parts.headers),
    );
    let read = axum::body::to_bytes(body, MAX_BODY_BYTES).await;
    // Refused for the server's body budget: 503 (the platform retries),
    // neither captured nor reported, like a request refused before its
    // body was read.
    if let Err(error) = &read
        && BodyError::find(error).is_some_and(BodyError::is_over_budget)
    {
        return http_server::over_budget();
    }
    // The reader of the requests is this far behind: 503 too, before the
    // entry's copies of the body are made.
    let cost = queued_cost(read.as_ref().map_or(0, Bytes::len), &parts.headers);
    let Some(place) = shared.outbox.reserve(cost) else {
        tracing::debug!("request refused: the reader of the requests is behind");
        return http_server::unavailable(
            "the receiver is not keeping up with its requests; retry",
            "backlog",
        );
    };
    let (bytes, judged) = match read {
        Ok(bytes) => {
            let request = Incoming {
                method: &parts.method,
                headers: &parts.headers,
                peer: peer.ip().to_canonical(),
                body: &bytes,
                now: now.timestamp(),
            };
            let judged = judge(&shared, &request, &mut entry);
            (bytes, judged)
        }
        Err(_) => (Bytes::new(), too_large(&mut entry)),
    };
    let (mut judged, store_error, unfiled) =
        match shared.keep(&entry, &bytes, now.timestamp_millis()).await {
            Ok(unfiled) => (judged, None, unfiled),
            Err(error) => (store_failed(&mut entry, &error), Some(error), None),
        };
    forward(&shared, &parts.headers, &bytes, &mut entry, &mut judged).await;
    if !shared.config.capture_secrets {
        let auth_name = shared
            .config
            .auth_header
            .as_ref()
            .map(|(name, _)| name.as_str());
        capture::redact_secret_headers(&mut entry.headers, auth_name);
    }
    let capture_error = shared.record(&entry, &bytes);
    let mut response = (judged.status, axum::Json(judged.answer)).into_response();
    if judged.status == StatusCode::METHOD_NOT_ALLOWED {
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    }
    let received = Received {
        entry,
        body: bytes,
        signature: judged.signature,
        capture_error,
        store_error,
        unfiled,
    };
    if let Some(watch) = &shared.config.watch {
        watch.answered(&received);
    }
    shared.outbox.send(received, place);
    response
}

/// With [`ListenConfig::forward`], a verified, new voice-agent delivery
/// goes to the app, whose answer becomes the platform's (502 when the app
/// gave none); one the app did not take is forgotten by the dedupe
/// memory, so the platform's retry goes to the app again.
async fn forward(
    shared: &Shared,
    headers: &HeaderMap,
    body: &Bytes,
    entry: &mut CaptureEntry,
    judged: &mut Judged,
) {
    let Some(forward) = &shared.config.forward else {
        return;
    };
    if entry.kind != Kind::Agents || entry.verdict != VerdictCode::Ok {
        return;
    }
    let Some(app) = forward.app_for(entry.event.as_deref().unwrap_or_default()) else {
        return;
    };
    // Turns are taken per session or call; an event that names none
    // waits for no other.
    let turn = ObservedEvent::from_delivery(body, Vec::new(), None, 0)
        .map(|event| event.session_id)
        .or_else(|| entry.event_id.clone())
        .unwrap_or_default();
    let forwarded = forward.send(app, &turn, headers, body).await;
    if !forwarded.taken()
        && let Some(event_id) = &entry.event_id
    {
        shared.forget_event(event_id);
    }
    judged.status = forwarded
        .status
        .and_then(|status| StatusCode::from_u16(status).ok())
        .unwrap_or(StatusCode::BAD_GATEWAY);
    judged.answer = serde_json::json!({ "ok": forwarded.taken(), "app_status": forwarded.status });
    entry.status = judged.status.as_u16();
    entry.forwarded = Some(forwarded);
}

fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}
