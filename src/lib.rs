//! earshot: a terminal operations console for a speech-to-text platform.
//!
//! The library holds everything but argument parsing: the internal client
//! ([`api`]), webhook signatures ([`signature`]), configuration
//! ([`config`]), the platform emulator ([`emulator`]) and the two front
//! ends over the client: the command line ([`cli`]) and the console ([`tui`]).

pub mod api;
pub mod bounded_file;
pub mod cli;
pub mod config;
pub mod emulator;
pub mod history;
pub mod http_answer;
pub mod http_server;
pub mod poll;
pub mod receiver;
pub mod redact;
pub mod shutdown;
pub mod signature;
pub mod sliding_window;
pub mod store;
pub mod tui;
pub(crate) mod wav;
