//! The Pulse pane's background work ([`PulseEffect`]): the store read
//! ([`super::data::read`]) and the sweep that keeps the store's delivery
//! records current while the pane is on screen (the Health pane's, with
//! the same budget). Both run to their end; a read carries its sequence
//! number so a late one is dropped.

use super::PulseResult;
use crate::tui::kernel::store::{CONSOLE_SWEEP_BUDGET, failure, open, with_store};
use crate::tui::kernel::{PaneEffect, Report, TaskInput};
use earshot_core::history::sweep;
use earshot_core::store;

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
            PulseEffect::Load { seq } => {
                let result =
                    with_store(store, |store| super::data::read(store, store::now_ms())).await;
                PulseResult::Loaded { seq, result }
            }
            PulseEffect::Sweep => match open(store).await {
                Err(failure) => PulseResult::Swept(Err(failure)),
                Ok(store) => PulseResult::Swept(
                    sweep::sweep(&client, &store, CONSOLE_SWEEP_BUDGET)
                        .await
                        .map_err(failure),
                ),
            },
        };
        report.send(result);
    }
}
