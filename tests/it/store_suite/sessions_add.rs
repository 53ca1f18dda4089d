//! `earshot sessions add` through the real binary, on both backends: ids
//! given on the command line and in an ids file are added once each (a
//! call id as a call), an id the observer filed keeps its source, the
//! second add says what was already known, and `earshot sessions list
//! --json` then lists them in the same order with the same fields on
//! both; a malformed id is refused (exit 2) before anything is written.

use serde_json::Value;

use super::{TestStore, store_test};
use crate::common::cli::text;

/// `(session_id, kind, source)` of each session `sessions list --json`
/// lists, in its order.
async fn listed(store: &TestStore) -> Vec<(String, Value, String)> {
    let output = store.earshot(&["sessions", "list", "--json"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let sessions: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    sessions
        .iter()
        .map(|session| {
            (
                session["session_id"].as_str().expect("an id").to_owned(),
                session["kind"].clone(),
                session["source"].as_str().expect("a source").to_owned(),
            )
        })
        .collect()
}

store_test! {
    async fn ids_added_by_hand_are_kept_once_and_listed(store) {
        crate::store_suite::file_session_pair(std::slice::from_ref(&store), "ses-observed", "evt").await;

        let bad = store.earshot(&["sessions", "add", "ses-ok", "not an id"]).await;
        assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
        assert!(text(&bad.stderr).contains("`not an id` is not a session or call id"));
        assert_eq!(store.count("sessions"), 1, "nothing added");

        let first = store
            .earshot(&["sessions", "add", "ses-hand", "call_hand", "ses-observed"])
            .await;
        assert!(first.status.success(), "{}", text(&first.stderr));
        assert_eq!(
            text(&first.stdout),
            "2 added, 1 already known; `earshot health` sweeps them\n"
        );

        let dir = tempfile::tempdir().expect("a temp dir");
        let file = dir.path().join("ids.txt");
        std::fs::write(&file, "# from the ticket\nses-hand\n\nses-file\n").expect("written");
        let file = file.to_str().expect("a UTF-8 path");
        let second = store.earshot(&["sessions", "add", "--ids-file", file]).await;
        assert!(second.status.success(), "{}", text(&second.stderr));
        assert_eq!(
            text(&second.stdout),
            "1 added, 1 already known; `earshot health` sweeps them\n"
        );
        assert_eq!(store.count("sessions"), 4);

        // Most recently active first: the ids file's add, then the first
        // add's two (ties by id), then the observer's, filed before.
        assert_eq!(
            listed(&store).await,
            [
                ("ses-file".into(), Value::Null, "added".into()),
                ("call_hand".into(), Value::from("call"), "added".into()),
                ("ses-hand".into(), Value::Null, "added".into()),
                ("ses-observed".into(), Value::from("session"), "observer".into()),
            ]
        );
        // Due for the sweep, as the observer's are.
        let due = store.rows(
            "SELECT session_id FROM {t}sessions WHERE last_swept_ms IS NULL \
             ORDER BY session_id",
        );
        assert_eq!(due, ["call_hand", "ses-file", "ses-hand", "ses-observed"]);
    }
}
