//! `earshot health --chart`, through the real binary on a store filled by
//! earshot's own write paths: an hour of one event a minute to two
//! subscriptions, one failing for the last 20 minutes, the other failing
//! for 20 minutes in the middle of the hour and delivered again since.
//! Each chart line is checked: the failures in their minutes, the
//! `failing since` mark under the first failing minute, ASCII with
//! `--ascii`, and the buckets in `--json`.

use chrono::Utc;
use earshot_core::api::types::agents::Subscription;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, deliveries};

use crate::common::cli::{earshot, run, text};
use crate::store_hand_edits::{attempt_to, event};

const FAILING: &str = "0a000000-7d3a-4e6b-9c0f-000000000001";
const RECOVERED: &str = "0b000000-7d3a-4e6b-9c0f-000000000002";
const MINUTE: i64 = 60_000;

fn subscription(id: &str) -> Subscription {
    Subscription {
        id: id.into(),
        url: format!("https://hooks.example.com/{}", &id[..2]),
        events: vec!["session.started".into()],
        agent_id: None,
        enabled: true,
        secret_version: 1,
        extra: Default::default(),
    }
}

/// 59 events, one a minute, the newest in the current minute; their
/// attempts: FAILING refused the last 20, RECOVERED the 20 before those.
/// The minute the first event occurred in (Unix ms).
async fn seeded(db: &std::path::Path) -> i64 {
    let now = Utc::now().timestamp_millis();
    let this_minute = now - now % MINUTE;
    let mut store = Store::open(db).unwrap();
    deliveries::replace_subscriptions(
        &mut store,
        &[subscription(FAILING), subscription(RECOVERED)],
        now,
    )
    .unwrap();
    let (writer, thread) = Writer::start(store).unwrap();
    let at = |n: i64| this_minute - (58 - n) * MINUTE + 1_000;
    for n in 0..59 {
        writer
            .write(event(&format!("e{n}"), &format!("ses_{n}"), at(n)))
            .await
            .unwrap();
    }
    drop(writer);
    thread.join().unwrap();
    let mut store = Store::open(db).unwrap();
    for n in 0..59 {
        let session = format!("ses_{n}");
        let failing = if n >= 39 { 401 } else { 200 };
        let recovered = if (19..39).contains(&n) { 503 } else { 200 };
        let records = [
            attempt_to(FAILING, &format!("f{n}"), &session, failing, at(n) + 100),
            attempt_to(
                RECOVERED,
                &format!("r{n}"),
                &session,
                recovered,
                at(n) + 100,
            ),
        ];
        deliveries::record_sweep(&mut store, &session, &records, now + 3_600_000).unwrap();
    }
    at(0) - 1_000
}

#[tokio::test]
async fn the_chart_shows_when_failures_started_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earshot.db");
    let first = seeded(&db).await;
    let chart = |ascii: bool| {
        let mut command = earshot();
        command.args(["health", "--no-sweep", "--since", "1h", "--chart"]);
        if ascii {
            command.arg("--ascii");
        }
        command.arg("--store").arg(&db);
        command
    };
    let output = run(&mut chart(true)).await;
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "missed events: {stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let heading = lines
        .iter()
        .position(|line| line.starts_with("events per 1 min from "))
        .unwrap_or_else(|| panic!("a chart heading: {stdout}"));
    assert!(lines[heading].contains("x missed"), "{}", lines[heading]);
    assert!(lines[heading].is_ascii(), "{}", lines[heading]);

    // Sixty one-minute columns, the last the current minute; the first
    // event is in column 1 (the first column is the minute before it).
    let row = |id: &str| {
        let line = lines[heading..]
            .iter()
            .find(|line| line.starts_with(&id[..8]))
            .unwrap_or_else(|| panic!("a line for {id}: {stdout}"));
        line[10..].to_owned()
    };
    let failing = row(FAILING);
    assert_eq!(failing.len(), 60, "{failing:?}");
    // The column of the first event: 1, or 0 when the minute turned
    // between the seeding and the command.
    let base = failing.find('#').unwrap_or_else(|| panic!("{failing}"));
    assert!(base <= 1, "{failing}");
    assert!(failing[..base].chars().all(|c| c == '.'), "{failing}");
    let span = |from: usize, to: usize, line: &str| line[base + from..base + to].to_owned();
    assert_eq!(span(0, 39, &failing), "#".repeat(39), "{failing}");
    assert_eq!(span(39, 59, &failing), "x".repeat(20), "{failing}");
    let recovered = row(RECOVERED);
    assert_eq!(span(0, 19, &recovered), "#".repeat(19), "{recovered}");
    assert_eq!(span(19, 39, &recovered), "x".repeat(20), "{recovered}");
    assert_eq!(span(39, 59, &recovered), "#".repeat(20), "{recovered}");

    // The mark under the first failing minute of the subscription failing
    // now; none under the one that is delivered again.
    let line_of = |id: &str| {
        lines[heading..]
            .iter()
            .position(|line| line.starts_with(&id[..8]))
            .unwrap()
            + heading
    };
    let mark = lines[line_of(FAILING) + 1];
    let since = earshot_core::clock_text::utc_minute(first + 39 * MINUTE);
    assert_eq!(
        mark,
        format!("{}^ failing since {since}", " ".repeat(10 + base + 39)),
        "{stdout}"
    );
    assert!(
        lines
            .get(line_of(RECOVERED) + 1)
            .is_none_or(|next| !next.contains('^')),
        "{stdout}"
    );

    // A window that starts after the failures did: the mark says so under
    // the first column.
    let short = run(earshot()
        .args([
            "health",
            "--no-sweep",
            "--since",
            "10m",
            "--chart",
            "--ascii",
            "--store",
        ])
        .arg(&db))
    .await;
    let short = text(&short.stdout);
    assert!(
        short.contains(&format!(
            "          ^ failing since {since}, before the first column"
        )),
        "{short}"
    );

    // Unicode by default: the same columns in blocks and ✗.
    let unicode = text(&run(&mut chart(false)).await.stdout);
    assert!(
        unicode.contains(&format!("{}{}", "█".repeat(39), "✗".repeat(20))),
        "{unicode}"
    );

    // --json: the buckets.
    let json = run(earshot()
        .args([
            "health",
            "--no-sweep",
            "--since",
            "1h",
            "--chart",
            "--json",
            "--store",
        ])
        .arg(&db))
    .await;
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let timeline = &value["timeline"];
    assert_eq!(timeline["bucket_ms"], 60_000, "{timeline}");
    assert_eq!(timeline["columns"], 60, "{timeline}");
    let buckets = timeline["subscriptions"][FAILING].as_array().unwrap();
    assert_eq!(buckets.len(), 60);
    let first_missed = buckets.iter().position(|b| b["missed"] == 1).unwrap();
    assert!(first_missed == 39 || first_missed == 40, "{timeline}");
    assert_eq!(buckets[first_missed - 1]["delivered"], 1, "{timeline}");
}
