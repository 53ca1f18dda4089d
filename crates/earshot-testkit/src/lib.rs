//! Test support shared by every earshot test that needs a platform: the
//! integration tests (`tests/it`) and the console's tests inside the
//! `earshot` crate. An emulator on `127.0.0.1:0` with a client for it
//! ([`Harness`]), scriptable webhook receivers that record every request
//! byte for byte ([`Receiver`]), independent signature checks
//! ([`hmac_hex`]), test files ([`wav`], [`two_profile_config`]) and
//! waiting for a condition ([`eventually`]), peak memory ([`rss`]), a
//! throwaway PostgreSQL cluster ([`postgres::PgCluster`]), a round-robin TCP
//! proxy in front of several observers ([`proxy::RoundRobinProxy`]) and a
//! flood of signed events at a fixed rate ([`flood::flood`]). Not
//! published; a dev-dependency only.

mod files;
pub mod flood;
mod harness;
pub mod postgres;
pub mod proxy;
mod receiver;
pub mod rss;
mod signing;

use std::future::Future;
use std::time::{Duration, Instant};

pub use files::{two_profile_config, wav, zeros_array};
pub use harness::{
    API_KEY, DEFAULT_AGENT, Harness, OTHER_AGENT, Options, RawAnswer, SECRET, launch, start,
    start_at, start_with,
};
pub use receiver::{Behaviour, Captured, Receiver, Reply};
pub use signing::{hmac_hex, signature_parts, timestamp_of, verifies_with};

/// Polls `check` every 10 ms until it returns `Some`, or panics after
/// `within` with `what`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
