//! The Subscriptions pane's dialogs besides the create form and the staged
//! rotation (`rotation.rs`): delete (typed confirmation of the short id)
//! and a new subscription's secret, shown once.
//!
//! The secret shown once lives only in [`SecretOnce`]; closing the dialog
//! drops it. Nothing here writes it anywhere.

use tui_input::Input;

use earshot_core::api::types::agents::Subscription;
use earshot_core::redact::SecretString;

use super::short_id;

/// Delete: enabled only when the typed text is exactly the short id.
#[derive(Clone, Debug)]
pub(crate) struct DeleteConfirm {
    pub(crate) id: String,
    pub(crate) short: String,
    pub(crate) url: String,
    pub(crate) input: Input,
    pub(crate) submitting: bool,
    pub(crate) error: Option<String>,
}

impl DeleteConfirm {
    pub(crate) fn new(subscription: &Subscription) -> DeleteConfirm {
        DeleteConfirm {
            id: subscription.id.clone(),
            short: short_id(&subscription.id).to_owned(),
            url: subscription.url.clone(),
            input: Input::default(),
            submitting: false,
            error: None,
        }
    }

    /// The typed text is exactly the short id.
    pub(crate) fn confirmed(&self) -> bool {
        self.input.value() == self.short
    }
}

/// A fresh secret, shown once. `copied` records an OSC 52 copy.
#[derive(Clone, Debug)]
pub(crate) struct SecretOnce {
    pub(crate) short: String,
    pub(crate) secret: SecretString,
    pub(crate) copied: bool,
}
