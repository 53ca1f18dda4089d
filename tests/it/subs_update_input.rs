//! `subs update` checks its input before anything is sent or asked: a new
//! receiver URL the platform would refuse (loopback in any spelling, or
//! `http://`) exits 2 with the hint `subs create` gives, and neither the
//! platform nor the new receiver hears a request, though the store holds a
//! delivered event the probe would have carried and the secret is given.

use serde_json::Value;

use crate::common::cli::{Observed, against, run, text};
use crate::common::{self, Receiver, SECRET};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

/// How many requests the emulator answered on its API (`/v1/…`), the
/// control routes left out.
async fn api_requests(harness: &common::Harness) -> u64 {
    let stats = harness.stats().await;
    let Some(routes) = stats["by_route"].as_object() else {
        panic!("stats without by_route: {stats}");
    };
    routes
        .iter()
        .filter(|(route, _)| route.contains(" /v1/"))
        .flat_map(|(_, statuses)| statuses.as_object().into_iter().flatten())
        .map(|(_, count)| count.as_u64().unwrap_or(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_receiver_url_sends_nothing_and_asks_nothing() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let receiver = Receiver::healthy().await;
    let sub = harness.subscribe(&receiver.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    receiver.wait_count(2, "two deliveries").await;
    // The sweep files what was delivered: the probe would have an event.
    let health = run(&mut against(
        &harness.base,
        &observed.db,
        &["health", "--json"],
    ))
    .await;
    assert_eq!(health.status.code(), Some(0), "{}", text(&health.stdout));
    let secret_file = observed.dir.path().join("secret");
    std::fs::write(&secret_file, SECRET).unwrap();

    // The new receiver, on loopback, counting what reaches it.
    let new = Receiver::healthy().await;
    let port = new
        .url()
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next().map(str::to_owned))
        .unwrap();
    let spellings = [
        format!("http://127.0.0.1:{port}/new"),
        format!("https://127.0.0.1:{port}/new"),
        format!("https://[::ffff:127.0.0.1]:{port}/new"),
        format!("https://2130706433:{port}/new"),
        format!("https://localhost:{port}/new"),
        format!("https://localhost.:{port}/new"),
    ];
    let before = api_requests(&harness).await;
    for url in &spellings {
        // Not --yes: an input error must come before the question too.
        let mut update = against(
            &harness.base,
            &observed.db,
            &["subs", "update", &sub.id, "--receiver-url", url],
        );
        update.arg("--secret-file").arg(&secret_file);
        let output = run(&mut update).await;
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url}: {said}");
        assert!(said.contains("`url`"), "{url}: {said}");
        assert!(
            said.contains("--allow-private-urls"),
            "{url}: the hint: {said}"
        );
        assert!(!said.contains("checking"), "{url}: no probe: {said}");
        assert!(!said.contains("type "), "{url}: no question: {said}");
        assert_eq!(new.count(), 0, "{url}: nothing reached the new receiver");
        assert_eq!(
            api_requests(&harness).await,
            before,
            "{url}: nothing reached the platform"
        );
    }
    let (_, record): (u16, Value) = harness
        .get(&format!("/v1/webhook-subscriptions/{}", sub.id))
        .await;
    assert_eq!(record["url"], receiver.url().as_str(), "no PATCH");

    // The same URL with --allow-private-urls is taken: the rule, not
    // something else, stopped it above.
    let mut allowed = against(
        &harness.base,
        &observed.db,
        &["subs", "update", &sub.id, "--receiver-url", &spellings[0]],
    );
    allowed.args(["--allow-private-urls", "--yes"]);
    let output = run(&mut allowed).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let (_, record): (u16, Value) = harness
        .get(&format!("/v1/webhook-subscriptions/{}", sub.id))
        .await;
    assert_eq!(record["url"], spellings[0].as_str());
}
