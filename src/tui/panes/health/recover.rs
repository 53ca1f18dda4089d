//! The Health pane's recover form: what would be sent (a preview read from
//! the store when the form opens: count by type, first and last time, what
//! is left out and the events never observed), the subscription's secret
//! (masked, never kept) and its short id typed as confirmation; then
//! progress with each event's answer, `esc` stopping the run after the
//! event being sent, and the summary.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tui_input::Input;

use super::Outcome;
use super::tasks::HealthEffect;
use crate::tui::panes::subscriptions::short_id;
use earshot_core::history::recover::{Preview, Sent};
use earshot_core::redact::SecretString;

/// The re-sent events a form lists at most (the newest).
const SENT_SHOWN: usize = 500;

/// The form's two fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Secret,
    Confirm,
}

/// The recover form and what it reports.
#[derive(Debug)]
pub(crate) struct RecoverForm {
    pub(crate) subscription_id: String,
    pub(crate) url: String,
    pub(crate) secret: Input,
    pub(crate) confirm: Input,
    pub(crate) field: Field,
    /// What would be sent, once read (or why it could not be).
    pub(crate) preview: Option<Result<Preview, String>>,
    /// Sent so far of the total, while running.
    pub(crate) progress: Option<(usize, usize)>,
    /// Each event re-sent and its answer, oldest first (the newest
    /// [`SENT_SHOWN`]).
    pub(crate) sent: Vec<Sent>,
    /// `esc` asked the run to stop after the event being sent.
    pub(crate) cancelling: bool,
    /// Set to stop the run in flight after the event being sent.
    pub(crate) stop: Arc<AtomicBool>,
    /// The last run's summary line, or why it could not run.
    pub(crate) result: Option<Result<String, String>>,
}

impl RecoverForm {
    /// A form for `subscription_id`, asking for its preview.
    pub(super) fn open(subscription_id: &str, url: &str, since_ms: i64, out: &mut Outcome) -> Self {
        out.effects.push(HealthEffect::PlanRecover {
            subscription_id: subscription_id.to_owned(),
            since_ms,
        });
        RecoverForm {
            subscription_id: subscription_id.to_owned(),
            url: url.to_owned(),
            secret: Input::default(),
            confirm: Input::default(),
            field: Field::Secret,
            preview: None,
            progress: None,
            sent: Vec::new(),
            cancelling: false,
            stop: Arc::new(AtomicBool::new(false)),
            result: None,
        }
    }

    pub(crate) fn running(&self) -> bool {
        self.progress.is_some()
    }

    pub(super) fn next_field(&mut self) {
        self.field = match self.field {
            Field::Secret => Field::Confirm,
            Field::Confirm => Field::Secret,
        };
    }

    pub(super) fn input_mut(&mut self) -> &mut Input {
        match self.field {
            Field::Secret => &mut self.secret,
            Field::Confirm => &mut self.confirm,
        }
    }

    /// `enter`: the secret and the short id, then the run.
    pub(super) fn submit(&mut self, since_ms: i64, out: &mut Outcome) {
        if self.running() {
            return;
        }
        let secret = self.secret.value().trim().to_owned();
        if secret.is_empty() {
            self.field = Field::Secret;
            out.toast = Some("type the subscription's signing secret first".into());
            return;
        }
        let short = short_id(&self.subscription_id);
        if self.confirm.value().trim() != short {
            self.field = Field::Confirm;
            out.toast = Some(format!(
                "type {short} to confirm re-sending its missed events"
            ));
            return;
        }
        self.progress = Some((0, 0));
        self.sent.clear();
        self.cancelling = false;
        self.result = None;
        self.stop = Arc::new(AtomicBool::new(false));
        out.effects.push(HealthEffect::Recover {
            subscription_id: self.subscription_id.clone(),
            since_ms,
            secret: SecretString::new(secret),
            stop: Arc::clone(&self.stop),
        });
        // The secret leaves the form as soon as it is sent.
        self.secret = Input::default();
    }

    /// `esc` while running: stop after the event being sent.
    pub(super) fn cancel(&mut self, out: &mut Outcome) {
        if self.running() && !self.cancelling {
            self.cancelling = true;
            self.stop.store(true, Ordering::Relaxed);
            out.toast = Some("stopping after the event being sent…".into());
        }
    }

    pub(super) fn on_progress(&mut self, done: usize, total: usize, sent: Option<Sent>) {
        self.progress = Some((done, total));
        if let Some(sent) = sent {
            if self.sent.len() == SENT_SHOWN {
                self.sent.remove(0);
            }
            self.sent.push(sent);
        }
    }

    pub(super) fn on_end(&mut self, result: Result<String, String>) {
        self.progress = None;
        self.cancelling = false;
        self.result = Some(result);
        self.confirm = Input::default();
    }
}
