//! `receiver::listen` and `earshot listen` over real HTTP: deliveries from
//! the emulator (voice-agent and pre-recorded), secret rotation, duplicates,
//! stale and tampered signatures, auth headers, the capture file and its
//! replay with `earshot verify --capture`, and the command itself.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::cli::{listening_url_and_lines, next_line};
use crate::common::{API_KEY, Harness, Options, SECRET, eventually, start, start_with, wav};
use earshot_core::api::types::agents::EventKind;
use earshot_core::receiver::capture::{self, Kind, VerdictCode, encode_base64};
use earshot_core::receiver::listen::{self, ListenConfig, Listener, Received};
use earshot_core::redact::SecretString;
use earshot_core::signature;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const NEW_SECRET: &str = "whsec_rotated_secret_ZYXWVUTSRQPONMLKJIH9876";
const TOKEN: &str = "s3cret token value";

type Inbox = listen::Requests;

async fn listen_with(config: ListenConfig) -> (Listener, Inbox) {
    listen::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("listener starts")
}

/// A listener for deliveries signed with `current` (or `previous`).
async fn listen_for(current: &str, previous: Option<&str>) -> (Listener, Inbox) {
    listen_with(ListenConfig::with_secrets(
        SecretString::new(current),
        previous.map(SecretString::new),
    ))
    .await
}

