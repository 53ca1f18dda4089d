//! `/_emulator/*` routes (no auth): start and end sessions and calls, arm
//! faults, read stats, and serve the presigned artifact URLs.
//! Shapes are fixed by DESIGN.md §5; tests and the demo rely on them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::SharedState;
use super::delivery::{self, Event};
use super::faults::Fault;
use super::problem::{Problem, parse_body};
use super::store::{
    ACCOUNT_ID, ArtifactBody, ArtifactFile, Conversation, ConversationObject, DEFAULT_AGENT_ID,
    Store,
};
use earshot_protocol::types::agents::{
    CallObject, EventKind, EventObject, SessionObject, WebhookEvent,
};
use earshot_protocol::validate;

/// Recording and transcript appear this long after `session.completed`.
const ARTIFACT_DELAY: Duration = Duration::from_secs(90);
/// Presigned artifact URLs work this long after the event
/// (`session.completed` or `call.ended`).
const ARTIFACT_LIFETIME: Duration = Duration::from_secs(3600);

pub(crate) fn routes() -> Router<SharedState> {
    Router::new()
        .route("/_emulator/sessions", post(start_session))
        .route("/_emulator/sessions/{id}/complete", post(complete_session))
        .route("/_emulator/calls", post(start_call))
        .route("/_emulator/calls/{id}/end", post(end_call))
        .route("/_emulator/events", post(deliver_event))
        .route(
            "/_emulator/faults",
            get(armed_faults).post(arm_fault).delete(clear_faults),
        )
        .route("/_emulator/stats", get(stats))
        .route(
            "/_emulator/account",
            get(super::prerecorded::get_account).post(super::prerecorded::set_account),
        )
        .route("/_emulator/artifacts/{token}", get(artifact))
}

fn agent_or_default(agent_id: Option<String>) -> Result<String, Problem> {
    match agent_id {
        None => Ok(DEFAULT_AGENT_ID.to_owned()),
        Some(agent) => Ok(validate::agent_id(&agent)?),
    }
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Serialises the event once and hands it to the delivery engine.
fn emit(state: &SharedState, kind: EventKind, object: EventObject) {
    let (session_id, agent_id) = ids_of(&object);
    let event_id = uuid::Uuid::new_v4().to_string();
    let event = WebhookEvent {
        event_id: event_id.clone(),
        event: kind.as_str().to_owned(),
        timestamp: Utc::now().fixed_offset(),
        object,
    };
    let body = match serde_json::to_vec(&event) {
        Ok(body) => body,
        Err(error) => {
            tracing::error!("could not serialise {kind} event: {error}");
            return;
        }
    };
    let event = Event {
        event_id,
        kind,
        session_id,
        agent_id,
        body: Bytes::from(body),
    };
    hand_over(state, event);
}

/// The session or call id an event's object names, and its agent.
fn ids_of(object: &EventObject) -> (String, String) {
    match object {
        EventObject::Session(session) => (session.session_id.clone(), session.agent_id.clone()),
        EventObject::Call(call) => (call.call_id.clone(), call.agent_id.clone()),
    }
}

/// Keeps `event` with its session or call (for `Emulator::deliver`) and
/// hands it to the delivery engine; how many subscriptions take it.
fn hand_over(state: &SharedState, event: Event) -> usize {
    let event = Arc::new(event);
    if let Some(conversation) = state.lock().conversations.get_mut(&event.session_id) {
        conversation.events.push(event.clone());
    }
    delivery::dispatch(state, event)
}

/// Remembers a new session or call under `id`, no artifacts or events yet
/// (the oldest forgotten past the configured bound).
fn remember(state: &SharedState, id: &str, object: ConversationObject) {
    let conversation = Conversation {
        object,
        artifacts_ready_at: None,
        artifacts: Vec::new(),
        events: Vec::new(),
    };
    state.lock().add_conversation(
        id.to_owned(),
        conversation,
        state.config.keep_conversations,
        state.clock.now(),
    );
}

/// A whole event the caller made (`earshot trigger` without `--to`),
/// delivered as the platform delivers its own: its exact bytes to every
/// enabled subscription of its type and agent, signed with each one's
/// secret, with the usual retries. 202 with how many subscriptions took
/// it on.
pub(super) async fn deliver_event(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Response, Problem> {
    let event: WebhookEvent = parse_body(&body)?;
    let kind = EventKind::parse(&event.event)
        .ok_or_else(|| Problem::bad_request(format!("unknown event type {:?}", event.event)))?;
    let (session_id, agent_id) = ids_of(&event.object);
    // A session or call the emulator has not seen is remembered, so its
    // deliveries are listed (and its later events join it).
    let known = state.lock().conversations.contains_key(&session_id);
    if !known {
        let object = match &event.object {
            EventObject::Session(session) => ConversationObject::Session(session.clone()),
            EventObject::Call(call) => ConversationObject::Call(call.clone()),
        };
        remember(&state, &session_id, object);
    }
    let made = Event {
        event_id: event.event_id.clone(),
        kind,
        session_id,
        agent_id,
        body,
    };
    let subscriptions = hand_over(&state, made);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "event_id": event.event_id,
            "event": kind.as_str(),
            "subscriptions": subscriptions,
        })),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartSession {
    #[serde(default)]
    agent_id: Option<String>,
}

