//! The observer's monitoring (`earshot listen --store` with
//! `--metrics-listen` and `--sweep`): its metrics ([`metrics`]), whether it
//! can write its store ([`health`]; on PostgreSQL probed by [`pg_probe`]),
//! the private endpoints serving both
//! ([`endpoints`]), and the sweep it runs in the background so the store
//! stays fresh with no console open ([`sweeper`]). docs/observer.md is the
//! operator's side of it.

pub mod endpoints;
pub mod health;
pub mod metrics;
pub mod pg_probe;
pub mod sweeper;
