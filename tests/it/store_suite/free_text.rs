//! Free text on both backends with each one's index present: SQLite's
//! `event_words`, PostgreSQL's trigram index `events_by_text` (schema
//! version 14, `store/postgres/text_index.rs`). The same events, filed
//! through the store handle, are listed by `earshot events --json WORDS`
//! (the real binary) with the same ids in the same order for words found
//! in an id, a session or a type, in any case; words under three letters;
//! `%`, `_` and `\` taken literally; the Kelvin sign, which Rust folds to
//! `k` and PostgreSQL's `lower()` does not; a word found nowhere; and one
//! found only outside the window. On PostgreSQL the index is checked to be
//! valid; the candidates' statement runs whichever way the planner reads
//! it (a table this small is read whole: `postgres_text_index` checks the
//! index is read on a larger one).

use earshot_core::store::now_ms;
use serde_json::Value;

use super::{DATABASE, Place, TestStore, observed, store_test};
use crate::common::cli::text;

/// The ids `earshot events --json --no-sweep QUERY` lists, in order.
async fn listed(store: &TestStore, query: &[&str]) -> Vec<String> {
    let mut args = vec!["events", "--json", "--no-sweep"];
    args.extend_from_slice(query);
    let output = store.earshot(&args).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{query:?}: {}",
        text(&output.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    rows.iter()
        .map(|row| row["event_id"].as_str().expect("an id").to_owned())
        .collect()
}

store_test! {
    async fn free_text_lists_the_same_events_on_both_backends_with_the_text_index(store) {
        let handle = store.replica().await;
        let base = now_ms() - 3_600_000;
        let set = [
            observed("evt-7f3a9c01", "call.ended", "call_alpha", base + 1_000),
            observed("evt-7f3a9c02", "call.Transferred", "call_beta", base + 2_000),
            observed("evt-kelvin-\u{212A}", "session.started", "ses-omega", base + 3_000),
            observed("evt-100%_off", "session.ended", "ses-pct", base + 4_000),
            observed("evt-back\\slash", "session.ended", "ses-bs", base + 4_000),
            observed("evt-ÜBERall", "call.failed", "call_gamma", base + 5_000),
            observed("evt-old-7f3a", "call.ended", "call_alpha", base - 3 * 86_400_000),
        ];
        for event in set {
            assert!(handle.file(event).await.expect("filed"), "new");
        }
        // Common events, so a word is rarer than the window.
        for n in 0..200 {
            let id = format!("evt-filler-{n:03}");
            let event = observed(&id, "session.completed", &format!("ses-f{n}"), base + 10 + n);
            assert!(handle.file(event).await.expect("filed"), "new");
        }
        if let Place::Postgres { cluster, .. } = &store.place {
            let valid = cluster
                .psql(
                    DATABASE,
                    "SELECT indisvalid FROM pg_index
                     WHERE indexrelid = 'earshot.events_by_text'::regclass",
                )
                .expect("psql");
            assert_eq!(valid, "t", "the text index is built");
        }
        let cases: [(&[&str], &[&str]); 13] = [
            (&["7f3a9c"], &["evt-7f3a9c02", "evt-7f3a9c01"]),
            (&["7F3A9C01"], &["evt-7f3a9c01"]),
            (&["transferred"], &["evt-7f3a9c02"]),
            (&["ALPHA", "ended"], &["evt-7f3a9c01"]),
            (&["call_beta"], &["evt-7f3a9c02"]),
            // The Kelvin sign is a `k` to Rust, on both backends.
            (&["kelvin-k"], &["evt-kelvin-\u{212A}"]),
            (&["überall"], &["evt-ÜBERall"]),
            // LIKE's wildcards and escape taken literally.
            (&["100%_off"], &["evt-100%_off"]),
            (&["0%_"], &["evt-100%_off"]),
            (&["k\\s"], &["evt-back\\slash"]),
            // Under three letters: no trigram, checked on the rows read.
            (&["ga", "call_g"], &["evt-ÜBERall"]),
            (&["zzqx"], &[]),
            (&["7f3a", "--limit", "1"], &["evt-7f3a9c02"]),
        ];
        for (query, expected) in cases {
            assert_eq!(listed(&store, query).await, expected, "{query:?}");
        }
        // Outside the default window only.
        assert_eq!(listed(&store, &["old-7f3a"]).await, Vec::<String>::new());
        assert_eq!(listed(&store, &["old-7f3a", "--since", "7d"]).await, ["evt-old-7f3a"]);
        // A word in every filler event: the newest first, as a scan.
        assert_eq!(
            listed(&store, &["filler", "--limit", "2"]).await,
            ["evt-filler-199", "evt-filler-198"]
        );
    }
}
