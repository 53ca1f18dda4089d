//! Slow and silent clients against every server earshot runs (issue 11
//! item 3): the emulator and the `listen` receiver close a connection that
//! sends nothing, a head trickled in byte by byte (slowloris) and a stalled
//! body, keep at most `max_connections` open, and still serve a normal
//! request behind a crowd of half-sent ones. Timeouts are set short here
//! (`ServerLimits`); every wait is bounded.

use crate::common;
use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{API_KEY, SECRET, launch};
use earshot::emulator::EmulatorConfig;
use earshot::http_server::ServerLimits;
use earshot::receiver::listen::{self, ListenConfig};
use earshot::redact::SecretString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short limits so a test waits fractions of a second, not minutes.
const LIMITS: ServerLimits = ServerLimits {
    max_connections: 16,
    header_read: Duration::from_millis(300),
    idle: Duration::from_millis(300),
    body: Duration::from_secs(2),
};
/// The most any one wait in these tests takes.
const BOUND: Duration = Duration::from_secs(20);
/// The tests count this process's descriptors: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn emulator() -> common::Harness {
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.server_limits = LIMITS;
    launch(config, None).await
}

async fn receiver() -> listen::Listener {
    let config = ListenConfig::with_secrets(SecretString::new(SECRET), None);
    let (listener, _received) =
        listen::start_with_limits("127.0.0.1:0".parse().unwrap(), config, LIMITS)
            .await
            .expect("the receiver starts");
    listener
}

/// Reads (and drops) whatever comes until the server closes the
/// connection; `false` when it is still open after [`BOUND`].
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Sends a head one byte at a time, never finishing it; `true` when the
/// server closed the connection before [`BOUND`].
async fn slowloris_is_closed(addr: SocketAddr) -> bool {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let trickle = async {
        stream.write_all(b"POST /hook HTTP/1.1\r\n").await?;
        loop {
            stream.write_all(b"x").await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    };
    tokio::time::timeout(BOUND, trickle).await.is_ok()
}

/// Open descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// Opens `count` connections that each send half a head; they are held
/// open by the test until dropped.
async fn half_sent(addr: SocketAddr, count: usize) -> Vec<TcpStream> {
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /v2/account HTTP/1.1\r\nHost: 127")
            .await
            .unwrap();
        streams.push(stream);
    }
    streams
}

#[tokio::test]
async fn emulator_closes_silent_slow_and_stalled_clients() {
    let _serial = SERIAL.lock().await;
    let harness = emulator().await;
    let addr = harness.emulator.addr();

    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await, "a silent connection");

    assert!(slowloris_is_closed(addr).await, "a head sent byte by byte");

    let mut stalled = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v2/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {API_KEY}\r\n\
         Content-Length: 100000\r\n\r\nRIFF"
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    assert!(closed_by_server(&mut stalled).await, "a stalled body");

    let mut kept_alive = TcpStream::connect(addr).await.unwrap();
    kept_alive
        .write_all(b"GET /_emulator/stats HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut kept_alive).await,
        "an idle keep-alive"
    );
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn emulator_serves_a_request_behind_many_half_sent_connections() {
    let _serial = SERIAL.lock().await;
    let harness = emulator().await;
    let addr = harness.emulator.addr();
    let before = open_fds();
    let crowd = half_sent(addr, 200).await;
    let (status, _) = tokio::time::timeout(BOUND, harness.get("/v1/webhook-subscriptions"))
        .await
        .expect("a normal request is answered in time");
    assert_eq!(status, 200);
    // This process holds the 200 client ends; the server's ends are what
    // is left beyond them: at most the limit (plus the client's pool).
    let server_side = open_fds().saturating_sub(before + crowd.len());
    assert!(
        server_side <= LIMITS.max_connections + 8,
        "{server_side} server connections open"
    );
    drop(crowd);
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn listen_closes_slow_clients_and_keeps_answering() {
    let _serial = SERIAL.lock().await;
    let listener = receiver().await;
    let addr = listener.addr;

    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await, "a silent connection");
    assert!(slowloris_is_closed(addr).await, "a head sent byte by byte");

    let before = open_fds();
    let crowd = half_sent(addr, 100).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = tokio::time::timeout(
        BOUND,
        http.post(format!("{}/hook", listener.url()))
            .body("{}")
            .send(),
    )
    .await
    .expect("a normal request is answered in time")
    .expect("the receiver answers");
    assert_eq!(answer.status().as_u16(), 400, "an unrecognised POST");
    let server_side = open_fds().saturating_sub(before + crowd.len());
    assert!(
        server_side <= LIMITS.max_connections + 8,
        "{server_side} server connections open"
    );
    drop(crowd);
    listener.stop().await;
}
