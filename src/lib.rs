//! earshot: a terminal operations console for a speech-to-text platform.
//! This crate is its command line (`cli`) and its console (`tui`, opened by
//! the command line); both are private: the binary calls [`run`] with the
//! parsed [`Cli`], and reports an error with [`exit_with`].
//!
//! The layers under the front ends are crates of their own:
//! `earshot-core` (the client, signatures, polling, the receiver, the store
//! and history, configuration) and `earshot-emulator` (the platform
//! emulator). See `docs/architecture.md`.

mod cli;

pub use cli::{Cli, exit_with, run};
mod tui;

/// The benchmarks' and examples' door into the console; not an API.
#[doc(hidden)]
pub use tui::bench;
