//! earshot: the command line ([`cli`]) and the console (`tui`, private to
//! this crate: the command line opens it), a terminal operations console
//! for a speech-to-text platform.
//!
//! The layers under the front ends are crates of their own:
//! `earshot-core` (the client, signatures, polling, the receiver, the store
//! and history, configuration) and `earshot-emulator` (the platform
//! emulator). See `docs/architecture.md`.

pub mod cli;
mod tui;

/// The benchmarks' and examples' door into the console; not an API.
#[doc(hidden)]
pub mod bench;
