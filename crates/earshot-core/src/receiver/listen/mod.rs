//! A correct webhook receiver (spec parts 5 C/D, 6 C/D, 8 C/D), usable in
//! process (the console embeds it) and by `earshot listen`.
//!
//! It accepts a POST on any path and answers at once:
//! - a voice-agent delivery (it carries `X-SVC-Signature`) is verified over
//!   the raw bytes with the current then the previous secret and a 300 s
//!   tolerance; a bad, missing or stale signature gets 401 with a short JSON
//!   reason; a valid one is deduplicated by `event_id` (a repeat gets 200
//!   and is flagged, not processed twice);
//! - a pre-recorded webhook (`{transcript_id, status}`, no signature) must
//!   carry the configured auth header, compared in constant time; a source
//!   outside the platform's fixed addresses is flagged (still 200); it is
//!   deduplicated by `(transcript_id, status)`;
//! - anything else gets 405 (not a POST) or 400.
//!
//! No body is built into a JSON document: a signature is checked over the
//! raw bytes before anything reads them as JSON, and what is read is only
//! the few top-level strings the verdict and the display need
//! ([`super::fields`]), so a forged or unsigned body costs its bytes and
//! no more.
//!
//! Every request, rejected or not, is captured ([`super::capture`]): sent on
//! the stream [`start`] returns ([`Requests`]) and appended to the capture
//! file if one is configured. Dedupe memory is bounded ([`DEDUPE_CAPACITY`]
//! keys, oldest forgotten first), and so is what waits on the stream
//! ([`ListenConfig::queue_bytes`]): while its reader lags that far behind,
//! new requests are answered 503 (the platform retries), not queued.
//!
//! It serves plain HTTP, or https when [`ListenConfig::tls`] is given
//! (`earshot listen --tls-cert/--tls-key`; the console's Inbox stays
//! plain, on loopback).
//!
//! With [`ListenConfig::forward`], a verified, new voice-agent delivery is
//! passed on to an app and answered with the app's answer (`forward`).
//!
//! Its parts: the configuration and bounds (`options`), the server and
//! its one handler (`server`), the verdict on a request (`judge`), what
//! a receiver keeps between requests (`state`), and the stream its reader
//! takes requests from (`requests`).

mod forward;
mod judge;
mod options;
mod requests;
mod server;
mod state;

pub use forward::{APP_DEADLINE, Forward, Forwarded, Routes};
pub use judge::PLATFORM_SOURCES;
pub use options::{DEDUPE_CAPACITY, ListenConfig, MAX_BODY_BYTES, QUEUE_BYTES};
pub use requests::{Received, Requests};
pub use server::{ListenError, Listener, start, start_with_limits};
