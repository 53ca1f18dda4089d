//! `earshot listen` whose stdout nobody reads: large
//! deliveries keep being answered 200, the child's memory stays bounded
//! (its `VmHWM`, with a generous limit), and stderr says how many lines
//! were not printed.

use std::process::Stdio;
use std::time::Duration;

use crate::common::SECRET;
use crate::common::rss::peak_mib_of;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

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
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"))
            .args(["listen", "--json", "--secret", SECRET])
            .env_remove("EARSHOT_URL")
            .env_remove("EARSHOT_API_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Read the first line only; the pipe stays open and unread.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).await.unwrap();
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line: {first}"))
            .to_owned();

        let http = reqwest::Client::builder().no_proxy().build().unwrap();
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
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .take(64 * 1024)
            .read_to_string(&mut stderr)
            .await
            .unwrap();
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