/// The next request the listener got (panics after 5 s).
async fn next(inbox: &mut Inbox) -> Received {
    tokio::time::timeout(Duration::from_secs(5), inbox.recv())
        .await
        .expect("a request within 5 s")
        .expect("listener still running")
}

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// POSTs `body` with `signature` as `X-SVC-Signature` (when given): the
/// status and the JSON answer.
async fn post(url: &str, signature: Option<&str>, body: &[u8]) -> (u16, Value) {
    let mut request = earshot_http::client_builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        request = request.header("X-SVC-Signature", signature);
    }
    let response = request.send().await.expect("listener answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// POSTs `body` signed with `secret` at `t`.
async fn post_signed(url: &str, secret: &str, t: i64, body: &[u8]) -> (u16, Value) {
    let header = signature::sign(secret.as_bytes(), t, body);
    post(url, Some(&header), body).await
}

fn event_body(event_id: &str) -> Vec<u8> {
    json!({ "event_id": event_id, "event": "call.failed", "timestamp": "2026-01-01T00:00:00Z",
            "call": { "call_id": "call_1" } })
    .to_string()
    .into_bytes()
}

/// Waits until every record of the subscription for `session_id` is
/// settled and there are `count`; returns them.
async fn settled_records(
    harness: &Harness,
    session_id: &str,
    subscription_id: &str,
    count: usize,
) -> Vec<Value> {
    harness
        .wait_records(session_id, subscription_id, "settled records", |records| {
            records.len() == count && records.iter().all(|record| record["status"] != "pending")
        })
        .await
}

// ---------------------------------------------------------------------------
// Voice-agent deliveries from the emulator
// ---------------------------------------------------------------------------

#[tokio::test]
async fn emulator_deliveries_verify_and_are_recorded_delivered() {
    let harness = start().await;
    let (listener, mut inbox) = listen_for(SECRET, None).await;
    let subscription = harness
        .subscribe(
            &format!("{}/agents/calls", listener.url()),
            &[EventKind::CallConnected, EventKind::CallEnded],
        )
        .await;
    let call_id = harness.start_call("connected").await;
    harness.end_call(&call_id).await;

    let mut events = Vec::new();
    for _ in 0..2 {
        let received = next(&mut inbox).await;
        let entry = &received.entry;
        assert_eq!(entry.kind, Kind::Agents, "{entry:?}");
        assert_eq!(entry.verdict, VerdictCode::Ok, "{entry:?}");
        assert_eq!(entry.status, 200);
        assert_eq!(entry.matched.as_deref(), Some("current"));
        assert_eq!(entry.path, "/agents/calls");
        assert!(entry.event_id.is_some(), "{entry:?}");
        assert!(received.signature.as_ref().is_some_and(|v| v.is_valid()));
        events.push(entry.event.clone().unwrap_or_default());
    }
    events.sort();
    assert_eq!(events, ["call.connected", "call.ended"]);

    let records = settled_records(&harness, &call_id, &subscription.id, 2).await;
    for record in &records {
        assert_eq!(record["status"], "delivered", "{record}");
        assert_eq!(record["http_status_code"], 200, "{record}");
    }
    listener.stop().await;
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn across_a_rotation_both_secrets_verify_and_a_stale_receiver_gets_no_retry() {
    let harness = start().await;
    // Knows the rotation: current = new, previous = old.
    let (rotated, mut rotated_inbox) = listen_for(NEW_SECRET, Some(SECRET)).await;
    // Only ever learnt the old secret.
    let (stale, mut stale_inbox) = listen_for(SECRET, None).await;
    let to_rotated = harness
        .subscribe(&rotated.url(), &[EventKind::CallFailed])
        .await;
    let to_stale = harness
        .subscribe(&stale.url(), &[EventKind::CallFailed])
        .await;

    harness.start_call("failed").await;
    let before = next(&mut rotated_inbox).await;
    assert_eq!(before.entry.verdict, VerdictCode::Ok);
    assert_eq!(before.entry.matched.as_deref(), Some("previous"));
    assert_eq!(next(&mut stale_inbox).await.entry.verdict, VerdictCode::Ok);

    for id in [&to_rotated.id, &to_stale.id] {
        harness.rotate_secret(id, NEW_SECRET).await;
    }
    let call_id = harness.start_call("failed").await;
    let after = next(&mut rotated_inbox).await;
    assert_eq!(after.entry.verdict, VerdictCode::Ok);
    assert_eq!(after.entry.matched.as_deref(), Some("current"));

    let rejected = next(&mut stale_inbox).await;
    assert_eq!(rejected.entry.status, 401);
    assert_eq!(rejected.entry.verdict, VerdictCode::InvalidSignature);
    assert_eq!(
        rejected.entry.reason.as_deref(),
        Some("no_matching_signature")
    );
    let records = settled_records(&harness, &call_id, &to_stale.id, 1).await;
    assert_eq!(records[0]["status"], "failed", "{}", records[0]);
    assert_eq!(records[0]["http_status_code"], 401);
    let error = records[0]["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("HTTP 401"), "{error}");
    assert!(error.contains("invalid signature"), "{error}");
    assert!(records[0]["next_retry_at"].is_null(), "{}", records[0]);
    // A retry would keep the delivery in progress: once idle, none is
    // waiting.
    harness.wait_deliveries_idle().await;
    assert_eq!(harness.records_of(&call_id, &to_stale.id).await.len(), 1);
    assert!(
        stale_inbox.try_recv().is_err(),
        "no retry reached the receiver"
    );
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// Requests made by hand
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_repeated_event_id_is_accepted_and_flagged_duplicate() {
    let (listener, mut inbox) = listen_for(SECRET, None).await;
    let body = event_body("evt-dup-1");
    let url = format!("{}/hook", listener.url());
    let first = post_signed(&url, SECRET, unix_now(), &body).await;
    let second = post_signed(&url, SECRET, unix_now(), &body).await;
    assert_eq!(first, (200, json!({ "ok": true })));
    assert_eq!(second, (200, json!({ "ok": true, "duplicate": true })));
    let (a, b) = (next(&mut inbox).await, next(&mut inbox).await);
    assert_eq!(
        (a.entry.verdict, a.entry.duplicate),
        (VerdictCode::Ok, false)
    );
    assert_eq!(
        (b.entry.verdict, b.entry.duplicate),
        (VerdictCode::Duplicate, true)
    );
    assert_eq!(b.entry.event_id.as_deref(), Some("evt-dup-1"));
    // Another id is new again.
    let third = post_signed(&url, SECRET, unix_now(), &event_body("evt-dup-2")).await;
    assert_eq!(third.0, 200);
    assert!(!next(&mut inbox).await.entry.duplicate);
}

#[tokio::test]
async fn stale_future_tampered_and_missing_signatures_get_401_with_a_reason() {
    let (listener, mut inbox) = listen_for(SECRET, None).await;
    let url = listener.url();
    let body = event_body("evt-bad");
    let now = unix_now();
    let cases: Vec<(Option<String>, Vec<u8>, &str)> = vec![
        (
            Some(signature::sign(SECRET.as_bytes(), now - 301, &body)),
            body.clone(),
            "timestamp_too_old",
        ),
        (
            // 302, not 301: the receiver reads its clock a little later, so
            // "301 s ahead" can arrive as 300 s ahead, which is allowed.
            Some(signature::sign(SECRET.as_bytes(), now + 302, &body)),
            body.clone(),
            "timestamp_in_future",
        ),
        (
            Some(signature::sign(SECRET.as_bytes(), now, &body)),
            [body.as_slice(), b" "].concat(),
            "no_matching_signature",
        ),
        (Some("v1=abc".to_owned()), body.clone(), "malformed_header"),
        (None, body.clone(), "missing_header"),
    ];
    for (header, sent, reason) in cases {
        let (status, answer) = post(&url, header.as_deref(), &sent).await;
        assert_eq!(status, 401, "{reason}: {answer}");
        assert_eq!(
            answer,
            json!({ "error": "invalid signature", "reason": reason })
        );
        let received = next(&mut inbox).await;
        assert_eq!(received.entry.verdict, VerdictCode::InvalidSignature);
        assert_eq!(received.entry.reason.as_deref(), Some(reason));
        assert_eq!(received.entry.status, 401);
    }
    // Within tolerance, 295 s old, is fine: from a fresh clock (the five
    // posts above can take seconds on a loaded machine) with 5 s to arrive.
    let (status, _) = post_signed(&url, SECRET, unix_now() - 295, &body).await;
    assert_eq!(status, 200);
    let ok = next(&mut inbox).await;
    assert_eq!(ok.entry.verdict, VerdictCode::Ok);
    // A stale delivery never marked the event as seen.
    assert!(!ok.entry.duplicate);
}

#[tokio::test]
async fn signed_non_json_is_400_and_other_requests_are_rejected_but_captured() {
    let (listener, mut inbox) = listen_for(SECRET, None).await;
    let url = listener.url();
    let (status, answer) = post_signed(&url, SECRET, unix_now(), b"not json").await;
    assert_eq!((status, answer["reason"].clone()), (400, json!("not_json")));
    assert_eq!(
        next(&mut inbox).await.entry.verdict,
        VerdictCode::MalformedPayload
    );
    let (status, _) = post_signed(&url, SECRET, unix_now(), br#"{"event":"x"}"#).await;
    assert_eq!(status, 400);
    assert_eq!(
        next(&mut inbox).await.entry.reason.as_deref(),
        Some("no_event_id")
    );

    let response = earshot_http::client_builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{url}/status?probe=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let get = next(&mut inbox).await;
    assert_eq!(get.entry.verdict, VerdictCode::MethodNotAllowed);
    assert_eq!(get.entry.method, "GET");
    assert_eq!(get.entry.path, "/status?probe=1");

    let (status, _) = post(&url, None, br#"{"hello":"world"}"#).await;
    assert_eq!(status, 400);
    let other = next(&mut inbox).await;
    assert_eq!(
        (other.entry.kind, other.entry.verdict),
        (Kind::Other, VerdictCode::Unrecognized)
    );
}

#[tokio::test]
async fn prerecorded_webhooks_by_hand_check_the_header_source_and_duplicates() {
    let config = ListenConfig {
        auth_header: Some(("x-webhook-token".to_owned(), SecretString::new(TOKEN))),
        trust_any_source: true,
        ..ListenConfig::default()
    };
    let (listener, mut inbox) = listen_with(config).await;
    let body = br#"{"transcript_id":"tr_1","status":"completed"}"#;
    let client = earshot_http::client_builder().no_proxy().build().unwrap();
    let send = |token: Option<&'static str>| {
        let mut request = client.post(listener.url()).body(body.to_vec());
        if let Some(token) = token {
            request = request.header("X-Webhook-Token", token);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(send(None).await, 401);
    assert_eq!(send(Some("s3cret token valuE")).await, 401);
    assert_eq!(send(Some(TOKEN)).await, 200);
    assert_eq!(send(Some(TOKEN)).await, 200);
    let got: Vec<Received> = [
        next(&mut inbox).await,
        next(&mut inbox).await,
        next(&mut inbox).await,
        next(&mut inbox).await,
    ]
    .into();
    let reasons: Vec<Option<&str>> = got.iter().map(|r| r.entry.reason.as_deref()).collect();
    assert_eq!(
        reasons,
        [Some("missing_header"), Some("wrong_value"), None, None]
    );
    let verdicts: Vec<VerdictCode> = got.iter().map(|r| r.entry.verdict).collect();
    assert_eq!(
        verdicts,
        [
            VerdictCode::AuthFailed,
            VerdictCode::AuthFailed,
            VerdictCode::Ok,
            VerdictCode::Duplicate
        ]
    );
    for received in &got {
        assert_eq!(received.entry.kind, Kind::Prerecorded);
        assert_eq!(received.entry.transcript_id.as_deref(), Some("tr_1"));
        assert!(!received.entry.untrusted_source, "trust_any_source is set");
    }
    // A signed voice-agent delivery needs a secret this listener lacks.
    let (status, answer) = post_signed(&listener.url(), SECRET, unix_now(), &event_body("e")).await;
    assert_eq!(
        (status, answer["reason"].clone()),
        (401, json!("no_secret_configured"))
    );
}

/// `POST /v2/upload` of a short WAV: its `upload_url`.
async fn upload(harness: &Harness) -> String {
    let response = harness
        .http
        .post(format!("{}/v2/upload", harness.base))
        .header("authorization", API_KEY)
        .body(wav(1.0, None))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.unwrap();
    body["upload_url"].as_str().unwrap().to_owned()
}

/// Submits a job with `webhook`; its id.
async fn submit(harness: &Harness, audio_url: &str, webhook: Value) -> String {
    let mut body = json!({ "audio_url": audio_url });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), webhook.as_object()) {
        body.extend(extra.clone());
    }
    let answer = harness
        .authed(
            reqwest::Method::POST,
            "/v2/transcript",
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json()["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn prerecorded_webhooks_from_the_emulator_carry_the_auth_header() {
    let harness = start_with(Options {
        poll_limit: 100_000,
        ..Options::default()
    })
    .await;
    let config = ListenConfig {
        auth_header: Some(("x-webhook-token".to_owned(), SecretString::new(TOKEN))),
        ..ListenConfig::default()
    };
    let (listener, mut inbox) = listen_with(config).await;
    let audio_url = upload(&harness).await;

    let good = submit(
        &harness,
        &audio_url,
        json!({ "webhook_url": format!("{}/pre?customer=42", listener.url()),
                "webhook_auth_header_name": "X-Webhook-Token",
                "webhook_auth_header_value": TOKEN }),
    )
    .await;
    let received = next(&mut inbox).await;
    let entry = &received.entry;
    assert_eq!(entry.kind, Kind::Prerecorded);
    assert_eq!(entry.verdict, VerdictCode::Ok, "{entry:?}");
    assert_eq!(entry.transcript_id.as_deref(), Some(good.as_str()));
    assert_eq!(entry.transcript_status.as_deref(), Some("completed"));
    assert_eq!(entry.path, "/pre?customer=42");
    // Loopback is not one of the platform's fixed addresses: flagged, but
    // still accepted.
    assert!(entry.untrusted_source, "{entry:?}");
    assert!(entry.source.starts_with("127.0.0.1:"), "{}", entry.source);

    let bad = submit(
        &harness,
        &audio_url,
        json!({ "webhook_url": listener.url(),
                "webhook_auth_header_name": "X-Webhook-Token",
                "webhook_auth_header_value": "not the token" }),
    )
    .await;
    let rejected = next(&mut inbox).await;
    assert_eq!(rejected.entry.transcript_id.as_deref(), Some(bad.as_str()));
    assert_eq!(rejected.entry.verdict, VerdictCode::AuthFailed);
    assert_eq!(rejected.entry.status, 401);
    for (id, code) in [(&good, 200), (&bad, 401)] {
        eventually(Duration::from_secs(5), "webhook_status_code", || async {
            let (_, record) = harness.get(&format!("/v2/transcript/{id}")).await;
            (record["webhook_status_code"] == code).then_some(())
        })
        .await;
    }
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// The capture file and its replay
// ---------------------------------------------------------------------------

fn earshot() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"));
    command
        .env_remove("EARSHOT_URL")
        .env_remove("EARSHOT_API_KEY")
        .kill_on_drop(true);
    command
}

async fn verify_capture(file: &Path, extra: &[&str]) -> (i32, String, String) {
    let output = earshot()
        .arg("verify")
        .arg("--capture")
        .arg(file)
        .args(["--secret", SECRET])
        .args(extra)
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_capture_file_keeps_exact_bytes_and_verify_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("capture.jsonl");
    let mut config = ListenConfig::with_secrets(SecretString::new(SECRET), None);
    config.capture = Some(file.clone());
    let (listener, mut inbox) = listen_with(config).await;
    // Odd whitespace, unsorted keys, non-ASCII text, CRLF at the end.
    let body =
        "{\"z\" : 1,\n\t\"event_id\":\"evt-ü-1\",  \"event\":\"call.ended\",\"a\":\"✓\"}\r\n";
    let (status, _) = post_signed(
        &format!("{}/in?x=%2F", listener.url()),
        SECRET,
        unix_now(),
        body.as_bytes(),
    )
    .await;
    assert_eq!(status, 200);
    // The stream carries the body once; the capture entry gets its copies.
    let received = next(&mut inbox).await;
    assert_eq!(&received.body[..], body.as_bytes());
    assert!(received.entry.body_base64.is_empty() && received.entry.body.is_none());
    let whole = received.capture_entry();
    assert_eq!(whole.body_bytes().unwrap(), body.as_bytes());
    assert_eq!(whole.body.as_deref(), Some(body));
    let (status, _) = post(&listener.url(), None, b"unsigned").await;
    assert_eq!(status, 400);
    next(&mut inbox).await;
    listener.stop().await;

    let entries = capture::read_file(&file).unwrap();
    assert_eq!(entries.len(), 2);
    let signed = &entries[0].entry;
    assert_eq!(signed.body_bytes().unwrap(), body.as_bytes());
    assert_eq!(signed.body.as_deref(), Some(body));
    assert_eq!(signed.path, "/in?x=%2F");
    assert_eq!(signed.verdict, VerdictCode::Ok);
    assert_eq!(signed.event_id.as_deref(), Some("evt-ü-1"));
    assert!(signed.header("x-svc-signature").is_some());
    assert!(!std::fs::read_to_string(&file).unwrap().contains(SECRET));
    assert_eq!(entries[1].entry.verdict, VerdictCode::Unrecognized);

    // What the Signatures pane replays (`capture:PATH`): the last signed
    // request's header and exact bytes; line 2 carries no signature.
    let replay = capture::replay(&file, &capture::Selector::LastSigned).unwrap();
    assert_eq!((replay.line, replay.body.as_slice()), (1, body.as_bytes()));
    assert_eq!(
        Some(replay.header.as_str()),
        signed.header("x-svc-signature")
    );
    assert_eq!(replay.received_unix, signed.received_unix);
    let unsigned = capture::replay(&file, &capture::Selector::Line(2)).unwrap_err();
    assert!(unsigned.contains("no X-SVC-Signature"), "{unsigned}");

    // Default: the last entry with a signature (line 1, not the unsigned line 2).
    let (code, stdout, stderr) = verify_capture(&file, &[]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("line 1"), "{stdout}");
    assert!(stdout.contains("✓ signature valid"), "{stdout}");
    let (code, stdout, _) = verify_capture(&file, &["--event-id", "evt-ü-1", "--json"]).await;
    assert_eq!(code, 0, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["capture"]["line"], 1);
    // An hour later the same capture is stale.
    let later = (signed.received_unix + 3600).to_string();
    let (code, stdout, _) = verify_capture(&file, &["--now", &later]).await;
    assert_eq!(code, 1, "{stdout}");
    // The unsigned entry cannot be replayed.
    let (code, _, stderr) = verify_capture(&file, &["--index", "2"]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("line 2"), "{stderr}");

    // A copy whose body was re-serialised (what a careless proxy does).
    let mut tampered = signed.clone();
    let reserialised: Value = serde_json::from_str(body).unwrap();
    tampered.body_base64 = encode_base64(reserialised.to_string().as_bytes());
    let copy = dir.path().join("tampered.jsonl");
    std::fs::write(
        &copy,
        format!("{}\n", serde_json::to_string(&tampered).unwrap()),
    )
    .unwrap();
    let (code, stdout, _) = verify_capture(&copy, &[]).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("✗ signature invalid"), "{stdout}");
    assert!(stdout.contains("Findings"), "{stdout}");

    // A broken line is named.
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, "{\"not\": \"an entry\"}\n").unwrap();
    let (code, _, stderr) = verify_capture(&broken, &[]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("line 1"), "{stderr}");
}

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

#[tokio::test]
async fn earshot_listen_prints_its_url_a_line_per_request_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cli.jsonl");
    let mut child = earshot()
        .args(["listen", "--secret", SECRET, "--capture"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (url, lines) = listening_url_and_lines(&mut child);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let (status, _) = post_signed(&url, SECRET, unix_now(), &event_body("evt-cli-12345")).await;
    assert_eq!(status, 200);
    let line = next_line(&lines);
    assert!(line.contains("call.failed"), "{line}");
    assert!(line.contains("evt-cli-"), "{line}");
    assert!(line.contains("ok (current secret)"), "{line}");
    assert!(line.ends_with("→ 200"), "{line}");

    let (status, _) = post_signed(&url, NEW_SECRET, unix_now(), &event_body("evt-cli-2")).await;
    assert_eq!(status, 401);
    let line = next_line(&lines);
    assert!(
        line.contains("invalid signature: no_matching_signature"),
        "{line}"
    );
    assert!(line.ends_with("→ 401"), "{line}");

    let pid = child.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let summary = next_line(&lines);
    assert_eq!(summary, "received 2, accepted 1, rejected 1, duplicates 0");
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    assert_eq!(capture::read_file(&file).unwrap().len(), 2);
}

#[tokio::test]
async fn earshot_listen_rejects_bad_input_with_exit_2() {
    let cases: [&[&str]; 4] = [
        &["listen"],
        &["listen", "--auth-header", "no-colon"],
        &["listen", "--auth-header", "bad name:value"],
        &["listen", "--previous-secret", SECRET],
    ];
    for args in cases {
        let output = earshot().args(args).output().await.unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.is_empty(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let output = earshot()
        .args([
            "listen",
            "--secret",
            SECRET,
            "--capture",
            "/nonexistent-dir/x.jsonl",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("capture file"),
        "{output:?}"
    );
}

/// `earshot ARGS` isolated in `home` (with `env`): its first stdout line
/// and its stderr once SIGTERM stopped it.
async fn listen_until_listening(
    home: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> (String, String) {
    let mut child = crate::common::cli::isolated_async(home)
        .args(args)
        .envs(env.iter().copied())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("a line within 10 s")
        .unwrap()
        .unwrap_or_default();
    if child.try_wait().unwrap().is_none() {
        crate::common::cli::send_signal(&child, "TERM").await;
    }
    let out = crate::common::cli::wait_out(child).await;
    (first, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn earshot_listen_store_without_a_path_uses_the_default_store() {
    let home = tempfile::tempdir().unwrap();
    let default = home.path().join("state/earshot/earshot.db");
    for args in [
        &["listen", "--secret", SECRET, "--store"][..],
        &[
            "listen",
            "--store",
            "--listen",
            "127.0.0.1:0",
            "--secret",
            SECRET,
        ],
    ] {
        let (first, stderr) = listen_until_listening(home.path(), args, &[]).await;
        assert!(
            first.starts_with("listening on "),
            "{args:?}: {first:?} {stderr}"
        );
        assert!(
            stderr.contains(&format!("storing events in {}", default.display())),
            "{args:?}: {stderr}"
        );
        assert!(default.is_file(), "{args:?}");
    }

    let chosen = home.path().join("chosen.db");
    let args = ["listen", "--store", "--secret", SECRET];
    let env = [("EARSHOT_STORE", chosen.as_path())];
    let (first, stderr) = listen_until_listening(home.path(), &args, &env).await;
    assert!(first.starts_with("listening on "), "{first:?} {stderr}");
    assert!(
        stderr.contains(&format!("storing events in {}", chosen.display())),
        "EARSHOT_STORE beats the default: {stderr}"
    );
}
