//! `earshot verify --event ID --subscription SUB` through the real binary:
//! the emulator, the observer (`earshot listen --store`), and customer
//! receivers on loopback. One receiver (an `earshot listen`) holds another
//! customer's secret, so it answers the platform 401 and misses the event;
//! the check asks it with the secret given and names what it holds, what
//! the platform signs with (version, rotation) — and that a receiver that
//! accepts anything checks no signature, and a stopped one is down.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::cli::{self, Observed, earshot_async, listening_url, run, text};
use crate::common::{self, Receiver, eventually, verifies_with};
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";
/// Customer A's subscription secret, which customer B's receiver holds too.
const ALICE: &str = "whsec_alice_customer_secret_0123456789ab";
/// Customer B's subscription secret, which its receiver does not hold.
const BOB: &str = "whsec_bob_customer_secret_0123456789abcd";
const NEW: &str = "whsec_rotated_secret_for_b_0123456789abcd";

/// `earshot listen --secret SECRET` (no store): the child and its URL.
fn listen(secret: &str) -> (tokio::process::Child, String) {
    let mut child = earshot_async()
        .args(["listen", "--secret", secret])
        .stderr(Stdio::null())
        .spawn()
        .expect("earshot listen starts");
    let url = listening_url(&mut child);
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_delivery_is_checked_by_asking_the_receiver() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (dir, db) = (&observed.dir, observed.db.clone());
    let (_alice, alice_url) = listen(ALICE);
    let (mut bob_receiver, bob_url) = listen(ALICE);
    harness
        .subscribe_secret(&alice_url, &EventKind::ALL, ALICE)
        .await;
    let bob = harness
        .subscribe_secret(&bob_url, &EventKind::ALL, BOB)
        .await;
    let anything = Receiver::healthy().await;
    let lax = harness
        .subscribe_secret(&anything.url(), &EventKind::ALL, BOB)
        .await;
    for url in [&alice_url, &bob_url, &anything.url()] {
        assert!(url.starts_with("http://127.0.0.1:"), "loopback only: {url}");
    }
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    harness
        .wait_records(&session, &bob.id, "both refused", |records| {
            records.len() == 2 && records.iter().all(|r| r["http_status_code"] == 401)
        })
        .await;

    // The observer filed the events; a sweep knows B missed them.
    let short = &bob.id[..8];
    let missed: String = eventually(Duration::from_secs(15), "B's missed events", || {
        let db = db.clone();
        let base = harness.base.clone();
        async move {
            let query = format!("sub:{short} status:missed");
            let out = run(&mut cli::against(&base, &db, &["events", "--json", &query])).await;
            let rows: Value = serde_json::from_slice(&out.stdout).ok()?;
            let rows = rows.as_array()?;
            (rows.len() == 2).then(|| rows[0]["event_id"].as_str().map(str::to_owned))?
        }
    })
    .await;

    let file = |name: &str, secret: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, secret).unwrap();
        path
    };
    let (bob_file, alice_file, new_file) =
        (file("bob", BOB), file("alice", ALICE), file("new", NEW));
    let verify = |subscription: &str, extra: &[&std::path::Path], flags: &[&str]| {
        let mut command = cli::against(
            &harness.base,
            &db,
            &[
                "verify",
                "--event",
                &missed,
                "--subscription",
                subscription,
                "--allow-private-urls",
            ],
        );
        let names = ["--secret-file", "--previous-secret-file"];
        for (name, path) in names.iter().zip(extra) {
            command.arg(name).arg(path);
        }
        command.args(flags);
        command
    };

    // The subscription's right secret: the receiver refuses it.
    let out = run(&mut verify(short, &[&bob_file], &[])).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("holds a different secret"), "{said}");
    assert!(
        said.contains("signed with the secret you gave (whse…(40 chars)): HTTP 401")
            && said.contains("signed with a wrong secret: HTTP 401"),
        "{said}"
    );
    assert!(!said.contains(BOB), "no secret in full: {said}");

    // Without --allow-private-urls a receiver on loopback is not asked:
    // the URL rule refuses it first (exit 2), and nothing reaches it.
    let before = anything.count();
    let mut strict = cli::against(
        &harness.base,
        &db,
        &["verify", "--event", &missed, "--subscription", &lax.id[..8]],
    );
    strict.arg("--secret-file").arg(&bob_file);
    let out = run(&mut strict).await;
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--allow-private-urls"), "{said}");
    assert_eq!(anything.count(), before, "nothing sent to the receiver");

    // The other customer's secret, which the receiver holds: accepted.
    let out = run(&mut verify(short, &[&alice_file], &[])).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("it accepts them: the secret you gave is the one it holds")
            && said.contains("the platform signs with another (secret version 1")
            && said.contains("no rotation by earshot on record"),
        "{said}"
    );

    // Two secrets given: it names the one it holds. JSON carries the answers.
    let out = run(&mut verify(short, &[&bob_file, &alice_file], &["--json"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["held"], "holds_the_second_secret_given");
    assert_eq!(json["accepts_given"], true);
    assert_eq!(json["store_state"], "missed");
    let statuses: Vec<i64> = json["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|answer| answer["http_status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [401, 200, 401], "{json}");

    // A rotation earshot made shows in the verdict, with who and when.
    let mut rotate = cli::against(&harness.base, &db, &["subs", "rotate", &bob.id]);
    rotate
        .env("USER", "carol")
        .arg("--secret-file")
        .arg(&new_file)
        .args(["--skip-check", "--watch", "0"]);
    let out = run(&mut rotate).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&mut verify(short, &[&alice_file], &[])).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("(secret version 2 per the record the sweep listed")
            && said.contains("UTC by carol")
            && said.contains("per the change log"),
        "{said}"
    );

    // A receiver that accepts anything: it checks no signature.
    let before = anything.count();
    let out = run(&mut verify(&lax.id, &[&alice_file], &[])).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("it accepts anything: it does not check signatures"),
        "{said}"
    );
    let probes = &anything.captured()[before..];
    assert_eq!(probes.len(), 2, "the secret given, then a wrong one");
    for probe in probes {
        assert_eq!(probe.json()["event_id"], missed.as_str(), "a duplicate");
    }
    assert!(verifies_with(&probes[0], ALICE) && !verifies_with(&probes[1], ALICE));

    // Bad input says what to do next: exit 2.
    let out = run(&mut verify(short, &[], &[])).await;
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("no secret given") && said.contains("--secret-file FILE"),
        "{said}"
    );
    let mut unknown = cli::against(
        &harness.base,
        &db,
        &[
            "verify",
            "--event",
            "no-such-event",
            "--subscription",
            short,
        ],
    );
    unknown.arg("--secret-file").arg(&alice_file);
    let out = run(&mut unknown).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("earshot events sub:"));
    let out = run(&mut verify("ffffffff", &[&alice_file], &[])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no subscription ffffffff"));

    // The receiver stopped: it is down.
    bob_receiver.kill().await.unwrap();
    let out = run(&mut verify(short, &[&alice_file], &["--no-sweep"])).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("it is down: connection"), "{said}");
}
