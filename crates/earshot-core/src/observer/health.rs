//! Whether the observer can write its store, known cheaply and honestly:
//! not by a write per `GET /healthz`, but from two things it learns anyway.
//!
//! - A probe every [`PROBE_EVERY`], asked of the store's writer thread
//!   ([`Writer::probe`]): it takes the write lock, reads from the file the
//!   pages an event write goes through, and writes, syncs and removes one
//!   page in a file beside the store (`store::probe`). It is
//!   answered in turn with the writes, so a writer thread that died or hangs
//!   shows too: no answer within [`PROBE_TIMEOUT`] is a failure, and so is
//!   a probe result older than [`STALE_AFTER`].
//! - Every event write's outcome: a failed commit makes the store unhealthy
//!   until a later event write succeeds (a probe that passes does not
//!   clear it).
//! - The background whole-file check (`store::checker`): damage it finds
//!   makes the store unhealthy until a later check finds none (the
//!   observer answers meanwhile; the platform retries what fails).
//!
//! `GET /healthz` reads the result ([`StoreHealth::check`]); it never
//! waits for the disk.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::store::writer::Writer;

/// How often the writer is asked to probe the store.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// How long a probe may take: past the store's 10 s busy timeout, so a
/// lock held elsewhere fails the probe with its own message first.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A probe result older than this is no longer believed (the probing has
/// stopped, or the writer answers nothing).
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// What `GET /healthz` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Receiving, with a store that can be written (`store`) or without one.
    Up { store: bool },
    /// The store cannot be written: a short code, and what failed.
    Down {
        reason: &'static str,
        detail: String,
    },
}

impl Health {
    pub fn is_up(&self) -> bool {
        matches!(self, Health::Up { .. })
    }

    /// The JSON body: `status`, and `store` or `reason` and `detail`.
    pub fn body(&self) -> serde_json::Value {
        match self {
            Health::Up { store: true } => {
                serde_json::json!({ "status": "ok", "store": "writable" })
            }
            Health::Up { store: false } => serde_json::json!({
                "status": "ok",
                "store": "none",
                "detail": "receiving; no --store given, so nothing is written",
            }),
            Health::Down { reason, detail } => serde_json::json!({
                "status": "unavailable",
                "reason": reason,
                "detail": detail,
            }),
        }
    }
}

/// What the observer last learnt of its store; see the module doc.
#[derive(Debug, Default)]
pub struct StoreHealth {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The last probe: when it ended and how.
    probe: Option<(Instant, Result<(), String>)>,
    /// The last event write: when it ended, and its error if it failed.
    write: Option<(Instant, Option<String>)>,
    /// The last whole-file check: when it ended (Unix seconds), and its
    /// findings if the store is damaged.
    integrity: Option<(f64, Result<(), String>)>,
}

impl StoreHealth {
    pub fn note_probe(&self, result: Result<(), String>) {
        self.lock().probe = Some((Instant::now(), result));
    }

    pub fn note_write(&self, failed: Option<&str>) {
        self.lock().write = Some((Instant::now(), failed.map(str::to_owned)));
    }

    /// The outcome of a whole-file check that ended at `at_unix` seconds.
    pub fn note_integrity(&self, at_unix: f64, result: Result<(), String>) {
        self.lock().integrity = Some((at_unix, result));
    }

