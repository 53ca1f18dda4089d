//! `earshot listen --store postgres://…` over real HTTP against the test
//! kit's throwaway cluster: two observers on one database, each sent the
//! same signed events twice at the same moment, answer every copy 2xx and
//! leave one row per event, committed before the answer; a delivery
//! `events` cannot file is kept once in `unfiled_events`; the retention is
//! said to run on the lease holder, nothing asked for is said skipped
//! (`/healthz` and `/metrics` are served with the store's probe), and an
//! unreachable store is said (exit 1), forwarding or not.

use std::process::Stdio;
use std::time::Duration;

use earshot_testkit::postgres::PgCluster;
use serde_json::json;

use crate::common::SECRET;
use crate::common::cli::{
    earshot_async, line_with, post_signed, postgres_observer as observer, text,
};

/// Events each sent four times (twice to each observer) at once.
const EVENTS: usize = 20;

fn count(cluster: &PgCluster, sql: &str) -> i64 {
    let text = cluster.psql("observers", sql).expect("psql");
    text.parse()
        .unwrap_or_else(|_| panic!("not a count: {text:?}"))
}

fn event(index: usize) -> Vec<u8> {
    json!({
        "event_id": format!("evt-pg-{index:03}"),
        "event": "call.failed",
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "call": { "call_id": format!("call-{}", index % 3) },
    })
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_observers_on_one_database_file_each_event_once_and_answer_every_copy() {
    let cluster = PgCluster::start().expect("a throwaway PostgreSQL cluster");
    cluster.create_database("observers").expect("database made");
    let store = cluster.url("observers");
    let (_first, first_url, _) = observer(&cluster, &store, &[]);
    let (_second, second_url, second_err) = observer(
        &cluster,
        &store,
        &["--retention", "30d", "--metrics-listen", "127.0.0.1:0"],
    );
    let (said, before) = line_with(
        &second_err,
        "serving /healthz and /metrics on",
        Duration::from_secs(15),
    );
    said.unwrap_or_else(|| panic!("the endpoints are served: {before:?}"));
    assert!(
        !before
            .iter()
            .any(|line| line.contains("not done on a PostgreSQL store")),
        "nothing asked for is skipped (the store's probe and figures are served): {before:?}"
    );
    assert!(
        before
            .iter()
            .any(|line| line.contains("storing events in") && line.contains(&store)),
        "{before:?}"
    );
    assert!(
        before
            .iter()
            .any(|line| line.contains("keeping 30d") && line.contains("maintenance lease")),
        "{before:?}"
    );
    for index in 0..EVENTS {
        let body = event(index);
        let (a, b, c, d) = tokio::join!(
            post_signed(&first_url, SECRET, &body),
            post_signed(&second_url, SECRET, &body),
            post_signed(&first_url, SECRET, &body),
            post_signed(&second_url, SECRET, &body),
        );
        for (status, answer) in [a, b, c, d] {
            assert!(
                (200..300).contains(&status),
                "event {index}: {status} {answer}"
            );
        }
        // Answered 2xx only after the commit: the row is there now, once.
        let id = format!("evt-pg-{index:03}");
        assert_eq!(
            count(
                &cluster,
                &format!("SELECT count(*) FROM earshot.events WHERE event_id = '{id}'")
            ),
            1,
            "{id}"
        );
    }
    assert_eq!(
        count(&cluster, "SELECT count(*) FROM earshot.events"),
        EVENTS as i64
    );
    assert_eq!(count(&cluster, "SELECT count(*) FROM earshot.sessions"), 3);
    assert_eq!(
        count(&cluster, "SELECT count(*) FROM earshot.schema_version"),
        i64::from(earshot_core::store::postgres::PG_SCHEMA_VERSION),
        "two observers starting at once migrated once"
    );
    // Signed but without a timestamp: kept once, unfiled.
    let odd = json!({ "event_id": "evt-pg-odd", "event": "call.failed", "call": { "call_id": "call-0" } })
        .to_string();
    let (a, b) = tokio::join!(
        post_signed(&first_url, SECRET, odd.as_bytes()),
        post_signed(&second_url, SECRET, odd.as_bytes()),
    );
    assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    assert_eq!(
        count(
            &cluster,
            "SELECT count(*) FROM earshot.unfiled_events WHERE event_id = 'evt-pg-odd'"
        ),
        1
    );
    assert_eq!(
        count(&cluster, "SELECT count(*) FROM earshot.events"),
        EVENTS as i64
    );
}

#[tokio::test]
async fn listen_says_when_the_store_is_unreachable_forwarding_or_not() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        listener.local_addr().expect("address").port()
    };
    let nowhere = format!("postgres://earshot@127.0.0.1:{port}/observers");
    let run = |extra: &[&str]| {
        let mut command = earshot_async();
        command
            .args(["listen", "--secret", SECRET, "--store", &nowhere])
            .args(extra)
            .stdout(Stdio::piped());
        command
    };
    // Forwarding from PostgreSQL is built (postgres_relay): no refusal,
    // the store is reached for first.
    for extra in [&[][..], &["--forward-to", "http://127.0.0.1:9/app"][..]] {
        let unreachable = crate::common::cli::finish(&mut run(extra)).await;
        let said = text(&unreachable.stderr);
        assert_eq!(unreachable.status.code(), Some(1), "{extra:?}: {said}");
        assert!(
            said.contains(&nowhere) && said.contains("refused"),
            "{said}"
        );
        assert!(text(&unreachable.stdout).is_empty(), "never listened");
    }
}
