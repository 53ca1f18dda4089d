//! The change log on both backends: `earshot subs pause`, `resume` and
//! `delete` (the real binary, against the emulator) record their changes
//! in the store given with `--store`, a file or a PostgreSQL URL alike,
//! and `earshot changes` lists them the same way; a change recorded
//! through one handle is read at once through another (on PostgreSQL a
//! pool of its own, as a second console's). A bad URL is refused before
//! the platform is asked.

use earshot_core::api::types::agents::EventKind;
use earshot_core::store::changes::{self, Change};
use serde_json::Value;

use super::store_test;
use crate::common::cli::text;
use crate::common::{self, API_KEY, Receiver};

store_test! {
    async fn subscription_changes_are_recorded_and_listed_with_who_and_what(store) {
        let harness = common::start().await;
        let receiver = Receiver::healthy().await;
        let subscription = harness.subscribe(&receiver.url(), &[EventKind::CallEnded]).await;
        let id = subscription.id.clone();
        let connection = ["--url", harness.base.as_str(), "--api-key", API_KEY];
        let env = [("USER", "carol")];
        for action in [&["subs", "pause", &id][..], &["subs", "resume", &id], &["subs", "delete", &id, "--yes"]] {
            let mut args = action.to_vec();
            args.extend_from_slice(&connection);
            let output = store.earshot_with(&args, &env).await;
            let stderr = text(&output.stderr);
            assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
            assert!(!stderr.contains("not recorded"), "{args:?}: {stderr}");
        }

        let output = store.earshot(&["changes", "--json"]).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let listed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        let rows: Vec<(String, String, String, String)> = listed
            .as_array()
            .expect("a list")
            .iter()
            .map(|change| {
                (
                    change["operator"].as_str().unwrap_or("").to_owned(),
                    change["subscription_id"].as_str().unwrap_or("").to_owned(),
                    change["action"].as_str().unwrap_or("").to_owned(),
                    change["detail"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let url = receiver.url();
        assert_eq!(
            rows,
            [
                ("carol".into(), id.clone(), "delete".into(), url.clone()),
                ("carol".into(), id.clone(), "resume".into(), "state paused → enabled".into()),
                ("carol".into(), id.clone(), "pause".into(), "state enabled → paused".into()),
            ],
            "{:?}: newest first",
            store.backend()
        );
        let output = store.earshot(&["changes"]).await;
        let table = text(&output.stdout);
        assert!(table.contains("carol") && table.contains("state enabled → paused"), "{table}");

        // One handle records (a console's change), another reads it at once.
        let first = store.reader().await;
        let second = store.reader().await;
        let change = Change::now("dave".into(), &id, "update", "url a → b".into());
        changes::record_in(&first, &change).await.expect("recorded");
        let seen = changes::since_in(&second, 0).await.expect("listed");
        assert_eq!(seen.first(), Some(&change), "{:?}", store.backend());
        assert_eq!(seen.len(), 4);
        harness.emulator.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_store_url_is_refused_before_the_platform_is_changed() {
    let harness = common::start().await;
    let receiver = Receiver::healthy().await;
    let subscription = harness
        .subscribe(&receiver.url(), &[EventKind::CallEnded])
        .await;
    for url in ["postgres://obs:secret@127.0.0.1:9/earshot", "postgres://"] {
        let output = crate::common::cli::run(
            crate::common::cli::earshot()
                .args(["subs", "pause", &subscription.id, "--url", &harness.base])
                .args(["--api-key", API_KEY, "--store", url]),
        )
        .await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url}: {stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
    let listed = harness
        .client
        .get_subscription(&subscription.id)
        .await
        .expect("still there");
    assert!(listed.enabled, "not paused");
    harness.emulator.shutdown().await;
}
