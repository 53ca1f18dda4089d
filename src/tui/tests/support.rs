//! What the console's tests share: an emulator on loopback with a client
//! for it, a receiver that answers 200, the observer in-process, a WAV, a
//! config file with two profiles, and waiting for a condition. The
//! integration tests (`tests/it/common`) have their own: they drive the
//! binary, these the console inside the crate.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tui::clipboard::Clipboard;
use earshot_core::api::types::agents::{EventKind, NewSubscription, Subscription};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{Client, Endpoints};
use earshot_core::receiver::listen::{self, ListenConfig, Listener};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig, TimeScale};

pub const API_KEY: &str = "emu_test_key_0123456789";
pub const SECRET: &str = "whsec_test_secret_0123456789abcdefghijkl";

/// A running emulator, a client for it, a plain HTTP client for its
/// control routes, and its base URL (no trailing slash).
pub struct Harness {
    pub emulator: Emulator,
    pub client: Client,
    pub http: reqwest::Client,
    pub base: String,
}

/// An emulator whose clock runs at 1/100 of real time (a 15 s deadline is
/// 150 ms), private receivers allowed.
pub async fn start() -> Harness {
    start_at(0.01).await
}

/// [`start`] with the clock at `time_scale`.
pub async fn start_at(time_scale: f64) -> Harness {
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.allow_private_urls = true;
    config.time_scale = TimeScale::new(time_scale).expect("a valid time scale");
    launch(config, API_KEY, Some(UrlPolicy::AnyHttp)).await
}

/// An emulator started with `config`, and a client with `api_key` (and
/// `url_policy`, or the client's default when `None`).
pub async fn launch(
    config: EmulatorConfig,
    api_key: &str,
    url_policy: Option<UrlPolicy>,
) -> Harness {
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let emulator = Emulator::start(loopback, config)
        .await
        .expect("the emulator starts");
    let mut client = Client::new(
        Endpoints::all_at(&emulator.url()),
        SecretString::new(api_key),
    )
    .expect("a client for the emulator");
    if let Some(policy) = url_policy {
        client = client.with_url_policy(policy);
    }
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    Harness {
        emulator,
        client,
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("an HTTP client"),
        base,
    }
}

impl Harness {
    /// POSTs `body` to a control route; its JSON answer (panics unless
    /// 2xx).
    pub async fn control(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{path} answers: {error}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// GETs a control route; its JSON answer (panics unless 2xx).
    async fn control_get(&self, path: &str) -> Value {
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
        response.json().await.expect("a JSON answer")
    }

    /// Starts a call with `outcome` ("connected" or "failed"); its id.
    pub async fn start_call(&self, outcome: &str) -> String {
        let answer = self
            .control(
                "/_emulator/calls",
                serde_json::json!({ "outcome": outcome }),
            )
            .await;
        answer["call_id"]
            .as_str()
            .expect("the call's id")
            .to_owned()
    }

    pub async fn end_call(&self, id: &str) {
        self.control(&format!("/_emulator/calls/{id}/end"), Value::Null)
            .await;
    }

    /// Arms a fault (`POST /_emulator/faults`).
    pub async fn arm_fault(&self, fault: Value) {
        self.control("/_emulator/faults", fault).await;
    }

    /// Waits until the armed faults have at most `left` uses left in all:
    /// the requests that took the others reached the emulator.
    pub async fn wait_fault_uses_left(&self, left: u64) {
        eventually(Duration::from_secs(10), "the faults used", || async {
            let armed = self.control_get("/_emulator/faults").await;
            let uses: u64 = armed
                .as_array()
                .map(|faults| faults.iter().filter_map(|f| f["count"].as_u64()).sum())
                .unwrap_or(u64::MAX);
            (uses <= left).then_some(())
        })
        .await;
    }

    /// A subscription to `url` for `events`, signed with [`SECRET`].
    pub async fn subscribe(&self, url: &str, events: &[EventKind]) -> Subscription {
        self.subscribe_with(url, events, None).await
    }

    /// [`Harness::subscribe`] scoped to `agent_id` (every agent when `None`).
    pub async fn subscribe_with(
        &self,
        url: &str,
        events: &[EventKind],
        agent_id: Option<&str>,
    ) -> Subscription {
        self.create(url, events, SECRET, agent_id).await
    }

    /// A subscription signed with `secret`.
    pub async fn subscribe_secret(
        &self,
        url: &str,
        events: &[EventKind],
        secret: &str,
    ) -> Subscription {
        self.create(url, events, secret, None).await
    }

    async fn create(
        &self,
        url: &str,
        events: &[EventKind],
        secret: &str,
        agent_id: Option<&str>,
    ) -> Subscription {
        self.client
            .create_subscription(&NewSubscription {
                url: url.to_owned(),
                events: events.to_vec(),
                secret: SecretString::new(secret),
                agent_id: agent_id.map(str::to_owned),
                enabled: None,
            })
            .await
            .expect("the subscription is created")
    }

    /// A receiver answering 200, subscribed to `events`, and its
    /// subscription.
    pub async fn healthy_subscriber(&self, events: &[EventKind]) -> (Receiver, Subscription) {
        let receiver = Receiver::healthy().await;
        let subscription = self.subscribe(&receiver.url(), events).await;
        (receiver, subscription)
    }

    /// Every delivery record of a session or call, as JSON objects (the
    /// first page: plenty for a test).
    pub async fn records(&self, session_id: &str) -> Vec<Value> {
        let path = format!("/v1/sessions/{session_id}/webhook-deliveries");
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header("Authorization", API_KEY)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{path} answers: {error}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {body}");
        body["deliveries"].as_array().cloned().unwrap_or_default()
    }
}

/// A webhook receiver on loopback that answers 200 to every request; it
/// serves until the test's runtime ends.
pub struct Receiver {
    addr: std::net::SocketAddr,
}

impl Receiver {
    pub async fn healthy() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port on loopback");
        let addr = listener.local_addr().expect("the bound address");
        let app = axum::Router::new().fallback(|| async { "ok" });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }
}

