//! A correct webhook receiver (spec parts 5 C/D, 6 C/D, 8 C/D), usable in
//! process (the console embeds it) and by `earshot listen`.
//!
//! It accepts a POST on any path and answers at once:
//! - a voice-agent delivery (it carries `X-SVC-Signature`) is verified over
//!   the raw bytes with the current then the previous secret and a 300 s
//!   tolerance; a bad, missing or stale signature gets 401 with a short JSON
//!   reason; a valid one is deduplicated by `event_id` (a repeat gets 200
//!   and is flagged, not processed twice);
//! - a pre-recorded webhook (`{transcript_id, status}`, no signature) must
//!   carry the configured auth header, compared in constant time; a source
//!   outside the platform's fixed addresses is flagged (still 200); it is
//!   deduplicated by `(transcript_id, status)`;
//! - anything else gets 405 (not a POST) or 400.
//!
//! No body is built into a JSON document: a signature is checked over the
//! raw bytes before anything reads them as JSON, and what is read is only
//! the few top-level strings the verdict and the display need
//! ([`super::fields`]), so a forged or unsigned body costs its bytes and
//! no more.
//!
//! Every request, rejected or not, is captured ([`super::capture`]): sent on
//! the stream [`start`] returns ([`Requests`]) and appended to the capture
//! file if one is configured. Dedupe memory is bounded ([`DEDUPE_CAPACITY`]
//! keys, oldest forgotten first), and so is what waits on the stream
//! ([`ListenConfig::queue_bytes`]): while its reader lags that far behind,
//! new requests are answered 503 (the platform retries), not queued.
//!
//! It serves plain HTTP, or https when [`ListenConfig::tls`] is given
//! (`earshot listen --tls-cert/--tls-key`; the console's Inbox stays
//! plain, on loopback).

use std::collections::{HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{SecondsFormat, Utc};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::capture::{self, CaptureEntry, CaptureError, CaptureWriter, Kind, VerdictCode};
use super::fields::{Fields, Shape};
use super::watch::Watch;
use crate::http_server::{self, BodyError, ServerLimits};
use crate::redact::SecretString;
use crate::signature::{self, Candidate, InvalidReason, Verdict, Verifier};
use crate::store::events::Filing;
use crate::store::writer::Writer;
use crate::tls::ServerTls;

/// The addresses every pre-recorded delivery comes from (spec 5 D).
pub const PLATFORM_SOURCES: [Ipv4Addr; 2] = [
    Ipv4Addr::new(44, 238, 19, 20),
    Ipv4Addr::new(54, 220, 25, 36),
];

/// How many delivery keys (event ids, transcript id + status) are
/// remembered for deduplication; the oldest is forgotten first.
pub const DEDUPE_CAPACITY: usize = 100_000;

/// Largest body read; a bigger one gets 413 (and is captured without it).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// What may wait on the [`Requests`] stream for its reader, by default:
/// six of the largest requests, or thousands of ordinary deliveries.
pub const QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// How long [`Listener::stop`] waits for open connections to finish.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What the receiver accepts.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    /// Signing secrets to try, in order, with the label reported when one
    /// matches: `("current", ..)` then `("previous", ..)` during a rotation.
    pub secrets: Vec<(String, SecretString)>,
    /// Allowed distance between the signature's `t` and the receiver's
    /// clock (spec 8 C: 300).
    pub tolerance_secs: u64,
    /// Header name and value every pre-recorded webhook must carry.
    pub auth_header: Option<(String, SecretString)>,
    /// Do not flag pre-recorded webhooks from outside [`PLATFORM_SOURCES`].
    pub trust_any_source: bool,
    /// Serve https with this certificate (`listen --tls-cert`); plain
    /// HTTP when `None`.
    pub tls: Option<ServerTls>,
    /// Append every request to this JSON-lines file.
    pub capture: Option<PathBuf>,
    /// Keep every new voice-agent event in the incident-history store
    /// before answering 2xx (the observer).
    pub store: Option<Writer>,
    /// Told of every request answered and every store write (the
    /// observer's metrics and health).
    pub watch: Option<Arc<dyn Watch>>,
    /// Keep secret header values (the auth header, `authorization`, ...)
    /// verbatim in the entries instead of a fingerprint.
    pub capture_secrets: bool,
    /// Bytes of requests that may wait on the [`Requests`] stream for its
    /// reader (each counted as its body and headers, from when its body is
    /// read). Past it a request is answered 503 with `Retry-After`,
    /// neither captured nor queued: a reader that stops (a `jobs watch`
    /// whose stdout blocks) costs this much, not every request since.
    pub queue_bytes: usize,
}

