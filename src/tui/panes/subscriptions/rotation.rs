//! The rotate dialog: a staged rotation that loses no event,
//! the same steps as `earshot subs rotate`.
//!
//! 1. **Prepare**: a new secret is generated (or pasted), shown once and
//!    copied (`c`); nothing goes to the platform. The operator adds it to
//!    the receiver next to the current one.
//! 2. **Check**: the observer's exact bytes of an event the subscription
//!    was delivered go to its URL signed with the new secret, the current
//!    one (when typed; earshot stores no secret) and a wrong one; not-401,
//!    not-401, 401 passes.
//! 3. **Apply**: the `PATCH`, after the short id is typed; offered only
//!    when the check passed, or after `S` skips it with a red warning.
//! 4. **Watch**: the subscription's sessions are swept; the dialog shows
//!    what was delivered since, any 401 (stop and act), and when the old
//!    secret can go.

use tui_input::Input;

use super::Outcome;
use earshot_core::api::types::agents::Subscription;
use earshot_core::api::validate;
use earshot_core::history::rotation::{CheckReport, WatchReport};
use earshot_core::redact::SecretString;

use super::short_id;
use super::tasks::SubsEffect;

/// Where the rotation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Prepare,
    Check,
    Apply,
    Watch,
}

impl Stage {
    pub(crate) fn number(self) -> usize {
        match self {
            Stage::Prepare => 1,
            Stage::Check => 2,
            Stage::Apply => 3,
            Stage::Watch => 4,
        }
    }
}

/// The staged rotation of one subscription.
#[derive(Clone, Debug)]
pub(crate) struct RotateForm {
    pub(crate) id: String,
    pub(crate) short: String,
    pub(crate) url: String,
    pub(crate) current_version: u32,
    pub(crate) stage: Stage,
    /// Prepare: a pasted secret (empty: generate one).
    pub(crate) secret: Input,
    /// Check: the current secret, optional (masked, never kept).
    pub(crate) current: Input,
    /// Check: typing goes to `current`.
    pub(crate) editing_current: bool,
    /// Apply: the short id, typed.
    pub(crate) confirm: Input,
    /// The prepared secret: shown in the dialog until it closes.
    pub(crate) new_secret: Option<SecretString>,
    pub(crate) copied: bool,
    pub(crate) checking: bool,
    pub(crate) check: Option<Result<CheckReport, String>>,
    /// Apply was reached without a passed check.
    pub(crate) skipped: bool,
    pub(crate) submitting: bool,
    pub(crate) error: Option<String>,
    /// After the `PATCH`: the version and what the watch saw last.
    pub(crate) version_after: Option<u32>,
    pub(crate) watch: Option<WatchReport>,
}

impl RotateForm {
    pub(crate) fn new(subscription: &Subscription) -> RotateForm {
        RotateForm {
            id: subscription.id.clone(),
            short: short_id(&subscription.id).to_owned(),
            url: subscription.url.clone(),
            current_version: subscription.secret_version,
            stage: Stage::Prepare,
            secret: Input::default(),
            current: Input::default(),
            editing_current: false,
            confirm: Input::default(),
            new_secret: None,
            copied: false,
            checking: false,
            check: None,
            skipped: false,
            submitting: false,
            error: None,
            version_after: None,
            watch: None,
        }
    }

    /// Whether typed keys go to a field now.
    pub(crate) fn captures_text(&self) -> bool {
        match self.stage {
            Stage::Prepare => true,
            Stage::Check => self.editing_current && !self.checking,
            Stage::Apply => !self.submitting,
            Stage::Watch => false,
        }
    }

    /// The field typed keys go to.
    pub(crate) fn focused_input(&mut self) -> Option<&mut Input> {
        match self.stage {
            Stage::Prepare => Some(&mut self.secret),
            Stage::Check if self.editing_current => Some(&mut self.current),
            Stage::Apply => Some(&mut self.confirm),
            _ => None,
        }
    }

    /// Something would be lost by closing: a prepared secret not applied.
    pub(crate) fn is_dirty(&self) -> bool {
        self.version_after.is_none()
            && (!self.secret.value().is_empty() || self.new_secret.is_some())
    }

    /// `tab` in Check: in and out of the current-secret field.
    pub(crate) fn toggle_current(&mut self) {
        if self.stage == Stage::Check {
            self.editing_current = !self.editing_current;
        }
    }

    /// `enter`: the step of the stage the dialog is at.
    pub(crate) fn submit(
        &mut self,
        generate: &dyn Fn() -> Result<String, String>,
        out: &mut Outcome,
    ) {
        self.error = None;
        match self.stage {
            Stage::Prepare => self.prepare(generate),
            Stage::Check => self.start_check(out),
            Stage::Apply => self.apply(out),
            Stage::Watch => {}
        }
    }

    fn prepare(&mut self, generate: &dyn Fn() -> Result<String, String>) {
        let pasted = self.secret.value().trim().to_owned();
        let secret = if pasted.is_empty() {
            match generate() {
                Ok(secret) => secret,
                Err(error) => {
                    self.error = Some(format!("could not generate a secret: {error}; paste one"));
                    return;
                }
            }
        } else {
            if let Err(error) = validate::secret(&pasted) {
                self.error = Some(format!("secret {}", error.rule));
                return;
            }
            pasted
        };
        self.new_secret = Some(SecretString::new(secret));
        self.secret = Input::default();
        self.stage = Stage::Check;
    }

