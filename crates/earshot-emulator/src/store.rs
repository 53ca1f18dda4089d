//! The emulator's records: subscriptions (with their secrets), delivery
//! attempts, sessions and calls, and the artifact files they point to.
//!
//! Held behind one mutex in [`super::State`]; nothing here awaits.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use earshot_protocol::redact::SecretString;
use earshot_protocol::types::agents::{CallObject, DeliveryRecord, SessionObject, Subscription};

use super::delivery::Event;

/// The account every emulated record belongs to.
pub(crate) const ACCOUNT_ID: i64 = 4242;
/// The agent used when a control route names none.
pub(crate) const DEFAULT_AGENT_ID: &str = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f";

#[derive(Default)]
pub(crate) struct Store {
    /// Oldest first; lists read it backwards (newest first).
    pub subscriptions: Vec<StoredSubscription>,
    /// Attempts by session (or call) id, each list in the order they started.
    pub deliveries: HashMap<String, Vec<DeliveryRecord>>,
    pub conversations: HashMap<String, Conversation>,
    pub artifacts: HashMap<String, ArtifactFile>,
    /// Conversation ids, oldest first (for [`Store::add_conversation`]'s
    /// pruning).
    order: VecDeque<String>,
}

pub(crate) struct StoredSubscription {
    pub record: Subscription,
    pub secret: SecretString,
}

/// A WebSocket session or a phone call, with what it left behind.
pub(crate) struct Conversation {
    pub object: ConversationObject,
    /// When the recording and transcript become listed: ~90 s (scaled)
    /// after `session.completed` or `call.ended`.
    pub artifacts_ready_at: Option<Instant>,
    /// `{kind, url, expires_at}` entries for `GET /v1/sessions/{id}`.
    pub artifacts: Vec<Value>,
    /// The events emitted about it, oldest first (forgotten with it).
    pub events: Vec<Arc<Event>>,
}

pub(crate) enum ConversationObject {
    Session(SessionObject),
    Call(CallObject),
}

/// A recording or transcript served at a presigned URL until it expires.
pub(crate) struct ArtifactFile {
    /// The session or call it belongs to.
    pub conversation: String,
    pub expires: Instant,
    pub content_type: &'static str,
    pub body: ArtifactBody,
}

/// What an artifact URL serves.
#[derive(Clone)]
pub(crate) enum ArtifactBody {
    /// Held bytes (a transcript; the default recording, shared, not copied).
    Stored(axum::body::Bytes),
    /// A silent 8 kHz mono WAV of exactly this many bytes, generated while
    /// it is served ([`super::EmulatorConfig::recording_bytes`]).
    Silence { len: u64 },
}

impl Store {
    /// Records a new session or call. With `keep` (the demo's traffic), the
    /// oldest conversations beyond `keep` are forgotten with their delivery
    /// attempts and artifacts, and so are artifacts expired by `now` (the
    /// emulator's clock).
    pub fn add_conversation(
        &mut self,
        id: String,
        conversation: Conversation,
        keep: Option<usize>,
        now: Instant,
    ) {
        if let Some(keep) = keep {
            self.make_room(keep);
        }
        self.conversations.insert(id.clone(), conversation);
        self.order.push_back(id);
        let Some(keep) = keep else {
            return;
        };
        let mut forgotten = Vec::new();
        while self.order.len() > keep {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.conversations.remove(&oldest);
            self.deliveries.remove(&oldest);
            forgotten.push(oldest);
        }
        self.artifacts
            .retain(|_, file| file.expires > now && !forgotten.contains(&file.conversation));
    }

    /// Room for `keep` conversations and their attempts twice over, taken
    /// once: a table that forgets and adds ids doubles when the slots of
    /// forgotten ones run out while it is over half full, so an endless
    /// demo's tables would grow once at some hour long after its warm-up.
    fn make_room(&mut self, keep: usize) {
        // Done once: the order's room is the mark.
        if self.order.capacity() > keep {
            return;
        }
        self.order
            .reserve((keep + 1).saturating_sub(self.order.len()));
        let room = 2 * keep;
        self.conversations
            .reserve(room.saturating_sub(self.conversations.len()));
        self.deliveries
            .reserve(room.saturating_sub(self.deliveries.len()));
    }

    pub fn subscription(&self, id: &str) -> Option<&StoredSubscription> {
        self.subscriptions
            .iter()
            .find(|stored| stored.record.id == id)
    }

    pub fn subscription_mut(&mut self, id: &str) -> Option<&mut StoredSubscription> {
        self.subscriptions
            .iter_mut()
            .find(|stored| stored.record.id == id)
    }

