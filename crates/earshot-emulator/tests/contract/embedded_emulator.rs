//! The emulator as another project embeds it: only the public builder and
//! handle (`Emulator::builder()`, `start_session`, `arm_fault`, ...) and
//! plain HTTP with reqwest — no earshot client. Guards the API the README
//! and `examples/embedded_emulator.rs` show.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::{Receiver, SECRET, eventually};
use earshot_core::signature::{self, Candidate};
use earshot_emulator::{AccountChange, ControlError, Emulator, Fault, NewCall, StartError};

const KEY: &str = "embedded_key_0123456789";

async fn emulator() -> Emulator {
    Emulator::builder()
        .api_key(KEY)
        .time_scale(0.01)
        .allow_private_urls(true)
        .start()
        .await
        .expect("the emulator starts")
}

fn http() -> reqwest::Client {
    earshot_http::client_builder().no_proxy().build().unwrap()
}

/// `POST /v1/webhook-subscriptions` with the raw key: status and body.
async fn subscribe(emulator: &Emulator, url: &str, events: &[&str]) -> (u16, Value) {
    let response = http()
        .post(emulator.url().join("v1/webhook-subscriptions").unwrap())
        .header("Authorization", emulator.api_key().expose())
        .json(&json!({ "url": url, "events": events, "secret": SECRET }))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// `GET /v1/webhook-subscriptions` with `key`: its status.
async fn list_status(emulator: &Emulator, key: &str) -> u16 {
    http()
        .get(emulator.url().join("v1/webhook-subscriptions").unwrap())
        .header("Authorization", key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The spec's recipe with hmac/sha2 directly: `v1` = hex HMAC-SHA256 of
/// `"<t>."` + the raw body, keyed with the secret.
fn signed_by_hand(header: &str, body: &[u8], secret: &str) -> bool {
    let Some((t, v1)) = header
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(",v1="))
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    hex == v1
}

#[tokio::test]
async fn a_session_emitted_through_the_handle_arrives_signed() {
    let emulator = emulator().await;
    let receiver = Receiver::healthy().await;
    let (status, created) = subscribe(
        &emulator,
        &receiver.url(),
        &["session.started", "session.completed"],
    )
    .await;
    assert_eq!(status, 201, "{created}");

    let session_id = emulator.start_session(None).unwrap();
    let started = receiver.wait_count(1, "session.started").await;
    assert_eq!(started[0].header("x-svc-event"), "session.started");
    let header = started[0].header("x-svc-signature");
    assert!(signed_by_hand(header, &started[0].body, SECRET), "{header}");
    let verdict = signature::verify(
        header,
        &started[0].body,
        &[Candidate {
            label: "current",
            secret: SECRET.as_bytes(),
        }],
        chrono::Utc::now().timestamp(),
        signature::DEFAULT_TOLERANCE_SECS,
    );
    assert!(verdict.is_valid(), "{verdict}");
    assert!(!signed_by_hand(
        header,
        &started[0].body,
        "whsec_some_other_secret_0123456789abcd"
    ));
    let event = started[0].json();
    assert_eq!(event["session"]["session_id"], session_id.as_str());
    assert_eq!(event["session"]["status"], "created");

    emulator.complete_session(&session_id).unwrap();
    let both = receiver.wait_count(2, "session.completed").await;
    assert_eq!(both[1].json()["event"], "session.completed");
    let again = emulator.complete_session(&session_id);
    assert!(matches!(again, Err(ControlError::Conflict(_))), "{again:?}");
    let unknown = emulator.complete_session("ses_nothing_here");
    assert!(
        matches!(unknown, Err(ControlError::NotFound(_))),
        "{unknown:?}"
    );

    let idle = eventually(Duration::from_secs(5), "deliveries settled", || async {
        let stats = emulator.stats();
        (stats.deliveries_in_progress() == 0).then_some(stats)
    })
    .await;
    assert_eq!(idle.count("POST /v1/webhook-subscriptions", 201), 1);
    emulator.shutdown().await;
}

#[tokio::test]
async fn calls_placed_through_the_handle_emit_call_events() {
    let emulator = emulator().await;
    let receiver = Receiver::healthy().await;
    let events = ["call.connected", "call.ended", "call.failed"];
    let (status, created) = subscribe(&emulator, &receiver.url(), &events).await;
    assert_eq!(status, 201, "{created}");

    let call = NewCall::connected().from_number("+15555550999");
    let call_id = emulator.start_call(call).unwrap();
    let connected = receiver.wait_count(1, "call.connected").await;
    let body = connected[0].json();
    assert_eq!(body["event"], "call.connected");
    assert_eq!(body["call"]["call_id"], call_id.as_str());
    assert_eq!(body["call"]["from_number"], "+15555550999");

    emulator.end_call(&call_id).unwrap();
    let ended = receiver.wait_count(2, "call.ended").await[1].json();
    assert_eq!(ended["event"], "call.ended");
    assert!(ended["call"]["recording_url"].is_string(), "{ended}");
    let twice = emulator.end_call(&call_id);
    assert!(matches!(twice, Err(ControlError::Conflict(_))), "{twice:?}");

    let failed_id = emulator.start_call(NewCall::failed()).unwrap();
    let failed = receiver.wait_count(3, "call.failed").await[2].json();
    assert_eq!(failed["event"], "call.failed");
    assert_eq!(failed["call"]["call_id"], failed_id.as_str());
    let session_of_a_call = emulator.complete_session(&failed_id);
    assert!(
        matches!(session_of_a_call, Err(ControlError::Invalid(_))),
        "{session_of_a_call:?}"
    );
    let bad_agent = emulator.start_call(NewCall::connected().agent_id("not-a-uuid"));
    assert!(
        matches!(bad_agent, Err(ControlError::Invalid(_))),
        "{bad_agent:?}"
    );
    emulator.shutdown().await;
}

#[tokio::test]
async fn an_armed_fault_answers_the_next_request_only() {
    let emulator = emulator().await;
    emulator
        .arm_fault(Fault::status("/v1/webhook-subscriptions", 503))
        .unwrap();
    assert_eq!(emulator.armed_faults().len(), 1);
    assert_eq!(list_status(&emulator, KEY).await, 503);
    assert!(emulator.armed_faults().is_empty());
    assert_eq!(list_status(&emulator, KEY).await, 200);

    emulator
        .arm_fault(Fault::status("/v1/", 429).times(3))
        .unwrap();
    assert_eq!(emulator.armed_faults()[0].count, 3);
    emulator.clear_faults();
    assert_eq!(list_status(&emulator, KEY).await, 200);

    let stats = emulator.stats();
    assert_eq!(stats.count("GET /v1/webhook-subscriptions", 503), 1);
    assert_eq!(stats.count("GET /v1/webhook-subscriptions", 200), 2);

    let control = emulator.arm_fault(Fault::drop_connection("/_emulator"));
    assert!(
        matches!(control, Err(ControlError::Invalid(_))),
        "{control:?}"
    );
    let relative = emulator.arm_fault(Fault::status("v1", 500));
    assert!(
        matches!(relative, Err(ControlError::Invalid(_))),
        "{relative:?}"
    );
    emulator.shutdown().await;
}

#[tokio::test]
async fn the_account_changed_through_the_handle_is_the_one_served() {
    let emulator = emulator().await;
    let change = AccountChange::default().balance(-1.0).concurrency(3);
    let changed = emulator.update_account(change).unwrap();
    assert_eq!(changed.concurrency, 3);
    assert_eq!(changed.effective_concurrency, 1);
    let served: Value = http()
        .get(emulator.url().join("_emulator/account").unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(served["balance"], -1.0);
    assert_eq!(served["effective_concurrency"], 1);
    assert_eq!(emulator.account(), changed);
    let zero = emulator.update_account(AccountChange::default().concurrency(0));
    assert!(matches!(zero, Err(ControlError::Invalid(_))), "{zero:?}");
    emulator.shutdown().await;
}

#[tokio::test]
async fn the_key_authenticates_and_never_shows_in_debug() {
    let given = emulator().await;
    assert_eq!(given.api_key().expose(), KEY);
    assert!(!format!("{given:?}").contains(KEY), "{given:?}");
    given.shutdown().await;

    let generated = Emulator::builder().start().await.unwrap();
    let key = generated.api_key().expose().to_owned();
    assert!(key.starts_with("emu_") && key.len() == 36, "{}", key.len());
    assert!(!format!("{generated:?}").contains(&key));
    assert_eq!(list_status(&generated, &key).await, 200);
    assert_eq!(list_status(&generated, &format!("Bearer {key}")).await, 200);
    assert_eq!(list_status(&generated, "emu_not_the_key").await, 401);
    // Without allow_private_urls, the platform's rule: public https only.
    let (status, refused) = subscribe(&generated, "http://127.0.0.1:9/hook", &["call.ended"]).await;
    assert_eq!(status, 400, "{refused}");
    generated.shutdown().await;
}

#[tokio::test]
async fn start_failures_are_typed() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let busy = Emulator::builder().listen(addr).start().await;
    match busy {
        Err(StartError::Bind { addr: refused, .. }) => assert_eq!(refused, addr),
        other => panic!("expected a bind error, got {other:?}"),
    }

    let empty = Emulator::builder().api_key("").start().await;
    assert!(
        matches!(empty, Err(StartError::InvalidApiKey(_))),
        "{empty:?}"
    );
    let spaced = Emulator::builder().api_key("two words").start().await;
    assert!(
        matches!(spaced, Err(StartError::InvalidApiKey(_))),
        "{spaced:?}"
    );

    for (builder, name) in [
        (Emulator::builder().time_scale(0.0), "time_scale"),
        (Emulator::builder().time_scale(f64::NAN), "time_scale"),
        (Emulator::builder().poll_limit(0), "poll_limit"),
        (Emulator::builder().concurrency(0), "concurrency"),
        (
            Emulator::builder().http_limit(0).time_scale(-1.0),
            "http_limit",
        ),
    ] {
        match builder.start().await {
            Err(StartError::InvalidSetting { setting, rule }) => {
                assert_eq!(setting, name, "{rule}");
            }
            other => panic!("{name}: expected an invalid setting, got {other:?}"),
        }
    }
}
