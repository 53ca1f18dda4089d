//! `earshot listen` whose stdout nobody reads: large
//! deliveries keep being answered 200, the child's memory stays bounded
//! (its `VmHWM`, with a generous limit), and stderr says how many lines
//! were not printed.

use std::time::Duration;

use crate::common::SECRET;
use crate::common::cli::{earshot_async, listening_url_then_unread, stderr_lines};
use crate::common::rss::peak_mib_of;

/// Requests sent, each with a body of [`BODY_BYTES`]: 80 MiB in all.
const REQUESTS: usize = 80;
const BODY_BYTES: usize = 1024 * 1024;
/// Far above what a bounded queue needs (tens of MiB), far below what
/// keeping every request until its line is printed costs (about 3 MiB a
/// request here).
const PEAK_LIMIT_MIB: u64 = 150;
const BOUND: Duration = Duration::from_secs(120);

fn body(index: usize) -> Vec<u8> {
    let padding = "p".repeat(BODY_BYTES);
    format!(
        r#"{{"event_id":"evt-backpressure-{index}","event":"call.ended","padding":"{padding}"}}"#
    )
    .into_bytes()
}

#[tokio::test]
async fn an_unread_stdout_drops_printed_lines_not_answers() {
    tokio::time::timeout(BOUND, async {
        let mut child = earshot_async()
            .args(["listen", "--json", "--secret", SECRET])
            .spawn()
            .unwrap();
        // Read the first line only; the pipe stays open and unread.
        let (url, stdout) = listening_url_then_unread(&mut child);
        let stderr = stderr_lines(&mut child);

        let http = earshot_http::client_builder().no_proxy().build().unwrap();
        for index in 0..REQUESTS {
            let body = body(index);
            let now = chrono::Utc::now().timestamp();
            let signature = earshot_core::signature::sign(SECRET.as_bytes(), now, &body);
            let answer = http
                .post(format!("{url}/hook"))
                .header("content-type", "application/json")
                .header("x-svc-signature", signature)
                .body(body)
                .send()
                .await
                .expect("the receiver answers");
            assert_eq!(answer.status().as_u16(), 200, "request {index}");
        }
        let pid = child.id().expect("the child runs");
        let peak = peak_mib_of(pid);
        assert!(peak < PEAK_LIMIT_MIB, "listen peaked at {peak} MiB");

        let killed = tokio::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await
            .unwrap();
        assert!(killed.success());
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(143), "SIGTERM: 128 + 15");
        // Its stderr ended with it: every line has come.
        let stderr: String = stderr.iter().map(|line| line + "\n").collect();
        assert!(
            stderr.contains("lines not printed: stdout is not keeping up"),
            "{stderr}"
        );
        assert!(
            stderr.contains("received 80, accepted 80"),
            "the summary reaches stderr when stdout cannot take it: {stderr}"
        );
        drop(stdout);
    })
    .await
    .expect("the test ends in time");
}
