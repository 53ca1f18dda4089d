//! The job queue and the account: the concurrency limit's FIFO queue,
//! a negative balance, raising the concurrency, and the account route.

use crate::common::{Harness, wav};
use reqwest::Method;
use serde_json::{Value, json};

use super::{start, start_limited, submit_url, text_of, time, transcript, upload, wait_done};

/// Waits for each job to finish, in order: their records.
async fn wait_all_done(harness: &Harness, ids: &[String]) -> Vec<Value> {
    let mut records = Vec::new();
    for id in ids {
        records.push(wait_done(harness, id).await);
    }
    records
}

/// POSTs `change` to the account control route: the account after it.
async fn set_account(harness: &Harness, change: Value) -> Value {
    harness.control("/_emulator/account", change).await
}

/// The most jobs processing at one moment, from their start and finish
/// times (a job's slot frees at its `finished_at`).
fn most_at_once(records: &[Value]) -> usize {
    records
        .iter()
        .map(|record| {
            let at = time(record, "started_at");
            records
                .iter()
                .filter(|other| time(other, "started_at") <= at && at < time(other, "finished_at"))
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn jobs_over_the_concurrency_limit_queue_and_start_in_submission_order() {
    let harness = start_limited(0.05, 2).await;
    // 8 s of audio: 2 s of processing, 100 ms at this scale.
    let audio_url = upload(&harness, wav(8.0, None)).await;
    let mut ids = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let created = submit_url(&harness, &audio_url).await;
        statuses.push(text_of(&created, "status"));
        ids.push(text_of(&created, "id"));
    }
    assert_eq!(
        statuses,
        ["processing", "processing", "queued", "queued", "queued"]
    );
    let records = wait_all_done(&harness, &ids).await;
    assert!(records.iter().all(|record| record["status"] == "completed"));
    let starts: Vec<_> = records.iter().map(|r| time(r, "started_at")).collect();
    assert!(
        starts.windows(2).all(|pair| pair[0] <= pair[1]),
        "started out of submission order: {starts:?}"
    );
    assert_eq!(most_at_once(&records), 2);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_negative_balance_lets_running_jobs_finish_then_runs_one_at_a_time() {
    let harness = start(0.05).await;
    let audio_url = upload(&harness, wav(8.0, None)).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let created = submit_url(&harness, &audio_url).await;
        assert_eq!(created["status"], "processing");
        ids.push(text_of(&created, "id"));
    }
    let account = set_account(&harness, json!({ "balance": -1 })).await;
    assert_eq!(account["effective_concurrency"], 1, "{account}");
    assert_eq!(account["concurrency"], 5, "{account}");
    for _ in 0..2 {
        let created = submit_url(&harness, &audio_url).await;
        assert_eq!(created["status"], "queued");
        ids.push(text_of(&created, "id"));
    }
    let records = wait_all_done(&harness, &ids).await;
    // Both running jobs finished; the queued ones ran alone, in order.
    assert_eq!(most_at_once(&records[..2]), 2);
    let running_done = time(&records[0], "finished_at").max(time(&records[1], "finished_at"));
    assert!(time(&records[2], "started_at") >= running_done);
    assert!(time(&records[3], "started_at") >= time(&records[2], "finished_at"));

    let account = set_account(&harness, json!({ "balance": 10.5 })).await;
    assert_eq!(account["effective_concurrency"], 5, "{account}");
    assert_eq!(account["balance"], 10.5);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn raising_the_concurrency_starts_queued_jobs_at_once() {
    let harness = start_limited(0.05, 1).await;
    // 80 s of audio: 20 s of processing, 1 s at this scale.
    let audio_url = upload(&harness, wav(80.0, None)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let created = submit_url(&harness, &audio_url).await;
        ids.push(text_of(&created, "id"));
    }
    assert_eq!(transcript(&harness, &ids[2]).await["status"], "queued");
    let account = set_account(&harness, json!({ "concurrency": 3 })).await;
    assert_eq!(account["processing"], 3, "{account}");
    assert_eq!(account["queued"], 0, "{account}");
    for id in &ids {
        assert_eq!(transcript(&harness, id).await["status"], "processing");
    }
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn the_account_route_reads_and_rejects_bad_changes() {
    let harness = start(0.01).await;
    let account = harness.control_get("/_emulator/account").await;
    assert_eq!(account["concurrency"], 5, "{account}");
    assert_eq!(account["effective_concurrency"], 5, "{account}");
    assert!(account["balance"].as_f64().is_some_and(|b| b > 0.0));
    for bad in [
        json!({ "concurrency": 0 }),
        json!({ "concurrency": 1.5 }),
        json!({ "balance": "lots" }),
        json!({ "credit": 1 }),
    ] {
        let answer = harness
            .raw(
                Method::POST,
                "/_emulator/account",
                None,
                Some(&bad.to_string()),
            )
            .await;
        // The emulator's own routes keep the spec's `{status, title, detail}`.
        assert_eq!(answer.status, 400, "{}", answer.text);
        let body = answer.json();
        assert_eq!(body["status"], 400, "{body}");
        assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
    harness.emulator.shutdown().await;
}