pub(super) async fn start_session(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Response, Problem> {
    let request: StartSession = parse_body(&body)?;
    let session_id = open_session(&state, request.agent_id)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "session_id": session_id })),
    )
        .into_response())
}

/// Starts a session of `agent_id` (the default agent when `None`) and
/// emits `session.started`; returns its id.
pub(crate) fn open_session(
    state: &SharedState,
    agent_id: Option<String>,
) -> Result<String, Problem> {
    let agent_id = agent_or_default(agent_id)?;
    let session_id = new_id("ses");
    let session = SessionObject {
        session_id: session_id.clone(),
        account_id: ACCOUNT_ID,
        agent_id,
        status: "created".into(),
        duration_seconds: None,
        public_close_reason: None,
        s3_prefix: Some(format!("accounts/{ACCOUNT_ID}/sessions/{session_id}/")),
        created_at: Utc::now().fixed_offset(),
        ended_at: None,
        extra: Map::new(),
    };
    remember(
        state,
        &session_id,
        ConversationObject::Session(session.clone()),
    );
    emit(
        state,
        EventKind::SessionStarted,
        EventObject::Session(session),
    );
    Ok(session_id)
}

pub(super) async fn complete_session(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    close_session(&state, &id)?;
    Ok(Json(json!({ "session_id": id, "status": "completed" })))
}

/// Completes session `id` and emits `session.completed`; its artifacts
/// are listed 90 s later on the emulator's clock.
pub(crate) fn close_session(state: &SharedState, id: &str) -> Result<(), Problem> {
    let clock = &state.clock;
    let now = Utc::now();
    let session = {
        let mut store = state.lock();
        let base = state.base_url.clone();
        let Some(conversation) = store.conversations.get_mut(id) else {
            return Err(Problem::not_found("session", id));
        };
        let ConversationObject::Session(session) = &mut conversation.object else {
            return Err(Problem::bad_request(format!(
                "{id} is a call; end it with /_emulator/calls/{id}/end"
            )));
        };
        if session.status != "created" {
            return Err(Problem::conflict(format!(
                "session {id} is already {}",
                session.status
            )));
        }
        session.status = "completed".into();
        session.ended_at = Some(now.fixed_offset());
        session.duration_seconds = Some(elapsed_seconds(session.created_at.to_utc(), now));
        session.public_close_reason = Some("client_disconnected".into());
        session.s3_prefix = None;
        let session = session.clone();
        let event_at = clock.now();
        conversation.artifacts_ready_at = Some(event_at + clock.span(ARTIFACT_DELAY));
        let artifacts = presign_artifacts(
            &mut store,
            &base,
            id,
            (event_at, clock.span(ARTIFACT_LIFETIME)),
            now,
            state.config.recording_bytes,
        );
        if let Some(conversation) = store.conversations.get_mut(id) {
            conversation.artifacts = artifacts.into_iter().map(|(_, entry)| entry).collect();
        }
        session
    };
    emit(
        state,
        EventKind::SessionCompleted,
        EventObject::Session(session),
    );
    Ok(())
}

