//! `earshot subs rotate --store postgres://…`, the real binary against
//! the emulator and the test kit's throwaway cluster, the receiver on
//! loopback: the probe is the observer's copy of a delivered event read
//! from PostgreSQL, the change is recorded in PostgreSQL's log, and the
//! rotation is staged in `earshot.rotations`. Two operators rotating one
//! subscription at once (the receiver answers each probe slowly, so both
//! are in flight together): exactly one rotates, the other is refused
//! with exit 2 naming who rotates, nothing sent; one `rotate` change, one
//! secret version more, the staged row given back. A row left by a
//! process that died is taken over once it expires; a live one refuses.
//! A rotation watched for a few seconds sweeps into PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::now_ms;
use earshot_core::store::postgres::{PgStore, PgTarget};
use earshot_testkit::postgres::PgCluster;
use serde_json::Value;

use crate::common::cli::{earshot, run, text};
use crate::common::{self, API_KEY, Captured, Receiver, Reply, SECRET, verifies_with};

const DATABASE: &str = "rotations";
const NEW_SECRET: &str = "whsec_the_new_secret_0123456789abcdefghij";
const THIRD_SECRET: &str = "whsec_a_third_secret_0123456789abcdefghij";
const FOURTH_SECRET: &str = "whsec_a_fourth_secret_012345678abcdefghij";

/// A receiver that accepts what any secret it holds signed (401 else),
/// answering after a second while `slow` is set.
async fn verifying(slow: Arc<AtomicBool>) -> Receiver {
    let held = [SECRET, NEW_SECRET, THIRD_SECRET, FOURTH_SECRET];
    Receiver::start(move |request: &Captured, _| {
        let mut reply = if held.iter().any(|secret| verifies_with(request, secret)) {
            Reply::ok()
        } else {
            Reply::status(401, "invalid signature")
        };
        if slow.load(Ordering::SeqCst) {
            reply.delay = Duration::from_secs(1);
        }
        reply
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_operators_rotating_at_once_on_postgres_one_rotates_and_the_other_is_refused() {
    let harness = common::start().await;
    let slow = Arc::new(AtomicBool::new(false));
    let receiver = verifying(slow.clone()).await;
    let sub = harness.subscribe(&receiver.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    receiver.wait_count(2, "the session's two events").await;
    harness.wait_deliveries_idle().await;

    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database(DATABASE).expect("database made");
    let url = cluster.url(DATABASE);
    let store = PgStore::connect(
        PgTarget::parse(&url).expect("a URL"),
        &cluster.password_sources(),
    )
    .await
    .expect("the store opens");
    for request in receiver.captured() {
        let event = common::observed_event(&request, now_ms());
        store.file(&event).await.expect("filed");
    }
    let on_store = |args: &[&str], user: &str| {
        let mut command = earshot();
        command
            .args(args)
            .args([
                "--store",
                &url,
                "--url",
                &harness.base,
                "--api-key",
                API_KEY,
            ])
            .env("PGPASSWORD", cluster.password())
            .env("USER", user);
        command
    };
    // The sweep learns what was delivered, into PostgreSQL.
    let health = run(&mut on_store(&["health", "--json"], "bob")).await;
    assert_eq!(health.status.code(), Some(0), "{}", text(&health.stderr));

    let dir = tempfile::tempdir().expect("a temp dir");
    let secret_file = |name: &str, secret: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{secret}\n")).expect("written");
        path.display().to_string()
    };
    let current = secret_file("current", SECRET);
    let new = secret_file("new", NEW_SECRET);
    let third = secret_file("third", THIRD_SECRET);
    let fourth = secret_file("fourth", FOURTH_SECRET);
    let path = format!("/v1/webhook-subscriptions/{}", sub.id);
    let version = || async {
        harness.get(&path).await.1["secret_version"]
            .as_i64()
            .expect("a version")
    };
    let rotate = |secret: &str, user: &str, watch: &str| {
        let mut command = on_store(
            &[
                "subs",
                "rotate",
                &sub.id,
                "--allow-private-urls",
                "--secret-file",
                secret,
                "--current-secret-file",
                &current,
                "--watch",
                watch,
            ],
            user,
        );
        command.arg("--json");
        command
    };
    let staged = || {
        cluster
            .psql(DATABASE, "SELECT count(*) FROM earshot.rotations")
            .expect("psql")
    };
    let rotations = || async {
        let output = run(earshot()
            .args(["changes", "--json", "--store", &url])
            .env("PGPASSWORD", cluster.password()))
        .await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let listed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        listed
            .as_array()
            .expect("a list")
            .iter()
            .filter(|change| change["action"] == "rotate")
            .map(|change| change["operator"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<String>>()
    };

    // Two operators at once, each probe answered after a second.
    let before = version().await;
    slow.store(true, Ordering::SeqCst);
    let sent_before = receiver.count();
    let (mut by_carol, mut by_dave) = (rotate(&new, "carol", "0"), rotate(&third, "dave", "0"));
    let (carol, dave) = tokio::join!(run(&mut by_carol), run(&mut by_dave));
    slow.store(false, Ordering::SeqCst);
    let mut codes = [carol.status.code(), dave.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(2)],
        "carol: {}{}\ndave: {}{}",
        text(&carol.stdout),
        text(&carol.stderr),
        text(&dave.stdout),
        text(&dave.stderr)
    );
    let (winner, refused, loser) = if carol.status.code() == Some(0) {
        ("carol", &dave, "dave")
    } else {
        ("dave", &carol, "carol")
    };
    let said = text(&refused.stderr);
    assert!(
        said.contains(&format!("{winner} is rotating")) && said.contains("nothing was sent"),
        "{loser}: {said}"
    );
    assert_eq!(version().await, before + 1, "one rotation applied");
    assert_eq!(
        receiver.count() - sent_before,
        3,
        "only the winner's three probes"
    );
    assert_eq!(rotations().await, [winner]);
    assert_eq!(staged(), "0", "given back");

    // A row left by a process that died: taken over once expired.
    let left = format!(
        "INSERT INTO earshot.rotations VALUES ('{}', 'gone pid 1', 'erin', 1, now() - interval '1 second')",
        sub.id
    );
    cluster.psql(DATABASE, &left).expect("a stale row");
    let output = run(&mut rotate(&fourth, "carol", "6s")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["rotated"], true, "{report}");
    assert_eq!(report["watch"]["completed"], true, "{report}");
    assert_eq!(version().await, before + 2);
    assert_eq!(staged(), "0");

    // A live one (another operator's, in flight): refused, nothing sent.
    let held = format!(
        "INSERT INTO earshot.rotations VALUES ('{}', 'elsewhere pid 2', 'erin', {}, now() + interval '1 minute')",
        sub.id,
        now_ms()
    );
    cluster.psql(DATABASE, &held).expect("a live row");
    let sent_before = receiver.count();
    let output = run(&mut rotate(&new, "carol", "0")).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("erin is rotating"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(receiver.count(), sent_before, "no probe sent");
    assert_eq!(version().await, before + 2, "not rotated");
    assert_eq!(staged(), "1", "the other's row kept");
    harness.emulator.shutdown().await;
}
