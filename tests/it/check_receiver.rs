//! `earshot check-receiver` over real HTTP: receivers written here (axum on
//! loopback), one correct and one per common mistake, each caught by
//! exactly the cases that should catch it. The correct receiver computes
//! HMAC-SHA256 itself with `hmac`/`sha2`, so the battery's signing is
//! checked independently of `earshot_core::signature`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::hmac_hex;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use earshot_core::receiver::check::{
    self, AGENT_CASES, AuthHeader, CheckConfig, Outcome, PRERECORDED_CASES, Report,
};
use earshot_core::redact::SecretString;
use serde_json::Value;

const SECRET: &str = "whsec_check_current_0123456789abcdefghij";
const PREVIOUS: &str = "whsec_check_previous_0123456789abcdefghi";
const TOKEN_NAME: &str = "X-Hook-Token";
const TOKEN: &str = "hook-token-0123456789";
/// The tests' deadline: short, so a slow receiver costs half a second.
const QUICK: Duration = Duration::from_millis(500);

/// How a voice-agent receiver gets it wrong.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mistake {
    None,
    /// Hashes `serde_json` re-serialised (pretty) instead of the raw bytes.
    ReserialisesBody,
    /// Hashes the body without the `<t>.` prefix.
    DropsPrefix,
    /// Never compares `t` with its clock.
    IgnoresTimestamp,
    /// Verifies nothing.
    AcceptsAnySignature,
    /// Answers correctly, after twice the tests' deadline.
    Slow,
    /// Answers 301 to everything.
    Redirects,
}

/// One request as the receiver saw it.
#[derive(Clone)]
struct Seen {
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone)]
struct AgentReceiver {
    mistake: Mistake,
    secrets: Vec<&'static str>,
    event_ids: Arc<Mutex<HashSet<String>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// `t` and every `v1` of the header, parsed by hand.
fn parse_signature(value: &str) -> Option<(i64, Vec<String>)> {
    let mut timestamp = None;
    let mut digests = Vec::new();
    for part in value.split(',') {
        match part.split_once('=')? {
            ("t", t) => timestamp = t.parse().ok(),
            ("v1", v1) => digests.push(v1.to_owned()),
            _ => {}
        }
    }
    Some((timestamp?, digests))
}

impl AgentReceiver {
    fn verifies(&self, headers: &HeaderMap, body: &[u8]) -> bool {
        if self.mistake == Mistake::AcceptsAnySignature {
            return true;
        }
        let Some((t, digests)) = headers
            .get("x-svc-signature")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_signature)
        else {
            return false;
        };
        let now = chrono::Utc::now().timestamp();
        if self.mistake != Mistake::IgnoresTimestamp && (now - t).abs() > 300 {
            return false;
        }
        let reserialised;
        let hashed: &[u8] = if self.mistake == Mistake::ReserialisesBody {
            let Ok(value) = serde_json::from_slice::<Value>(body) else {
                return false;
            };
            reserialised = serde_json::to_vec_pretty(&value).unwrap();
            &reserialised
        } else {
            body
        };
        let prefix = format!("{t}.");
        self.secrets.iter().any(|secret| {
            let expected = if self.mistake == Mistake::DropsPrefix {
                hmac_hex(secret.as_bytes(), &[hashed])
            } else {
                hmac_hex(secret.as_bytes(), &[prefix.as_bytes(), hashed])
            };
            digests.contains(&expected)
        })
    }
}

async fn receive_agent(
    State(receiver): State<AgentReceiver>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    receiver.seen.lock().unwrap().push(Seen {
        headers: headers.clone(),
        body: body.clone(),
    });
    match receiver.mistake {
        Mistake::Redirects => {
            return (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, "https://hooks.example.com/final")],
            )
                .into_response();
        }
        Mistake::Slow => tokio::time::sleep(QUICK * 2).await,
        _ => {}
    }
    if !receiver.verifies(&headers, &body) {
        return (StatusCode::UNAUTHORIZED, "invalid signature").into_response();
    }
    let Ok(event) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(event_id) = event["event_id"].as_str() else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let first = receiver
        .event_ids
        .lock()
        .unwrap()
        .insert(event_id.to_owned());
    let answer = if first { "processed" } else { "duplicate" };
    (StatusCode::OK, answer).into_response()
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/webhooks")
}

