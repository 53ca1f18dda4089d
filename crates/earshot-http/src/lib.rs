//! earshot-http: HTTP with bounds, for servers and for answers from
//! servers earshot does not control.
//!
//! The layer over `earshot-protocol` that does I/O: [`server`] serves an
//! axum router with limits on connections, header-read and idle time and
//! request bodies (the emulator, `earshot listen`, the observer), and
//! [`answer`] reads a receiver's answer within a size and a deadline (the
//! emulator's deliveries, `check-receiver`); every client starts from
//! [`client_builder`]. Plain HTTP by default; the `tls` feature
//! lets a server speak https ([`server::TlsAcceptor`]) and clients too
//! (rustls on ring), so an embedder of the emulator builds no TLS. `earshot-core` re-exports
//! both under their old names (`http_server`, `http_answer`).

pub mod answer;
pub mod client;
pub mod server;

pub use client::client_builder;