    /// When the last whole-file check ended (Unix seconds) and whether it
    /// found the store sound; `None` before the first.
    pub fn integrity(&self) -> Option<(f64, bool)> {
        let state = self.lock();
        let (at, result) = state.integrity.as_ref()?;
        Some((*at, result.is_ok()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store's health now.
    pub fn check(&self) -> Health {
        self.check_at(Instant::now())
    }

    fn check_at(&self, now: Instant) -> Health {
        let state = self.lock();
        let Some((probed_at, probed)) = &state.probe else {
            return Health::Down {
                reason: "starting",
                detail: "the first probe of the store has not finished".to_owned(),
            };
        };
        if let Err(error) = probed {
            return Health::Down {
                reason: "store_not_writable",
                detail: error.clone(),
            };
        }
        if let Some((_, Err(findings))) = &state.integrity {
            return Health::Down {
                reason: "store_damaged",
                detail: format!(
                    "the whole-file check found damage ({findings}): run `earshot store check`"
                ),
            };
        }
        let age = now.saturating_duration_since(*probed_at);
        if age > STALE_AFTER {
            return Health::Down {
                reason: "writer_not_answering",
                detail: format!(
                    "the store's writer has not answered a probe for {}",
                    crate::duration_text::of_secs(age.as_secs())
                ),
            };
        }
        // A failed event write stands until an event is written again: a
        // probe that passes does not prove the write that failed would.
        if let Some((_, Some(error))) = &state.write {
            return Health::Down {
                reason: "store_write_failed",
                detail: format!("the last event could not be stored: {error}"),
            };
        }
        Health::Up { store: true }
    }
}

/// Probes the store through `writer` every [`PROBE_EVERY`] until the task
/// is dropped; the first probe runs at once.
pub async fn probe_forever(writer: Writer, health: std::sync::Arc<StoreHealth>) {
    let mut ticks = tokio::time::interval(PROBE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        health.note_probe(probe_once(&writer).await);
    }
}

/// One probe through `writer`, within [`PROBE_TIMEOUT`].
pub async fn probe_once(writer: &Writer) -> Result<(), String> {
    match tokio::time::timeout(PROBE_TIMEOUT, writer.probe()).await {
        Ok(result) => result.map_err(|error| error.to_string()),
        Err(_) => Err(format!(
            "the store's writer did not answer a probe within {}",
            crate::duration_text::of(PROBE_TIMEOUT)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_after_a_good_probe_and_down_when_it_fails() {
        let health = StoreHealth::default();
        assert!(!health.check().is_up(), "nothing probed yet");
        health.note_probe(Ok(()));
        assert_eq!(health.check(), Health::Up { store: true });
        health.note_probe(Err("no file can be written beside the store: EACCES".into()));
        let down = health.check();
        assert!(
            matches!(&down, Health::Down { reason: "store_not_writable", detail } if detail.contains("EACCES")),
            "{down:?}"
        );
    }

    #[test]
    fn a_failed_write_is_down_until_a_later_write_succeeds_not_a_probe() {
        let health = StoreHealth::default();
        health.note_probe(Ok(()));
        health.note_write(Some("disk I/O error"));
        let down = health.check();
        assert!(
            matches!(&down, Health::Down { reason: "store_write_failed", detail } if detail.contains("disk I/O")),
            "{down:?}"
        );
        health.note_write(None);
        assert!(health.check().is_up());
        health.note_write(Some("disk I/O error"));
        assert!(!health.check().is_up());
        health.note_probe(Ok(()));
        assert!(!health.check().is_up(), "a probe does not clear it");
        health.note_write(None);
        assert!(health.check().is_up());
    }

    #[test]
    fn damage_the_background_check_finds_is_down_until_a_check_finds_none() {
        let health = StoreHealth::default();
        health.note_probe(Ok(()));
        assert_eq!(health.integrity(), None, "no check yet");
        health.note_integrity(1.0, Err("Tree 7 page 7: btreeInitPage() error 11".into()));
        let down = health.check();
        assert!(
            matches!(&down, Health::Down { reason: "store_damaged", detail }
                if detail.contains("page 7") && detail.contains("earshot store check")),
            "{down:?}"
        );
        assert_eq!(health.integrity(), Some((1.0, false)));
        health.note_integrity(2.0, Ok(()));
        assert!(health.check().is_up());
    }

    #[test]
    fn an_old_probe_is_not_believed() {
        let health = StoreHealth::default();
        health.note_probe(Ok(()));
        let later = Instant::now() + STALE_AFTER + Duration::from_secs(1);
        let down = health.check_at(later);
        assert!(
            matches!(
                &down,
                Health::Down {
                    reason: "writer_not_answering",
                    ..
                }
            ),
            "{down:?}"
        );
    }
}
