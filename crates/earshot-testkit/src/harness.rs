//! A running emulator with a client for it, a raw HTTP client for its
//! control routes, and the calls tests make through them.

use std::time::Duration;

use earshot_core::api::types::agents::{
    EventKind, NewSubscription, Subscription, SubscriptionPatch,
};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{Client, Endpoints};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig};
use serde_json::Value;

use crate::Receiver;
use crate::eventually;

pub const API_KEY: &str = "emu_test_key_0123456789";
pub const SECRET: &str = "whsec_test_secret_0123456789abcdefghijkl";
pub const OTHER_AGENT: &str = "11111111-2222-4333-8444-555555555555";

/// A running emulator with a client and a raw HTTP client for control routes.
pub struct Harness {
    pub emulator: Emulator,
    pub client: Client,
    pub http: reqwest::Client,
    pub base: String,
    /// The key the client sends; the raw calls send it too.
    api_key: &'static str,
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
    /// The account's API key, which the client sends.
    pub api_key: &'static str,
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
            api_key: API_KEY,
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
        .api_key(options.api_key)
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
    harness(emulator, options.api_key, Some(policy))
}

/// An emulator started with `config` (every setting in one struct, as
/// `earshot emulator` builds it), and a client for it (with `url_policy`,
/// or the client's default when `None`).
pub async fn launch(config: EmulatorConfig, url_policy: Option<UrlPolicy>) -> Harness {
    let emulator = Emulator::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("emulator starts");
    harness(emulator, API_KEY, url_policy)
}

/// A client (and a raw HTTP client) for a running emulator.
fn harness(emulator: Emulator, api_key: &'static str, url_policy: Option<UrlPolicy>) -> Harness {
    let mut client = Client::new(
        Endpoints::all_at(&emulator.url()),
        SecretString::new(api_key),
    )
    .expect("client builds");
    if let Some(policy) = url_policy {
        client = client.with_url_policy(policy);
    }
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    Harness {
        emulator,
        client,
        http: earshot_http::client_builder().no_proxy().build().unwrap(),
        base,
        api_key,
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
            .header("Authorization", self.api_key)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }
}

/// The agent the control routes use when they name none (docs/decisions.md,
/// "Emulator": the values the spec does not show).
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
        self.raw(method, path, Some(self.api_key), body).await
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
