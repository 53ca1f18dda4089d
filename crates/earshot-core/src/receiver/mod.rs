//! The receiver toolkit: what a correct webhook receiver does
//! ([`listen`]), the raw capture of what it received ([`capture`]; erasing
//! sessions from it: [`capture_erase`]), and the conformance battery run
//! against an operator's own receiver ([`check`]); what a receiver tells
//! its watcher as it works ([`watch`]); forwarding what the observer
//! stored to a developer's app ([`relay`]).

pub mod auth_header;
pub mod capture;
pub mod capture_erase;
pub mod check;
mod fields;
pub mod listen;
pub mod relay;
mod relay_source;
pub mod watch;
