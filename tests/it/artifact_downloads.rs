//! `sessions get --download` through the real binary against a stand-in
//! platform on loopback whose artifact link each test scripts: a signal
//! mid-download (SIGINT, SIGTERM, SIGHUP) leaves no `.earshot-download-*`
//! file behind and exits 128 + the signal; a link that redirects is not
//! followed (a presigned link needs no redirect).

use std::convert::Infallible;
use std::path::Path;

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::process::Command;

use crate::common::cli::{earshot_async, finish, send_signal, text, wait_out};
use crate::common::{API_KEY, Receiver, eventually};

/// The one call the stand-in platform knows.
const CALL: &str = "call_0123456789";
/// The presigned link's query: a credential that no message may show.
const SIGNATURE: &str = "X-Amz-Signature=presigned0secret0123456789";
/// What the slow artifact announces: far more than a test waits for.
const ANNOUNCED: u64 = 4 * 1024 * 1024 * 1024;

/// How the stand-in answers the artifact link.
#[derive(Clone)]
enum Artifact {
    /// 64 KiB every 20 ms of [`ANNOUNCED`] bytes: still going when signalled.
    Slow,
    /// `302 Found` to this URL.
    Redirect(String),
}

#[derive(Clone)]
struct Platform {
    base: String,
    artifact: Artifact,
}

/// A stand-in platform on loopback: the call's record lists one recording
/// link to its own `/artifacts/…`, answered as `artifact` says; its base URL.
async fn platform(artifact: Artifact) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = Platform {
        base: base.clone(),
        artifact,
    };
    let app = Router::new()
        .route("/v1/sessions/{id}", get(record))
        .route("/v1/sessions/{id}/webhook-deliveries", get(no_deliveries))
        .route("/artifacts/{name}", get(artifact_answer))
        .with_state(state);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

async fn record(State(platform): State<Platform>) -> Response {
    let expires = chrono::Utc::now() + chrono::Duration::hours(1);
    axum::Json(json!({
        "session_id": CALL,
        "kind": "call",
        "status": "ended",
        "artifacts": [{
            "kind": "recording",
            "url": format!("{}/artifacts/rec0token.wav?{SIGNATURE}", platform.base),
            "expires_at": expires.to_rfc3339(),
        }],
    }))
    .into_response()
}

async fn no_deliveries() -> Response {
    axum::Json(json!({ "deliveries": [], "has_more": false })).into_response()
}

async fn artifact_answer(State(platform): State<Platform>) -> Response {
    match platform.artifact {
        Artifact::Slow => slow_body(),
        Artifact::Redirect(to) => Response::builder()
            .status(302)
            .header("location", to)
            .body(Body::empty())
            .unwrap(),
    }
}

/// A `200 audio/wav` of [`ANNOUNCED`] bytes that trickles.
fn slow_body() -> Response {
    let chunks = futures_util::stream::unfold((), |()| async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Some((Ok::<_, Infallible>(Bytes::from(vec![0u8; 64 * 1024])), ()))
    });
    Response::builder()
        .header("content-type", "audio/wav")
        .header("content-length", ANNOUNCED.to_string())
        .body(Body::from_stream(chunks))
        .unwrap()
}

/// `earshot sessions get CALL --download TARGET` against `base`, its
/// store in `home`.
fn download(base: &str, home: &Path, target: &Path) -> Command {
    let mut command = earshot_async();
    command
        .args(["sessions", "get", CALL, "--url", base, "--api-key", API_KEY])
        .arg("--store")
        .arg(home.join("earshot.db"))
        .arg("--download")
        .arg(target);
    command
}

/// The `.earshot-download-*` files in `dir`.
fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(".earshot-download-"))
        .collect()
}

/// Starts a download of the slow artifact, sends `signal` once its
/// temporary file exists, and checks the exit and the directory.
async fn stopped_mid_download(signal: &str, code: i32, name: &str) {
    let base = platform(Artifact::Slow).await;
    let home = tempfile::tempdir().unwrap();
    let target = home.path().join("files");
    std::fs::create_dir(&target).unwrap();
    let child = download(&base, home.path(), &target).spawn().unwrap();
    eventually(Duration::from_secs(20), "the temporary file", || async {
        (!partials(&target).is_empty()).then_some(())
    })
    .await;
    send_signal(&child, signal).await;
    let output = wait_out(child).await;
    let stderr = text(&output.stderr);
    assert!(
        partials(&target).is_empty(),
        "{name} left {:?}: {output:?}",
        partials(&target)
    );
    assert_eq!(output.status.code(), Some(code), "{name}: {output:?}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{name}");
    assert!(stderr.contains(name), "{name} named: {stderr}");
    assert!(!stderr.contains(SIGNATURE), "the query shown: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_mid_download_removes_the_partial_file_and_exits_130() {
    stopped_mid_download("INT", 130, "SIGINT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_download_removes_the_partial_file_and_exits_143() {
    stopped_mid_download("TERM", 143, "SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_mid_download_removes_the_partial_file_and_exits_129() {
    stopped_mid_download("HUP", 129, "SIGHUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_that_redirects_is_not_followed_and_the_error_names_the_host() {
    // Another loopback service, answering 200 to anything.
    let elsewhere = Receiver::healthy().await;
    let to = format!(
        "http://{}/loot/rec.wav?token=elsewhere0secret",
        elsewhere.addr
    );
    let base = platform(Artifact::Redirect(to)).await;
    let home = tempfile::tempdir().unwrap();
    let target = home.path().join("files");
    std::fs::create_dir(&target).unwrap();

    let output = finish(&mut download(&base, home.path(), &target)).await;
    let stderr = text(&output.stderr);
    assert_eq!(elsewhere.count(), 0, "the redirect was followed: {stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("redirected"), "{stderr}");
    assert!(stderr.contains("302"), "{stderr}");
    assert!(
        stderr.contains(&elsewhere.addr.to_string()),
        "names the host: {stderr}"
    );
    assert!(
        !stderr.contains(SIGNATURE),
        "the link's query shown: {stderr}"
    );
    assert!(
        !stderr.contains("elsewhere0secret"),
        "the target's query shown: {stderr}"
    );
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
}