/// The observer in-process: a receiver that keeps every genuine event of
/// the subscriptions it is given in the store at `db` (what `earshot
/// listen --store` runs), in a temp dir; stopped with [`Observed::stop`].
pub struct Observed {
    _dir: tempfile::TempDir,
    pub db: PathBuf,
    listener: Listener,
}

impl Observed {
    /// Subscribed on `harness` to `events` with `secret`.
    pub async fn start(harness: &Harness, events: &[EventKind], secret: &str) -> Observed {
        let dir = tempfile::tempdir().expect("a temp dir for the store");
        let db = dir.path().join("earshot.db");
        let store = earshot_core::store::Store::open(&db).expect("the store opens");
        let (writer, _thread) =
            earshot_core::store::writer::Writer::start(store).expect("the store's writer starts");
        let config = ListenConfig {
            secrets: vec![("current".to_owned(), SecretString::new(secret))],
            store: Some(writer),
            ..ListenConfig::default()
        };
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (listener, mut requests) = listen::start(loopback, config)
            .await
            .expect("the observer starts");
        // Nobody reads the requests here: take them as they come.
        tokio::spawn(async move { while requests.recv().await.is_some() {} });
        harness
            .subscribe_secret(&listener.url(), events, secret)
            .await;
        Observed {
            _dir: dir,
            db,
            listener,
        }
    }

    pub async fn stop(self) {
        self.listener.stop().await;
    }
}

/// A clipboard that takes every copy and keeps nothing.
pub struct NoClipboard;

impl Clipboard for NoClipboard {
    fn copy(&mut self, _text: &str) -> std::io::Result<()> {
        Ok(())
    }
}

/// Polls `check` every 10 ms until it answers `Some`, or panics naming
/// `what` after `within`.
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

/// `seconds` of 8 kHz mono 16-bit silence, with `comment` as `ICMT` (the
/// emulator transcribes it).
pub fn wav(seconds: f64, comment: Option<&str>) -> Vec<u8> {
    let rate = 8000u32;
    let samples = (f64::from(rate) * seconds) as usize;
    earshot_core::wav::encode_pcm16(rate, 1, &vec![0u8; samples * 2], comment)
}

/// A config file in `dir` with two profiles, `one` (the default) and
/// `other`, each an origin with its own key file (0600) and store.
pub fn two_profile_config(
    dir: &Path,
    (one_url, one_key): (&str, &str),
    (other_url, other_key): (&str, &str),
) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    for (name, key) in [("one.key", one_key), ("other.key", other_key)] {
        let path = dir.join(name);
        std::fs::write(&path, key).expect("a key file written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .expect("the key file is 0600");
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
    .expect("the config written");
    config
}