    /// Removes a subscription and its delivery history; false if unknown.
    pub fn delete_subscription(&mut self, id: &str) -> bool {
        let before = self.subscriptions.len();
        self.subscriptions.retain(|stored| stored.record.id != id);
        if self.subscriptions.len() == before {
            return false;
        }
        for attempts in self.deliveries.values_mut() {
            attempts.retain(|record| record.subscription_id != id);
        }
        true
    }

    /// Records an attempt; false (and nothing kept) when its session or
    /// call was forgotten ([`Store::add_conversation`]'s `keep`): a retry
    /// late enough would otherwise start a list no pruning ever reaches.
    pub fn add_delivery(&mut self, record: DeliveryRecord) -> bool {
        if !self.conversations.contains_key(&record.session_id) {
            return false;
        }
        self.deliveries
            .entry(record.session_id.clone())
            .or_default()
            .push(record);
        true
    }

    /// Sessions and calls remembered, in the pruning order (for the
    /// bounds tests).
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.order.len()
    }

    pub fn delivery_mut(&mut self, session_id: &str, id: &str) -> Option<&mut DeliveryRecord> {
        self.deliveries
            .get_mut(session_id)?
            .iter_mut()
            .rev()
            .find(|record| record.id == id)
    }

    /// The event `event_id`, if its session or call is still remembered.
    pub fn event(&self, event_id: &str) -> Option<Arc<Event>> {
        self.conversations
            .values()
            .flat_map(|conversation| &conversation.events)
            .find(|event| event.event_id == event_id)
            .cloned()
    }

    /// Every attempt for a session or call, oldest first.
    pub fn session_deliveries(&self, session_id: &str) -> &[DeliveryRecord] {
        self.deliveries.get(session_id).map_or(&[], Vec::as_slice)
    }

    /// The `GET /v1/sessions/{id}` body, artifacts listed once ready.
    pub fn conversation_json(&self, id: &str, now: Instant) -> Option<Value> {
        let conversation = self.conversations.get(id)?;
        let ready = conversation
            .artifacts_ready_at
            .is_some_and(|ready_at| now >= ready_at);
        let artifacts = if ready {
            conversation.artifacts.clone()
        } else {
            Vec::new()
        };
        let mut body = match &conversation.object {
            ConversationObject::Session(session) => json!({
                "session_id": session.session_id,
                "kind": "session",
                "agent_id": session.agent_id,
                "status": session.status,
                "created_at": session.created_at,
                "ended_at": session.ended_at,
            }),
            ConversationObject::Call(call) => json!({
                "session_id": call.session_id,
                "kind": "call",
                "agent_id": call.agent_id,
                "status": call.status,
                "created_at": call.created_at,
                "ended_at": call.ended_at,
            }),
        };
        body["artifacts"] = Value::Array(artifacts);
        Some(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_kept_for_an_endless_demo_never_grow_their_tables() {
        let keep = 500;
        let mut store = Store::default();
        let now = Instant::now();
        let conversation = |n: usize| Conversation {
            object: ConversationObject::Session(SessionObject {
                session_id: format!("ses-{n}"),
                account_id: ACCOUNT_ID,
                agent_id: DEFAULT_AGENT_ID.to_owned(),
                status: "active".to_owned(),
                duration_seconds: None,
                public_close_reason: None,
                s3_prefix: None,
                created_at: chrono::DateTime::UNIX_EPOCH.fixed_offset(),
                ended_at: None,
                extra: serde_json::Map::new(),
            }),
            artifacts_ready_at: None,
            artifacts: Vec::new(),
            events: Vec::new(),
        };
        store.add_conversation("ses-0".to_owned(), conversation(0), Some(keep), now);
        let tables = (
            store.conversations.capacity(),
            store.deliveries.capacity(),
            store.order.capacity(),
        );
        for n in 1..20 * keep {
            let id = format!("ses-{n}");
            store.deliveries.insert(id.clone(), Vec::new());
            store.add_conversation(id, conversation(n), Some(keep), now);
        }
        assert_eq!(store.conversations.len(), keep);
        // A table's capacity dips while removed keys hold slots and comes
        // back when it rehashes in place; it only passes the first when
        // the table grew.
        assert!(
            store.conversations.capacity() <= tables.0,
            "the conversations grew"
        );
        assert!(store.deliveries.capacity() <= tables.1, "the attempts grew");
        assert_eq!(store.order.capacity(), tables.2, "the order grew");
    }
}
