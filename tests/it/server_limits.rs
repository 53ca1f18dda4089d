//! Slow and silent clients against every server earshot runs: the emulator and the `listen` receiver close a connection that
//! sends nothing, a head trickled in byte by byte (slowloris) and a stalled
//! body, keep at most `max_connections` open, and still serve a normal
//! request behind a crowd of half-sent ones, or behind body tricklers
//! holding every slot (the stalest is closed for it); `listen` answers 503
//! past its body budget and takes bodies again once it is free. Timeouts
//! are set short here (`ServerLimits`); every wait is bounded.

use crate::common;
use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{API_KEY, SECRET, eventually, launch};
use earshot_core::http_server::ServerLimits;
use earshot_core::receiver::listen::{self, ListenConfig};
use earshot_core::redact::SecretString;
use earshot_emulator::EmulatorConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short limits so a test waits fractions of a second, not minutes.
const LIMITS: ServerLimits = ServerLimits {
    max_connections: 16,
    header_read: Duration::from_millis(300),
    idle: Duration::from_millis(300),
    body: Duration::from_secs(2),
    body_idle: Duration::from_millis(300),
    body_budget: 64 * 1024 * 1024,
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
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
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

// ---------------------------------------------------------------------------
// The body budget
// ---------------------------------------------------------------------------

const MIB: usize = 1024 * 1024;

/// A 4 MiB budget; bodies may pause long enough for the test to look.
const BUDGET_LIMITS: ServerLimits = ServerLimits {
    max_connections: 64,
    header_read: Duration::from_secs(5),
    idle: Duration::from_secs(15),
    body: Duration::from_secs(30),
    body_idle: Duration::from_secs(15),
    body_budget: 4 * MIB,
};

/// A head for a `len`-byte JSON POST to `/hook`.
fn post_head(len: usize) -> String {
    format!(
        "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {len}\r\n\r\n"
    )
}

/// The head of what the server answered on `stream` within `within`
/// (`None`: nothing, or the connection closed without an answer).
async fn answer_head(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(len) => answer.extend_from_slice(&buffer[..len]),
            }
            if answer.windows(4).any(|window| window == b"\r\n\r\n") {
                return;
            }
        }
    });
    let _ = read.await;
    (!answer.is_empty()).then(|| String::from_utf8_lossy(&answer).into_owned())
}

