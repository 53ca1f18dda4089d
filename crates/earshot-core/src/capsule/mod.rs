//! Capsules: an incident as the store holds it, in one file that can be
//! replayed on a developer's machine and compared with its replay.
//!
//! [`export`] reads the store, [`write`](format::write) and
//! [`read`](format::read) keep the file, [`replay`] re-enacts it against a
//! local receiver and [`compare`] puts each event's recorded outcome beside
//! its replay's.
//!
//! # The format (version 1)
//!
//! JSON lines (`jq -c 'select(.kind == "event")' FILE`), every line an
//! object whose `kind` says what it is, in this order:
//!
//! 1. one `header`: `format` (`"earshot-capsule"`), `version` (1), the
//!    window (`first_ms`, `last_ms`: the first and last event's recorded
//!    times, Unix milliseconds), the filters the export was given
//!    (`subscription`, `sessions`), `events` (how many lines follow),
//!    `personal_data` (`masked` or `kept`) and `signatures` (`dropped`);
//! 2. one `subscription` per subscription the events' outcomes name: `id`,
//!    `url` (scheme, host, port and path: no query, no credentials),
//!    `events` (the types it asked for);
//! 3. one `event` per event, oldest first (then as received, then by id):
//!    `event_id`, `event`, `session_id`, `occurred` (RFC 3339) and
//!    `occurred_ms`, `received_ms`, `headers` (`[name, value]` pairs as the
//!    observer kept them, without the signature and any credential),
//!    `body` (the exact bytes as text; `body_base64` instead when they are
//!    not UTF-8), `body_masked` (personal data masked: the bytes are then
//!    the masked JSON, keys sorted), and `deliveries`: per subscription its
//!    `state` as recorded (`delivered`, `missed`, `recovered`, `pending`,
//!    `unknown`), `diagnosis` of its last failure (`401 invalid
//!    signature`) and `attempts` (`attempt`, `at_ms`, `status`,
//!    `http_status_code`, `error`, `next_retry_ms`), oldest first. An event
//!    no subscription's outcome names (only the observer's listened) has
//!    none; a replay to one URL sends it as subscription `(none)`.
//!
//! Nothing in the file depends on when it was written: two exports of the
//! same store are byte-identical. A reader refuses a newer `version`.
//!
//! A replay writes its results next to the capsule (`FILE.replay.jsonl`,
//! [`results_path`]): a `replay` header (`format`
//! `"earshot-capsule-replay"`, `version`, `speed`, `target`,
//! `capsule_sha256`: the file replayed, so results are read against it
//! only) and one
//! `delivery` per event and subscription with its replayed `attempts`
//! (`planned_ms`, `sent_ms` from the replay's start, `http_status`,
//! `error`, `latency_ms`) and `state` (`delivered` or `missed`).

pub mod compare;
pub mod export;
pub mod format;
pub mod replay;

use std::path::{Path, PathBuf};

pub use format::{Capsule, FORMAT, VERSION};

/// A capsule or its replay results could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CapsuleError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} line {line}: {why}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error(
        "{} is a {found} file of version {version}; this earshot reads version {VERSION} \
         at most: use a newer earshot",
        path.display()
    )]
    Newer {
        path: PathBuf,
        found: String,
        version: u32,
    },
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
    #[error(
        "subscription {id}'s recorded URL {url} is not on this machine: a replay sends to a \
         local receiver only; give --deliver-to URL"
    )]
    NotLocal { id: String, url: String },
}

impl From<rusqlite::Error> for CapsuleError {
    fn from(error: rusqlite::Error) -> Self {
        CapsuleError::Store(crate::store::StoreError::from(error))
    }
}

/// Where the replay of `capsule` writes its results, and `compare` reads
/// them: `FILE.replay.jsonl`.
pub fn results_path(capsule: &Path) -> PathBuf {
    let mut name = capsule.as_os_str().to_owned();
    name.push(".replay.jsonl");
    PathBuf::from(name)
}
