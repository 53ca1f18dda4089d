//! The emulator as a local platform in another project's tests, end to end
//! with nothing but its public builder, plain HTTP and a webhook receiver:
//!
//! 1. starts the emulator in process (`Emulator::builder()`, a free port
//!    of 127.0.0.1, loopback receivers allowed, time × 0.01);
//! 2. starts a tiny webhook receiver on `127.0.0.1:0` (axum) that hands
//!    every POST, raw bytes and headers, to `main`;
//! 3. creates a subscription to `session.started` with reqwest against the
//!    emulator's voice agent API (`POST /v1/webhook-subscriptions`, the raw
//!    API key in `Authorization`, a secret of its own);
//! 4. makes the platform's activity happen: `emulator.start_session(None)`;
//! 5. waits (at most 30 s) for the signed delivery and verifies
//!    `X-SVC-Signature: t=<unix seconds>,v1=<hex>` twice: with
//!    `earshot_core::signature::verify`, and by hand with `hmac`/`sha2`
//!    over `"<t>."` + the raw body, as the platform's spec describes;
//! 6. prints what it received and exits 0 — or 1 with what went wrong.
//!
//! Run: `cargo run --example embedded_emulator`

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

use earshot_core::http_server::{self, ServerLimits};
use earshot_core::signature::{self, Candidate};
use earshot_emulator::Emulator;

/// The event subscribed to, and made to happen.
const EVENT: &str = "session.started";

/// How long to wait for the delivery before giving up.
const WAIT: Duration = Duration::from_secs(30);

type Failure = Box<dyn std::error::Error>;

/// One POST the receiver got.
struct Delivery {
    headers: HeaderMap,
    body: Bytes,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("embedded_emulator: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Failure> {
    let emulator = Emulator::builder()
        .time_scale(0.01)
        .allow_private_urls(true)
        .start()
        .await?;
    println!(
        "emulator  {}  (API key {})",
        emulator.url(),
        emulator.api_key()
    );

    let (hook_url, mut deliveries, receiver) = start_receiver().await?;
    println!("receiver  {hook_url}");

    let secret = signature::generate_secret()?;
    let subscription = subscribe(&emulator, &hook_url, &secret).await?;
    println!("subscription {subscription} → {EVENT}");

    let session_id = emulator.start_session(None)?;
    println!("emitted   session {session_id}");

    let delivery = tokio::time::timeout(WAIT, deliveries.recv())
        .await
        .map_err(|_| {
            format!(
                "no delivery reached the receiver within {} s: check that nothing blocks \
                 127.0.0.1 and that the subscription above is enabled",
                WAIT.as_secs()
            )
        })?
        .ok_or("the receiver stopped before a delivery came")?;
    let report = check(&delivery, &secret, &session_id)?;
    println!("{report}");

    let _ = receiver.send(true);
    emulator.shutdown().await;
    Ok(())
}

/// A receiver on `127.0.0.1:0` that forwards every POST to `/hooks` and
/// answers 200; its URL, the deliveries, and the switch that stops it.
async fn start_receiver() -> Result<
    (
        String,
        mpsc::Receiver<Delivery>,
        tokio::sync::watch::Sender<bool>,
    ),
    Failure,
> {
    let (sender, deliveries) = mpsc::channel(16);
    let app = Router::new()
        .route("/hooks", post(receive))
        .with_state(sender);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hooks", listener.local_addr()?);
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    // The receiver limits of earshot's own listeners: header, idle and
    // body timeouts, a bounded number of connections.
    tokio::spawn(http_server::serve(
        listener,
        app,
        ServerLimits::webhooks(),
        async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        },
    ));
    Ok((url, deliveries, stop))
}

async fn receive(
    State(sender): State<mpsc::Sender<Delivery>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    // A full channel only drops a retry of something already received.
    let _ = sender.try_send(Delivery { headers, body });
    StatusCode::OK
}

/// Creates the subscription with plain HTTP (spec part 4 C); its id.
async fn subscribe(emulator: &Emulator, hook_url: &str, secret: &str) -> Result<String, Failure> {
    let http = earshot_http::client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()?;
    let response = http
        .post(emulator.url().join("v1/webhook-subscriptions")?)
        .header("Authorization", emulator.api_key().expose())
        .json(&json!({
            "url": hook_url,
            "events": [EVENT],
            "secret": secret,
        }))
        .send()
        .await?;
    let status = response.status();
    let created: Value = response.json().await?;
    if !status.is_success() {
        return Err(format!("creating the subscription answered {status}: {created}").into());
    }
    created["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the created subscription has no id: {created}").into())
}

/// Verifies the delivery both ways and describes it.
fn check(delivery: &Delivery, secret: &str, session_id: &str) -> Result<String, Failure> {
    let header = |name: &str| {
        delivery
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| format!("the delivery has no {name} header"))
    };
    let signature_header = header(signature::HEADER_NAME)?;
    let now = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs())?;

    let verdict = signature::verify(
        signature_header,
        &delivery.body,
        &[Candidate {
            label: "subscription",
            secret: secret.as_bytes(),
        }],
        now,
        signature::DEFAULT_TOLERANCE_SECS,
    );
    if !verdict.is_valid() {
        return Err(format!("earshot_core::signature::verify says {verdict}").into());
    }
    verify_by_hand(signature_header, &delivery.body, secret, now)?;

    if header("X-SVC-Event")? != EVENT {
        return Err(format!("expected {EVENT}, got {}", header("X-SVC-Event")?).into());
    }
    let event: Value = serde_json::from_slice(&delivery.body)?;
    if event["event"] != EVENT || event["session"]["session_id"] != session_id {
        return Err(format!("the delivery is about another session: {event}").into());
    }
    Ok(format!(
        "received  {} (delivery {}, {} bytes)\n\
         \x20 {}: {}\n\
         \x20 body: {}\n\
         \x20 signature: earshot_core::signature::verify: {verdict}\n\
         \x20 signature: HMAC-SHA256 by hand (hmac + sha2): valid",
        header("X-SVC-Event")?,
        header("X-SVC-Delivery-Id")?,
        delivery.body.len(),
        signature::HEADER_NAME,
        signature_header,
        String::from_utf8_lossy(&delivery.body),
    ))
}

/// The spec's recipe, independent of earshot: `v1` is the lowercase hex
/// HMAC-SHA256, keyed with the secret, of `"<t>."` followed by the raw
/// body; compared in constant time; `t` within 300 s of the clock.
fn verify_by_hand(header: &str, body: &[u8], secret: &str, now: i64) -> Result<(), Failure> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = Some(value),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or("the signature header has no t=")?;
    let seconds: i64 = timestamp.parse()?;
    if (now - seconds).abs() > 300 {
        return Err(format!("t={seconds} is more than 300 s from the clock ({now})").into());
    }
    for hex in signatures {
        let Some(digest) = decode_hex(hex) else {
            continue;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())?;
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        if mac.verify_slice(&digest).is_ok() {
            return Ok(());
        }
    }
    Err("no v1 value is the HMAC-SHA256 of \"<t>.\" + the body with the secret".into())
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}
