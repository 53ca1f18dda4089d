//! The Subscriptions pane's dialogs besides the create form: delete (typed
//! confirmation of the short id), rotate (generate or paste, typed
//! confirmation) and the new secret, shown once.
//!
//! The secret shown once lives only in [`SecretOnce`]; closing the dialog
//! drops it. Nothing here writes it anywhere.

use tui_input::Input;

use crate::api::types::agents::Subscription;
use crate::api::validate;
use crate::redact::SecretString;

use super::short_id;

/// Delete: enabled only when the typed text is exactly the short id.
#[derive(Clone, Debug)]
pub struct DeleteConfirm {
    pub id: String,
    pub short: String,
    pub url: String,
    pub input: Input,
    pub submitting: bool,
    pub error: Option<String>,
}

impl DeleteConfirm {
    pub fn new(subscription: &Subscription) -> DeleteConfirm {
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

/// Which rotate field has the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RotateField {
    Secret,
    Confirm,
}

/// Rotate: an optional pasted secret (empty = generate) and the short id.
#[derive(Clone, Debug)]
pub struct RotateForm {
    pub id: String,
    pub short: String,
    pub url: String,
    pub current_version: u32,
    pub secret: Input,
    pub confirm: Input,
    pub focus: RotateField,
    pub submitting: bool,
    pub error: Option<String>,
    /// The secret sent with the request in flight; shown once on success.
    pub pending: Option<SecretString>,
}

impl RotateForm {
    pub fn new(subscription: &Subscription) -> RotateForm {
        RotateForm {
            id: subscription.id.clone(),
            short: short_id(&subscription.id).to_owned(),
            url: subscription.url.clone(),
            current_version: subscription.secret_version,
            secret: Input::default(),
            confirm: Input::default(),
            focus: RotateField::Secret,
            submitting: false,
            error: None,
            pending: None,
        }
    }

    pub(crate) fn confirmed(&self) -> bool {
        self.confirm.value() == self.short
    }

    pub(crate) fn focused_input(&mut self) -> &mut Input {
        match self.focus {
            RotateField::Secret => &mut self.secret,
            RotateField::Confirm => &mut self.confirm,
        }
    }

    pub(crate) fn switch_focus(&mut self) {
        self.focus = match self.focus {
            RotateField::Secret => RotateField::Confirm,
            RotateField::Confirm => RotateField::Secret,
        };
    }

    /// The secret to send, or why not: the short id must match, and a
    /// pasted secret must follow the rules; an empty one is generated.
    pub fn submit(
        &mut self,
        generate: &dyn Fn() -> Result<String, String>,
    ) -> Result<SecretString, String> {
        if !self.confirmed() {
            return Err(format!("type {} exactly to rotate", self.short));
        }
        let pasted = self.secret.value();
        if pasted.is_empty() {
            return generate()
                .map(SecretString::new)
                .map_err(|error| format!("could not generate a secret: {error}; paste one"));
        }
        validate::secret(pasted).map_err(|error| format!("secret {}", error.rule))?;
        Ok(SecretString::new(pasted))
    }
}

/// A fresh secret, shown once. `copied` records an OSC 52 copy.
#[derive(Clone, Debug)]
pub struct SecretOnce {
    pub short: String,
    pub secret: SecretString,
    pub version: u32,
    /// Why it is shown: after a rotation, or for a new subscription.
    pub rotated: bool,
    pub copied: bool,
}
