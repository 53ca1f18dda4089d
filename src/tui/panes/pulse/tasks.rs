//! The Pulse pane's background work ([`PulseEffect`]): the store read
//! ([`super::data::read`]) and the sweep that keeps the store's delivery
//! records current while the pane is on screen (the Health pane's,
//! `kernel::store::sweep`, with the same budget), on either backend. Both run to their end; a read carries its sequence
//! number so a late one is dropped.

use super::PulseResult;
use crate::tui::kernel::store::sweep;
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::store::now_ms;

/// What the Pulse pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum PulseEffect {
    /// Read the counts from the store (local).
    Load { seq: u64 },
    /// Sweep the known sessions' delivery records into the store.
    Sweep,
}

impl PaneEffect<PulseResult> for PulseEffect {
    fn latest_key(&self) -> Option<&'static str> {
        None
    }

    async fn run(self, input: TaskInput, report: Report<PulseResult>) {
        let TaskInput { client, store, .. } = input;
        let result = match self {
            PulseEffect::Load { seq } => PulseResult::Loaded {
                seq,
                result: super::data::read(store, now_ms()).await,
            },
            PulseEffect::Sweep => PulseResult::Swept(sweep(store, &client).await),
        };
        report.send(result);
    }
}
