//! The Events pane's re-send form: where it sends (a subscription, or any
//! URL), its fields in tab order, and what the last send answered.

use tui_input::Input;

use super::Resent;

/// The re-send form's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// The URL (sending to any URL).
    Url,
    Secret,
    /// The subscription's short id, typed (sending to a subscription).
    Confirm,
}

/// Where the form sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FormTarget {
    Subscription { id: String, url: Option<String> },
    AnyUrl,
}

/// The re-send form and what it reports.
#[derive(Debug)]
pub(crate) struct ResendForm {
    pub(crate) event_id: String,
    pub(crate) target: FormTarget,
    pub(crate) url: Input,
    pub(crate) secret: Input,
    pub(crate) confirm: Input,
    pub(crate) field: Field,
    pub(crate) sending: bool,
    /// The last send's answer, or why it could not run.
    pub(crate) result: Option<Result<Resent, String>>,
}

impl ResendForm {
    /// The fields in tab order.
    pub(crate) fn fields(&self) -> &'static [Field] {
        match self.target {
            FormTarget::Subscription { .. } => &[Field::Secret, Field::Confirm],
            FormTarget::AnyUrl => &[Field::Url, Field::Secret],
        }
    }

    pub(super) fn input_mut(&mut self) -> &mut Input {
        match self.field {
            Field::Url => &mut self.url,
            Field::Secret => &mut self.secret,
            Field::Confirm => &mut self.confirm,
        }
    }
}
