//! How the Subscriptions pane takes the results of its platform calls:
//! a load replaces the rows (unless a newer load superseded it), a patch
//! or rotation updates one row in place, a create inserts at the top and
//! may open the secret shown once, a delete removes the row. A failure
//! goes to the status bar and, where a dialog is waiting, into the dialog.

use super::Outcome;
use super::modals::SecretOnce;
use super::{Modal, SubscriptionsPane, View, short_id};
use crate::tui::kernel::Failure;
use earshot_core::api::types::agents::Subscription;

/// Results of the Subscriptions pane's platform calls.
#[derive(Clone, Debug)]
pub(crate) enum SubsResult {
    /// `seq` identifies the load; a superseded load's answer is dropped.
    Loaded {
        seq: u64,
        result: Result<Vec<Subscription>, Failure>,
    },
    /// Pause or resume.
    Patched {
        id: String,
        result: Result<Subscription, Failure>,
    },
    Created {
        result: Result<Subscription, Failure>,
    },
    Rotated {
        id: String,
        result: Result<Subscription, Failure>,
    },
    /// The staged rotation's check of the receiver answered.
    Checked {
        id: String,
        result: Result<earshot_core::history::rotation::CheckReport, Failure>,
    },
    /// What the watch after a rotation saw (each sweep).
    Watched {
        id: String,
        report: earshot_core::history::rotation::WatchReport,
    },
    Deleted {
        id: String,
        result: Result<(), Failure>,
    },
    /// The id of the newest change in the store's change log.
    NewestChange(Result<Option<i64>, Failure>),
}

impl SubscriptionsPane {
    /// A platform call finished.
    pub(super) fn take_result(&mut self, result: SubsResult, out: &mut Outcome) {
        match result {
            SubsResult::Loaded { seq, result } => {
                let keep = self.selected().map(|row| row.id.clone());
                match self.list.finish(seq, result) {
                    None => {}
                    Some(Ok(())) => {
                        self.refilter(keep);
                        out.succeeded = true;
                    }
                    Some(Err(failure)) => out.failure = Some(failure),
                }
            }
            SubsResult::NewestChange(result) => {
                if self.changes_seen.saw(result) {
                    // Changed elsewhere (the CLI, another console): what
                    // is shown is stale, read it again.
                    self.refresh_list(out);
                }
            }
            SubsResult::Patched { id, result } => {
                self.pending.remove(&id);
                if let Some(Modal::Edit(form)) = &mut self.modal
                    && form.id == id
                {
                    match result {
                        Ok(updated) => {
                            out.toast = Some(format!("updated {}", short_id(&updated.id)));
                            self.modal = None;
                            self.replace(updated);
                            out.succeeded = true;
                        }
                        Err(failure) => {
                            form.submitting = false;
                            form.error = Some(failure.message.clone());
                            out.failure = Some(failure);
                        }
                    }
                    return;
                }
                match result {
                    Ok(updated) => {
                        let verb = if updated.enabled { "resumed" } else { "paused" };
                        let hidden = if !updated.enabled && !self.include_disabled {
                            " (hidden at the next refresh; `a` shows paused)"
                        } else {
                            ""
                        };
                        out.toast = Some(format!("{verb} {}{hidden}", short_id(&updated.id)));
                        self.replace(updated);
                        out.succeeded = true;
                    }
                    Err(failure) => out.failure = Some(failure),
                }
            }
            SubsResult::Created { result } => self.on_created(result, out),
            SubsResult::Rotated { id, result } => self.on_rotated(&id, result, out),
            SubsResult::Checked { id, result } => match &mut self.modal {
                Some(Modal::Rotate(dialog)) if dialog.id == id => {
                    dialog.on_checked(result.map_err(|failure| failure.message));
                }
                Some(Modal::Edit(form)) if form.id == id => {
                    form.on_checked(result.map_err(|failure| failure.message), out);
                }
                _ => {}
            },
            SubsResult::Watched { id, report } => {
                if let Some(Modal::Rotate(dialog)) = &mut self.modal
                    && dialog.id == id
                {
                    dialog.watch = Some(report);
                }
            }
            SubsResult::Deleted { id, result } => self.on_deleted(&id, result, out),
        }
    }

    pub(super) fn on_created(&mut self, result: Result<Subscription, Failure>, out: &mut Outcome) {
        let Some(Modal::Create(form)) = &mut self.modal else {
            if let Ok(created) = result {
                self.insert_new(created);
            }
            return;
        };
        form.submitting = false;
        match result {
            Ok(created) => {
                let short = short_id(&created.id).to_owned();
                self.modal = form.generated.take().map(|secret| {
                    Modal::Secret(SecretOnce {
                        short: short.clone(),
                        secret,
                        copied: false,
                    })
                });
                out.toast = Some(format!("created {short}"));
                self.insert_new(created);
                out.succeeded = true;
            }
            Err(failure) => {
                form.generated = None;
                form.server_error = Some(failure.message.clone());
                out.failure = Some(failure);
            }
        }
    }

    fn on_rotated(&mut self, id: &str, result: Result<Subscription, Failure>, out: &mut Outcome) {
        let dialog = match &mut self.modal {
            Some(Modal::Rotate(dialog)) if dialog.id == id => Some(dialog),
            _ => None,
        };
        match (result, dialog) {
            (Ok(updated), Some(dialog)) => {
                dialog.on_rotated(updated.secret_version, out);
                out.toast = Some(format!(
                    "rotated {} to secret version {}",
                    short_id(&updated.id),
                    updated.secret_version
                ));
                self.replace(updated);
                out.succeeded = true;
            }
            (Ok(updated), None) => {
                self.replace(updated);
                out.succeeded = true;
            }
            (Err(failure), Some(dialog)) => {
                dialog.submitting = false;
                dialog.error = Some(failure.message.clone());
                out.failure = Some(failure);
            }
            (Err(failure), None) => out.failure = Some(failure),
        }
    }

    fn on_deleted(&mut self, id: &str, result: Result<(), Failure>, out: &mut Outcome) {
        match result {
            Ok(()) => {
                if matches!(&self.modal, Some(Modal::Delete(dialog)) if dialog.id == id) {
                    self.modal = None;
                }
                // The selection stays on its row number (the next row).
                let keep_position = self.table.state.position();
                self.list.value_mut().retain(|row| row.id != id);
                self.table.select(keep_position);
                self.refilter(None);
                self.view = View::Table;
                out.toast = Some(format!("deleted {}", short_id(id)));
                out.succeeded = true;
            }
            Err(failure) => {
                if let Some(Modal::Delete(dialog)) = &mut self.modal
                    && dialog.id == id
                {
                    dialog.submitting = false;
                    dialog.error = Some(failure.message.clone());
                }
                out.failure = Some(failure);
            }
        }
    }

    pub(super) fn replace(&mut self, updated: Subscription) {
        if let Some(row) = self
            .list
            .value_mut()
            .iter_mut()
            .find(|row| row.id == updated.id)
        {
            *row = updated;
        }
        let keep = self.selected().map(|row| row.id.clone());
        self.refilter(keep);
    }

    pub(super) fn insert_new(&mut self, created: Subscription) {
        let id = created.id.clone();
        let rows = self.list.value_mut();
        rows.retain(|row| row.id != id);
        rows.insert(0, created);
        self.refilter(Some(id));
    }
}
