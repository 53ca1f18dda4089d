//! The edit dialog (`e`): a subscription's URL and events, changed with the
//! id, secret and delivery history kept (a `PATCH`, as `earshot subs
//! update`). The same rules as create (`api::validate`), the change shown
//! as a diff, the short id typed to confirm. With the subscription's
//! secret typed, a new URL first gets the signed-duplicate check of a
//! rotation (`subs update --secret-file`): no `PATCH` unless the new
//! receiver accepts the subscription's signature and refuses a wrong one.

use tui_input::Input;

use super::Outcome;
use crate::tui::widgets::input::cycle;
use earshot_core::api::types::agents::{EventKind, Subscription, SubscriptionPatch};
use earshot_core::api::validate::{self, UrlPolicy};
use earshot_core::history::rotation::CheckReport;
use earshot_core::redact::SecretString;

use super::short_id;
use super::tasks::SubsEffect;

/// Where the keyboard is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EditField {
    Url,
    /// One of the five event toggles, by index into `EventKind::ALL`.
    Event(usize),
    /// The subscription's secret, optional: checks a new URL first.
    Secret,
    Confirm,
}

impl EditField {
    const ORDER: [EditField; 8] = [
        EditField::Url,
        EditField::Event(0),
        EditField::Event(1),
        EditField::Event(2),
        EditField::Event(3),
        EditField::Event(4),
        EditField::Secret,
        EditField::Confirm,
    ];

    pub(crate) fn is_text(self) -> bool {
        !matches!(self, EditField::Event(_))
    }
}

/// The edit dialog's state.
#[derive(Clone, Debug)]
pub(crate) struct EditForm {
    pub(crate) id: String,
    pub(crate) short: String,
    pub(crate) old_url: String,
    pub(crate) old_events: Vec<String>,
    pub(crate) url: Input,
    pub(crate) events: [bool; 5],
    pub(crate) focus: EditField,
    pub(crate) secret: Input,
    pub(crate) confirm: Input,
    /// The new URL's check is in flight.
    pub(crate) checking: bool,
    /// The new URL's check, when one ran: each answer's line, and whether
    /// it passed.
    pub(crate) check: Option<(Vec<String>, bool)>,
    pub(crate) submitting: bool,
    pub(crate) error: Option<String>,
}

impl EditForm {
    pub(crate) fn new(subscription: &Subscription) -> EditForm {
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
            secret: Input::default(),
            confirm: Input::default(),
            checking: false,
            check: None,
            submitting: false,
            error: None,
        }
    }

    fn selected_events(&self) -> Vec<EventKind> {
        super::form::ticked(self.events)
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
    pub(crate) fn diff(&self) -> Vec<String> {
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
            EditField::Secret => Some(&mut self.secret),
            EditField::Confirm => Some(&mut self.confirm),
            EditField::Event(_) => None,
        }
    }

    /// `enter`: the rules, the typed short id, the new URL's check when
    /// the secret is given, then the `PATCH`.
    pub(crate) fn submit(&mut self, policy: UrlPolicy, out: &mut Outcome) {
        if self.submitting || self.checking {
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
        let secret = self.secret.value().trim().to_owned();
        if let Some(url) = &url
            && !secret.is_empty()
        {
            self.checking = true;
            self.check = None;
            out.effects.push(SubsEffect::CheckRotation {
                id: self.id.clone(),
                url: url.clone(),
                new: SecretString::new(secret),
                current: None,
            });
            return;
        }
        self.patch(url, events, out);
    }

    fn patch(&mut self, url: Option<String>, events: Option<Vec<EventKind>>, out: &mut Outcome) {
        self.submitting = true;
        out.effects.push(SubsEffect::Patch {
            id: self.id.clone(),
            patch: SubscriptionPatch {
                url,
                events,
                ..SubscriptionPatch::default()
            },
        });
    }

    /// The new URL's check answered: a pass sends the `PATCH` (the short
    /// id was typed before the check ran); anything else says why.
    pub(crate) fn on_checked(&mut self, result: Result<CheckReport, String>, out: &mut Outcome) {
        self.checking = false;
        // The secret is used once, then forgotten.
        self.secret = Input::default();
        match result {
            Ok(report) => {
                let lines = report
                    .answers
                    .iter()
                    .map(|answer| {
                        let mark = if answer.ok { "✓" } else { "✗" };
                        let with = answer.signed_with.replace("the new secret", "its secret");
                        format!("{mark} signed with {with}: {}", answer.verdict)
                    })
                    .collect();
                self.check = Some((lines, report.passed));
                if report.passed {
                    let url = self.new_url().map(str::to_owned);
                    let events = self.new_events();
                    self.patch(url, events, out);
                } else {
                    self.error = Some("not updated: the new URL does not pass the check".into());
                }
            }
            Err(why) => self.error = Some(format!("the new URL could not be checked: {why}")),
        }
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
            [SubsEffect::Patch { patch, .. }] => {
                assert_eq!(patch.url.as_deref(), Some("https://hooks.example.com/b"));
                assert_eq!(patch.events, None, "the events did not change");
                assert!(patch.secret.is_none() && patch.enabled.is_none());
            }
            other => panic!("one PATCH, got {other:?}"),
        }
    }

    #[test]
    fn with_the_secret_a_new_url_is_checked_before_the_patch() {
        let mut edit = form();
        edit.url = Input::new("https://hooks.example.com/b".into());
        edit.secret = Input::new("whsec_the_subscriptions_secret_0123456789".into());
        edit.confirm = Input::new("db318dee".into());
        let mut out = Outcome::default();
        edit.submit(UrlPolicy::PublicHttps, &mut out);
        match out.effects.as_slice() {
            [
                SubsEffect::CheckRotation {
                    url, new, current, ..
                },
            ] => {
                assert_eq!(url, "https://hooks.example.com/b", "the new URL is probed");
                assert_eq!(new.expose(), "whsec_the_subscriptions_secret_0123456789");
                assert!(current.is_none());
            }
            other => panic!("the check first, got {other:?}"),
        }
        let report = |passed| CheckReport {
            event_id: "evt-1".into(),
            synthetic: false,
            answers: Vec::new(),
            passed,
        };
        let mut out = Outcome::default();
        edit.on_checked(Ok(report(false)), &mut out);
        assert!(out.effects.is_empty(), "no PATCH after a failed check");
        assert!(edit.secret.value().is_empty(), "the secret is used once");
        edit.secret = Input::new("whsec_the_subscriptions_secret_0123456789".into());
        edit.submit(UrlPolicy::PublicHttps, &mut Outcome::default());
        let mut out = Outcome::default();
        edit.on_checked(Ok(report(true)), &mut out);
        assert!(matches!(
            out.effects.as_slice(),
            [SubsEffect::Patch { patch, .. }] if patch.url.as_deref() == Some("https://hooks.example.com/b")
        ));
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