/// A voice-agent receiver with `mistake`, accepting the current and the
/// previous secret. Returns its URL and what it saw.
async fn agent_receiver(mistake: Mistake) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let receiver = AgentReceiver {
        mistake,
        secrets: vec![SECRET, PREVIOUS],
        event_ids: Arc::default(),
        seen: Arc::default(),
    };
    let seen = receiver.seen.clone();
    let app = Router::new().fallback(receive_agent).with_state(receiver);
    (serve(app).await, seen)
}

fn agents_config(url: &str, previous: bool) -> CheckConfig {
    let mut config = CheckConfig::agents(check::check_url(url).unwrap(), SecretString::new(SECRET));
    if previous {
        config.previous_secret = Some(SecretString::new(PREVIOUS));
    }
    config.timeout = QUICK;
    config
}

/// The agents battery against `url` (with the previous secret when
/// `previous`).
async fn agents_battery(url: &str, previous: bool) -> Report {
    check::run_battery(&agents_config(url, previous))
        .await
        .expect("the battery runs")
}

async fn battery_against(mistake: Mistake) -> Report {
    let (url, _) = agent_receiver(mistake).await;
    agents_battery(&url, true).await
}

fn names(report: &Report, outcome: Outcome) -> Vec<&'static str> {
    report.names_with(outcome)
}

const VALID_AND_ORDER_SENSITIVE: [&str; 8] = [
    "session.started",
    "session.completed",
    "call.connected",
    "call.ended",
    "call.failed",
    "duplicate",
    "out-of-order",
    "previous-secret",
];

// ---------------------------------------------------------------------------
// A correct voice-agent receiver
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_correct_receiver_passes_every_case() {
    let (url, seen) = agent_receiver(Mistake::None).await;
    let report = agents_battery(&url, true).await;
    let listed: Vec<&str> = report.cases.iter().map(|case| case.name).collect();
    assert_eq!(listed, AGENT_CASES);
    assert!(report.all_passed(), "{report:#?}");
    assert_eq!((report.passed, report.failed, report.skipped), (11, 0, 0));
    for case in &report.cases {
        assert!(case.hint.is_none(), "{case:#?}");
        assert!(case.latency_ms.is_some(), "{case:#?}");
    }
    let rejected = report.case("bad-signature").unwrap();
    assert_eq!(rejected.status, Some(401));
    assert!(
        rejected
            .platform_would
            .as_deref()
            .unwrap()
            .contains("no retry")
    );
    assert_eq!(report.case("duplicate").unwrap().answer, "200, then 200");
    // 5 valid + 3 refused + 2 + 2 + 1 rotated.
    assert_eq!(seen.lock().unwrap().len(), 13);
}