impl Default for ListenConfig {
    fn default() -> Self {
        Self {
            secrets: Vec::new(),
            tolerance_secs: signature::DEFAULT_TOLERANCE_SECS,
            auth_header: None,
            trust_any_source: false,
            tls: None,
            capture: None,
            store: None,
            watch: None,
            capture_secrets: false,
            queue_bytes: QUEUE_BYTES,
        }
    }
}

impl ListenConfig {
    /// A receiver for deliveries signed with `current` (or `previous`).
    pub fn with_secrets(current: SecretString, previous: Option<SecretString>) -> Self {
        let mut secrets = vec![("current".to_owned(), current)];
        if let Some(previous) = previous {
            secrets.push(("previous".to_owned(), previous));
        }
        Self {
            secrets,
            ..Self::default()
        }
    }
}

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

/// One request as received, with the verdict and the answer.
#[derive(Debug, Clone)]
pub struct Received {
    /// What the capture file gets (request, status answered, verdict) but
    /// its copies of the body: `body_base64` is empty and `body` `None`,
    /// so a request costs its body once while it waits; see
    /// [`capture_entry`](Self::capture_entry).
    pub entry: CaptureEntry,
    /// The exact body bytes.
    pub body: Bytes,
    /// The signature check of a voice-agent delivery, for details.
    pub signature: Option<Verdict>,
    /// Set when the entry could not be appended to the capture file.
    pub capture_error: Option<String>,
    /// Set when the event could not be stored (answered 503): the store's
    /// error, never the body.
    pub store_error: Option<String>,
    /// Set when a new, genuine event was kept in `unfiled_events` because
    /// `events` cannot file it: why, never the body.
    pub unfiled: Option<String>,
}

impl Received {
    /// The entry as the capture file has it, with the body (base64, and
    /// text when UTF-8).
    pub fn capture_entry(&self) -> CaptureEntry {
        let mut entry = self.entry.clone();
        entry.set_body(&self.body);
        entry
    }

    pub fn verdict(&self) -> VerdictCode {
        self.entry.verdict
    }

    pub fn status(&self) -> u16 {
        self.entry.status
    }

    /// Answered 2xx and not a repeat.
    pub fn is_accepted_new(&self) -> bool {
        self.entry.verdict == VerdictCode::Ok
    }
}

/// Every request a receiver answered, in order: what [`start`] returns
/// beside the [`Listener`]. What waits here is bounded
/// ([`ListenConfig::queue_bytes`]); a request is off the count once taken.
#[derive(Debug)]
pub struct Requests {
    queued: mpsc::UnboundedReceiver<Queued>,
}

impl Requests {
    /// The next request; `None` once the receiver has stopped.
    pub async fn recv(&mut self) -> Option<Received> {
        self.queued.recv().await.map(Queued::take)
    }

    /// The next request if one waits.
    pub fn try_recv(&mut self) -> Result<Received, mpsc::error::TryRecvError> {
        self.queued.try_recv().map(Queued::take)
    }

    /// [`recv`](Self::recv) for a poll loop.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.queued.poll_recv(cx).map(|next| next.map(Queued::take))
    }
}

impl futures_util::Stream for Requests {
    type Item = Received;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.get_mut().poll_recv(cx)
    }
}

/// A request waiting on [`Requests`], and its share of the queue.
#[derive(Debug)]
struct Queued {
    received: Received,
    _place: Place,
}

impl Queued {
    fn take(self) -> Received {
        self.received
    }
}

/// What waits on a [`Requests`] stream, in bytes, and its limit.
#[derive(Debug)]
struct Queue {
    held: AtomicUsize,
    limit: usize,
}

impl Queue {
    /// A place for a request costing `bytes`; `None` when the queue is too
    /// full for it (an empty queue always takes one).
    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<Place> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let total = held.saturating_add(bytes);
                (held == 0 || total <= self.limit).then_some(total)
            })
            .ok()?;
        Some(Place {
            queue: self.clone(),
            bytes,
        })
    }
}

