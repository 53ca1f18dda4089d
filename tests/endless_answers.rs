//! Receivers that answer with an endless body: the
//! emulator's agents and pre-recorded webhooks and `check-receiver` read a
//! few KiB of the answer and stop, so the record is right and memory stays
//! small. The receiver is a raw TCP server on 127.0.0.1 written here,
//! streaming a chunked body until the reader hangs up.

use std::net::SocketAddr;
use std::time::Duration;

use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::receiver::check::{self, CheckConfig};
use earshot_core::redact::SecretString;
use earshot_testkit::rss::peak_mib_of_self;
use earshot_testkit::{SECRET, eventually, start_at, wav};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Far above what the test process needs (tens of MiB), far below what
/// reading an endless answer for a second costs (GBs).
const PEAK_LIMIT_MIB: u64 = 400;
/// Every test ends within this.
const TEST_BOUND: Duration = Duration::from_secs(60);

/// Runs `test` within [`TEST_BOUND`], then checks the process's peak RSS
/// stayed far below what reading an endless answer would cost.
async fn bounded_and_cheap(test: impl Future<Output = ()>) {
    tokio::time::timeout(TEST_BOUND, test)
        .await
        .expect("the test ends in time");
    let peak = peak_mib_of_self();
    assert!(peak < PEAK_LIMIT_MIB, "peak RSS {peak} MiB");
}

/// A receiver answering every request `status` and then `line`, repeated
/// without end (chunked), until the client goes away.
async fn endless_receiver(status: u16, line: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer_endlessly(stream, status, line));
        }
    });
    addr
}

async fn answer_endlessly(mut stream: TcpStream, status: u16, line: &'static str) {
    if read_request(&mut stream).await.is_none() {
        return;
    }
    let head = format!(
        "HTTP/1.1 {status} Whatever\r\ncontent-type: text/plain\r\n\
         transfer-encoding: chunked\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let block = line.repeat(64 * 1024 / line.len());
    let chunk = format!("{:x}\r\n{block}\r\n", block.len());
    // Ends when the client hangs up (the write fails) or at the bound.
    let _ = tokio::time::timeout(TEST_BOUND, async {
        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
}

/// Reads one request's head and its `content-length` body (bounded).
async fn read_request(stream: &mut TcpStream) -> Option<()> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || seen.len() > 64 * 1024 {
            return None;
        }
        seen.extend_from_slice(&buffer[..read]);
        if let Some(at) = seen.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    let mut have = seen.len() - head_end;
    while have < length.min(1024 * 1024) {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        have += read;
    }
    Some(())
}

#[tokio::test]
async fn agent_deliveries_to_endless_answers_are_recorded_and_cheap() {
    bounded_and_cheap(async {
        // Deadline 1.5 s: long enough to read gigabytes if nothing stops.
        let harness = start_at(0.1).await;
        let ok = endless_receiver(200, "fine ").await;
        let failing = endless_receiver(500, "overloaded\n").await;
        let (ok_sub, ok_call) = harness.failed_call_to(&format!("http://{ok}/")).await;
        let (bad_sub, bad_call) = harness.failed_call_to(&format!("http://{failing}/")).await;

        let ok_records = harness.wait_settled(&ok_call, &ok_sub.id).await;
        let bad_records = harness.wait_settled(&bad_call, &bad_sub.id).await;
        let delivered = &ok_records[0];
        assert_eq!(delivered["status"], "delivered", "{delivered}");
        assert_eq!(delivered["http_status_code"], 200, "{delivered}");
        let failed = &bad_records[0];
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["http_status_code"], 500, "{failed}");
        assert_eq!(failed["error"], "HTTP 500: overloaded", "{failed}");
        harness.emulator.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn transcript_webhooks_to_endless_answers_are_recorded_and_cheap() {
    bounded_and_cheap(async {
        // Webhook deadline 10 s × 0.1 = 1 s.
        let harness = start_at(0.1).await;
        let receiver = endless_receiver(200, "fine ").await;
        let dir = tempfile::tempdir().unwrap();
        let audio = dir.path().join("hello.wav");
        std::fs::write(&audio, wav(1.0, Some("hello"))).unwrap();
        let upload = harness.client.upload_file(&audio, |_| {}).await.unwrap();
        let request = NewTranscript {
            audio_url: upload.upload_url,
            webhook_url: Some(format!("http://{receiver}/hook")),
            ..NewTranscript::default()
        };
        let id = harness.client.create_transcript(&request).await.unwrap().id;
        let record = eventually(Duration::from_secs(20), "the webhook's status", || async {
            let (_, record) = harness.get(&format!("/v2/transcript/{id}")).await;
            (!record["webhook_status_code"].is_null()).then_some(record)
        })
        .await;
        assert_eq!(record["webhook_status_code"], 200, "{record}");
        harness.emulator.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn check_receiver_reads_endless_answers_as_answers() {
    bounded_and_cheap(async {
        let receiver = endless_receiver(200, "fine ").await;
        let url = format!("http://{receiver}/hook").parse().unwrap();
        let mut config = CheckConfig::agents(url, SecretString::new(SECRET));
        config.timeout = Duration::from_secs(2);
        let report = check::run_battery(&config).await.expect("the battery runs");
        let started = report.case("session.started").expect("the case ran");
        assert_eq!(started.answer, "200", "{started:?}");
        assert_eq!(started.status, Some(200), "{started:?}");
        // Accepting everything fails the refusal cases: as an answer, not
        // as a timeout.
        let forged = report.case("bad-signature").expect("the case ran");
        assert_eq!(forged.answer, "200", "{forged:?}");
    })
    .await;
}
