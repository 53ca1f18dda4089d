//! Shared test harness: an emulator on `127.0.0.1:0`, a client for it, and
//! scriptable webhook receivers (small axum servers) that record every
//! request they get, byte for byte.
#![allow(dead_code)]

pub mod cli;
pub mod rss;
pub mod tmux;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use earshot_core::api::types::agents::{
    EventKind, NewSubscription, Subscription, SubscriptionPatch,
};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{Client, Endpoints};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig};
use serde_json::Value;

pub const API_KEY: &str = "emu_test_key_0123456789";
pub const SECRET: &str = "whsec_test_secret_0123456789abcdefghijkl";
pub const OTHER_AGENT: &str = "11111111-2222-4333-8444-555555555555";

/// A running emulator with a client and a raw HTTP client for control routes.
pub struct Harness {
    pub emulator: Emulator,
    pub client: Client,
    pub http: reqwest::Client,
    pub base: String,
}

/// Emulator options for a test.
pub struct Options {
    pub time_scale: f64,
    pub allow_private_urls: bool,
    /// Pre-recorded jobs processing at once.
    pub concurrency: u32,
    /// Pre-recorded API requests per five minutes.
    pub http_limit: u32,
    /// GETs per minute of one transcript.
    pub poll_limit: u32,
}

impl Default for Options {
    fn default() -> Self {
        // 15 s deadline -> 150 ms; retries after 50 ms, 300 ms, 1.2 s, ...
        Options {
            time_scale: 0.01,
            allow_private_urls: true,
            concurrency: 5,
            http_limit: 20_000,
            poll_limit: 60,
        }
    }
}

pub async fn start() -> Harness {
    start_with(Options::default()).await
}

impl Options {
    /// The default options but `time_scale`.
    pub fn at(time_scale: f64) -> Options {
        Options {
            time_scale,
            ..Options::default()
        }
    }
}

/// An emulator with the default options but `time_scale`.
pub async fn start_at(time_scale: f64) -> Harness {
    start_with(Options::at(time_scale)).await
}

/// An emulator started through the public builder with `options`.
pub async fn start_with(options: Options) -> Harness {
    let emulator = Emulator::builder()
        .api_key(API_KEY)
        .allow_private_urls(options.allow_private_urls)
        .time_scale(options.time_scale)
        .concurrency(options.concurrency)
        .http_limit(options.http_limit)
        .poll_limit(options.poll_limit)
        .start()
        .await
        .expect("emulator starts");
    let policy = if options.allow_private_urls {
        UrlPolicy::AnyHttp
    } else {
        UrlPolicy::PublicHttps
    };
    harness(emulator, Some(policy))
}

/// An emulator started with `config` (every setting in one struct, as
/// `earshot emulator` builds it), and a client for it (with `url_policy`,
/// or the client's default when `None`).
pub async fn launch(config: EmulatorConfig, url_policy: Option<UrlPolicy>) -> Harness {
    let emulator = Emulator::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("emulator starts");
    harness(emulator, url_policy)
}

/// A client (and a raw HTTP client) for a running emulator.
fn harness(emulator: Emulator, url_policy: Option<UrlPolicy>) -> Harness {
    let mut client = Client::new(
        Endpoints::all_at(&emulator.url()),
        SecretString::new(API_KEY),
    )
    .expect("client builds");
    if let Some(policy) = url_policy {
        client = client.with_url_policy(policy);
    }
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    Harness {
        emulator,
        client,
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        base,
    }
}

