//! earshot: a terminal operations console for a speech-to-text platform.
//!
//! The library holds everything but argument parsing, in layers (see
//! `docs/architecture.md`; `layering_tests` enforces the arrows):
//!
//! - Front ends: the command line ([`cli`]) and the console ([`tui`]).
//! - Services under them: the internal client ([`api`]), rate-aware job
//!   polling ([`poll`]), webhook signatures ([`signature`]), the receiver
//!   toolkit ([`receiver`]), the incident history ([`history`]) over its
//!   SQLite store ([`store`]), the observer's health, metrics and background
//!   sweep ([`observer`]), configuration ([`config`]) and the platform
//!   emulator ([`emulator`]).
//! - Shared helpers with one job each: secrets that never print
//!   ([`redact`]), bounded file reads ([`bounded_file`]), errors as text
//!   ([`error_text`]), answers from
//!   servers earshot does not control ([`http_answer`]), HTTP serving with
//!   limits ([`http_server`]) and its TLS ([`tls`]), the stop signals
//!   ([`shutdown`]), the sliding-window log ([`sliding_window`]), the WAV
//!   reader ([`wav`]) and the filter language every list shares
//!   ([`query`]).

pub mod api;
pub(crate) mod bounded_file;
pub mod cli;
pub mod config;
pub mod emulator;
pub(crate) mod error_text;
pub mod history;
pub(crate) mod http_answer;
pub mod http_server;
pub mod observer;
pub mod poll;
pub mod query;
pub mod receiver;
pub mod redact;
pub(crate) mod shutdown;
pub mod signature;
pub(crate) mod sliding_window;
pub mod store;
pub mod tls;
pub mod tui;
pub mod wav;

#[cfg(test)]
mod layering_tests;