fn elapsed_seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    let millis = (to - from).num_milliseconds().max(0);
    // Whole milliseconds, as seconds: exact enough for a duration field.
    millis as f64 / 1000.0
}

/// Stores a recording and a transcript behind fresh tokens, each working
/// for `lifetime` from `event_at` on the emulator's clock; returns each
/// URL with its `{kind, url, expires_at}` listing entry.
fn presign_artifacts(
    store: &mut Store,
    base: &url::Url,
    conversation_id: &str,
    (event_at, lifetime): (Instant, Duration),
    now: DateTime<Utc>,
    recording_bytes: Option<u64>,
) -> Vec<(String, Value)> {
    let expires = event_at + lifetime;
    let expires_at = now + chrono::Duration::from_std(lifetime).unwrap_or_default();
    let recording = match recording_bytes {
        Some(len) => ArtifactBody::Silence { len },
        None => ArtifactBody::Stored(silent_wav()),
    };
    let files: [(&str, &'static str, ArtifactBody); 2] = [
        ("recording", "audio/wav", recording),
        (
            "transcript",
            "application/json",
            ArtifactBody::Stored(Bytes::from(
                json!({ "session_id": conversation_id, "text": "Thanks for calling. How can I help you today?" })
                    .to_string(),
            )),
        ),
    ];
    files
        .into_iter()
        .map(|(kind, content_type, body)| {
            let token = uuid::Uuid::new_v4().simple().to_string();
            store.artifacts.insert(
                token.clone(),
                ArtifactFile {
                    conversation: conversation_id.to_owned(),
                    expires,
                    content_type,
                    body,
                },
            );
            let url = format!(
                "{base}_emulator/artifacts/{token}?kind={kind}&expires={}",
                expires_at.timestamp()
            );
            let entry =
                json!({ "kind": kind, "url": url, "expires_at": expires_at.fixed_offset() });
            (url, entry)
        })
        .collect()
}

/// One second of 8 kHz mono 16-bit silence.
/// One second of silence, encoded once and shared by every recording.
fn silent_wav() -> Bytes {
    static WAV: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
    WAV.get_or_init(|| {
        Bytes::from(earshot_protocol::wav::encode_pcm16(
            8000,
            1,
            &[0; 16_000],
            None,
        ))
    })
    .clone()
}

/// A phone call to place: the body of `POST /_emulator/calls`. Start from
/// [`NewCall::connected`] or [`NewCall::failed`].
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct NewCall {
    /// The agent that answers (a uuid); `None`: the emulator's default agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    pub outcome: CallOutcome,
    /// The caller; `None`: `+15555550123`.
    #[serde(default)]
    pub from_number: Option<String>,
    /// The number called; `None`: `+15555550188`.
    #[serde(default)]
    pub to_number: Option<String>,
}

/// How a placed call goes.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CallOutcome {
    /// Answered: `call.connected` now, `call.ended` when it is ended.
    Connected,
    /// Never answered: `call.failed` at once.
    Failed,
}

impl NewCall {
    /// A call the default agent answers.
    pub fn connected() -> NewCall {
        NewCall::with_outcome(CallOutcome::Connected)
    }

    /// A call that could not be placed or answered.
    pub fn failed() -> NewCall {
        NewCall::with_outcome(CallOutcome::Failed)
    }

