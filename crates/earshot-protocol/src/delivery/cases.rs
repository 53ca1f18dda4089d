//! The voice-agent cases of `earshot check-receiver`'s battery, each as the
//! [`Delivery`] values it sends: the one list the command line runs and a
//! Rust test can send through the emulator. What each case expects and the
//! receiver mistake a failure points at are the battery's (it judges);
//! what is sent is here.

use std::time::Duration;

use super::Delivery;
use crate::redact::SecretString;
use crate::signature;

/// How far the stale case moves `t` back: one second past the 300 s
/// tolerance of spec part 8 C. Transit only makes it staler.
pub const STALE_BY: Duration = Duration::from_secs(signature::DEFAULT_TOLERANCE_SECS + 1);
/// How far the future case moves `t` ahead: one more second, because the
/// receiver reads its clock later, and in whole seconds (sent at 10.9 s
/// with `t` = 10 + 301 and read at 11.0 s is only 300 s ahead).
pub const AHEAD_BY: Duration = Duration::from_secs(signature::DEFAULT_TOLERANCE_SECS + 2);

/// One voice-agent case of the battery, in report order ([`AgentCase::ALL`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentCase {
    /// Each event kind, signed with the subscription's secret.
    SessionStarted,
    SessionCompleted,
    CallConnected,
    CallEnded,
    CallFailed,
    /// Signed with another secret (a well-formed header).
    BadSignature,
    /// `t` [`STALE_BY`] in the past.
    StaleTimestamp,
    /// `t` [`AHEAD_BY`] in the future.
    FutureTimestamp,
    /// One event twice: same body and `event_id`, new attempt id.
    Duplicate,
    /// `call.ended`, then `call.connected` of the same call.
    OutOfOrder,
    /// Signed with the secret before the last rotation.
    PreviousSecret,
}

/// The event ids and secrets a battery run sends its cases with: the
/// sender makes the events (fresh ones, or ones the platform sent) and
/// names them here.
#[derive(Clone, Debug)]
pub struct CaseEvents {
    /// The event each of the five valid cases sends, by its event name.
    pub valid: Vec<(&'static str, String)>,
    /// The event sent wrongly signed, stale and ahead.
    pub forged: String,
    pub stale: String,
    pub future: String,
    /// The event sent twice.
    pub repeated: String,
    /// `call.connected` and `call.ended` of one call.
    pub connected: String,
    pub ended: String,
    /// The event signed with the previous secret.
    pub rotated: String,
    /// A secret that is not the subscription's.
    pub wrong_secret: SecretString,
    /// The secret before the last rotation; without it that case is
    /// skipped.
    pub previous_secret: Option<SecretString>,
}

impl AgentCase {
    /// Every case, in report order.
    pub const ALL: [AgentCase; 11] = [
        AgentCase::SessionStarted,
        AgentCase::SessionCompleted,
        AgentCase::CallConnected,
        AgentCase::CallEnded,
        AgentCase::CallFailed,
        AgentCase::BadSignature,
        AgentCase::StaleTimestamp,
        AgentCase::FutureTimestamp,
        AgentCase::Duplicate,
        AgentCase::OutOfOrder,
        AgentCase::PreviousSecret,
    ];

    /// Its name in the report (`bad-signature`); a valid case is named
    /// after its event.
    pub const fn name(self) -> &'static str {
        match self {
            AgentCase::SessionStarted => "session.started",
            AgentCase::SessionCompleted => "session.completed",
            AgentCase::CallConnected => "call.connected",
            AgentCase::CallEnded => "call.ended",
            AgentCase::CallFailed => "call.failed",
            AgentCase::BadSignature => "bad-signature",
            AgentCase::StaleTimestamp => "stale-timestamp",
            AgentCase::FutureTimestamp => "future-timestamp",
            AgentCase::Duplicate => "duplicate",
            AgentCase::OutOfOrder => "out-of-order",
            AgentCase::PreviousSecret => "previous-secret",
        }
    }

    /// Whether a correct receiver accepts every delivery of the case
    /// (2xx) rather than refusing it (401).
    pub fn accepted(self) -> bool {
        !matches!(
            self,
            AgentCase::BadSignature | AgentCase::StaleTimestamp | AgentCase::FutureTimestamp
        )
    }

    /// What the case sends, in order (each after the answer to the one
    /// before); `None` when it needs what `events` lacks (no previous
    /// secret).
    pub fn deliveries(self, events: &CaseEvents) -> Option<Vec<Delivery>> {
        let valid = |name: &str| {
            events
                .valid
                .iter()
                .find(|(event, _)| *event == name)
                .map(|(_, id)| vec![Delivery::of(id.clone())])
        };
        match self {
            AgentCase::SessionStarted
            | AgentCase::SessionCompleted
            | AgentCase::CallConnected
            | AgentCase::CallEnded
            | AgentCase::CallFailed => valid(self.name()),
            AgentCase::BadSignature => Some(vec![
                Delivery::of(events.forged.clone()).signed_with(events.wrong_secret.clone()),
            ]),
            AgentCase::StaleTimestamp => {
                Some(vec![Delivery::of(events.stale.clone()).stale(STALE_BY)])
            }
            AgentCase::FutureTimestamp => {
                Some(vec![Delivery::of(events.future.clone()).ahead(AHEAD_BY)])
            }
            AgentCase::Duplicate => Some(vec![
                Delivery::of(events.repeated.clone()),
                Delivery::duplicate_of(events.repeated.clone()),
            ]),
            AgentCase::OutOfOrder => Some(vec![Delivery::out_of_order(
                events.connected.clone(),
                events.ended.clone(),
            )]),
            AgentCase::PreviousSecret => {
                let previous = events.previous_secret.clone()?;
                Some(vec![
                    Delivery::of(events.rotated.clone()).signed_with(previous),
                ])
            }
        }
    }
}

/// A secret that is nobody's: `whsec_not_yours_` and 32 random hex digits
/// (what the bad-signature case signs with).
pub fn wrong_secret() -> SecretString {
    let mut bytes = [0u8; 16];
    let _ = getrandom::fill(&mut bytes);
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    SecretString::new(format!("whsec_not_yours_{hex}"))
}
