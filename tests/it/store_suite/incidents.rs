//! Incidents and acknowledgements on both backends: the same sweep
//! (`sweep::swept_once`: a subscription refused for good, one retried)
//! opens the same incidents in a SQLite and a PostgreSQL store, and the
//! real binary's `earshot incidents` (text and `--json`) and `earshot
//! incidents ack` print the same on both; an acknowledgement made through
//! one handle is read at once through another (on PostgreSQL a pool of
//! its own, as a second console's); the retries and a deleted
//! subscription move both alike, and the acknowledgement survives the
//! rebuilds. `earshot incidents ID` (an incident on a time axis) prints
//! the same chart, text and `--json`, on both.

use std::time::Duration;

use earshot_core::history::incidents::{Acknowledged, Incident, acknowledge_in, list_in};
use serde_json::Value;

use super::TestStore;
use super::sweep::{Swept, swept_once};
use crate::common::cli::text;
use crate::common::eventually;

/// `earshot ARGS --store STORE` as `alice`: exit code, stdout, stderr.
async fn earshot(store: &TestStore, args: &[&str]) -> (Option<i32>, String, String) {
    let output = store.earshot_with(args, &[("USER", "alice")]).await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// `earshot incidents --json --no-sweep --all` on `store`: its exit code
/// and JSON.
async fn incidents_json(store: &TestStore) -> (Option<i32>, Value) {
    let (code, stdout, stderr) =
        earshot(store, &["incidents", "--json", "--no-sweep", "--all"]).await;
    let listed =
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}{stderr}"));
    (code, listed)
}

/// The incidents of both stores, SQLite's then PostgreSQL's, with the
/// times of each acknowledgement and resolution taken out (each store's
/// was made at its own moment: an `ack`, a sweep) and checked to be there
/// exactly when someone acknowledged it or it is resolved; both exit
/// alike.
async fn both_json(stores: &[TestStore; 2]) -> [Value; 2] {
    let mut both = Vec::new();
    let mut codes = Vec::new();
    for store in stores {
        let (code, mut listed) = incidents_json(store).await;
        codes.push(code);
        for incident in listed.as_array_mut().expect("a list") {
            let at = incident
                .as_object_mut()
                .expect("an object")
                .remove("acknowledged_at")
                .expect("the key is there");
            assert_eq!(
                at.is_null(),
                incident["acknowledged_by"].is_null(),
                "{incident}"
            );
            // Resolved at each store's own sweep.
            let resolved = incident
                .as_object_mut()
                .expect("an object")
                .remove("resolved_at")
                .expect("the key is there");
            assert_eq!(
                resolved.is_null(),
                incident["state"] != "resolved",
                "{incident}"
            );
        }
        both.push(listed);
    }
    assert_eq!(codes[0], codes[1], "the exit codes, SQLite then PostgreSQL");
    assert_ne!(codes[0], Some(0), "something is unresolved or missed");
    <[Value; 2]>::try_from(both).expect("two lists")
}

/// `earshot incidents ID --no-sweep FORM…` on SQLite and PostgreSQL, which
/// print the same: its exit code, stdout and stderr. The chart's buckets
/// end at the moment each runs, so when a bucket's end falls between the
/// two, SQLite's is read again after PostgreSQL's (one end cannot fall
/// twice in those few seconds).
async fn same_on_both(
    stores: &[TestStore; 2],
    id: &str,
    form: &[&str],
) -> (Option<i32>, String, String) {
    let args: Vec<&str> = ["incidents", id, "--no-sweep"]
        .into_iter()
        .chain(form.iter().copied())
        .collect();
    let sqlite = earshot(&stores[0], &args).await;
    let postgres = earshot(&stores[1], &args).await;
    if sqlite != postgres {
        let again = earshot(&stores[0], &args).await;
        assert_eq!(again, postgres, "SQLite, then PostgreSQL: {form:?}");
    }
    postgres
}