#[tokio::test]
async fn deliveries_carry_the_platform_headers_and_documented_payloads() {
    let (url, seen) = agent_receiver(Mistake::None).await;
    agents_battery(&url, true).await;
    let seen = seen.lock().unwrap().clone();
    let mut delivery_ids = HashSet::new();
    let mut by_event_id: std::collections::HashMap<String, Vec<Seen>> = Default::default();
    for request in &seen {
        let header = |name: &str| request.headers[name].to_str().unwrap().to_owned();
        assert_eq!(header("user-agent"), "SVC-Webhooks/1.0");
        assert_eq!(header("content-type"), "application/json");
        let delivery_id = header("x-svc-delivery-id");
        assert!(uuid::Uuid::parse_str(&delivery_id).is_ok(), "{delivery_id}");
        assert!(delivery_ids.insert(delivery_id), "a delivery id is reused");
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(header("x-svc-event"), body["event"].as_str().unwrap());
        let event_id = body["event_id"].as_str().unwrap();
        assert!(uuid::Uuid::parse_str(event_id).is_ok(), "{event_id}");
        let stamp = body["timestamp"].as_str().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(stamp).is_ok(),
            "{stamp}"
        );
        let object = body
            .get("session")
            .or_else(|| body.get("call"))
            .expect("a session or call object");
        let fields = if body.get("session").is_some() { 9 } else { 12 };
        assert_eq!(object.as_object().unwrap().len(), fields, "{object}");
        by_event_id
            .entry(event_id.to_owned())
            .or_default()
            .push(request.clone());
    }
    let repeated: Vec<&Vec<Seen>> = by_event_id.values().filter(|v| v.len() > 1).collect();
    assert_eq!(repeated.len(), 1, "exactly one event is sent twice");
    assert_eq!(
        repeated[0][0].body, repeated[0][1].body,
        "byte-identical repeat"
    );
    let ended: Vec<Value> = seen
        .iter()
        .map(|request| serde_json::from_slice::<Value>(&request.body).unwrap())
        .filter(|body| body["event"] == "call.ended")
        .collect();
    for body in ended {
        for field in ["recording_url", "transcript_url"] {
            assert!(
                body["call"][field]
                    .as_str()
                    .unwrap()
                    .starts_with("https://")
            );
        }
    }
}

#[tokio::test]
async fn without_a_previous_secret_the_rotation_case_is_skipped() {
    let (url, _) = agent_receiver(Mistake::None).await;
    let report = agents_battery(&url, false).await;
    assert!(report.all_passed());
    assert_eq!(names(&report, Outcome::Skipped), ["previous-secret"]);
    assert_eq!((report.passed, report.skipped), (10, 1));
    let skipped = report.case("previous-secret").unwrap();
    assert!(
        skipped
            .hint
            .as_deref()
            .unwrap()
            .contains("--previous-secret")
    );
}

// ---------------------------------------------------------------------------
// One receiver per mistake
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_receiver_that_reserialises_the_body_fails_every_valid_delivery() {
    let report = battery_against(Mistake::ReserialisesBody).await;
    assert_eq!(report.failures(), VALID_AND_ORDER_SENSITIVE);
    let hint = report.case("call.ended").unwrap().hint.clone().unwrap();
    assert!(hint.contains("re-serialised body"), "{hint}");
    assert_eq!(report.case("call.ended").unwrap().status, Some(401));
    let pair = report.case("duplicate").unwrap();
    assert!(pair.hint.as_deref().unwrap().starts_with("first delivery:"));
    assert_eq!(pair.answer, "401", "stops at the failing first delivery");
}

#[tokio::test]
async fn a_receiver_that_drops_the_prefix_fails_every_valid_delivery() {
    let report = battery_against(Mistake::DropsPrefix).await;
    assert_eq!(report.failures(), VALID_AND_ORDER_SENSITIVE);
    let hint = report
        .case("previous-secret")
        .unwrap()
        .hint
        .clone()
        .unwrap();
    assert!(hint.contains("previous secret"), "{hint}");
}

#[tokio::test]
async fn a_receiver_that_ignores_the_timestamp_fails_only_the_stale_cases() {
    let report = battery_against(Mistake::IgnoresTimestamp).await;
    assert_eq!(report.failures(), ["stale-timestamp", "future-timestamp"]);
    for name in ["stale-timestamp", "future-timestamp"] {
        let case = report.case(name).unwrap();
        assert_eq!(case.status, Some(200));
        assert!(case.hint.as_deref().unwrap().contains("5 min tolerance"));
        assert_eq!(case.platform_would.as_deref(), Some("delivered"));
    }
}

#[tokio::test]
async fn a_receiver_that_accepts_any_signature_fails_the_refusal_cases() {
    let report = battery_against(Mistake::AcceptsAnySignature).await;
    assert_eq!(
        report.failures(),
        ["bad-signature", "stale-timestamp", "future-timestamp"]
    );
    let hint = report.case("bad-signature").unwrap().hint.clone().unwrap();
    assert!(hint.contains("signature not verified"), "{hint}");
}