    fn start_check(&mut self, out: &mut Outcome) {
        let Some(new) = self.new_secret.clone() else {
            return;
        };
        if self.checking {
            return;
        }
        let current = self.current.value().trim().to_owned();
        self.checking = true;
        self.editing_current = false;
        self.check = None;
        out.effects.push(SubsEffect::CheckRotation {
            id: self.id.clone(),
            url: self.url.clone(),
            new,
            current: (!current.is_empty()).then(|| SecretString::new(current)),
        });
    }

    /// The check's answers; a pass leads to Apply.
    pub(crate) fn on_checked(&mut self, result: Result<CheckReport, String>) {
        self.checking = false;
        // The current secret is used once, then forgotten.
        self.current = Input::default();
        if matches!(&result, Ok(report) if report.passed) {
            self.stage = Stage::Apply;
            self.skipped = false;
        }
        self.check = Some(result);
    }

    /// `S` in Check: on to Apply without a passed check (red warning).
    pub(crate) fn skip_check(&mut self) {
        if self.stage == Stage::Check && !self.checking && self.new_secret.is_some() {
            self.skipped = true;
            self.stage = Stage::Apply;
        }
    }

    fn apply(&mut self, out: &mut Outcome) {
        if self.submitting {
            return;
        }
        if self.confirm.value() != self.short {
            self.error = Some(format!("type {} exactly to rotate", self.short));
            return;
        }
        let Some(secret) = self.new_secret.clone() else {
            return;
        };
        self.submitting = true;
        out.effects.push(SubsEffect::Rotate {
            id: self.id.clone(),
            secret,
        });
    }

    /// The `PATCH` succeeded: on to Watch from now.
    pub(crate) fn on_rotated(&mut self, version: u32, out: &mut Outcome) {
        self.submitting = false;
        self.version_after = Some(version);
        self.stage = Stage::Watch;
        out.effects.push(SubsEffect::WatchRotation {
            id: self.id.clone(),
            rotated_ms: earshot_core::store::now_ms(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> RotateForm {
        RotateForm::new(&Subscription {
            id: "db318dee-0000-4000-8000-000000000001".into(),
            url: "https://hooks.example/call".into(),
            events: Vec::new(),
            agent_id: None,
            enabled: true,
            secret_version: 1,
            extra: Default::default(),
        })
    }

    fn generated() -> Result<String, String> {
        Ok("whsec_generated_0123456789abcdefghij".into())
    }

    fn report(passed: bool) -> CheckReport {
        CheckReport {
            event_id: "evt-1".into(),
            synthetic: false,
            answers: Vec::new(),
            passed,
        }
    }

    #[test]
    fn apply_is_reached_only_through_a_passed_check_or_an_explicit_skip() {
        let mut dialog = form();
        let mut out = Outcome::default();
        dialog.submit(&generated, &mut out);
        assert_eq!(dialog.stage, Stage::Check);
        assert!(
            out.effects.is_empty(),
            "nothing goes to the platform to prepare"
        );
        dialog.submit(&generated, &mut out);
        assert!(matches!(
            out.effects.as_slice(),
            [SubsEffect::CheckRotation { current: None, .. }]
        ));
        dialog.on_checked(Ok(report(false)));
        assert_eq!(
            dialog.stage,
            Stage::Check,
            "a failed check does not lead on"
        );
        dialog.skip_check();
        assert_eq!((dialog.stage, dialog.skipped), (Stage::Apply, true));

        let mut passed = form();
        passed.submit(&generated, &mut Outcome::default());
        passed.submit(&generated, &mut Outcome::default());
        passed.on_checked(Ok(report(true)));
        assert_eq!((passed.stage, passed.skipped), (Stage::Apply, false));
    }

    #[test]
    fn the_patch_needs_the_short_id_and_carries_the_prepared_secret() {
        let mut dialog = form();
        let mut out = Outcome::default();
        dialog.submit(&generated, &mut out);
        dialog.submit(&generated, &mut out);
        dialog.on_checked(Ok(report(true)));
        out.effects.clear();
        dialog.submit(&generated, &mut out);
        assert!(out.effects.is_empty());
        assert!(
            dialog
                .error
                .as_deref()
                .is_some_and(|e| e.contains("db318dee"))
        );
        dialog.confirm = Input::new("db318dee".into());
        dialog.submit(&generated, &mut out);
        match out.effects.as_slice() {
            [SubsEffect::Rotate { secret, .. }] => {
                assert_eq!(secret.expose(), "whsec_generated_0123456789abcdefghij");
            }
            other => panic!("one PATCH, got {other:?}"),
        }
        out.effects.clear();
        dialog.on_rotated(2, &mut out);
        assert_eq!(dialog.stage, Stage::Watch);
        assert!(matches!(
            out.effects.as_slice(),
            [SubsEffect::WatchRotation { .. }]
        ));
    }

    #[test]
    fn a_pasted_secret_must_follow_the_rules() {
        let mut dialog = form();
        dialog.secret = Input::new("short".into());
        dialog.submit(&generated, &mut Outcome::default());
        assert_eq!(dialog.stage, Stage::Prepare);
        assert!(dialog.error.is_some());
    }
}