/// Connections each holding 1.5 MiB of a 2 MiB body take 3 MiB of a 4 MiB
/// budget: a further 2 MiB request is answered 503 with `Retry-After`
/// before it sends a byte of its body; once they close, the budget is
/// free again and a signed delivery as large is accepted.
#[tokio::test]
async fn listen_answers_503_past_the_body_budget_and_recovers_once_it_is_free() {
    let _serial = SERIAL.lock().await;
    let config = ListenConfig::with_secrets(SecretString::new(SECRET), None);
    let (listener, _received) =
        listen::start_with_limits("127.0.0.1:0".parse().unwrap(), config, BUDGET_LIMITS)
            .await
            .expect("the receiver starts");
    let addr = listener.addr;
    let mut holders = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(post_head(2 * MIB).as_bytes())
            .await
            .unwrap();
        stream.write_all(&vec![b' '; 3 * MIB / 2]).await.unwrap();
        holders.push(stream);
    }

    // The server charges the held bytes as it reads them: ask until it has.
    let refused = tokio::time::timeout(BOUND, async {
        loop {
            let mut further = TcpStream::connect(addr).await.unwrap();
            further
                .write_all(post_head(2 * MIB).as_bytes())
                .await
                .unwrap();
            if let Some(head) = answer_head(&mut further, Duration::from_secs(1)).await
                && head.starts_with("HTTP/1.1 503")
            {
                return head;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a request past the budget is answered 503");
    let lower = refused.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 5\r\n"), "{refused}");
    assert!(lower.contains("\r\nconnection: close\r\n"), "{refused}");

    drop(holders);
    let body = format!(
        r#"{{"event_id":"evt-budget","event":"call.ended","padding":"{}"}}"#,
        "p".repeat(3 * MIB)
    )
    .into_bytes();
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    let accepted = tokio::time::timeout(BOUND, async {
        loop {
            let signature = earshot_core::signature::sign(
                SECRET.as_bytes(),
                chrono::Utc::now().timestamp(),
                &body,
            );
            let answer = http
                .post(format!("{}/hook", listener.url()))
                .header("x-svc-signature", signature)
                .body(body.clone())
                .send()
                .await;
            if let Ok(answer) = answer
                && answer.status().as_u16() != 503
            {
                return answer.status().as_u16();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the budget is given back when the held bodies end");
    assert_eq!(accepted, 200);
    listener.stop().await;
}

// ---------------------------------------------------------------------------
// Body tricklers filling every slot
// ---------------------------------------------------------------------------

/// Eight slots; a body may pause 2 s and take a minute in all, so a
/// trickler sending a byte every 250 ms keeps its slot for the whole test
/// unless the server closes it for a new client.
const TRICKLE_LIMITS: ServerLimits = ServerLimits {
    max_connections: 8,
    header_read: Duration::from_secs(5),
    idle: Duration::from_secs(5),
    body: Duration::from_secs(60),
    body_idle: Duration::from_secs(2),
    body_budget: 64 * MIB,
};
/// A normal request behind the tricklers is answered within this (at
/// once, in fact; without room made for it, only after a minute).
const ANSWERED_WITHIN: Duration = Duration::from_secs(5);

/// Connections that each send `head` (for a 1,000-byte body) and then one
/// body byte every 250 ms; they stop when dropped.
struct Tricklers(Vec<tokio::task::JoinHandle<()>>);

impl Tricklers {
    /// `open` counts the server's open connections: they are in once it
    /// says `count`.
    async fn start(
        addr: SocketAddr,
        head: &str,
        count: usize,
        open: impl Fn() -> usize,
    ) -> Tricklers {
        let mut tasks = Vec::with_capacity(count);
        for _ in 0..count {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            tasks.push(tokio::spawn(async move {
                for _ in 0..1000 {
                    if stream.write_all(b" ").await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }));
        }
        eventually(
            Duration::from_secs(10),
            "the server takes the tricklers in",
            || {
                let taken = open() >= count;
                async move { taken.then_some(()) }
            },
        )
        .await;
        Tricklers(tasks)
    }
}

impl Drop for Tricklers {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

#[tokio::test]
async fn listen_serves_a_delivery_while_tricklers_fill_every_slot() {
    let _serial = SERIAL.lock().await;
    let config = ListenConfig::with_secrets(SecretString::new(SECRET), None);
    let (listener, _received) =
        listen::start_with_limits("127.0.0.1:0".parse().unwrap(), config, TRICKLE_LIMITS)
            .await
            .expect("the receiver starts");
    let tricklers = Tricklers::start(
        listener.addr,
        &post_head(1000),
        TRICKLE_LIMITS.max_connections,
        || listener.open_connections(),
    )
    .await;
    let body = br#"{"event_id":"evt-behind-tricklers","event":"call.ended"}"#.to_vec();
    let signature =
        earshot_core::signature::sign(SECRET.as_bytes(), chrono::Utc::now().timestamp(), &body);
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    let answer = tokio::time::timeout(
        ANSWERED_WITHIN,
        http.post(format!("{}/hook", listener.url()))
            .header("x-svc-signature", signature)
            .body(body)
            .send(),
    )
    .await
    .expect("a delivery behind the tricklers is answered in time")
    .expect("the receiver answers");
    assert_eq!(answer.status().as_u16(), 200);
    drop(tricklers);
    listener.stop().await;
}

#[tokio::test]
async fn emulator_serves_a_request_while_tricklers_fill_every_slot() {
    let _serial = SERIAL.lock().await;
    let mut config = EmulatorConfig::new(SecretString::new(API_KEY));
    config.server_limits = TRICKLE_LIMITS;
    let harness = launch(config, None).await;
    let head = format!(
        "POST /v2/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {API_KEY}\r\n\
         Content-Length: 1000\r\n\r\n"
    );
    let tricklers = Tricklers::start(
        harness.emulator.addr(),
        &head,
        TRICKLE_LIMITS.max_connections,
        || harness.emulator.open_connections(),
    )
    .await;
    let (status, _) =
        tokio::time::timeout(ANSWERED_WITHIN, harness.get("/v1/webhook-subscriptions"))
            .await
            .expect("a request behind the tricklers is answered in time");
    assert_eq!(status, 200);
    drop(tricklers);
    harness.emulator.shutdown().await;
}
