//! What the emulator's integration tests share, through its public API
//! only: a started emulator with an HTTP client, and a small receiver (the
//! app under test) on `127.0.0.1:0` that verifies signatures as a correct
//! one does and records every request it got.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use earshot_emulator::protocol::signature::{self, Candidate, Verdict, Verifier};
use earshot_emulator::{Emulator, SecretString};
use serde_json::{Value, json};
use tokio::sync::watch;

/// How long a test waits for something it expects to happen.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The secret the tests subscribe with (32+ printable characters).
pub const SECRET: &str = "whsec_the_test_receivers_secret_0123456789";

/// An emulator for a test: a hundredth of real time, receivers on loopback.
pub async fn emulator() -> Emulator {
    Emulator::builder()
        .time_scale(0.01)
        .allow_private_urls(true)
        .start()
        .await
        .expect("the emulator starts on loopback")
}

/// An emulator whose scheduled work waits for `advance`, receivers on
/// loopback (their 15 s deadline a hundredth of real time).
pub async fn manual_emulator() -> Emulator {
    Emulator::builder()
        .manual_clock()
        .time_scale(0.01)
        .allow_private_urls(true)
        .start()
        .await
        .expect("the emulator starts on loopback")
}

pub fn http() -> reqwest::Client {
    earshot_http::client_builder()
        .no_proxy()
        .build()
        .expect("an HTTP client builds")
}

/// `method path` with the API key and an optional JSON body; the status
/// and the JSON answer (`Null` when the answer is not JSON).
pub async fn call(
    emulator: &Emulator,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let url = emulator
        .url()
        .join(path)
        .expect("a path joins the base URL");
    let mut request = http()
        .request(method, url)
        .header("Authorization", emulator.api_key().expose());
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the emulator answers");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// A WAV of `seconds` of silence saying `text`.
pub fn audio(seconds: u32, text: &str) -> Vec<u8> {
    let samples = vec![0u8; 8000 * 2 * seconds as usize];
    earshot_emulator::protocol::wav::encode_pcm16(8000, 1, &samples, Some(text))
}

/// Uploads `audio` (`POST /v2/upload`) with the API key: the answer,
/// whose `upload_url` a job takes.
pub async fn upload(emulator: &Emulator, audio: Vec<u8>) -> Value {
    http()
        .post(emulator.url().join("v2/upload").expect("joins"))
        .header("Authorization", emulator.api_key().expose())
        .body(audio)
        .send()
        .await
        .expect("the upload is answered")
        .json()
        .await
        .expect("the upload answers JSON")
}

/// Subscribes `url` to `events` with [`SECRET`]; the subscription's id.
pub async fn subscribe(emulator: &Emulator, url: &str, events: &[&str]) -> String {
    let (status, created) = call(
        emulator,
        reqwest::Method::POST,
        "v1/webhook-subscriptions",
        Some(json!({ "url": url, "events": events, "secret": SECRET })),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    created["id"]
        .as_str()
        .expect("a subscription has an id")
        .to_owned()
}

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub at: Instant,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// What its signature check said (with the secrets the receiver held
    /// then), when it carried one.
    pub verdict: Option<Verdict>,
    /// What the receiver answered.
    pub status: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the receiver got JSON")
    }

    pub fn event_id(&self) -> String {
        self.json()["event_id"]
            .as_str()
            .expect("an event has an event_id")
            .to_owned()
    }

    /// The `t` of its signature.
    pub fn timestamp(&self) -> i64 {
        signature::parse_header(self.header(signature::HEADER_NAME))
            .expect("a signature header parses")
            .timestamp
    }
}

/// What the receiver answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// As a correct receiver: 401 for a signature that does not verify,
    /// 200 otherwise (a request without a signature too: a pre-recorded
    /// webhook).
    Verify,
    /// 503 to everything: the platform retries.
    Unavailable,
}

struct Inner {
    mode: Mutex<Mode>,
    /// The secrets it accepts: current first, then the previous one.
    secrets: Mutex<Vec<String>>,
    received: Mutex<Vec<Received>>,
    count: watch::Sender<usize>,
}

/// The app under test: records what it gets, answers as its [`Mode`].
#[derive(Clone)]
pub struct Receiver {
    inner: Arc<Inner>,
    addr: SocketAddr,
}

impl Receiver {
    pub async fn start(mode: Mode) -> Receiver {
        let inner = Arc::new(Inner {
            mode: Mutex::new(mode),
            secrets: Mutex::new(vec![SECRET.to_owned()]),
            received: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the receiver binds loopback");
        let addr = listener
            .local_addr()
            .expect("a bound socket has an address");
        let app = Router::new()
            .route("/hooks", post(receive))
            .with_state(inner.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { inner, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    /// Answers as `mode` from its next request on.
    pub fn answer_as(&self, mode: Mode) {
        *lock(&self.inner.mode) = mode;
    }

    /// Accept `secret` too (the new one after a rotation, first).
    pub fn also_accept(&self, secret: &str) {
        lock(&self.inner.secrets).insert(0, secret.to_owned());
    }

    pub fn received(&self) -> Vec<Received> {
        lock(&self.inner.received).clone()
    }

    /// Waits until it got `count` requests in all, within [`DEADLINE`];
    /// then what it got.
    pub async fn wait_for(&self, count: usize) -> Vec<Received> {
        let mut changes = self.inner.count.subscribe();
        let reached = tokio::time::timeout(DEADLINE, changes.wait_for(|got| *got >= count)).await;
        let received = self.received();
        assert!(
            matches!(reached, Ok(Ok(_))),
            "the receiver got {} of {count} requests within {DEADLINE:?}: {:?}",
            received.len(),
            received
                .iter()
                .map(|r| r.header("x-svc-event"))
                .collect::<Vec<_>>()
        );
        received
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let secrets = lock(&inner.secrets).clone();
    let labels = ["current", "previous", "older"];
    let candidates: Vec<Candidate> = secrets
        .iter()
        .zip(labels)
        .map(|(secret, label)| Candidate {
            label,
            secret: secret.as_bytes(),
        })
        .collect();
    let verdict = headers
        .get(signature::HEADER_NAME)
        .and_then(|value| value.to_str().ok())
        .map(|header| {
            Verifier::new(&candidates).verify(
                header,
                &body,
                unix_now(),
                signature::DEFAULT_TOLERANCE_SECS,
            )
        });
    let mode = *lock(&inner.mode);
    let status = match (mode, &verdict) {
        (Mode::Unavailable, _) => StatusCode::SERVICE_UNAVAILABLE,
        (Mode::Verify, Some(verdict)) if !verdict.is_valid() => StatusCode::UNAUTHORIZED,
        (Mode::Verify, _) => StatusCode::OK,
    };
    lock(&inner.received).push(Received {
        at: Instant::now(),
        headers,
        body,
        verdict,
        status: status.as_u16(),
    });
    inner.count.send_modify(|count| *count += 1);
    status
}

/// A secret for the tests that is not [`SECRET`].
pub fn other_secret(tag: &str) -> SecretString {
    SecretString::new(format!("whsec_{tag}_not_the_subscriptions_secret_000"))
}