impl Harness {
    /// POST a control route; the JSON answer (panics on a non-2xx).
    pub async fn control(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("control route answers");
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    pub async fn start_session(&self, agent_id: Option<&str>) -> String {
        let body = match agent_id {
            Some(agent) => serde_json::json!({ "agent_id": agent }),
            None => serde_json::json!({}),
        };
        let answer = self.control("/_emulator/sessions", body).await;
        answer["session_id"].as_str().unwrap().to_owned()
    }

    pub async fn complete_session(&self, id: &str) {
        self.control(&format!("/_emulator/sessions/{id}/complete"), Value::Null)
            .await;
    }

    pub async fn start_call(&self, outcome: &str) -> String {
        let answer = self
            .control(
                "/_emulator/calls",
                serde_json::json!({ "outcome": outcome }),
            )
            .await;
        answer["call_id"].as_str().unwrap().to_owned()
    }

    pub async fn end_call(&self, id: &str) {
        self.control(&format!("/_emulator/calls/{id}/end"), Value::Null)
            .await;
    }

    /// A subscription to `url` for `events`, signed with [`SECRET`].
    pub async fn subscribe(&self, url: &str, events: &[EventKind]) -> Subscription {
        self.subscribe_with(url, events, None).await
    }

    /// A healthy receiver subscribed to `events`, and its subscription.
    pub async fn healthy_subscriber(&self, events: &[EventKind]) -> (Receiver, Subscription) {
        self.healthy_subscriber_for(events, None).await
    }

    /// [`Harness::healthy_subscriber`] scoped to `agent_id` (every agent
    /// when `None`).
    pub async fn healthy_subscriber_for(
        &self,
        events: &[EventKind],
        agent_id: Option<&str>,
    ) -> (Receiver, Subscription) {
        let receiver = Receiver::healthy().await;
        let subscription = self.subscribe_with(&receiver.url(), events, agent_id).await;
        (receiver, subscription)
    }

    /// Subscribes `url` to `call.failed`, then starts a call that fails: the
    /// subscription and the call's session id.
    pub async fn failed_call_to(&self, url: &str) -> (Subscription, String) {
        let subscription = self.subscribe(url, &[EventKind::CallFailed]).await;
        let call_id = self.start_call("failed").await;
        (subscription, call_id)
    }

    pub async fn subscribe_with(
        &self,
        url: &str,
        events: &[EventKind],
        agent_id: Option<&str>,
    ) -> Subscription {
        self.client
            .create_subscription(&NewSubscription {
                url: url.to_owned(),
                events: events.to_vec(),
                secret: SecretString::new(SECRET),
                agent_id: agent_id.map(str::to_owned),
                enabled: None,
            })
            .await
            .expect("subscription created")
    }

    /// GET any path with the API key; status and JSON body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header("Authorization", API_KEY)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }
}

/// One request as a receiver saw it.
#[derive(Clone, Debug)]
pub struct Captured {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

impl Captured {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("delivery body is JSON")
    }
}

/// How a receiver answers one request (given every request so far).
pub type Behaviour = Arc<dyn Fn(&Captured, usize) -> Reply + Send + Sync>;

/// A receiver's answer: status, body, optional delay and extra header.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
    pub location: Option<String>,
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_owned(),
            delay: Duration::ZERO,
            location: None,
        }
    }

    pub fn ok() -> Reply {
        Reply::status(200, "ok")
    }
}

/// A webhook receiver on loopback that records what it gets.
pub struct Receiver {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Captured>>>,
}

#[derive(Clone)]
struct ReceiverState {
    requests: Arc<Mutex<Vec<Captured>>>,
    behaviour: Behaviour,
}

