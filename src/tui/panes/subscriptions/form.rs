//! The create-subscription form: its fields, focus, and validation with
//! the client's own rules (`api::validate`) before anything is sent.
//!
//! Errors are kept per field and shown next to it. Validation runs when
//! the operator first tries to create, then again on every change, so an
//! error disappears as soon as it is fixed.

use tui_input::Input;

use crate::tui::widgets::input::cycle;
use earshot_core::api::types::agents::{EventKind, NewSubscription};
use earshot_core::api::validate::{self, UrlPolicy};
use earshot_core::redact::SecretString;
use earshot_core::signature::generate_secret;

/// Where the keyboard is in the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Url,
    /// One of the five event toggles, by index into `EventKind::ALL`.
    Event(usize),
    Agent,
    Secret,
}

impl Field {
    const ORDER: [Field; 8] = [
        Field::Url,
        Field::Event(0),
        Field::Event(1),
        Field::Event(2),
        Field::Event(3),
        Field::Event(4),
        Field::Agent,
        Field::Secret,
    ];

    pub(crate) fn next(self) -> Field {
        cycle(&Field::ORDER, self, true)
    }

    pub(crate) fn prev(self) -> Field {
        cycle(&Field::ORDER, self, false)
    }

    pub(crate) fn is_text(self) -> bool {
        !matches!(self, Field::Event(_))
    }
}

/// One message per field; `None` where the field is fine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldErrors {
    pub(crate) url: Option<String>,
    pub(crate) events: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) secret: Option<String>,
}

impl FieldErrors {
    pub(crate) fn is_empty(&self) -> bool {
        self.url.is_none() && self.events.is_none() && self.agent.is_none() && self.secret.is_none()
    }
}

/// The form's state.
#[derive(Clone, Debug)]
pub(crate) struct CreateForm {
    pub(crate) url: Input,
    pub(crate) events: [bool; 5],
    pub(crate) agent: Input,
    /// Pasted secret; empty means "generate one".
    pub(crate) secret: Input,
    pub(crate) focus: Field,
    pub(crate) errors: FieldErrors,
    /// A create was attempted: validate on every change from now on.
    pub(crate) attempted: bool,
    /// Sent; waiting for the platform.
    pub(crate) submitting: bool,
    /// The secret generated for the request in flight, shown once on success.
    pub(crate) generated: Option<SecretString>,
    /// The platform's answer to the last attempt, when it refused.
    pub(crate) server_error: Option<String>,
    /// Esc was pressed on a dirty form: asking whether to discard it.
    pub(crate) confirm_discard: bool,
}

/// A valid form: the request to send and the secret if one was generated.
#[derive(Debug)]
pub(crate) struct Ready {
    pub(crate) request: NewSubscription,
    pub(crate) generated: Option<SecretString>,
}

impl Default for CreateForm {
    fn default() -> Self {
        CreateForm {
            url: Input::default(),
            events: [false; 5],
            agent: Input::default(),
            secret: Input::default(),
            focus: Field::Url,
            errors: FieldErrors::default(),
            attempted: false,
            submitting: false,
            generated: None,
            server_error: None,
            confirm_discard: false,
        }
    }
}

impl CreateForm {
    /// Something was typed or toggled (quitting or closing asks first).
    pub(crate) fn is_dirty(&self) -> bool {
        !self.url.value().is_empty()
            || self.events.iter().any(|on| *on)
            || !self.agent.value().is_empty()
            || !self.secret.value().is_empty()
    }

    pub(crate) fn focused_input(&mut self) -> Option<&mut Input> {
        match self.focus {
            Field::Url => Some(&mut self.url),
            Field::Agent => Some(&mut self.agent),
            Field::Secret => Some(&mut self.secret),
            Field::Event(_) => None,
        }
    }

    pub(crate) fn toggle_focused_event(&mut self) {
        if let Field::Event(index) = self.focus
            && let Some(on) = self.events.get_mut(index)
        {
            *on = !*on;
        }
    }

    pub(crate) fn selected_events(&self) -> Vec<EventKind> {
        ticked(self.events)
    }

    /// Re-checks after a change, once a create was attempted.
    pub(crate) fn changed(&mut self, policy: UrlPolicy) {
        self.server_error = None;
        if self.attempted {
            self.errors = self.check(policy);
        }
    }

    /// Every field against the client's rules; no secret is generated.
    pub(crate) fn check(&self, policy: UrlPolicy) -> FieldErrors {
        let mut errors = FieldErrors::default();
        if self.url.value().trim().is_empty() {
            errors.url = Some("required".into());
        } else if let Err(error) = validate::url_under(self.url.value(), policy) {
            errors.url = Some(error.rule);
        }
        if let Err(error) = validate::events(&self.selected_events()) {
            errors.events = Some(error.rule);
        }
        let agent = self.agent.value().trim();
        if !agent.is_empty()
            && let Err(error) = validate::agent_id(agent)
        {
            errors.agent = Some(error.rule);
        }
        let secret = self.secret.value();
        if !secret.is_empty()
            && let Err(error) = validate::secret(secret)
        {
            errors.secret = Some(error.rule);
        }
        errors
    }