#[tokio::test]
async fn a_slow_receiver_times_out_everywhere_without_taking_n_times_the_timeout() {
    let started = Instant::now();
    let report = battery_against(Mistake::Slow).await;
    let took = started.elapsed();
    assert_eq!(report.failures(), AGENT_CASES);
    for case in &report.cases {
        assert_eq!(case.answer, "timeout", "{case:#?}");
        assert_eq!(case.status, None);
        assert!(case.hint.as_deref().unwrap().contains("slower than 500 ms"));
        assert!(case.platform_would.as_deref().unwrap().starts_with("retry"));
    }
    // Concurrent cases: about one timeout in all, not eleven.
    assert!(took < QUICK * 4, "the battery took {took:?}");
}

#[tokio::test]
async fn a_redirecting_receiver_fails_every_case_as_a_redirect() {
    let (url, seen) = agent_receiver(Mistake::Redirects).await;
    let report = agents_battery(&url, true).await;
    assert_eq!(report.failures(), AGENT_CASES);
    for case in &report.cases {
        assert_eq!(case.status, Some(301));
        let hint = case.hint.as_deref().unwrap();
        assert!(hint.contains("redirects are not followed"), "{hint}");
        assert!(hint.contains("https://hooks.example.com/final"), "{hint}");
    }
    // Not followed: every request reached this receiver, none went on.
    assert_eq!(seen.lock().unwrap().len(), 11);
}

#[tokio::test]
async fn nothing_listening_is_a_report_of_refused_connections() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/webhooks", listener.local_addr().unwrap());
    drop(listener);
    let report = agents_battery(&url, false).await;
    assert_eq!(report.failed, 10);
    for case in report.cases.iter().filter(|c| c.outcome == Outcome::Fail) {
        assert_eq!(case.answer, "refused");
        let hint = case.hint.as_deref().unwrap();
        assert!(hint.starts_with("connection refused: is the receiver running at"));
        assert!(hint.contains(&url), "{hint}");
    }
}

// ---------------------------------------------------------------------------
// Pre-recorded receivers
// ---------------------------------------------------------------------------

#[derive(Clone)]
struct TranscriptReceiver {
    checks_token: bool,
}

