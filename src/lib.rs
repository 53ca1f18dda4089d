//! earshot: a terminal operations console for a speech-to-text platform.
//!
//! The library holds everything but argument parsing: the internal client
//! ([`api`]), webhook signatures ([`signature`]), configuration
//! ([`config`]), the platform emulator ([`emulator`]) and the command-line
//! front end ([`cli`]).

pub mod api;
pub mod cli;
pub mod config;
pub mod emulator;
pub mod poll;
pub mod redact;
pub mod signature;
