//! What the Jobs pane takes from a [`Handover`]: the Inbox's word that a
//! watched job's webhook arrived (the watcher then updates the job without
//! a request), and the job ids the console was started with.

use super::{JobsPane, Outcome};
use crate::tui::kernel::{ConsoleEffect, Handover, Received};

impl JobsPane {
    /// A handover for Jobs: a webhook for a job it watches, the job ids
    /// the console started with.
    pub(super) fn take(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        match message {
            Handover::WebhookForJob {
                id,
                status,
                answered,
                at_ms,
            } if self.watches(id) => {
                self.note_webhook(id, *answered, *at_ms);
                if let Some(status) = status {
                    out.console.push(ConsoleEffect::JobWebhook {
                        id: id.clone(),
                        status: status.clone(),
                    });
                }
                Received::Kept
            }
            Handover::JobIds(ids) => {
                self.seed(ids.clone());
                Received::Kept
            }
            _ => Received::Ignored,
        }
    }
}
