//! `earshot deliveries` says where each failing attempt's retries stand:
//! the attempt number, when the next retry comes relative to now (never a
//! bare clock time that may have passed), and what this account's history
//! shows about when the platform gives up (the spec does not say); a 4xx
//! other than 408, 425 and 429 is final at once.

use crate::common::cli::{finish, isolated_async, text};
use crate::common::{self, Receiver, Reply, start_at};
use earshot_core::api::types::agents::EventKind;

#[tokio::test]
async fn deliveries_say_the_next_retry_relative_to_now_and_a_4xx_is_final() {
    // Retries 0.5 s, 3 s, 12 s, … apart: one is scheduled while the
    // command runs.
    let harness = start_at(0.1).await;
    let busy = Receiver::start(|_, _| Reply::status(503, "down")).await;
    let gone = Receiver::start(|_, _| Reply::status(404, "no such hook")).await;
    let retried = harness
        .subscribe(&busy.url(), &[EventKind::CallFailed])
        .await;
    let rejected = harness
        .subscribe(&gone.url(), &[EventKind::CallFailed])
        .await;
    let call_id = harness.start_call("failed").await;
    harness.wait_settled(&call_id, &retried.id).await;
    harness.wait_settled(&call_id, &rejected.id).await;

    let home = tempfile::tempdir().expect("a temp dir");
    let store = home.path().join("none.db");
    let output = finish(
        isolated_async(home.path())
            .args(["deliveries", &call_id, "--store"])
            .arg(&store)
            .args(["--url", &harness.base, "--api-key", common::API_KEY]),
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("FAILED (final: 4xx is not retried)"),
        "{stdout}"
    );
    assert!(stdout.contains("· final: 4xx is not retried"), "{stdout}");
    let retry_line = stdout
        .lines()
        .find(|line| line.contains("· retry "))
        .unwrap_or_else(|| panic!("a line for the retry: {stdout}"));
    assert!(
        ["· retry in ", "· retry overdue ", "· retry due now"]
            .iter()
            .any(|said| retry_line.contains(said)),
        "{retry_line}"
    );
    assert!(retry_line.contains(": attempt "), "{retry_line}");
    assert!(
        retry_line.contains("when the platform gives up: unknown (no store at"),
        "no store, no history: {retry_line}"
    );
    assert!(!store.exists(), "reading the history creates no store");
    harness.emulator.shutdown().await;
}
