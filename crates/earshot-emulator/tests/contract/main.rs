//! The emulator's contract tests: the platform interface over HTTP from
//! outside (subscriptions and deliveries, pre-recorded jobs and webhooks,
//! error shapes, artifacts, the troubleshooting table, the embedding API;
//! the demo scenario's are `earshot-demo`'s), one binary (each file a module) so the crate is
//! linked once. They share the workspace's test kit (`earshot-testkit`:
//! the emulator with a client, recording receivers); what needs the
//! `earshot` binary stays in the root crate's `tests/it`.

/// The paths the tests were written against (`crate::common::...`).
mod common {
    pub use earshot_testkit::*;
}

mod delivery_engine;
mod demo_bounded;
mod embedded_emulator;
mod emulator_basics;
mod error_shapes;
mod prerecorded_emulator;
mod session_artifacts;
mod troubleshooting;
