//! What a running receiver keeps between requests: its configuration with
//! the secrets keyed once, the dedupe memory ([`Seen`], bounded), the
//! capture file, the stream's sender, and the writes to the store and the
//! capture file that a request's verdict leads to.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use super::requests::Outbox;
use super::{DEDUPE_CAPACITY, ListenConfig};
use crate::receiver::capture::{self, CaptureEntry, CaptureWriter, Kind, VerdictCode};
use crate::redact::SecretString;
use crate::signature::{Candidate, Verifier};
use crate::store::events::Filing;

pub(super) struct Shared {
    /// `config.secrets`, keyed once at start.
    pub(super) verifier: Verifier,
    pub(super) config: ListenConfig,
    seen: Mutex<Seen>,
    writer: Option<Mutex<CaptureWriter>>,
    /// Where every request answered goes, for the reader.
    pub(super) outbox: Outbox,
}

/// The last `capacity` delivery keys, for deduplication.
struct Seen {
    keys: HashSet<String>,
    order: VecDeque<String>,
    capacity: usize,
}

impl Seen {
    fn new(capacity: usize) -> Self {
        Self {
            keys: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// Forgets `key` (its processing failed; a retry is new again).
    fn forget(&mut self, key: &str) {
        if self.keys.remove(key) {
            self.order.retain(|kept| kept != key);
        }
    }

    /// Records `key`; `true` when it was not already remembered.
    fn insert(&mut self, key: String) -> bool {
        if self.keys.contains(&key) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.keys.remove(&oldest);
        }
        self.keys.insert(key.clone());
        self.order.push_back(key);
        true
    }
}

impl Shared {
    /// A receiver's state for `config`, appending to `writer` (the capture
    /// file, when one is configured) and answering into `outbox`.
    pub(super) fn new(
        config: ListenConfig,
        writer: Option<CaptureWriter>,
        outbox: Outbox,
    ) -> Shared {
        // Key every secret once: each delivery then hashes only its own bytes.
        let candidates = Candidate::all(&config.secrets);
        Shared {
            verifier: Verifier::new(&candidates),
            config,
            seen: Mutex::new(Seen::new(DEDUPE_CAPACITY)),
            writer: writer.map(Mutex::new),
            outbox,
        }
    }

    /// `true` the first time `key` is seen (poisoning cannot lose data
    /// here, so a poisoned lock is used as is).
    pub(super) fn first_time(&self, key: String) -> bool {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.insert(key)
    }

    /// Forgets the voice-agent event `event_id` (it was not processed): the
    /// platform's retry of it is new again.
    pub(super) fn forget_event(&self, event_id: &str) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.forget(&format!("event:{event_id}"));
    }

    /// Stores a genuine voice-agent event when a store is configured (in
    /// `unfiled_events` when `events` cannot file it: `Ok(Some(why))`). A
    /// repeat goes to the store too: it is answered 2xx only once an
    /// earlier copy is committed. On failure the event is forgotten by the
    /// dedupe memory, so the platform's retry is processed as new.
    pub(super) async fn keep(
        &self,
        entry: &CaptureEntry,
        body: &[u8],
        now_ms: i64,
    ) -> Result<Option<String>, String> {
        let Some(store) = &self.config.store else {
            return Ok(None);
        };
        let accepted = matches!(entry.verdict, VerdictCode::Ok | VerdictCode::Duplicate);
        if !accepted || entry.kind != Kind::Agents {
            return Ok(None);
        }
        let delivery_id = entry
            .headers
            .iter()
            .find(|(name, _)| name == "x-svc-delivery-id")
            .map(|(_, value)| value.clone());
        let headers = stored_headers(&entry.headers, self.config.auth_header.as_ref());
        let filing = Filing::read(body, headers, delivery_id, now_ms);
        let unfiled = match &filing {
            Filing::Unfiled(unfiled) => Some(unfiled.reason()),
            Filing::Event(_) => None,
        };
        let event_id = filing.event_id().unwrap_or_default().to_owned();
        let started = std::time::Instant::now();
        let written = store.file(filing).await;
        if let Some(watch) = &self.config.watch {
            let failed = written.as_ref().err().map(ToString::to_string);
            watch.stored(started.elapsed(), failed.as_deref());
        }
        match written {
            Ok(new) => Ok(unfiled.filter(|_| new)),
            Err(error) => {
                self.forget_event(&event_id);
                Err(error.to_string())
            }
        }
    }

    /// Appends `entry` with `body` to the capture file, if there is one.
    pub(super) fn record(&self, entry: &CaptureEntry, body: &[u8]) -> Option<String> {
        let writer = self.writer.as_ref()?;
        let mut whole = entry.clone();
        whole.set_body(body);
        let mut writer = writer.lock().unwrap_or_else(|poison| poison.into_inner());
        match writer.append(&whole) {
            Ok(()) => None,
            Err(error) => {
                tracing::warn!(%error, "capture entry not written");
                Some(error.to_string())
            }
        }
    }
}

/// The headers kept in the store: all but secrets (the capture's
/// [`capture::SECRET_HEADERS`] and the configured pre-recorded auth header).
fn stored_headers(
    headers: &[(String, String)],
    auth_header: Option<&(String, SecretString)>,
) -> Vec<(String, String)> {
    let auth_name = auth_header.map(|(name, _)| name.as_str());
    headers
        .iter()
        .filter(|(name, _)| !capture::is_secret_header(name, auth_name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_forgets_the_oldest_key_beyond_its_capacity() {
        let mut seen = Seen::new(2);
        assert!(seen.insert("a".into()));
        assert!(!seen.insert("a".into()));
        assert!(seen.insert("b".into()));
        assert!(seen.insert("c".into()));
        assert_eq!(seen.keys.len(), 2);
        assert!(seen.insert("a".into()), "a was forgotten");
        assert!(!seen.insert("c".into()));
    }
}
