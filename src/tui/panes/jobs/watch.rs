//! The job watcher's reports applied to the Jobs pane: a job's new view
//! (a change, or a poll that found it as it was), a failed poll, the
//! account pause and the request budget.

use std::time::Instant;

use super::{JobRecord, JobsPane, Outcome};
use crate::tui::kernel::Failure;
use earshot_core::poll::watcher::WatchEvent;

impl JobsPane {
    pub(super) fn on_watch(&mut self, event: WatchEvent, out: &mut Outcome) {
        // The pane's clock when it is ahead (tests fix it), else the wall's.
        self.reported_at = Some(self.now.max(Instant::now()));
        match event {
            WatchEvent::Changed { view, transcript } => {
                // A job the pane made room by forgetting stays forgotten.
                let Some(row) = self.row_mut(&view.id) else {
                    return;
                };
                if let Some(transcript) = transcript {
                    row.poll_error = None;
                    row.transcript = Some(JobRecord::from(*transcript));
                    out.succeeded = true;
                }
                row.view = Some(view);
                self.queue_dirty = true;
            }
            WatchEvent::Polled { view } => {
                // The chart counts the job in its state up to this poll.
                let Some(row) = self.row_mut(&view.id) else {
                    return;
                };
                row.poll_error = None;
                out.succeeded = true;
                row.view = Some(view);
                self.queue_dirty = true;
            }
            WatchEvent::PollFailed { id, message } => {
                // The status bar says so too, until every row recovers.
                out.failure = Some(Failure::new(format!(
                    "job {}: {message}",
                    earshot_core::api::short_id(&id)
                )));
                let Some(row) = self.row_mut(&id) else {
                    return;
                };
                row.poll_error = Some(message);
                if let Some(view) = &mut row.view {
                    view.stale = true;
                }
            }
            WatchEvent::Paused { resume_in } => {
                self.now = Instant::now().max(self.now);
                self.paused_until = Some(self.now + resume_in);
            }
            WatchEvent::Resumed => self.paused_until = None,
            WatchEvent::AllDone => {}
            WatchEvent::Budget {
                used,
                budget,
                spent,
            } => {
                self.budget = Some((used, budget));
                self.spent = spent;
                let at = self.now_tick();
                self.budget_minutes.record(at, used, budget);
            }
        }
    }
}
