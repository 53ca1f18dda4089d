//! `earshot events` through the real binary: the subscription a `sub:`
//! filter names comes first in each row, and the observer's own
//! subscription (named from evidence: the attempt ids it filed) is marked
//! `obs ✓`, never listed as a customer.

use serde_json::Value;

use crate::common::cli::{Observed, against, run, text};
use crate::common::{self, Receiver};
use earshot_core::api::short_id;
use earshot_core::api::types::agents::EventKind;

const OBSERVER_SECRET: &str = "whsec_observer_secret_0123456789abcdefgh";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_name_the_filtered_subscription_first_and_mark_the_observer() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let (first, second) = (Receiver::healthy().await, Receiver::healthy().await);
    let a = harness.subscribe(&first.url(), &EventKind::ALL).await;
    let b = harness.subscribe(&second.url(), &EventKind::ALL).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    first.wait_count(2, "two deliveries").await;
    second.wait_count(2, "two deliveries").await;
    harness.wait_deliveries_idle().await;
    // The later-sorting customer named: it comes first.
    let (named, other) = if a.id > b.id { (&a, &b) } else { (&b, &a) };
    let filter = format!("sub:{}", short_id(&named.id));

    let json = run(&mut against(
        &harness.base,
        &observed.db,
        &["events", &filter, "--json"],
    ))
    .await;
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let rows: Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        let outcomes = row["subscriptions"].as_array().unwrap();
        let ids: Vec<&str> = outcomes.iter().map(|o| o["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3, "two customers and the observer: {row}");
        assert_eq!(ids[0], named.id, "the named one first: {row}");
        assert_eq!(ids[1], other.id, "{row}");
        let observer: Vec<bool> = outcomes.iter().map(|o| o["observer"] == true).collect();
        assert_eq!(observer, [false, false, true], "{row}");
    }

    let plain = run(&mut against(
        &harness.base,
        &observed.db,
        &["events", &filter],
    ))
    .await;
    let printed = text(&plain.stdout);
    assert_eq!(plain.status.code(), Some(0), "{printed}");
    let expected = format!(
        "{} delivered, {} delivered, obs ✓",
        short_id(&named.id),
        short_id(&other.id)
    );
    let event_lines: Vec<&str> = printed.lines().filter(|l| l.contains(&session)).collect();
    assert_eq!(event_lines.len(), 2, "{printed}");
    for line in event_lines {
        assert!(line.trim_end().ends_with(&expected), "{line}\n{printed}");
    }
}

/// The types `earshot events --json FILTER…` lists, sorted.
async fn listed_types(base: &str, db: &std::path::Path, filter: String) -> Vec<String> {
    let mut command = against(base, db, &["events", "--json"]);
    command.args(filter.split(' '));
    let out = run(&mut command).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{filter}: {}",
        text(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut types: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    types.sort();
    types
}

/// The README's matching rule for `earshot events`: `type:` is text the
/// type contains, any case; `session:` is the start of the id; a free
/// word is contained in any case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_match_fields_as_the_readme_says() {
    let harness = common::start().await;
    let observed = Observed::start(&harness, &EventKind::ALL, OBSERVER_SECRET).await;
    let session = harness.start_session(None).await;
    harness.complete_session(&session).await;
    harness.wait_deliveries_idle().await;
    let types = |filter: String| listed_types(&harness.base, &observed.db, filter);
    let both = ["session.completed", "session.started"];
    assert_eq!(types("type:SESSION".into()).await, both);
    assert_eq!(types("type:comp".into()).await, ["session.completed"]);
    let (start, middle) = (&session[..12], &session[6..14]);
    assert_eq!(types(format!("session:{start}")).await, both);
    assert!(types(format!("session:{middle}")).await.is_empty());
    assert_eq!(types(middle.to_uppercase()).await, both);
}
