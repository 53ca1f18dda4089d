//! earshot-core: earshot's services under its front ends.
//!
//! The command line and the console (crate `earshot`) and the demo traffic
//! (crate `earshot-demo`) build on these modules; nothing here knows them
//! (the crate graph enforces it). Core builds on `earshot-protocol` (what
//! the platform speaks) and `earshot-http` (HTTP with bounds), as the
//! platform emulator does, and names their modules under its old paths
//! (the last item below). See `docs/architecture.md`.
//!
//! - Services: the platform client ([`api`]), rate-aware job polling
//!   ([`poll`]), the receiver toolkit ([`receiver`]), the incident history
//!   ([`history`]) over its SQLite store ([`store`]), the observer's
//!   health, metrics and background sweep ([`observer`]), configuration
//!   ([`config`]) and incidents kept in a file to replay on a developer's
//!   machine ([`capsule`]).
//! - Shared helpers with one job each: bounded file reads
//!   ([`bounded_file`]), TLS certificates for servers ([`tls`]), the stop
//!   signals ([`shutdown`]) and the filter language every list shares
//!   ([`query`]).
//! - Named from `earshot-protocol`: the API's records and rules
//!   ([`api::types`], [`api::validate`]), webhook signatures
//!   ([`signature`]), secrets that never print ([`redact`]), errors,
//!   durations and times of day as text ([`error_text`],
//!   [`duration_text`], [`clock_text`]), the sliding-window log
//!   ([`sliding_window`]), the WAV reader ([`wav`]), test deliveries
//!   ([`delivery`]); from `earshot-http`: HTTP serving with limits
//!   ([`http_server`]) and answers from servers earshot does not control
//!   ([`http_answer`]).

pub mod api;
pub mod bounded_file;
pub mod capsule;
pub use earshot_protocol::clock_text;
pub use earshot_protocol::delivery;
pub mod config;
pub use earshot_protocol::duration_text;
pub use earshot_protocol::error_text;
pub mod history;
pub use earshot_http::answer as http_answer;
pub use earshot_http::server as http_server;
pub mod observer;
pub mod poll;
pub mod query;
pub mod receiver;
pub use earshot_protocol::redact;
pub mod shutdown;
pub use earshot_protocol::signature;
pub use earshot_protocol::sliding_window;
pub mod store;
pub mod terminal_text;
pub mod tls;
pub use earshot_protocol::wav;