    /// The request to send, or the errors to show. Generates a secret when
    /// none was pasted (with `generate`, injectable for tests).
    pub(crate) fn submit(
        &mut self,
        policy: UrlPolicy,
        generate: &dyn Fn() -> Result<String, String>,
    ) -> Option<Ready> {
        self.attempted = true;
        self.server_error = None;
        self.errors = self.check(policy);
        if !self.errors.is_empty() {
            return None;
        }
        let (secret, generated) = if self.secret.value().is_empty() {
            match generate() {
                Ok(fresh) => {
                    let fresh = SecretString::new(fresh);
                    (fresh.clone(), Some(fresh))
                }
                Err(error) => {
                    self.errors.secret =
                        Some(format!("could not generate one: {error}; paste one"));
                    return None;
                }
            }
        } else {
            (SecretString::new(self.secret.value()), None)
        };
        let agent = self.agent.value().trim();
        let agent_id = if agent.is_empty() {
            None
        } else {
            validate::agent_id(agent).ok()
        };
        let request = NewSubscription {
            url: self.url.value().trim().to_owned(),
            events: self.selected_events(),
            secret,
            agent_id,
            enabled: None,
        };
        // The same check the client runs before sending, as a last guard.
        if let Err(error) = request.validate(policy) {
            self.server_error = Some(error.to_string());
            return None;
        }
        Some(Ready { request, generated })
    }
}

/// [`generate_secret`] with its error as text.
pub(crate) fn fresh_secret() -> Result<String, String> {
    generate_secret().map_err(|error| error.to_string())
}

/// The events whose toggles are on, in `EventKind::ALL` order (the create
/// and edit forms' five toggles).
pub(super) fn ticked(toggles: [bool; 5]) -> Vec<EventKind> {
    EventKind::ALL
        .into_iter()
        .zip(toggles)
        .filter_map(|(kind, on)| on.then_some(kind))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(value: &str) -> Input {
        Input::new(value.to_owned())
    }

    fn never() -> Result<String, String> {
        Err("no randomness in this test".into())
    }

    #[test]
    fn an_empty_form_names_every_required_field() {
        let mut form = CreateForm::default();
        assert!(form.submit(UrlPolicy::PublicHttps, &never).is_none());
        assert_eq!(form.errors.url.as_deref(), Some("required"));
        assert!(
            form.errors
                .events
                .as_deref()
                .unwrap()
                .contains("at least one")
        );
        assert_eq!(form.errors.agent, None, "agent is optional");
        assert_eq!(form.errors.secret, None, "empty secret means generate");
    }

    #[test]
    fn each_field_shows_the_clients_own_rule() {
        let mut form = CreateForm {
            url: typed("http://hooks.example.com/x"),
            agent: typed("agent-7"),
            secret: typed("short"),
            ..CreateForm::default()
        };
        form.events[0] = true;
        assert!(form.submit(UrlPolicy::PublicHttps, &never).is_none());
        assert!(form.errors.url.as_deref().unwrap().contains("https://"));
        assert_eq!(form.errors.events, None);
        assert!(form.errors.agent.as_deref().unwrap().contains("UUID"));
        assert!(form.errors.secret.as_deref().unwrap().contains("got 5"));
    }

    #[test]
    fn the_demo_policy_accepts_loopback_receivers() {
        let mut form = CreateForm {
            url: typed("http://127.0.0.1:9000/hook"),
            ..CreateForm::default()
        };
        form.events[3] = true;
        let ready = form
            .submit(UrlPolicy::AnyHttp, &|| {
                Ok("whsec_".to_owned() + &"a".repeat(40))
            })
            .expect("valid under AnyHttp");
        assert_eq!(ready.request.events, vec![EventKind::CallEnded]);
        assert!(ready.generated.is_some());
        assert!(form.submit(UrlPolicy::PublicHttps, &never).is_none());
    }

    #[test]
    fn errors_clear_as_soon_as_the_field_is_fixed() {
        let mut form = CreateForm::default();
        form.submit(UrlPolicy::PublicHttps, &never);
        form.url = typed("https://93.184.216.34/hook");
        form.changed(UrlPolicy::PublicHttps);
        assert_eq!(form.errors.url, None);
        assert!(form.errors.events.is_some());
    }

    #[test]
    fn focus_cycles_through_every_field_and_toggle() {
        let mut field = Field::Url;
        let mut seen = vec![field];
        for _ in 0..7 {
            field = field.next();
            seen.push(field);
        }
        assert_eq!(seen, Field::ORDER);
        assert_eq!(field.next(), Field::Url);
        assert_eq!(Field::Url.prev(), Field::Secret);
    }
}
