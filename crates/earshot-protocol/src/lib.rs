//! earshot-protocol: what the platform and its clients both speak, with
//! no I/O of its own.
//!
//! The lowest layer of the workspace: `earshot-http` (serving and reading
//! HTTP with bounds), `earshot-core` (client, store, history, receiver)
//! and `earshot-emulator` (the platform) build on it, and it knows none of
//! them. The platform's records ([`types`]) and their rules ([`validate`],
//! with what makes an address public, [`public_address`]); webhook
//! signatures ([`signature`]); the request log both sides limit rates
//! with ([`sliding_window`]); WAV ([`wav`]); secrets that never print
//! ([`redact`]); the text of errors ([`error_text`]), durations
//! ([`duration_text`]) and times of day ([`clock_text`]); the deliveries a
//! receiver is tested with ([`delivery`]).

pub mod clock_text;
pub mod delivery;
pub mod duration_text;
pub mod error_text;
pub mod public_address;
pub mod redact;
pub mod signature;
pub mod sliding_window;
pub mod types;
pub mod validate;
pub mod wav;