/// The incident of `subscription_id` in `listed`.
fn of<'a>(listed: &'a Value, subscription_id: &str) -> &'a Value {
    listed
        .as_array()
        .expect("a list")
        .iter()
        .find(|incident| incident["subscription_id"] == subscription_id)
        .unwrap_or_else(|| panic!("{subscription_id} in {listed}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incidents_and_acknowledgements_are_the_same_on_sqlite_and_postgres() {
    let Swept {
        harness,
        stores,
        delivered,
        missed,
        retried,
        session,
        call,
        _receivers,
    } = swept_once().await;

    // The same incidents: one refused for good (404), one retrying (500).
    let [sqlite, postgres] = both_json(&stores).await;
    assert_eq!(sqlite, postgres, "SQLite, then PostgreSQL");
    assert_eq!(sqlite.as_array().map(Vec::len), Some(2), "{sqlite}");
    let gone = of(&sqlite, &missed);
    assert_eq!(gone["missed"], 3, "{gone}");
    assert_eq!(gone["state"], "open");
    assert_eq!(
        gone["diagnosis"].as_str().map(|d| d.starts_with("404")),
        Some(true)
    );
    assert_eq!(of(&sqlite, &retried)["retrying"], 3, "{sqlite}");
    assert!(
        sqlite
            .as_array()
            .expect("a list")
            .iter()
            .all(|incident| incident["subscription_id"] != delivered.as_str()),
        "none for the healthy subscription: {sqlite}"
    );
    let gone_id = gone["id"].as_str().expect("an id").to_owned();
    let mut tables = Vec::new();
    for store in &stores {
        let (code, stdout, stderr) = earshot(store, &["incidents", "--no-sweep"]).await;
        assert_eq!(code, Some(1), "{stderr}");
        tables.push((stdout, stderr));
    }
    assert_eq!(
        tables[0], tables[1],
        "the table and the verdict, SQLite then PostgreSQL"
    );
    assert!(tables[0].0.contains(&gone_id), "{}", tables[0].0);

    // `ack` by a unique start of the id, as alice, on both; then the same
    // list, the acknowledgement in it (by, note; the time taken out).
    let prefix = &gone_id[..5];
    let mut answers = Vec::new();
    for store in &stores {
        let (code, stdout, stderr) =
            earshot(store, &["incidents", "ack", prefix, "--note", "on it\u{7}"]).await;
        assert_eq!(code, Some(0), "{stderr}");
        answers.push(stdout);
    }
    assert_eq!(answers[0], answers[1]);
    assert!(
        answers[0].starts_with(&format!("acknowledged {gone_id} (")),
        "{}",
        answers[0]
    );
    assert!(
        answers[0].trim_end().ends_with("as alice"),
        "{}",
        answers[0]
    );
    let [sqlite, postgres] = both_json(&stores).await;
    assert_eq!(sqlite, postgres, "SQLite, then PostgreSQL");
    let gone = of(&sqlite, &missed);
    assert_eq!(gone["state"], "acknowledged");
    assert_eq!(gone["acknowledged_by"], "alice");
    assert_eq!(gone["note"], "on it", "the control character dropped");
    for store in &stores {
        let (code, _, stderr) = earshot(store, &["incidents", "ack", "zzzzzzzz"]).await;
        assert_eq!(code, Some(1), "no such incident: {stderr}");
        assert!(stderr.contains("no incident zzzzzzzz"), "{stderr}");
    }

    // One handle acknowledges, another (on PostgreSQL a pool of its own)
    // reads it at once, with who and when.
    let retried_id = of(&sqlite, &retried)["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let before = earshot_core::store::now_ms();
    for store in &stores {
        let first = store.reader().await;
        let second = store.reader().await;
        let done = acknowledge_in(&first, &retried_id, "bob", Some("retries?"), before)
            .await
            .expect("acknowledged");
        assert!(matches!(done, Acknowledged::Done(_)), "{done:?}");
        let seen: Vec<Incident> = list_in(&second, 0, false).await.expect("listed");
        let seen = seen
            .iter()
            .find(|incident| incident.id == retried_id)
            .unwrap_or_else(|| panic!("{retried_id} in {seen:?}"));
        assert_eq!(
            seen.acknowledged_by.as_deref(),
            Some("bob"),
            "{:?}",
            store.backend()
        );
        assert_eq!(seen.acknowledged_ms, Some(before));
        assert_eq!(seen.note.as_deref(), Some("retries?"));
    }

    // The retrying incident on a time axis, acknowledged at the same
    // moment on both: the same chart, text and `--json`, and exit 1
    // (unresolved) on both.
    for form in [&["--json"][..], &[][..], &["--ascii"][..]] {
        let (code, shown, stderr) = same_on_both(&stores, &retried_id, form).await;
        assert_eq!(code, Some(1), "{stderr}");
        if form == ["--json"] {
            let shown: Value = serde_json::from_str(&shown).expect("JSON");
            assert_eq!(shown["incident"]["id"], retried_id.as_str());
            let retrying: i64 = shown["timeline"]["buckets"]
                .as_array()
                .expect("buckets")
                .iter()
                .map(|bucket| bucket["pending"].as_i64().unwrap_or(0))
                .sum();
            assert_eq!(retrying, 3, "the three retrying events: {shown}");
            let marks = &shown["timeline"]["marks"];
            assert_eq!(marks[0]["action"], "acknowledged", "{marks}");
            assert_eq!(marks[0]["operator"], "bob");
            assert_eq!(marks[0]["at_ms"], before);
        } else {
            assert!(shown.contains("acknowledged by bob: retries?"), "{shown}");
        }
    }

    // The retries deliver; both are swept again: the same incidents, the
    // acknowledgements kept through the rebuilt rows.
    harness
        .emulator
        .advance(Duration::from_secs(5))
        .await
        .expect("a manual clock");
    eventually(Duration::from_secs(10), "the retries answered", || async {
        let session = harness.records(&session).await;
        let call = harness.records(&call).await;
        (session.len() == 8 && call.len() == 4).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for store in &stores {
        store.sweep(&harness.client).await;
    }
    let [sqlite, postgres] = both_json(&stores).await;
    assert_eq!(sqlite, postgres, "SQLite, then PostgreSQL");
    assert_eq!(of(&sqlite, &retried)["retrying"], 0, "{sqlite}");
    assert_eq!(of(&sqlite, &retried)["acknowledged_by"], "bob");
    assert_eq!(of(&sqlite, &missed)["acknowledged_by"], "alice");

    // The refused subscription is deleted on the platform: the next sweep
    // resolves its incident with the reason, on both.
    harness
        .client
        .delete_subscription(&missed)
        .await
        .expect("deleted");
    for store in &stores {
        store.sweep(&harness.client).await;
    }
    let [sqlite, postgres] = both_json(&stores).await;
    assert_eq!(sqlite, postgres, "SQLite, then PostgreSQL");
    let gone = of(&sqlite, &missed);
    assert_eq!(gone["state"], "resolved", "{gone}");
    assert_eq!(gone["resolved_reason"], "subscription deleted");
    assert_eq!(
        stores[1].rows(&format!(
            "SELECT count(*) FROM {{t}}subscriptions WHERE id = '{missed}'"
        )),
        ["0"],
        "the deleted subscription leaves the store, as on SQLite"
    );

    // Its timeline: resolved (exit 0) on both; an unknown id exit 1.
    for store in &stores {
        let (code, shown, stderr) = earshot(store, &["incidents", &gone_id, "--no-sweep"]).await;
        assert_eq!(code, Some(0), "{:?}: {stderr}", store.backend());
        assert!(shown.contains("resolved: subscription deleted"), "{shown}");
        let (code, _, stderr) = earshot(store, &["incidents", "zzzzzzzz", "--no-sweep"]).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains("no incident zzzzzzzz"), "{stderr}");
    }
    harness.emulator.shutdown().await;
}
