//! What a running receiver keeps between requests: its configuration with
//! the secrets keyed once, the dedupe memory ([`Seen`], bounded), the
//! capture file, the stream's sender, and the writes to the store and the
//! capture file that a request's verdict leads to.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;
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

/// The last `capacity` delivery keys, for deduplication, each held as a
/// 128-bit fingerprint (two SipHash digests under keys drawn when the
/// receiver starts) rather than its text: 16 bytes in the set and 16 in
/// the order, whatever the key's length. The text twice took about 235
/// bytes a key, which the demo's Inbox grew by for most of a day until the
/// capacity (~120 keys a minute: `docs/performance.md`, "Memory and idle
/// CPU"). Both tables are sized at start (about 6 MB of address space
/// for 100,000 keys, resident as keys arrive), so the memory never grows
/// or moves while the receiver runs: the set has room for twice the
/// capacity, because a hash table whose slots of removed keys run out
/// rehashes in place only while at most half full, and grows otherwise. Two different keys
/// share a fingerprint with probability 2^-128.
struct Seen {
    hashers: (RandomState, RandomState),
    keys: HashSet<u128>,
    order: VecDeque<u128>,
    capacity: usize,
}

impl Seen {
    fn new(capacity: usize) -> Self {
        Self {
            hashers: (RandomState::new(), RandomState::new()),
            keys: HashSet::with_capacity(capacity.saturating_mul(2)),
            order: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    fn fingerprint(&self, key: &str) -> u128 {
        let (high, low) = &self.hashers;
        (u128::from(high.hash_one(key)) << 64) | u128::from(low.hash_one(key))
    }

    /// Forgets `key` (its processing failed; a retry is new again).
    fn forget(&mut self, key: &str) {
        let print = self.fingerprint(key);
        if self.keys.remove(&print) {
            self.order.retain(|kept| *kept != print);
        }
    }

    /// Records `key`; `true` when it was not already remembered.
    fn insert(&mut self, key: &str) -> bool {
        let print = self.fingerprint(key);
        if self.keys.contains(&print) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.keys.remove(&oldest);
        }
        self.keys.insert(print);
        self.order.push_back(print);
        true
    }
}

#[cfg(test)]
impl Seen {
    /// Bytes the memory holds (its tables; allocator overhead not counted).
    fn footprint(&self) -> usize {
        self.keys.capacity() * (size_of::<u128>() + 1) + self.order.capacity() * size_of::<u128>()
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
    pub(super) fn first_time(&self, key: &str) -> bool {
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
        assert!(seen.insert("a"));
        assert!(!seen.insert("a"));
        assert!(seen.insert("b"));
        assert!(seen.insert("c"));
        assert_eq!(seen.keys.len(), 2);
        assert!(seen.insert("a"), "a was forgotten");
        assert!(!seen.insert("c"));
    }

    #[test]
    fn a_forgotten_key_is_new_again_and_the_others_stay() {
        let mut seen = Seen::new(10);
        for key in ["event:1", "event:2", "event:3"] {
            assert!(seen.insert(key));
        }
        seen.forget("event:2");
        assert!(!seen.insert("event:1"));
        assert!(!seen.insert("event:3"));
        assert!(seen.insert("event:2"), "event:2 was forgotten");
        assert_eq!(seen.order.len(), 3);
    }

    #[test]
    fn the_memory_is_sized_at_start_and_a_key_costs_a_few_dozen_bytes_whatever_its_length() {
        // The demo's Inbox remembers ~120 keys a minute up to the capacity
        // (100,000: 14 hours): the tables are that size from the start, and
        // neither grows past it however long the keys.
        let mut seen = Seen::new(DEDUPE_CAPACITY);
        let at_start = seen.footprint();
        // Three times round: the slots of removed keys run out and are
        // reclaimed in place.
        for n in 0..3 * DEDUPE_CAPACITY {
            assert!(seen.insert(&format!("event:evt_{n:0>48}")));
        }
        // (The set's capacity counts the room left, which the slots of
        // removed keys take until a rehash: it may dip, never rise.)
        assert!(seen.footprint() <= at_start, "the tables grew");
        let per_key = at_start / DEDUPE_CAPACITY;
        assert!(per_key <= 64, "{per_key} bytes a key");
    }
}