impl Receiver {
    pub async fn start(
        behaviour: impl Fn(&Captured, usize) -> Reply + Send + Sync + 'static,
    ) -> Receiver {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = ReceiverState {
            requests: requests.clone(),
            behaviour: Arc::new(behaviour),
        };
        let app = Router::new().fallback(receive).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr, requests }
    }

    /// A receiver that always answers 200.
    pub async fn healthy() -> Receiver {
        Receiver::start(|_, _| Reply::ok()).await
    }

    /// A receiver that answers `status` with `body` to its first `failures`
    /// requests, then 200.
    pub async fn failing_first(failures: usize, status: u16, body: &'static str) -> Receiver {
        Receiver::start(move |_, index| {
            if index < failures {
                Reply::status(status, body)
            } else {
                Reply::ok()
            }
        })
        .await
    }

    /// A receiver that answers its first request after `delay`, then at once.
    pub async fn slow_first(delay: Duration) -> Receiver {
        Receiver::start(move |_, index| {
            if index == 0 {
                Reply {
                    delay,
                    ..Reply::ok()
                }
            } else {
                Reply::ok()
            }
        })
        .await
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn captured(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    /// The `call` object of the first request (a `call.ended` for a
    /// receiver subscribed to it), once it has come (up to 5 s).
    pub async fn first_call(&self) -> Value {
        eventually(Duration::from_secs(5), "a call event", || async {
            self.captured()
                .first()
                .map(|captured| captured.json()["call"].clone())
        })
        .await
    }

    /// Waits (up to 5 s) until exactly `count` requests have come, named
    /// `what` in the failure; they all.
    pub async fn wait_count(&self, count: usize, what: &str) -> Vec<Captured> {
        eventually(Duration::from_secs(5), what, || async {
            let requests = self.captured();
            (requests.len() == count).then_some(requests)
        })
        .await
    }
}

async fn receive(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> Response {
    let captured = Captured {
        headers,
        body,
        at: Instant::now(),
    };
    let index = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(captured.clone());
        requests.len() - 1
    };
    let reply = (state.behaviour)(&captured, index);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap();
    let mut response = (status, reply.body).into_response();
    if let Some(location) = reply.location {
        response
            .headers_mut()
            .insert("location", location.parse().unwrap());
    }
    response
}

/// Polls `check` every 10 ms until it returns `Some`, or panics after
/// `within` with `what`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------
// Helpers for the area C integration tests (troubleshooting, delivery
// engine, subscriptions API).
// ---------------------------------------------------------------------------

/// The agent the control routes use when they name none (docs/decisions.md).
pub const DEFAULT_AGENT: &str = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f";

/// A raw HTTP answer: status, headers and the body as text.
pub struct RawAnswer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl RawAnswer {
    /// The `Content-Type` header ("" when absent or not text).
    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Harness {
    /// Any request to the emulator, with `authorization` as the
    /// `Authorization` header when given and `body` sent as is (JSON).
    pub async fn raw(
        &self,
        method: reqwest::Method,
        path: &str,
        authorization: Option<&str>,
        body: Option<&str>,
    ) -> RawAnswer {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(value) = authorization {
            request = request.header("Authorization", value);
        }
        if let Some(body) = body {
            request = request
                .header("Content-Type", "application/json")
                .body(body.to_owned());
        }
        let response = request.send().await.expect("emulator answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        RawAnswer {
            status,
            headers,
            text,
        }
    }

    /// A request with the API key as is (the documented form).
    pub async fn authed(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&str>,
    ) -> RawAnswer {
        self.raw(method, path, Some(API_KEY), body).await
    }

    /// `PATCH /v1/webhook-subscriptions/{id}` with a raw JSON body.
    pub async fn raw_patch(&self, id: &str, body: &str) -> (u16, Value) {
        let answer = self
            .authed(
                reqwest::Method::PATCH,
                &format!("/v1/webhook-subscriptions/{id}"),
                Some(body),
            )
            .await;
        (answer.status, answer.json())
    }

    /// `GET /_emulator/stats`.
    pub async fn stats(&self) -> Value {
        self.control_get("/_emulator/stats").await
    }

    /// Waits until the emulator has no delivery in progress (no attempt
    /// running, no retry waiting): from then on nothing more is sent or
    /// recorded until a new event, so "nothing else happened" can be
    /// asserted without sleeping.
    pub async fn wait_deliveries_idle(&self) {
        eventually(
            Duration::from_secs(10),
            "the delivery engine idle",
            || async { (self.stats().await["deliveries_in_progress"] == 0).then_some(()) },
        )
        .await;
    }

    /// GET a control route (no API key); the JSON answer (panics on a
    /// non-2xx).
    pub async fn control_get(&self, path: &str) -> Value {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap_or_else(|error| panic!("{path} answers: {error}"));
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.json().await.expect("control answer is JSON")
    }

    /// Arms a fault (`POST /_emulator/faults`).
    pub async fn arm_fault(&self, fault: Value) {
        self.control("/_emulator/faults", fault).await;
    }

    /// Waits until the armed faults have at most `left` uses left in all:
    /// the requests that took the others reached the emulator.
    pub async fn wait_fault_uses_left(&self, left: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let armed = self.control_get("/_emulator/faults").await;
            let uses: u64 = armed
                .as_array()
                .map(|faults| {
                    faults
                        .iter()
                        .filter_map(|fault| fault["count"].as_u64())
                        .sum()
                })
                .unwrap_or(u64::MAX);
            if uses <= left {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "faults still armed after 10 s: {armed}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// A call with `outcome` ("connected" or "failed") for `agent_id`.
    pub async fn start_call_for(&self, agent_id: &str, outcome: &str) -> String {
        let answer = self
            .control(
                "/_emulator/calls",
                serde_json::json!({ "outcome": outcome, "agent_id": agent_id }),
            )
            .await;
        answer["call_id"].as_str().unwrap().to_owned()
    }

    /// Rotates a subscription's secret to `secret` (a PATCH).
    pub async fn rotate_secret(&self, id: &str, secret: &str) -> Subscription {
        self.client
            .update_subscription(
                id,
                &SubscriptionPatch {
                    secret: Some(SecretString::new(secret)),
                    ..SubscriptionPatch::default()
                },
            )
            .await
            .expect("secret rotated")
    }

    /// A subscription signed with `secret`.
    pub async fn subscribe_secret(
        &self,
        url: &str,
        events: &[EventKind],
        secret: &str,
    ) -> Subscription {
        self.client
            .create_subscription(&NewSubscription {
                url: url.to_owned(),
                events: events.to_vec(),
                secret: SecretString::new(secret),
                agent_id: None,
                enabled: None,
            })
            .await
            .expect("subscription created")
    }

    /// Every delivery record of a session or call, as raw JSON objects
    /// (the first page, default size: plenty for a test).
    pub async fn records(&self, session_id: &str) -> Vec<Value> {
        let (status, body) = self
            .get(&format!("/v1/sessions/{session_id}/webhook-deliveries"))
            .await;
        assert_eq!(status, 200, "deliveries of {session_id}: {body}");
        body["deliveries"].as_array().cloned().unwrap_or_default()
    }

    /// The records of one subscription for a session or call.
    pub async fn records_of(&self, session_id: &str, subscription_id: &str) -> Vec<Value> {
        self.records(session_id)
            .await
            .into_iter()
            .filter(|record| record["subscription_id"] == subscription_id)
            .collect()
    }

    /// Waits until `subscription_id` has records for `session_id` that
    /// `done` accepts; returns them.
    pub async fn wait_records(
        &self,
        session_id: &str,
        subscription_id: &str,
        what: &str,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        eventually(Duration::from_secs(5), what, || async {
            let records = self.records_of(session_id, subscription_id).await;
            done(&records).then_some(records)
        })
        .await
    }

    /// Waits for a record that is no longer `pending`, then returns every
    /// record of the subscription for the session.
    pub async fn wait_settled(&self, session_id: &str, subscription_id: &str) -> Vec<Value> {
        self.wait_records(session_id, subscription_id, "a settled record", |records| {
            records.iter().any(|record| record["status"] != "pending")
        })
        .await
    }
}

/// Lowercase hex HMAC-SHA256 of the concatenation of `parts`: the
/// receivers' own computation, right or wrong.
pub fn hmac_hex(secret: &[u8], parts: &[&[u8]]) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `t` and the first `v1` of an `X-SVC-Signature` value, parsed by hand.
pub fn signature_parts(header: &str) -> Option<(i64, String)> {
    let mut timestamp = None;
    let mut digest = None;
    for part in header.split(',') {
        let (key, value) = part.split_once('=')?;
        match key {
            "t" => timestamp = value.parse::<i64>().ok(),
            "v1" if digest.is_none() => digest = Some(value.to_owned()),
            _ => {}
        }
    }
    Some((timestamp?, digest?))
}

/// Whether a captured delivery verifies with `secret` now (300 s), using
/// the crate's own verifier.
pub fn verifies_with(request: &Captured, secret: &str) -> bool {
    earshot_core::signature::verify(
        request.header("x-svc-signature"),
        &request.body,
        &[earshot_core::signature::Candidate {
            label: "candidate",
            secret: secret.as_bytes(),
        }],
        chrono::Utc::now().timestamp(),
        earshot_core::signature::DEFAULT_TOLERANCE_SECS,
    )
    .is_valid()
}

/// A record's timestamp field, parsed (panics when absent or malformed).
pub fn timestamp_of(record: &Value, field: &str) -> chrono::DateTime<chrono::FixedOffset> {
    let text = record[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is a string in {record}"));
    chrono::DateTime::parse_from_rfc3339(text).unwrap_or_else(|error| panic!("{field}: {error}"))
}

/// `seconds` of 8 kHz mono 16-bit silence, with `comment` as `ICMT`.
pub fn wav(seconds: f64, comment: Option<&str>) -> Vec<u8> {
    let rate = 8000u32;
    let samples = (f64::from(rate) * seconds) as usize;
    earshot_core::wav::encode_pcm16(rate, 1, &vec![0u8; samples * 2], comment)
}

/// A config file in `dir` with two profiles, `one` (the default) and
/// `other`, each an origin with its own key file (0600) and store.
pub fn two_profile_config(
    dir: &std::path::Path,
    (one_url, one_key): (&str, &str),
    (other_url, other_key): (&str, &str),
) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    for (name, key) in [("one.key", one_key), ("other.key", other_key)] {
        let path = dir.join(name);
        std::fs::write(&path, key).expect("key file written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .expect("key file 0600");
    }
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_profile = \"one\"\n\
             [profiles.one]\nurl = \"{one_url}\"\napi_key_file = \"one.key\"\nstore = \"one.db\"\n\
             [profiles.other]\nurl = \"{other_url}\"\napi_key_file = \"other.key\"\nstore = \"other.db\"\n",
        ),
    )
    .expect("config written");
    config
}