async fn receive_transcript(
    State(receiver): State<TranscriptReceiver>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let token = headers.get(TOKEN_NAME).map(|value| value.as_bytes());
    if receiver.checks_token && token != Some(TOKEN.as_bytes()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(call) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let known = ["completed", "error"].contains(&call["status"].as_str().unwrap_or(""));
    if call["transcript_id"].is_string() && known {
        StatusCode::NO_CONTENT.into_response()
    } else {
        StatusCode::UNPROCESSABLE_ENTITY.into_response()
    }
}

async fn transcript_receiver(checks_token: bool) -> String {
    let app = Router::new()
        .fallback(receive_transcript)
        .with_state(TranscriptReceiver { checks_token });
    serve(app).await
}

fn prerecorded_config(url: &str) -> CheckConfig {
    let mut config = CheckConfig::prerecorded(check::check_url(url).unwrap());
    config.auth_header = Some(AuthHeader::parse(&format!("{TOKEN_NAME}: {TOKEN}")).unwrap());
    config.timeout = QUICK;
    config
}

#[tokio::test]
async fn a_correct_transcript_receiver_passes_every_case() {
    let url = transcript_receiver(true).await;
    let report = check::run_battery(&prerecorded_config(&url)).await.unwrap();
    let listed: Vec<&str> = report.cases.iter().map(|case| case.name).collect();
    assert_eq!(listed, PRERECORDED_CASES);
    assert!(report.all_passed(), "{report:#?}");
    assert_eq!(report.passed, 5);
    assert_eq!(
        report.case("missing-auth-header").unwrap().status,
        Some(401)
    );
}

#[tokio::test]
async fn a_transcript_receiver_that_ignores_the_header_fails_only_the_auth_cases() {
    let url = transcript_receiver(false).await;
    let report = check::run_battery(&prerecorded_config(&url)).await.unwrap();
    assert_eq!(
        report.failures(),
        ["missing-auth-header", "wrong-auth-header"]
    );
    let hint = report
        .case("wrong-auth-header")
        .unwrap()
        .hint
        .clone()
        .unwrap();
    assert!(hint.contains("not compared"), "{hint}");
}

#[tokio::test]
async fn without_an_auth_header_the_auth_cases_are_skipped() {
    let url = transcript_receiver(false).await;
    let mut config = prerecorded_config(&url);
    config.auth_header = None;
    let report = check::run_battery(&config).await.unwrap();
    assert!(report.all_passed());
    assert_eq!(
        names(&report, Outcome::Skipped),
        ["missing-auth-header", "wrong-auth-header"]
    );
}

// ---------------------------------------------------------------------------
// The real binary
// ---------------------------------------------------------------------------

async fn earshot(args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"))
        .args(args)
        .env_remove("EARSHOT_WEBHOOK_SECRET")
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_binary_exits_0_for_a_correct_receiver_and_prints_json() {
    let (url, _) = agent_receiver(Mistake::None).await;
    let out = earshot(&[
        "check-receiver",
        &url,
        "--secret",
        SECRET,
        "--previous-secret",
        PREVIOUS,
        "--json",
        "--timeout",
        "2",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["kind"], "agents");
    assert_eq!(report["url"], url);
    assert_eq!(report["passed"], 11);
    assert_eq!(report["cases"].as_array().unwrap().len(), 11);
    let case = &report["cases"][0];
    for field in [
        "name",
        "sent",
        "status",
        "latency_ms",
        "expected",
        "outcome",
        "platform_would",
        "hint",
    ] {
        assert!(case.get(field).is_some(), "{field} missing in {case}");
    }
    assert_eq!(case["outcome"], "pass");
    assert!(!stdout.contains(SECRET) && !stdout.contains(PREVIOUS));
}

#[tokio::test]
async fn the_binary_exits_1_with_a_table_when_a_case_fails() {
    let (url, _) = agent_receiver(Mistake::AcceptsAnySignature).await;
    let out = earshot(&["check-receiver", &url, "--secret", SECRET, "--timeout", "2"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL    bad-signature"), "{stdout}");
    assert!(stdout.contains("signature not verified"), "{stdout}");
    assert!(stdout.contains("7 passed, 3 failed, 1 skipped"), "{stdout}");
    assert!(!stdout.contains(SECRET));
}

#[tokio::test]
async fn the_binary_exits_2_on_bad_input_without_printing_secrets() {
    let short = "short-secret-value";
    for args in [
        vec!["check-receiver", "not-a-url", "--secret", SECRET],
        vec!["check-receiver", "http://127.0.0.1:9/", "--secret", short],
        vec![
            "check-receiver",
            "http://127.0.0.1:9/",
            "--kind",
            "prerecorded",
            "--auth-header",
            "no colon here",
        ],
        vec!["check-receiver", "http://127.0.0.1:9/"],
    ] {
        let out = earshot(&args).await;
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(!all.contains(short) && !all.contains(SECRET), "{all}");
    }
}

/// The two halves of the toolkit agree: `earshot listen`'s receiver passes
/// every case of the battery, during a rotation too.
#[tokio::test]
async fn the_listen_receiver_passes_the_whole_battery() {
    use earshot_core::receiver::listen::{self, ListenConfig};
    let config =
        ListenConfig::with_secrets(SecretString::new(SECRET), Some(SecretString::new(PREVIOUS)));
    let (listener, _received) = listen::start(([127, 0, 0, 1], 0).into(), config)
        .await
        .unwrap();
    let report = agents_battery(&format!("{}/hook", listener.url()), true).await;
    assert!(report.all_passed(), "{:?}", report.failures());
    assert_eq!((report.passed, report.skipped), (11, 0));
}
