//! Shared test harness: the workspace's test kit (`earshot-testkit`: an
//! emulator with a client, recording receivers, independent signature
//! checks) and, here, what drives the `earshot` binary.

pub mod cli;
pub mod tmux;

pub use earshot_testkit::*;
