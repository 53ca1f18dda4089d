//! The emulator through its public API only (the journal and expectations,
//! the manual clock, deliveries on demand, the handle, the README example,
//! what an embedder builds), one binary (each file a module) so the crate
//! is linked once; `support` is what they share. The contract tests over
//! HTTP, with the workspace's test kit, are `tests/contract`.

mod support;

mod assertions;
mod clock;
mod deliveries;
mod handle;
mod readme;
mod weight;
