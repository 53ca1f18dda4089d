//! The edit dialog (`e`): a subscription's URL and events, changed with the
//! id, secret and delivery history kept (a `PATCH`, as `earshot subs
//! update`). The same rules as create (`api::validate`), the change shown
//! as a diff, the short id typed to confirm.

use tui_input::Input;

use crate::api::types::agents::{EventKind, Subscription, SubscriptionPatch};
use crate::api::validate::{self, UrlPolicy};
use crate::tui::action::Effect;
use crate::tui::app::Outcome;
use crate::tui::widgets::input::cycle;

use super::short_id;

/// Where the keyboard is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditField {
    Url,
    /// One of the five event toggles, by index into `EventKind::ALL`.
    Event(usize),
    Confirm,
}

impl EditField {
    const ORDER: [EditField; 7] = [
        EditField::Url,
        EditField::Event(0),
        EditField::Event(1),
        EditField::Event(2),
        EditField::Event(3),
        EditField::Event(4),
        EditField::Confirm,
    ];

    pub fn is_text(self) -> bool {
        !matches!(self, EditField::Event(_))
    }
}

/// The edit dialog's state.
#[derive(Clone, Debug)]
pub struct EditForm {
    pub id: String,
    pub short: String,
    pub old_url: String,
    pub old_events: Vec<String>,
    pub url: Input,
    pub events: [bool; 5],
    pub focus: EditField,
    pub confirm: Input,
    pub submitting: bool,
    pub error: Option<String>,
}

impl EditForm {
    pub fn new(subscription: &Subscription) -> EditForm {
        let events =
            EventKind::ALL.map(|kind| subscription.events.iter().any(|e| e == kind.as_str()));
        EditForm {
            id: subscription.id.clone(),
            short: short_id(&subscription.id).to_owned(),
            old_url: subscription.url.clone(),
            old_events: subscription.events.clone(),
            url: Input::new(subscription.url.clone()),
            events,
            focus: EditField::Url,
            confirm: Input::default(),
            submitting: false,
            error: None,
        }
    }

    fn selected_events(&self) -> Vec<EventKind> {
        EventKind::ALL
            .into_iter()
            .zip(self.events)
            .filter_map(|(kind, on)| on.then_some(kind))
            .collect()
    }

    fn new_url(&self) -> Option<&str> {
        let url = self.url.value().trim();
        (url != self.old_url).then_some(url)
    }

    fn new_events(&self) -> Option<Vec<EventKind>> {
        let events = self.selected_events();
        let names: Vec<&str> = events.iter().map(|kind| kind.as_str()).collect();
        let mut old: Vec<&str> = self.old_events.iter().map(String::as_str).collect();
        old.sort_unstable();
        let mut new = names.clone();
        new.sort_unstable();
        (new != old).then_some(events)
    }

    /// What would change, one line each (empty: nothing).
    pub fn diff(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(url) = self.new_url() {
            lines.push(format!("url     {} → {url}", self.old_url));
        }
        if let Some(events) = self.new_events() {
            let names: Vec<&str> = events.iter().map(|kind| kind.as_str()).collect();
            lines.push(format!(
                "events  {} → {}",
                self.old_events.join(","),
                names.join(",")
            ));
        }
        lines
    }

    pub(crate) fn is_dirty(&self) -> bool {
        !self.diff().is_empty()
    }

    pub(crate) fn move_focus(&mut self, forward: bool) {
        self.focus = cycle(&EditField::ORDER, self.focus, forward);
    }

    pub(crate) fn toggle_focused_event(&mut self) {
        if let EditField::Event(index) = self.focus
            && let Some(on) = self.events.get_mut(index)
        {
            *on = !*on;
        }
    }

    pub(crate) fn focused_input(&mut self) -> Option<&mut Input> {
        match self.focus {
            EditField::Url => Some(&mut self.url),
            EditField::Confirm => Some(&mut self.confirm),
            EditField::Event(_) => None,
        }
    }

    /// `enter`: the rules, the typed short id, then the `PATCH`.
    pub(crate) fn submit(&mut self, policy: UrlPolicy, out: &mut Outcome) {
        if self.submitting {
            return;
        }
        self.error = None;
        if self.diff().is_empty() {
            self.error = Some("nothing changes: edit the URL or the events".into());
            return;
        }
        let url = self.new_url().map(str::to_owned);
        if let Some(url) = &url
            && let Err(error) = validate::url_under(url, policy)
        {
            self.focus = EditField::Url;
            self.error = Some(format!("url {}", error.rule));
            return;
        }
        let events = self.new_events();
        if let Err(error) = validate::events(&self.selected_events()) {
            self.focus = EditField::Event(0);
            self.error = Some(format!("events {}", error.rule));
            return;
        }
        if self.confirm.value() != self.short {
            self.focus = EditField::Confirm;
            self.error = Some(format!("type {} exactly to update", self.short));
            return;
        }
        self.submitting = true;
        out.effects.push(Effect::PatchSubscription {
            id: self.id.clone(),
            patch: SubscriptionPatch {
                url,
                events,
                ..SubscriptionPatch::default()
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> EditForm {
        EditForm::new(&Subscription {
            id: "db318dee-0000-4000-8000-000000000001".into(),
            url: "https://hooks.example.com/a".into(),
            events: vec!["call.ended".into()],
            agent_id: None,
            enabled: true,
            secret_version: 1,
            extra: Default::default(),
        })
    }

    #[test]
    fn only_what_changed_is_patched_after_the_short_id() {
        let mut edit = form();
        let mut out = Outcome::default();
        edit.submit(UrlPolicy::PublicHttps, &mut out);
        assert!(out.effects.is_empty());
        assert!(
            edit.error
                .as_deref()
                .is_some_and(|e| e.contains("nothing changes"))
        );
        edit.url = Input::new("https://hooks.example.com/b".into());
        assert_eq!(
            edit.diff(),
            ["url     https://hooks.example.com/a → https://hooks.example.com/b"]
        );
        edit.submit(UrlPolicy::PublicHttps, &mut out);
        assert!(out.effects.is_empty(), "no short id typed");
        assert_eq!(edit.focus, EditField::Confirm);
        edit.confirm = Input::new("db318dee".into());
        edit.submit(UrlPolicy::PublicHttps, &mut out);
        match out.effects.as_slice() {
            [Effect::PatchSubscription { patch, .. }] => {
                assert_eq!(patch.url.as_deref(), Some("https://hooks.example.com/b"));
                assert_eq!(patch.events, None, "the events did not change");
                assert!(patch.secret.is_none() && patch.enabled.is_none());
            }
            other => panic!("one PATCH, got {other:?}"),
        }
    }

    #[test]
    fn the_create_rules_apply() {
        let mut edit = form();
        edit.confirm = Input::new("db318dee".into());
        edit.url = Input::new("http://10.0.0.1/hook".into());
        edit.submit(UrlPolicy::PublicHttps, &mut Outcome::default());
        assert_eq!(edit.focus, EditField::Url);
        edit.url = Input::new("https://hooks.example.com/a".into());
        edit.events = [false; 5];
        let mut out = Outcome::default();
        edit.submit(UrlPolicy::PublicHttps, &mut out);
        assert!(out.effects.is_empty(), "no event left");
        assert!(
            edit.error
                .as_deref()
                .is_some_and(|e| e.starts_with("events"))
        );
    }
}