    fn with_outcome(outcome: CallOutcome) -> NewCall {
        NewCall {
            agent_id: None,
            outcome,
            from_number: None,
            to_number: None,
        }
    }

    /// The agent (a uuid) the call is for.
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> NewCall {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// The caller's number, as the payload's `from_number` carries it.
    pub fn from_number(mut self, number: impl Into<String>) -> NewCall {
        self.from_number = Some(number.into());
        self
    }

    /// The number called, as the payload's `to_number` carries it.
    pub fn to_number(mut self, number: impl Into<String>) -> NewCall {
        self.to_number = Some(number.into());
        self
    }
}

pub(super) async fn start_call(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Response, Problem> {
    let request: NewCall = parse_body(&body)?;
    let call_id = place_call(&state, request)?;
    Ok((StatusCode::CREATED, Json(json!({ "call_id": call_id }))).into_response())
}

/// Places a call and emits `call.connected` or `call.failed`; returns its
/// id.
pub(crate) fn place_call(state: &SharedState, request: NewCall) -> Result<String, Problem> {
    let agent_id = agent_or_default(request.agent_id)?;
    let call_id = new_id("call");
    let now = Utc::now().fixed_offset();
    let (status, kind, ended_at) = match request.outcome {
        CallOutcome::Connected => ("connected", EventKind::CallConnected, None),
        CallOutcome::Failed => ("failed", EventKind::CallFailed, Some(now)),
    };
    let call = CallObject {
        call_id: call_id.clone(),
        session_id: call_id.clone(),
        account_id: ACCOUNT_ID,
        agent_id,
        status: status.into(),
        direction: "inbound".into(),
        from_number: request.from_number.unwrap_or_else(|| "+15555550123".into()),
        to_number: request.to_number.unwrap_or_else(|| "+15555550188".into()),
        created_at: now,
        ended_at,
        recording_url: None,
        transcript_url: None,
        extra: Map::new(),
    };
    remember(state, &call_id, ConversationObject::Call(call.clone()));
    emit(state, kind, EventObject::Call(call));
    Ok(call_id)
}

pub(super) async fn end_call(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    hang_up(&state, &id)?;
    Ok(Json(json!({ "call_id": id, "status": "ended" })))
}

/// Ends connected call `id` and emits `call.ended` with its presigned
/// recording and transcript URLs.
pub(crate) fn hang_up(state: &SharedState, id: &str) -> Result<(), Problem> {
    let clock = &state.clock;
    let now = Utc::now();
    let call = {
        let mut store = state.lock();
        let base = state.base_url.clone();
        match store.conversations.get(id).map(|c| &c.object) {
            None => return Err(Problem::not_found("call", id)),
            Some(ConversationObject::Session(_)) => {
                return Err(Problem::bad_request(format!(
                    "{id} is a session; complete it with /_emulator/sessions/{id}/complete"
                )));
            }
            Some(ConversationObject::Call(call)) if call.status != "connected" => {
                return Err(Problem::conflict(format!(
                    "call {id} is {}, not connected",
                    call.status
                )));
            }
            Some(ConversationObject::Call(_)) => {}
        }
        let event_at = clock.now();
        let artifacts = presign_artifacts(
            &mut store,
            &base,
            id,
            (event_at, clock.span(ARTIFACT_LIFETIME)),
            now,
            state.config.recording_bytes,
        );
        let Some(conversation) = store.conversations.get_mut(id) else {
            return Err(Problem::not_found("call", id));
        };
        let ConversationObject::Call(call) = &mut conversation.object else {
            return Err(Problem::not_found("call", id));
        };
        call.status = "ended".into();
        call.ended_at = Some(now.fixed_offset());
        call.recording_url = artifacts.first().map(|(url, _)| url.clone());
        call.transcript_url = artifacts.get(1).map(|(url, _)| url.clone());
        let call = call.clone();
        // The links in call.ended work at once; the record lists the
        // artifacts once they are written, as for sessions.
        conversation.artifacts_ready_at = Some(event_at + clock.span(ARTIFACT_DELAY));
        conversation.artifacts = artifacts.into_iter().map(|(_, entry)| entry).collect();
        call
    };
    emit(state, EventKind::CallEnded, EventObject::Call(call));
    Ok(())
}

async fn arm_fault(State(state): State<SharedState>, body: Bytes) -> Result<Json<Fault>, Problem> {
    let fault: Fault = parse_body(&body)?;
    arm(&state, fault.clone())?;
    Ok(Json(fault))
}

/// Arms `fault`, if it is one that can be armed.
pub(crate) fn arm(state: &SharedState, fault: Fault) -> Result<(), Problem> {
    if let Some(reason) = fault.problem() {
        return Err(Problem::bad_request(reason));
    }
    state.faults.arm(fault);
    Ok(())
}

/// The faults still armed, with the uses each has left: a test waits on
/// this for its requests to have reached the emulator.
async fn armed_faults(State(state): State<SharedState>) -> Json<Vec<Fault>> {
    Json(state.faults.armed())
}

async fn clear_faults(State(state): State<SharedState>) -> StatusCode {
    state.faults.clear();
    StatusCode::NO_CONTENT
}

async fn stats(State(state): State<SharedState>) -> Response {
    Json(state.stats.snapshot()).into_response()
}

async fn artifact(
    State(state): State<SharedState>,
    Path(token): Path<String>,
) -> Result<Response, Problem> {
    let (content_type, body) = {
        let store = state.lock();
        let file = store
            .artifacts
            .get(&token)
            .ok_or_else(|| Problem::not_found("artifact", &token))?;
        if state.clock.now() >= file.expires {
            return Err(Problem::new(
                StatusCode::FORBIDDEN,
                "this presigned URL has expired (artifact URLs work for one hour after the event); fetch the session again",
            ));
        }
        (file.content_type, file.body.clone())
    };
    let (len, body) = match body {
        ArtifactBody::Stored(bytes) => (bytes.len() as u64, Body::from(bytes)),
        ArtifactBody::Silence { len } => {
            let len = len.clamp(44, u64::from(u32::MAX));
            (len, silence_stream(len))
        }
    };
    Ok((
        [
            (CONTENT_TYPE, content_type.to_owned()),
            (CONTENT_LENGTH, len.to_string()),
        ],
        body,
    )
        .into_response())
}

/// A WAV of `len` bytes (at least its 44-byte header): 8 kHz mono 16-bit
/// silence, produced 64 KiB at a time as the client reads.
fn silence_stream(len: u64) -> Body {
    const CHUNK: usize = 64 * 1024;
    static ZEROS: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
    let zeros = ZEROS.get_or_init(|| Bytes::from(vec![0u8; CHUNK])).clone();
    let data_len = u32::try_from(len.saturating_sub(44)).unwrap_or(u32::MAX - 36);
    // An empty PCM WAV is exactly the 44-byte header; its two sizes are
    // then set for the data that follows.
    let mut header = earshot_protocol::wav::encode_pcm16(8000, 1, &[], None);
    if header.len() == 44 {
        header[4..8].copy_from_slice(&(data_len + 36).to_le_bytes());
        header[40..44].copy_from_slice(&data_len.to_le_bytes());
    }
    let header = Bytes::from(header);
    let mut left = u64::from(data_len);
    let data = futures_util::stream::iter(std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let take = usize::try_from(left.min(CHUNK as u64)).unwrap_or(CHUNK);
        left -= take as u64;
        Some(Ok::<_, std::convert::Infallible>(zeros.slice(..take)))
    }));
    let stream =
        futures_util::StreamExt::chain(futures_util::stream::once(async move { Ok(header) }), data);
    Body::from_stream(stream)
}