/// Bytes taken in a [`Queue`], given back when dropped (the request was
/// taken from the stream, or never sent).
#[derive(Debug)]
struct Place {
    queue: Arc<Queue>,
    bytes: usize,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.queue.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// What a request with a body of `body` bytes and `headers` costs while
/// it waits: the body, the headers (as received and in the entry), and a
/// little for the rest.
fn queued_cost(body: usize, headers: &HeaderMap) -> usize {
    let head: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    body.saturating_add(2 * head + 1024)
}

/// A running receiver; stops when [`stop`](Listener::stop)ped or dropped.
#[derive(Debug)]
pub struct Listener {
    pub addr: SocketAddr,
    /// Serving https.
    tls: bool,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl Listener {
    /// `http://HOST:PORT` (`https://` with TLS): point subscriptions and
    /// webhook URLs here (any path is accepted).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Stops accepting, lets open requests finish (briefly), and returns.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(mut server) = self.server.take()
            && tokio::time::timeout(STOP_GRACE, &mut server).await.is_err()
        {
            server.abort();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
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
        Some(path) => Some(Mutex::new(CaptureWriter::open(path)?)),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| ListenError::Bind { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ListenError::Bind { addr: bind, source })?;
    let (sender, queued) = mpsc::unbounded_channel();
    let queue = Arc::new(Queue {
        held: AtomicUsize::new(0),
        limit: config.queue_bytes,
    });
    // Key every secret once: each delivery then hashes only its own bytes.
    let candidates = Candidate::all(&config.secrets);
    let verifier = Verifier::new(&candidates);
    let tls = config.tls.clone();
    let tls_on = tls.is_some();
    let shared = Arc::new(Shared {
        verifier,
        config,
        seen: Mutex::new(Seen::new(DEDUPE_CAPACITY)),
        writer,
        sender,
        queue,
    });
    let app = Router::new().fallback(receive).with_state(shared);
    let (stop, mut stopped) = watch::channel(false);
    let stopped = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let server = tokio::spawn(async move {
        http_server::serve_with_tls(listener, app, limits, tls.as_ref(), stopped).await
    });
    Ok((
        Listener {
            addr,
            tls: tls_on,
            stop,
            server: Some(server),
        },
        Requests { queued },
    ))
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

struct Shared {
    /// `config.secrets`, keyed once at start.
    verifier: Verifier,
    config: ListenConfig,
    seen: Mutex<Seen>,
    writer: Option<Mutex<CaptureWriter>>,
    sender: mpsc::UnboundedSender<Queued>,
    /// What waits on the stream for its reader.
    queue: Arc<Queue>,
}

/// The last `capacity` delivery keys, for deduplication.
struct Seen {
    keys: HashSet<String>,
    order: VecDeque<String>,
    capacity: usize,
}

impl Seen {
    fn new(capacity: usize) -> Self {
        Self {
            keys: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// Forgets `key` (its processing failed; a retry is new again).
    fn forget(&mut self, key: &str) {
        if self.keys.remove(key) {
            self.order.retain(|kept| kept != key);
        }
    }

    /// Records `key`; `true` when it was not already remembered.
    fn insert(&mut self, key: String) -> bool {
        if self.keys.contains(&key) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.keys.remove(&oldest);
        }
        self.keys.insert(key.clone());
        self.order.push_back(key);
        true
    }
}

impl Shared {
    /// `true` the first time `key` is seen (poisoning cannot lose data
    /// here, so a poisoned lock is used as is).
    fn first_time(&self, key: String) -> bool {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.insert(key)
    }

    /// Stores a genuine voice-agent event when a store is configured (in
    /// `unfiled_events` when `events` cannot file it: `Ok(Some(why))`). A
    /// repeat goes to the writer too: it is answered 2xx only once an
    /// earlier copy is stored. On failure the event is forgotten by the
    /// dedupe memory, so the platform's retry is processed as new.
    async fn keep(
        &self,
        entry: &CaptureEntry,
        body: &[u8],
        now_ms: i64,
    ) -> Result<Option<String>, String> {
        let Some(writer) = &self.config.store else {
            return Ok(None);
        };
        let accepted = matches!(entry.verdict, VerdictCode::Ok | VerdictCode::Duplicate);
        if !accepted || entry.kind != Kind::Agents {
            return Ok(None);
        }
        let delivery_id = entry
            .headers
            .iter()
            .find(|(name, _)| name == "x-svc-delivery-id")
            .map(|(_, value)| value.clone());
        let headers = stored_headers(&entry.headers, self.config.auth_header.as_ref());
        let filing = Filing::read(body, headers, delivery_id, now_ms);
        let unfiled = match &filing {
            Filing::Unfiled(unfiled) => Some(unfiled.reason()),
            Filing::Event(_) => None,
        };
        let event_id = filing.event_id().unwrap_or_default().to_owned();
        let started = std::time::Instant::now();
        let written = writer.write(filing).await;
        if let Some(watch) = &self.config.watch {
            let failed = written.as_ref().err().map(ToString::to_string);
            watch.stored(started.elapsed(), failed.as_deref());
        }
        match written {
            Ok(new) => Ok(unfiled.filter(|_| new)),
            Err(error) => {
                let mut seen = self
                    .seen
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner());
                seen.forget(&format!("event:{event_id}"));
                Err(error.to_string())
            }
        }
    }

    /// Appends `entry` with `body` to the capture file, if there is one.
    fn record(&self, entry: &CaptureEntry, body: &[u8]) -> Option<String> {
        let writer = self.writer.as_ref()?;
        let mut whole = entry.clone();
        whole.set_body(body);
        let mut writer = writer.lock().unwrap_or_else(|poison| poison.into_inner());
        match writer.append(&whole) {
            Ok(()) => None,
            Err(error) => {
                tracing::warn!(%error, "capture entry not written");
                Some(error.to_string())
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The handler
// ---------------------------------------------------------------------------

async fn receive(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let now = Utc::now();
    let (parts, body) = request.into_parts();
    let mut entry = CaptureEntry {
        received_at: now.to_rfc3339_opts(SecondsFormat::Millis, true),
        received_unix: now.timestamp(),
        source: SocketAddr::new(peer.ip().to_canonical(), peer.port()).to_string(),
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned()),
        headers: header_pairs(&parts.headers),
        body_base64: String::new(),
        body: None,
        status: 0,
        kind: Kind::Other,
        verdict: VerdictCode::Unrecognized,
        reason: None,
        event: None,
        event_id: None,
        transcript_id: None,
        transcript_status: None,
        duplicate: false,
        matched: None,
        untrusted_source: false,
    };
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
    let Some(place) = shared.queue.reserve(cost) else {
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
    let (judged, store_error, unfiled) =
        match shared.keep(&entry, &bytes, now.timestamp_millis()).await {
            Ok(unfiled) => (judged, None, unfiled),
            Err(error) => (store_failed(&mut entry, &error), Some(error), None),
        };
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
    let _ = shared.sender.send(Queued {
        received,
        _place: place,
    });
    response
}

/// The parts of a request a verdict depends on.
struct Incoming<'a> {
    method: &'a Method,
    headers: &'a HeaderMap,
    peer: IpAddr,
    body: &'a [u8],
    now: i64,
}

/// What to answer.
struct Judged {
    status: StatusCode,
    answer: Value,
    signature: Option<Verdict>,
}

/// Sets `entry`'s verdict fields and says what to answer.
///
/// Nothing a client sends is built into a JSON document before it is known
/// to be authentic: a signed delivery is verified over the raw bytes
/// first, and every other body is only scanned for the few top-level
/// strings a verdict and the display need ([`Fields`]).
fn judge(shared: &Shared, request: &Incoming, entry: &mut CaptureEntry) -> Judged {
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
            let fresh = shared.first_time(format!("event:{event_id}"));
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
    let fresh = shared.first_time(key);
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

fn too_large(entry: &mut CaptureEntry) -> Judged {
    reject(
        entry,
        Kind::Other,
        VerdictCode::TooLarge,
        StatusCode::PAYLOAD_TOO_LARGE,
        "body too large",
        "too_large",
    )
}

/// The headers kept in the store: all but secrets (the capture's
/// [`capture::SECRET_HEADERS`] and the configured pre-recorded auth header).
fn stored_headers(
    headers: &[(String, String)],
    auth_header: Option<&(String, SecretString)>,
) -> Vec<(String, String)> {
    let auth_name = auth_header.map(|(name, _)| name.as_str());
    headers
        .iter()
        .filter(|(name, _)| !capture::is_secret_header(name, auth_name))
        .cloned()
        .collect()
}

/// The event could not be stored: 503, so the platform tries again.
fn store_failed(entry: &mut CaptureEntry, error: &str) -> Judged {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_forgets_the_oldest_key_beyond_its_capacity() {
        let mut seen = Seen::new(2);
        assert!(seen.insert("a".into()));
        assert!(!seen.insert("a".into()));
        assert!(seen.insert("b".into()));
        assert!(seen.insert("c".into()));
        assert_eq!(seen.keys.len(), 2);
        assert!(seen.insert("a".into()), "a was forgotten");
        assert!(!seen.insert("c".into()));
    }

    #[test]
    fn the_queue_takes_one_request_when_empty_and_none_past_its_limit() {
        let queue = Arc::new(Queue {
            held: AtomicUsize::new(0),
            limit: 100,
        });
        let large = queue.reserve(150).expect("an empty queue takes one");
        assert!(queue.reserve(1).is_none());
        drop(large);
        let first = queue.reserve(60).expect("room");
        assert!(queue.reserve(50).is_none());
        let second = queue.reserve(40).expect("room");
        assert_eq!(queue.held.load(Ordering::Acquire), 100);
        drop((first, second));
        assert_eq!(queue.held.load(Ordering::Acquire), 0);
    }

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

    #[test]
    fn the_config_debug_never_shows_a_secret() {
        let mut config = ListenConfig::with_secrets(
            SecretString::new("whsec_current_0123456789abcdefghijkl"),
            Some(SecretString::new("whsec_previous_0123456789abcdefghij")),
        );
        config.auth_header = Some(("x-token".into(), SecretString::new("token-value-123456")));
        let shown = format!("{config:?}");
        assert!(!shown.contains("0123456789"), "{shown}");
        assert!(!shown.contains("value-123456"), "{shown}");
    }
}
