//! earshot-protocol: what the platform and its clients both speak, with
//! no I/O of its own.
//!
//! The lowest layer of the workspace: `earshot-core` (client, store,
//! history, receiver) and `earshot-emulator` (the platform) build on it,
//! and it knows neither. Webhook signatures ([`signature`]), WAV
//! ([`wav`]), secrets that never print ([`redact`]), and the text of
//! errors ([`error_text`]), durations ([`duration_text`]) and times of
//! day ([`clock_text`]); the deliveries a receiver is tested with
//! ([`delivery`]).

pub mod clock_text;
pub mod delivery;
pub mod duration_text;
pub mod error_text;
pub mod redact;
pub mod signature;
pub mod wav;
