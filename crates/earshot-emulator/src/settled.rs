//! Waiting until the emulator has nothing left to do on its own:
//! [`Emulator::settled`] returns when no pre-recorded job is queued or
//! processing and no webhook delivery is pending (attempting, or waiting
//! for a retry). It waits on a notification the emulator's state sends
//! whenever a job finishes or a delivery ends ([`Activity`]), never by
//! polling.

use std::fmt;
use std::time::Duration;

use tokio::sync::watch;

use super::prerecorded::account;
use super::{Emulator, SharedState};

/// A tick on every change that may leave the emulator idle.
pub(crate) struct Activity(watch::Sender<u64>);

impl Default for Activity {
    fn default() -> Self {
        Activity(watch::channel(0).0)
    }
}

impl Activity {
    /// Wakes whoever waits in [`Emulator::settled`] to look again.
    pub fn changed(&self) {
        self.0.send_modify(|tick| *tick = tick.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// What the emulator is still busy with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Busy {
    /// Pre-recorded jobs waiting for a slot.
    pub queued: usize,
    /// Pre-recorded jobs processing.
    pub processing: u32,
    /// Webhook deliveries attempting or waiting for a retry (voice-agent
    /// events, pre-recorded webhooks, deliveries sent on demand).
    pub deliveries: u64,
}

impl Busy {
    /// Nothing queued, processing or pending.
    pub fn is_idle(&self) -> bool {
        self.queued == 0 && self.processing == 0 && self.deliveries == 0
    }

    /// Read in the order that never shows idle between a job's end and
    /// its webhook: the jobs (whose end starts the webhook's count under
    /// their lock), then the deliveries.
    fn of(state: &SharedState) -> Busy {
        let account = account::snapshot(state);
        Busy {
            queued: account.queued,
            processing: account.processing,
            deliveries: state.stats.snapshot().deliveries_in_progress(),
        }
    }
}

impl fmt::Display for Busy {
    /// `1 job queued, 2 processing, 3 webhook deliveries pending`; `idle`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_idle() {
            return f.write_str("idle");
        }
        let mut parts = Vec::new();
        if self.queued > 0 {
            parts.push(format!("{} queued", jobs(self.queued as u64)));
        }
        if self.processing > 0 {
            parts.push(format!("{} processing", jobs(u64::from(self.processing))));
        }
        if self.deliveries > 0 {
            let noun = if self.deliveries == 1 {
                "delivery"
            } else {
                "deliveries"
            };
            parts.push(format!("{} webhook {noun} pending", self.deliveries));
        }
        f.write_str(&parts.join(", "))
    }
}

fn jobs(n: u64) -> String {
    if n == 1 {
        "1 job".to_owned()
    } else {
        format!("{n} jobs")
    }
}

/// [`Emulator::settled_within`] ran out of time: what was still busy.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the emulator did not settle within {}: {busy}", earshot_protocol::duration_text::of(*.waited))]
#[non_exhaustive]
pub struct NotSettled {
    pub waited: Duration,
    pub busy: Busy,
}

impl Emulator {
    /// What the emulator is busy with now.
    #[must_use]
    pub fn busy(&self) -> Busy {
        Busy::of(&self.state)
    }

    /// Returns when no pre-recorded job is queued or processing and no
    /// webhook delivery is pending. Deliveries that are retried wait for
    /// their retries (scaled by the time scale): at real time a receiver
    /// that keeps failing holds this for the whole schedule, so a test
    /// usually bounds it with [`settled_within`](Emulator::settled_within).
    /// On a [manual clock](crate::EmulatorBuilder::manual_clock) a retry,
    /// or a job processing, waits for [`advance`](Emulator::advance).
    pub async fn settled(&self) {
        let mut changes = self.state.activity.subscribe();
        while !Busy::of(&self.state).is_idle() {
            // The sender lives in the state this handle holds.
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// [`settled`](Emulator::settled), or after `limit` the error naming
    /// what is still busy.
    pub async fn settled_within(&self, limit: Duration) -> Result<(), NotSettled> {
        tokio::time::timeout(limit, self.settled())
            .await
            .map_err(|_| NotSettled {
                waited: limit,
                busy: Busy::of(&self.state),
            })
    }
}
