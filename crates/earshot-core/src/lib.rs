//! earshot-core: everything of earshot under its front ends.
//!
//! The command line and the console (crate `earshot`) and the platform
//! emulator (crate `earshot-emulator`) build on these modules; nothing here
//! knows them (the crate graph enforces it). See `docs/architecture.md`.
//!
//! - Services: the platform client ([`api`]), rate-aware job polling
//!   ([`poll`]), webhook signatures ([`signature`]), the receiver toolkit
//!   ([`receiver`]), the incident history ([`history`]) over its SQLite store
//!   ([`store`]), the observer's health, metrics and background sweep
//!   ([`observer`]), configuration ([`config`]) and incidents kept in a
//!   file to replay on a developer's machine ([`capsule`]).
//! - Shared helpers with one job each: secrets that never print
//!   ([`redact`]), bounded file reads ([`bounded_file`]), errors as text
//!   ([`error_text`]), durations as text ([`duration_text`]), times of day
//!   ([`clock_text`]), answers from servers earshot does not control
//!   ([`http_answer`]), HTTP serving with limits ([`http_server`]) and its
//!   TLS ([`tls`]), the stop signals ([`shutdown`]), the sliding-window log
//!   ([`sliding_window`]), the WAV reader ([`wav`]) and the filter language
//!   every list shares ([`query`]).

pub mod api;
pub mod bounded_file;
pub mod capsule;
pub use earshot_protocol::clock_text;
pub use earshot_protocol::delivery;
pub mod config;
pub use earshot_protocol::duration_text;
pub use earshot_protocol::error_text;
pub mod history;
pub mod http_answer;
pub mod http_server;
pub mod observer;
pub mod poll;
pub mod query;
pub mod receiver;
pub use earshot_protocol::redact;
pub mod shutdown;
pub use earshot_protocol::signature;
pub mod sliding_window;
pub mod store;
pub mod terminal_text;
pub mod tls;
pub use earshot_protocol::wav;
