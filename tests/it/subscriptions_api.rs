//! Subscription management (spec parts 2 C, 4 C, 5 C) through the client
//! and over raw HTTP where the wire matters, plus the emulator's control
//! routes for stats and faults.

use crate::common;
use std::time::{Duration, Instant};

use crate::common::{API_KEY, Harness, Options, Receiver, SECRET, start, start_with};
use earshot_core::api::ApiError;
use earshot_core::api::types::agents::{EventKind, NewSubscription, SubscriptionPatch};
use earshot_core::api::validate::{self, ValidationError};
use earshot_core::redact::SecretString;
use reqwest::Method;
use serde_json::{Value, json};

const NEW_SECRET: &str = "whsec_rotated_secret_ZYXWVUTSRQPONMLKJIH9876";
const LIST: &str = "/v1/webhook-subscriptions";
/// A public address literal: valid without DNS.
const PUBLIC_URL: &str = "https://93.184.216.34/hook";

fn ids(subscriptions: &Value) -> Vec<String> {
    subscriptions
        .as_array()
        .expect("an array of subscriptions")
        .iter()
        .map(|subscription| subscription["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `n` subscriptions created one after the other; their ids, oldest first.
async fn create_many(harness: &Harness, url: &str, n: usize) -> Vec<String> {
    let mut created = Vec::new();
    for _ in 0..n {
        created.push(harness.subscribe(url, &[EventKind::CallEnded]).await.id);
    }
    created
}

/// A `{status, title, detail}` error body with that status; its detail.
fn problem_detail(text: &str, status: u16) -> String {
    let body: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("JSON error: {text}"));
    assert_eq!(body["status"], status, "{body}");
    assert!(body["title"].is_string(), "{body}");
    body["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("detail: {body}"))
        .to_owned()
}

/// An emulator with one subscription (to `call.ended`, at a healthy
/// receiver, kept alive by the caller): the harness, receiver and id.
async fn one_subscription() -> (Harness, Receiver, String) {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    let id = harness
        .subscribe(&receiver.url(), &[EventKind::CallEnded])
        .await
        .id;
    (harness, receiver, id)
}

#[tokio::test]
async fn lists_page_newest_first_with_starting_after() {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    let mut created = create_many(&harness, &receiver.url(), 7).await;
    created.reverse();

    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => format!("{LIST}?limit=3"),
            Some(id) => format!("{LIST}?limit=3&starting_after={id}"),
        };
        let answer = harness.authed(Method::GET, &path, None).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let page = answer.json();
        let page_ids = ids(&page["subscriptions"]);
        let has_more = page["has_more"].as_bool().expect("has_more is a boolean");
        pages.push((page_ids.len(), has_more));
        after = page_ids.last().cloned();
        seen.extend(page_ids);
        if !has_more {
            break;
        }
        assert!(pages.len() < 5, "pagination does not end: {pages:?}");
    }
    assert_eq!(pages, [(3, true), (3, true), (1, false)]);
    assert_eq!(seen, created, "newest first across pages");

    let listed: Vec<String> = harness
        .client
        .list_subscriptions(false)
        .await
        .unwrap()
        .into_iter()
        .map(|subscription| subscription.id)
        .collect();
    assert_eq!(listed, created);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn paused_subscriptions_are_listed_only_with_include_disabled() {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    let created = create_many(&harness, &receiver.url(), 3).await;
    let (status, paused) = harness
        .raw_patch(&created[1], r#"{"enabled": false}"#)
        .await;
    assert_eq!(status, 200);
    assert_eq!(paused["enabled"], false);
    let born_paused = harness
        .client
        .create_subscription(&NewSubscription {
            url: receiver.url(),
            events: vec![EventKind::CallFailed],
            secret: SecretString::new(SECRET),
            agent_id: None,
            enabled: Some(false),
        })
        .await
        .unwrap();
    assert!(!born_paused.enabled);

    let default = harness.authed(Method::GET, LIST, None).await.json();
    assert_eq!(
        ids(&default["subscriptions"]),
        [created[2].clone(), created[0].clone()]
    );
    let all = harness
        .authed(Method::GET, &format!("{LIST}?include_disabled=true"), None)
        .await
        .json();
    assert_eq!(
        ids(&all["subscriptions"]),
        [
            born_paused.id.clone(),
            created[2].clone(),
            created[1].clone(),
            created[0].clone()
        ]
    );
    let enabled: Vec<&Value> = all["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["enabled"])
        .collect();
    assert_eq!(enabled, [false, true, false, true]);

    assert_eq!(
        harness
            .client
            .list_subscriptions(false)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        harness.client.list_subscriptions(true).await.unwrap().len(),
        4
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn patch_rotates_the_secret_without_ever_returning_it() {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    let body = json!({ "url": receiver.url(), "events": ["call.ended"], "secret": SECRET });
    let created = harness
        .authed(Method::POST, LIST, Some(&body.to_string()))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let record = created.json();
    let id = record["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(record["secret_version"], 1);
    assert_eq!(record["enabled"], true);
    assert!(record["agent_id"].is_null(), "{record}");
    assert_eq!(record["events"], json!(["call.ended"]));
    let path = format!("{LIST}/{id}");

    let mut texts = vec![created.text.clone()];
    let rotate = json!({ "secret": NEW_SECRET }).to_string();
    let rotated = harness.authed(Method::PATCH, &path, Some(&rotate)).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    assert_eq!(rotated.json()["secret_version"], 2);
    texts.push(rotated.text);

    let other = Receiver::healthy().await;
    let change = json!({ "url": other.url(), "events": ["call.failed", "session.started"] });
    let changed = harness
        .authed(Method::PATCH, &path, Some(&change.to_string()))
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    let record = changed.json();
    assert_eq!(record["url"], other.url());
    assert_eq!(record["events"], json!(["call.failed", "session.started"]));
    assert_eq!(record["secret_version"], 2, "no new secret, same version");
    texts.push(changed.text);

    let fetched = harness.authed(Method::GET, &path, None).await;
    assert_eq!(fetched.json()["url"], other.url());
    assert_eq!(fetched.json()["secret_version"], 2);
    texts.push(fetched.text);
    texts.push(
        harness
            .authed(Method::GET, &format!("{LIST}?include_disabled=true"), None)
            .await
            .text,
    );

    // Through the client too.
    let again = harness
        .client
        .update_subscription(
            &id,
            &SubscriptionPatch {
                secret: Some(SecretString::new(SECRET)),
                ..SubscriptionPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(again.secret_version, 3);

    for text in &texts {
        assert!(!text.contains(SECRET), "secret leaked: {text}");
        assert!(!text.contains(NEW_SECRET), "secret leaked: {text}");
        let value: Value = serde_json::from_str(text).unwrap();
        let records = match value.get("subscriptions") {
            Some(list) => list.as_array().unwrap().clone(),
            None => vec![value],
        };
        for record in records {
            assert!(record.get("secret").is_none(), "{record}");
        }
    }

    // Unknown fields are named, not dropped.
    for (method, path, body) in [
        (Method::PATCH, path.as_str(), r#"{"event": ["call.ended"]}"#),
        (
            Method::POST,
            LIST,
            r#"{"url": "http://127.0.0.1:9/x", "events": ["call.ended"], "secret": "whsec_test_secret_0123456789abcdefghijkl", "evnts": []}"#,
        ),
    ] {
        let answer = harness.authed(method.clone(), path, Some(body)).await;
        assert_eq!(answer.status, 400, "{method} {}", answer.text);
        let detail = problem_detail(&answer.text, 400);
        let field = if method == Method::PATCH {
            "event"
        } else {
            "evnts"
        };
        assert!(detail.contains(field), "{detail}");
        assert_eq!(answer.json()["title"], "Bad Request");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn delete_answers_204_then_the_subscription_is_gone() {
    let (harness, _receiver, id) = one_subscription().await;
    let path = format!("{LIST}/{id}");

    let deleted = harness.authed(Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 204);
    assert!(deleted.text.is_empty(), "{}", deleted.text);
    let fetched = harness.authed(Method::GET, &path, None).await;
    assert_eq!(fetched.status, 404);
    problem_detail(&fetched.text, 404);
    assert_eq!(fetched.json()["title"], "Not Found");
    let again = harness.authed(Method::DELETE, &path, None).await;
    assert_eq!(again.status, 404);

    let unknown = uuid::Uuid::new_v4().to_string();
    let answer = harness
        .authed(Method::DELETE, &format!("{LIST}/{unknown}"), None)
        .await;
    assert_eq!(answer.status, 404);
    problem_detail(&answer.text, 404);
    match harness.client.delete_subscription(&unknown).await {
        Err(error) => assert_eq!(error.status(), Some(404), "{error}"),
        Ok(()) => panic!("deleting an unknown subscription succeeded"),
    }
    match harness.client.get_subscription(&id).await {
        Err(error) => assert_eq!(error.status(), Some(404), "{error}"),
        Ok(found) => panic!("deleted subscription still there: {found:?}"),
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_api_key_goes_in_authorization_raw_or_as_bearer() {
    let harness = start().await;
    let cases = [
        (None, 401),
        (Some("emu_wrong_key_000000000".to_owned()), 401),
        (Some(API_KEY.to_owned()), 200),
        (Some(format!("Bearer {API_KEY}")), 200),
        (Some(format!("Basic {API_KEY}")), 401),
        (Some(format!("Bearer {API_KEY}x")), 401),
    ];
    for (authorization, expected) in cases {
        let answer = harness
            .raw(Method::GET, LIST, authorization.as_deref(), None)
            .await;
        assert_eq!(
            answer.status, expected,
            "{authorization:?}: {}",
            answer.text
        );
        if expected == 401 {
            problem_detail(&answer.text, 401);
            assert_eq!(answer.json()["title"], "Unauthorized", "{}", answer.text);
        } else {
            assert!(answer.json()["subscriptions"].is_array());
        }
    }
    harness.emulator.shutdown().await;
}

/// A create body that breaks one rule; the field the rule is about.
struct Broken {
    field: &'static str,
    url: &'static str,
    events: Vec<&'static str>,
    secret: String,
    agent_id: Option<&'static str>,
    /// A word the explanation should contain.
    says: &'static str,
}

fn broken_cases() -> Vec<Broken> {
    let valid = || Broken {
        field: "",
        url: PUBLIC_URL,
        events: vec!["call.ended"],
        secret: SECRET.to_owned(),
        agent_id: None,
        says: "",
    };
    let url = |url, says| Broken {
        field: "url",
        url,
        says,
        ..valid()
    };
    let events = |events, says| Broken {
        field: "events",
        events,
        says,
        ..valid()
    };
    let secret = |secret: String, says| Broken {
        field: "secret",
        secret,
        says,
        ..valid()
    };
    vec![
        url("http://hooks.example.com/x", "https://"),
        url("https://127.0.0.1/x", "loopback"),
        url("https://[::1]/x", "loopback"),
        url("https://10.1.2.3/x", "private"),
        url("https://192.168.0.10/x", "private"),
        url("https://172.16.5.5/x", "private"),
        url("https://169.254.169.254/latest", "link-local"),
        url("https://[fe80::1]/x", "link-local"),
        url("https://localhost/x", "localhost"),
        url("https://localhost./x", "localhost"),
        url("https://[64:ff9b::7f00:1]/x", "loopback"),
        url("https://198.18.0.1/x", "benchmarking"),
        url("https://[2001:db8::1]/x", "documentation"),
        url(
            "https://receiver.invalid/a\r\nX-Injected: 1",
            "control character",
        ),
        url("https://receiver.invalid/a\tb", "control character"),
        events(vec![], "at least one"),
        events(vec!["call.ended", "call.ended"], "twice"),
        events(vec!["call.answered"], "unknown event"),
        secret("a".repeat(31), "31"),
        secret("a".repeat(257), "257"),
        secret(
            format!("{} {}", "a".repeat(20), "b".repeat(20)),
            "whitespace",
        ),
        secret(format!("{}é", "a".repeat(40)), "ASCII"),
        Broken {
            field: "agent_id",
            agent_id: Some("agent-7"),
            says: "UUID",
            ..valid()
        },
    ]
}

/// The client's own check of a case: what it would refuse before sending.
async fn client_refusal(harness: &Harness, case: &Broken) -> ValidationError {
    let kinds: Result<Vec<EventKind>, ValidationError> = case
        .events
        .iter()
        .map(|name| {
            EventKind::parse(name).ok_or_else(|| {
                // The type cannot hold an unknown event: the client's check
                // of raw names (used by `subs create`) is what refuses it.
                let names: Vec<String> = case.events.iter().map(|n| n.to_string()).collect();
                validate::event_names(&names).expect_err("unknown event refused")
            })
        })
        .collect();
    let events = match kinds {
        Ok(events) => events,
        Err(error) => return error,
    };
    let result = harness
        .client
        .create_subscription(&NewSubscription {
            url: case.url.to_owned(),
            events,
            secret: SecretString::new(case.secret.clone()),
            agent_id: case.agent_id.map(str::to_owned),
            enabled: None,
        })
        .await;
    match result {
        Err(ApiError::Invalid(error)) => error,
        other => panic!("{}: client did not refuse: {other:?}", case.field),
    }
}

#[tokio::test]
async fn every_subscription_rule_is_checked_by_client_and_emulator_alike() {
    let harness = start_with(Options {
        allow_private_urls: false,
        ..Options::default()
    })
    .await;
    for case in broken_cases() {
        let refusal = client_refusal(&harness, &case).await;
        assert_eq!(
            refusal.field,
            case.field,
            "{case_url}: {refusal}",
            case_url = case.url
        );
        assert!(
            refusal.rule.contains(case.says),
            "{}: {refusal} should say {:?}",
            case.field,
            case.says
        );
    }
    let stats = harness.stats().await;
    assert!(
        stats["by_route"]
            .get("POST /v1/webhook-subscriptions")
            .is_none(),
        "the client sent nothing: {stats}"
    );

    for case in broken_cases() {
        let mut body = json!({ "url": case.url, "events": case.events, "secret": case.secret });
        if let Some(agent) = case.agent_id {
            body["agent_id"] = json!(agent);
        }
        let answer = harness
            .authed(Method::POST, LIST, Some(&body.to_string()))
            .await;
        assert_eq!(answer.status, 400, "{}: {}", case.field, answer.text);
        let detail = problem_detail(&answer.text, 400);
        assert!(
            detail.contains(case.field),
            "{}: detail names the field: {detail}",
            case.field
        );
        assert!(
            detail.contains(case.says),
            "{detail} should say {:?}",
            case.says
        );
    }
    let stats = harness.stats().await;
    let posts = &stats["by_route"]["POST /v1/webhook-subscriptions"];
    assert_eq!(posts["400"], broken_cases().len(), "{stats}");
    assert!(posts.get("201").is_none(), "{stats}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn values_at_the_limits_of_each_rule_are_accepted_on_both_sides() {
    let harness = start_with(Options {
        allow_private_urls: false,
        ..Options::default()
    })
    .await;
    let printable: String = (b'!'..=b'~').map(char::from).collect();
    let accepted = [
        ("a".repeat(32), None),
        ("~".repeat(256), None),
        (
            printable.repeat(3)[..256].to_owned(),
            Some(common::OTHER_AGENT),
        ),
    ];
    for (secret, agent_id) in accepted {
        let subscription = NewSubscription {
            url: PUBLIC_URL.to_owned(),
            events: EventKind::ALL.to_vec(),
            secret: SecretString::new(secret.clone()),
            agent_id: agent_id.map(str::to_owned),
            enabled: None,
        };
        let created = harness.client.create_subscription(&subscription).await;
        let created = created.unwrap_or_else(|error| panic!("{} chars: {error}", secret.len()));
        assert_eq!(created.events.len(), 5);
        assert_eq!(created.agent_id.as_deref(), agent_id);
        let body = json!({ "url": PUBLIC_URL, "events": ["call.ended"], "secret": secret });
        let answer = harness
            .authed(Method::POST, LIST, Some(&body.to_string()))
            .await;
        assert_eq!(answer.status, 201, "{}", answer.text);
    }

    // PATCH checks the same rules.
    let id = harness.client.list_subscriptions(false).await.unwrap()[0]
        .id
        .clone();
    let refused = harness
        .client
        .update_subscription(
            &id,
            &SubscriptionPatch {
                url: Some("https://10.0.0.1/x".to_owned()),
                ..SubscriptionPatch::default()
            },
        )
        .await;
    assert!(
        matches!(&refused, Err(ApiError::Invalid(error)) if error.field == "url"),
        "{refused:?}"
    );
    for (body, field) in [
        (r#"{"url": "http://hooks.example.com/x"}"#, "url"),
        (r#"{"url": "https://127.0.0.1/x"}"#, "url"),
        (r#"{"events": []}"#, "events"),
        (r#"{"secret": "short"}"#, "secret"),
        (
            r#"{"agent_id": "11111111-2222-4333-8444-555555555555"}"#,
            "agent_id",
        ),
        ("{}", "nothing to change"),
    ] {
        let (status, answer) = harness.raw_patch(&id, body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(field), "{body}: {detail}");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn delivery_lists_know_sessions_and_calls_only() {
    let harness = start().await;
    let unknown = harness
        .authed(
            Method::GET,
            "/v1/sessions/ses_unknown/webhook-deliveries",
            None,
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    problem_detail(&unknown.text, 404);
    let session = harness.start_session(None).await;
    let (status, list) = harness
        .get(&format!("/v1/sessions/{session}/webhook-deliveries"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(list, json!({ "deliveries": [], "has_more": false }));
    let (status, _) = harness.get("/v1/sessions/ses_unknown").await;
    assert_eq!(status, 404);
    harness.emulator.shutdown().await;
}

/// A host name from /etc/hosts (other than `localhost`) that maps to a
/// non-public address, if the machine has one.
fn private_name_from_hosts_file() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts.lines().find_map(|line| {
        let line = line.split('#').next()?;
        let mut words = line.split_whitespace();
        let ip: std::net::IpAddr = words.next()?.parse().ok()?;
        validate::non_public_reason(ip)?;
        // `localhost` itself is refused by its name alone; any other name
        // can only be refused after resolving it.
        words
            .find(|name| validate::url(&format!("https://{name}/")).is_ok())
            .map(str::to_owned)
    })
}

#[tokio::test]
async fn emulator_resolves_names_and_rejects_private_or_unresolvable_ones() {
    let harness = start_with(Options {
        allow_private_urls: false,
        ..Options::default()
    })
    .await;
    let post = |url: String| {
        let body = json!({ "url": url, "events": ["call.ended"], "secret": SECRET }).to_string();
        let harness = &harness;
        async move { harness.authed(Method::POST, LIST, Some(&body)).await }
    };

    let answer = post("https://localhost./hook".to_owned()).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(problem_detail(&answer.text, 400).contains("url"));

    // A name that only resolves through the hosts file, to a private
    // address: the client cannot know (it does not resolve), the emulator
    // must.
    match private_name_from_hosts_file() {
        Some(name) => {
            let url = format!("https://{name}/hook");
            assert!(validate::url(&url).is_ok(), "form is fine: {url}");
            let answer = post(url).await;
            assert_eq!(answer.status, 400, "{name}: {}", answer.text);
            let detail = problem_detail(&answer.text, 400);
            assert!(
                detail.contains("url") && detail.contains("resolves to"),
                "{detail}"
            );
        }
        None => eprintln!("no private name in /etc/hosts; that case is skipped"),
    }

    // `.invalid` never resolves (RFC 6761), with or without network.
    let started = Instant::now();
    let answer = post("https://hooks.earshot-test.invalid/hook".to_owned()).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    let detail = problem_detail(&answer.text, 400);
    assert!(detail.contains("does not resolve"), "{detail}");
    assert!(started.elapsed() < Duration::from_secs(5));
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn stats_count_answers_by_route_template_and_status() {
    let (harness, _receiver, id) = one_subscription().await;
    harness.client.get_subscription(&id).await.unwrap();
    harness.client.get_subscription(&id).await.unwrap();
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        harness
            .client
            .get_subscription(&unknown)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    harness.raw(Method::GET, LIST, None, None).await;

    let stats = harness.stats().await;
    let routes = &stats["by_route"];
    assert_eq!(
        routes["GET /v1/webhook-subscriptions/{id}"],
        json!({ "200": 2, "404": 1 })
    );
    assert_eq!(
        routes["POST /v1/webhook-subscriptions"],
        json!({ "201": 1 })
    );
    assert_eq!(routes["GET /v1/webhook-subscriptions"], json!({ "401": 1 }));
    assert!(
        routes
            .as_object()
            .unwrap()
            .keys()
            .all(|route| !route.contains(&id)),
        "ids are folded into the template: {stats}"
    );
    let by_status = &stats["by_status"];
    assert!(by_status["200"].as_u64().unwrap() >= 2, "{stats}");
    assert_eq!(by_status["201"], 1);
    assert_eq!(by_status["404"], 1);
    assert_eq!(by_status["401"], 1);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn forced_statuses_apply_count_times_then_stop() {
    let harness = start().await;
    harness
        .arm_fault(json!({ "path_prefix": LIST, "status": 503, "count": 2 }))
        .await;
    for _ in 0..2 {
        match harness.client.list_subscriptions(false).await {
            Err(ApiError::Status { status, body, .. }) => {
                assert_eq!(status, 503);
                assert!(!body.message().is_empty());
            }
            other => panic!("expected a 503: {other:?}"),
        }
    }
    assert!(harness.client.list_subscriptions(false).await.is_ok());
    let stats = harness.stats().await;
    assert_eq!(
        stats["by_route"]["GET /v1/webhook-subscriptions"],
        json!({ "200": 1, "503": 2 })
    );

    // The forced answer is a {status, title, detail} body on the wire.
    harness
        .arm_fault(json!({ "path_prefix": LIST, "status": 503 }))
        .await;
    let answer = harness.authed(Method::GET, LIST, None).await;
    assert_eq!(answer.status, 503);
    problem_detail(&answer.text, 503);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn latency_faults_delay_and_dropped_connections_are_transport_errors() {
    let harness = start().await;
    harness
        .arm_fault(json!({ "path_prefix": LIST, "latency_ms": 250 }))
        .await;
    let started = Instant::now();
    harness.client.list_subscriptions(false).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );

    harness
        .arm_fault(json!({ "path_prefix": LIST, "drop": true }))
        .await;
    match harness.client.list_subscriptions(false).await {
        Err(ApiError::Transport { .. }) => {}
        other => panic!("a dropped connection is a transport error: {other:?}"),
    }
    assert!(
        harness.client.list_subscriptions(false).await.is_ok(),
        "one use only"
    );
    harness.emulator.shutdown().await;
}
