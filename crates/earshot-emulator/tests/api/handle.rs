//! The handle a test holds, through the crate's public API only: dropping
//! it stops the server, and the types of its signatures come from this
//! crate.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use earshot_emulator::{Emulator, Fault, SecretString, ServerLimits};
use tokio::net::TcpStream;

/// How long the server may take to close its port.
const DEADLINE: Duration = Duration::from_secs(5);

/// Connects to `addr` until one is refused, within [`DEADLINE`]; the
/// error of the last attempt otherwise.
async fn refused_within_deadline(addr: SocketAddr) -> Result<(), String> {
    let until = Instant::now() + DEADLINE;
    loop {
        let outcome = match TcpStream::connect(addr).await {
            Ok(_) => "a connection was accepted".to_owned(),
            Err(error) if error.kind() == ErrorKind::ConnectionRefused => return Ok(()),
            Err(error) => format!("connect failed otherwise: {error}"),
        };
        if Instant::now() >= until {
            return Err(format!("{addr} still open after {DEADLINE:?}: {outcome}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() {
    let emulator = Emulator::builder()
        .api_key(SecretString::new("emu_handle_test_key".to_owned()))
        .server_limits(ServerLimits::default())
        .start()
        .await
        .expect("the emulator starts on loopback");
    let addr = emulator.addr();
    TcpStream::connect(addr)
        .await
        .expect("the running emulator accepts a connection");

    drop(emulator);

    refused_within_deadline(addr)
        .await
        .expect("the port is closed after drop");
}

#[tokio::test]
async fn shutdown_stops_the_server_too() {
    let emulator = Emulator::builder()
        .start()
        .await
        .expect("the emulator starts on loopback");
    let addr = emulator.addr();
    emulator.shutdown().await;
    refused_within_deadline(addr)
        .await
        .expect("the port is closed after shutdown");
}

#[tokio::test]
async fn the_handle_is_read_without_awaiting() {
    let emulator = Emulator::builder()
        .start()
        .await
        .expect("the emulator starts on loopback");
    emulator
        .arm_fault(Fault::status("/v1/", 503).times(2))
        .expect("a fault is armed");
    let armed = emulator.armed_faults();
    assert_eq!(armed.len(), 1, "{armed:?}");
    assert_eq!(armed[0].count, 2, "{armed:?}");
    emulator.clear_faults();
    assert!(emulator.armed_faults().is_empty());
    assert_eq!(emulator.stats().deliveries_in_progress(), 0);
}
