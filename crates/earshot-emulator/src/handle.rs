//! What a test does to a running [`Emulator`] besides calling its public
//! API: make the platform's activity happen (sessions, calls), arm faults,
//! change the account, read the counters and the journal. (Expectations
//! are `expect.rs`'s, waiting until idle `settled.rs`'s, deliveries on
//! demand `on_demand.rs`'s.) Each method runs the same code
//! as its `/_emulator/...` control route, in process (no HTTP, so it is not
//! counted in [`Emulator::stats`]). None of them waits, so none is
//! `async`: a test calls them from sync or async code alike.

use super::control::{self, NewCall};
use super::faults::Fault;
use super::prerecorded::account::{self, AccountChange, AccountSnapshot};
use super::stats::StatsSnapshot;
use super::{ControlError, Emulator, JournalEntry, Route};

impl Emulator {
    /// A WebSocket session begins: records it as `created` and emits
    /// `session.started` to the matching subscriptions. `agent_id` (a
    /// uuid) scopes it to an agent; `None` is the emulator's default
    /// agent. Returns the session id (`ses_...`). Same as `POST
    /// /_emulator/sessions`.
    pub fn start_session(&self, agent_id: Option<&str>) -> Result<String, ControlError> {
        Ok(control::open_session(
            &self.state,
            agent_id.map(str::to_owned),
        )?)
    }

    /// The session ends: `completed`, `session.completed` emitted, its
    /// recording and transcript listed after the (scaled) 90 s. Same as
    /// `POST /_emulator/sessions/{id}/complete`.
    pub fn complete_session(&self, session_id: &str) -> Result<(), ControlError> {
        Ok(control::close_session(&self.state, session_id)?)
    }

    /// A phone call is placed: `call.connected` or, for
    /// [`NewCall::failed`], `call.failed`. Returns the call id
    /// (`call_...`). Same as `POST /_emulator/calls`.
    pub fn start_call(&self, call: NewCall) -> Result<String, ControlError> {
        Ok(control::place_call(&self.state, call)?)
    }

    /// A connected call finishes: `call.ended` with presigned recording
    /// and transcript URLs. Same as `POST /_emulator/calls/{id}/end`.
    pub fn end_call(&self, call_id: &str) -> Result<(), ControlError> {
        Ok(control::hang_up(&self.state, call_id)?)
    }

    /// Arms `fault` for the next requests under its path prefix (after
    /// the faults armed before it). Same as `POST /_emulator/faults`.
    pub fn arm_fault(&self, fault: Fault) -> Result<(), ControlError> {
        Ok(control::arm(&self.state, fault)?)
    }

    /// The faults still armed, each with the uses it has left: empty once
    /// the requests they were armed for have reached the emulator. Same as
    /// `GET /_emulator/faults`.
    #[must_use]
    pub fn armed_faults(&self) -> Vec<Fault> {
        self.state.faults.armed()
    }

    /// Disarms every fault. Same as `DELETE /_emulator/faults`.
    pub fn clear_faults(&self) {
        self.state.faults.clear();
    }

    /// Answers by route and status, and the webhook deliveries still in
    /// progress. Same as `GET /_emulator/stats`.
    #[must_use]
    pub fn stats(&self) -> StatsSnapshot {
        self.state.stats.snapshot()
    }

    /// The account's balance and concurrency, and its queue. Same as
    /// `GET /_emulator/account`.
    #[must_use]
    pub fn account(&self) -> AccountSnapshot {
        account::snapshot(&self.state)
    }

    /// Changes the account; queued jobs start at once if the new limit
    /// allows. Same as `POST /_emulator/account`.
    pub fn update_account(&self, change: AccountChange) -> Result<AccountSnapshot, ControlError> {
        Ok(account::change(&self.state, change)?)
    }

    /// Every request received, oldest first, as far as the journal keeps
    /// them ([`EmulatorBuilder::journal_keep`](crate::EmulatorBuilder::journal_keep)):
    /// control routes included, the handle's own calls not (they are not
    /// requests).
    #[must_use]
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.state.journal.entries()
    }

    /// The requests the journal keeps that took `route`, oldest first.
    #[must_use]
    pub fn journal_of(&self, route: Route) -> Vec<JournalEntry> {
        self.state
            .journal
            .entries()
            .into_iter()
            .filter(|entry| entry.route == Some(route))
            .collect()
    }
}
