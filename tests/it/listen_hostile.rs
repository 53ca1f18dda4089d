//! `earshot listen` (the real binary) against hostile bodies: what a body
//! nobody signed costs, and that the receiver stays up and keeps its
//! verdicts. Memory is the child's peak (`VmHWM`) against a generous
//! limit; no timing is asserted.

use std::process::Stdio;
use std::time::Duration;

use crate::common::SECRET;
use crate::common::cli::{earshot_async, listening_url};
use crate::common::rss::peak_mib_of;
use earshot_testkit::zeros_array;
use serde_json::Value;
use tokio::process::Child;

/// The most any test here waits in all.
const BOUND: Duration = Duration::from_secs(60);

/// Largest body `listen` reads (`listen::MAX_BODY_BYTES`), less one byte.
const NEAR_MAX: usize = 10 * 1024 * 1024 - 1;

/// `earshot listen --secret SECRET ARGS` with its stdout drained; the
/// child and its URL.
async fn listen(args: &[&str]) -> (Child, String) {
    let mut child = earshot_async()
        .args(["listen", "--secret", SECRET])
        .args(args)
        .stderr(Stdio::null())
        .spawn()
        .expect("earshot listen starts");
    let url = listening_url(&mut child);
    (child, url)
}

/// A well-formed signature header that matches no secret.
fn forged_signature() -> String {
    format!("t={},v1={}", chrono::Utc::now().timestamp(), "0".repeat(64))
}

/// POSTs `body` (with `signature` when given): the status and the answer.
async fn post(
    http: &reqwest::Client,
    url: &str,
    signature: Option<&str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let mut request = http
        .post(format!("{url}/hook"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(signature) = signature {
        request = request.header("x-svc-signature", signature);
    }
    let answer = request.send().await.expect("listen answers");
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

/// Unsigned and forged bodies are never built into a document: a 10 MiB
/// `[0,0,…]` that cost over 200 MB parsed costs the listener its bytes
/// (and their copies in the capture entry); a body nested 100,000 deep and
/// one that is not JSON get the usual answers; a genuine delivery is still
/// accepted afterwards.
#[tokio::test]
async fn unsigned_and_forged_bodies_are_judged_without_being_parsed() {
    /// Far above what the body and its capture copies take (about 60 MiB
    /// at a time), far below a parsed `[0,0,…]` (over 200 MiB).
    const PEAK_LIMIT_MIB: u64 = 150;
    tokio::time::timeout(BOUND, async {
        let (child, url) = listen(&[]).await;
        let http = earshot_http::client_builder().no_proxy().build().unwrap();

        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes();
        let (status, answer) = post(&http, &url, Some(&forged_signature()), deep).await;
        assert_eq!(status, 401, "{answer}");
        assert_eq!(answer["error"], "invalid signature");
        assert_eq!(answer["reason"], "no_matching_signature");
        let broken = br#"{"event_id":"evt-broken","event":"call.ended","#.to_vec();
        let (status, answer) = post(&http, &url, Some(&forged_signature()), broken).await;
        assert_eq!(
            (status, &answer["reason"]),
            (401, &"no_matching_signature".into())
        );

        for _ in 0..3 {
            let (status, answer) = post(
                &http,
                &url,
                Some(&forged_signature()),
                zeros_array(NEAR_MAX),
            )
            .await;
            assert_eq!(
                (status, &answer["reason"]),
                (401, &"no_matching_signature".into())
            );
            let (status, answer) = post(&http, &url, None, zeros_array(NEAR_MAX)).await;
            assert_eq!((status, &answer["reason"]), (400, &"unrecognized".into()));
        }
        let pid = child.id().expect("listen is still running");
        let peak = peak_mib_of(pid);
        assert!(peak < PEAK_LIMIT_MIB, "listen peaked at {peak} MiB");

        let body = br#"{"event_id":"evt-after","event":"call.ended"}"#.to_vec();
        let signature =
            earshot_core::signature::sign(SECRET.as_bytes(), chrono::Utc::now().timestamp(), &body);
        let (status, answer) = post(&http, &url, Some(&signature), body).await;
        assert_eq!(status, 200, "{answer}");
        drop(child);
    })
    .await
    .expect("the test ends in time");
}
