//! The Subscriptions pane: state, commands and `update`.
//!
//! Owns the loaded subscriptions, the table's filter, sort and selection
//! (a [`TableView`] over the rows, `table.rs` its columns), the detail
//! view and the dialogs (create, pause/resume, rotate, delete, the secret
//! shown once). It asks for platform calls with [`Effect`]s and learns
//! their results from [`SubsResult`]s; it never awaits. Drawing is in
//! `view.rs`, the create form in `form.rs`, the other dialogs in
//! `modals.rs`.

mod commands;
mod dialogs;
pub(crate) mod edit;
pub(crate) mod form;
pub(crate) mod freshness;
pub(crate) mod modals;
mod results;
pub(crate) mod rotation;
pub(crate) mod table;
pub(crate) mod tasks;
pub(crate) mod view;

use std::collections::HashSet;
use std::time::Instant;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use crate::tui::kernel::{self, ConsoleConfig, ConsoleEffect, Handover, Jump, Pane, Received};
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::load::Load;
use crate::tui::theme::Theme;
use crate::tui::widgets::age;
use crate::tui::widgets::input as text;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::api::types::agents::{Subscription, SubscriptionPatch};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::history::report::LatestChange;
use earshot_core::redact::SecretString;

use commands::{
    delete_commands, detail_commands, discard_commands, edit_commands, filter_commands,
    form_commands, rotate_commands, secret_commands, table_commands,
};
pub(crate) use edit::EditForm;
use form::{CreateForm, fresh_secret};
use modals::{DeleteConfirm, SecretOnce};
pub(crate) use results::SubsResult;
pub(crate) use rotation::{RotateForm, Stage};
use tasks::SubsEffect;

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<SubsEffect>;

pub(crate) use earshot_core::api::short_id;

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubsCommand {
    /// Through the table (or the detail's rows).
    Move(Move),
    /// Table → detail.
    Open,
    /// Detail → table.
    Back,
    /// `/`, `S` and the filter prompt.
    Table(TableCommand),
    ToggleDisabled,
    New,
    PauseResume,
    Rotate,
    Delete,
    /// The edit dialog for the selected row.
    Edit,
    CopyId,
    NextField,
    PrevField,
    ToggleEvent,
    /// Create, rotate or delete, from the open dialog.
    Submit,
    /// Close the open dialog.
    Cancel,
    CopySecret,
    /// Rotate: on to Apply without a passed check.
    SkipCheck,
    DiscardYes,
    DiscardNo,
}

/// Table or detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Table,
    Detail,
}

/// A dialog over the pane.
#[derive(Clone, Debug)]
pub(crate) enum Modal {
    Create(Box<CreateForm>),
    Delete(DeleteConfirm),
    Rotate(Box<RotateForm>),
    Edit(Box<EditForm>),
    Secret(SecretOnce),
}

/// What has the keyboard: decides which commands exist right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Table,
    Detail,
    Filter,
    Create {
        text: bool,
    },
    ConfirmDiscard,
    Delete,
    /// The staged rotation at `stage`; `text`: a field has the keyboard.
    Rotate {
        stage: Stage,
        text: bool,
    },
    Secret,
    /// The edit dialog; `text`: a text field has the keyboard.
    Edit {
        text: bool,
    },
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct SubscriptionsPane {
    /// The subscriptions, as last loaded (and changed since by this pane's
    /// own calls).
    pub(crate) list: Load<Vec<Subscription>>,
    /// The filter, the sort, the order they give and the selection in it.
    pub(crate) table: TableView<Subscription>,
    pub(crate) include_disabled: bool,
    /// The newest change to each subscription (`earshot changes`).
    changes: Vec<(String, LatestChange)>,
    pub(crate) view: View,
    pub(crate) modal: Option<Modal>,
    /// Ids with a pause / resume in flight.
    pending: HashSet<String>,
    url_policy: UrlPolicy,
    generate: fn() -> Result<String, String>,
    /// The newest change seen in the store's change log.
    changes_seen: freshness::ChangesSeen,
    /// The clock the list's age is drawn from (moved on by the tick).
    pub(crate) clock: Instant,
}

impl SubscriptionsPane {
    pub(crate) fn new(url_policy: UrlPolicy) -> SubscriptionsPane {
        SubscriptionsPane {
            list: Load::new(),
            table: TableView::new(&table::TABLE),
            include_disabled: true,
            changes: Vec::new(),
            view: View::Table,
            modal: None,
            pending: HashSet::new(),
            url_policy,
            generate: fresh_secret,
            changes_seen: freshness::ChangesSeen::default(),
            clock: Instant::now(),
        }
    }

    /// Loads the list again, superseding a load still running.
    pub(crate) fn refresh_list(&mut self, out: &mut Outcome) {
        out.effects.push(SubsEffect::Load {
            seq: self.list.start(),
            include_disabled: self.include_disabled,
        });
    }

    /// The list's age as the title says it ([`age::words`]).
    pub(crate) fn age_words(&self) -> Option<(String, crate::tui::theme::Role)> {
        age::words(&self.list, self.clock, freshness::LIST_EVERY)
    }

    /// Replaces the secret generator (tests use a fixed one).
    #[cfg(test)]
    pub(crate) fn with_generator(mut self, generate: fn() -> Result<String, String>) -> Self {
        self.generate = generate;
        self
    }

    /// Rows as if just loaded (fixtures for tests and snapshots).
    #[cfg(test)]
    pub(crate) fn set_rows(&mut self, rows: Vec<Subscription>) {
        self.list.set(rows);
        self.refilter(None);
    }

    pub(crate) fn rows(&self) -> &[Subscription] {
        self.list.value()
    }

    /// The rows passing the filter, in the order shown.
    #[cfg(test)]
    pub(crate) fn visible_rows(&self) -> impl Iterator<Item = &Subscription> + '_ {
        (0..self.table.len()).filter_map(|position| self.visible_row(position))
    }

    pub(crate) fn visible_len(&self) -> usize {
        self.table.len()
    }

    /// The visible row at `position`.
    pub(crate) fn visible_row(&self, position: usize) -> Option<&Subscription> {
        self.table.row_at(self.list.value(), position)
    }

    pub(crate) fn selected_index(&self) -> Option<usize> {
        self.table.selected_position()
    }

    pub(crate) fn selected(&self) -> Option<&Subscription> {
        self.table.selected(self.list.value())
    }

    pub(crate) fn is_pending(&self, id: &str) -> bool {
        self.pending.contains(id)
    }

    /// A form holds input that quitting would lose.
    pub(crate) fn is_dirty(&self) -> bool {
        match &self.modal {
            Some(Modal::Create(form)) => form.is_dirty(),
            Some(Modal::Rotate(dialog)) => dialog.is_dirty(),
            Some(Modal::Edit(form)) => form.is_dirty(),
            Some(Modal::Secret(_)) => true,
            _ => false,
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        match &self.modal {
            Some(Modal::Create(form)) if form.confirm_discard => Mode::ConfirmDiscard,
            Some(Modal::Create(form)) => Mode::Create {
                text: form.focus.is_text(),
            },
            Some(Modal::Delete(_)) => Mode::Delete,
            Some(Modal::Rotate(dialog)) => Mode::Rotate {
                stage: dialog.stage,
                text: dialog.captures_text(),
            },
            Some(Modal::Secret(_)) => Mode::Secret,
            Some(Modal::Edit(form)) => Mode::Edit {
                text: form.focus.is_text(),
            },
            None if self.table.prompting() => Mode::Filter,
            None => match self.view {
                View::Table => Mode::Table,
                View::Detail => Mode::Detail,
            },
        }
    }

    // ---- helpers ------------------------------------------------------

    fn move_focus(&mut self, forward: bool) {
        match &mut self.modal {
            Some(Modal::Create(form)) => {
                form.focus = if forward {
                    form.focus.next()
                } else {
                    form.focus.prev()
                };
            }
            Some(Modal::Rotate(dialog)) => dialog.toggle_current(),
            Some(Modal::Edit(form)) => form.move_focus(forward),
            _ => {}
        }
    }

    fn pause_resume(&mut self, out: &mut Outcome) {
        let Some(row) = self.selected() else {
            return;
        };
        let id = row.id.clone();
        if self.pending.contains(&id) {
            out.toast = Some(format!("{} is still being updated", short_id(&id)));
            return;
        }
        let patch = SubscriptionPatch {
            enabled: Some(!row.enabled),
            ..SubscriptionPatch::default()
        };
        self.pending.insert(id.clone());
        out.effects.push(SubsEffect::Patch { id, patch });
    }

    fn submit(&mut self, out: &mut Outcome) {
        let policy = self.url_policy;
        let generate = self.generate;
        match &mut self.modal {
            Some(Modal::Create(form)) if !form.submitting => {
                if let Some(ready) = form.submit(policy, &generate) {
                    form.submitting = true;
                    form.generated = ready.generated;
                    out.effects.push(SubsEffect::Create(ready.request));
                }
            }
            Some(Modal::Delete(dialog)) if !dialog.submitting => {
                if dialog.confirmed() {
                    dialog.submitting = true;
                    dialog.error = None;
                    out.effects.push(SubsEffect::Delete {
                        id: dialog.id.clone(),
                    });
                } else {
                    dialog.error = Some(format!("type {} exactly to delete", dialog.short));
                }
            }
            Some(Modal::Rotate(dialog)) => dialog.submit(&generate, out),
            Some(Modal::Edit(form)) => form.submit(policy, out),
            Some(Modal::Secret(_)) => self.modal = None,
            _ => {}
        }
    }

    fn cancel(&mut self, out: &mut Outcome) {
        match &mut self.modal {
            Some(Modal::Create(form)) if form.submitting => {
                out.toast = Some("waiting for the platform to answer…".into());
            }
            Some(Modal::Delete(dialog)) if dialog.submitting => {
                out.toast = Some("waiting for the platform to answer…".into());
            }
            Some(Modal::Edit(form)) if form.submitting => {
                out.toast = Some("waiting for the platform to answer…".into());
            }
            Some(Modal::Rotate(dialog)) if dialog.submitting => {
                // The new secret is on its way: closing now would lose it.
                out.toast = Some("waiting for the platform to answer…".into());
            }
            Some(Modal::Rotate(dialog))
                if dialog.stage == Stage::Check && dialog.editing_current =>
            {
                dialog.editing_current = false;
            }
            Some(Modal::Rotate(dialog)) => {
                if dialog.stage == Stage::Watch {
                    out.effects.push(SubsEffect::StopRotationWatch);
                }
                self.modal = None;
            }
            Some(Modal::Create(form)) if form.is_dirty() => form.confirm_discard = true,
            _ => self.modal = None,
        }
    }

    /// The newest change earshot made to each subscription, from the
    /// incident-history store (the Health board's read hands them over).
    pub(crate) fn set_changes(&mut self, changes: Vec<(String, LatestChange)>) {
        self.changes = changes;
    }

    pub(crate) fn latest_change(&self, id: &str) -> Option<&LatestChange> {
        self.changes
            .iter()
            .find(|(of, _)| of == id)
            .map(|(_, change)| change)
    }

    /// `:sub ID`: the table filtered to `id` and, when one row is left,
    /// its detail open; whether a row matched.
    pub(crate) fn show(&mut self, id: &str) -> bool {
        self.modal = None;
        self.table.prompt = None;
        // An id is free text: it matches the ID column (a word with a
        // colon that is no field matches nothing).
        if self.table.set_filter(id, self.list.value()).is_err() {
            return false;
        }
        self.table.reset();
        self.view = if self.table.len() == 1 {
            View::Detail
        } else {
            View::Table
        };
        !self.table.is_empty()
    }

    /// The order again after the rows changed; the selection goes to
    /// `keep` if it is still shown, else stays inside the table.
    fn refilter(&mut self, keep: Option<String>) {
        self.table.refresh(self.list.value(), keep);
    }
}

impl Pane for SubscriptionsPane {
    type Command = SubsCommand;
    type Result = SubsResult;
    type Effect = SubsEffect;
    const TITLE: &'static str = "Subscriptions";
    const SHORT_TITLE: &'static str = "Subs";
    const NAMES: &'static [&'static str] = &["subs", "sub", "subscriptions"];
    const CALLS_PLATFORM: bool = true;
    const JUMP: Option<Jump> = Some(Jump {
        usage: ":sub ID",
        names: &["sub", "subs"],
        description: "a subscription by id or prefix, its detail open",
        help_order: 1,
    });

    fn create(config: &ConsoleConfig) -> SubscriptionsPane {
        SubscriptionsPane::new(config.url_policy)
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, read_only: bool) {
        view::draw(frame, area, self, theme, read_only);
    }

    /// A platform call finished (`results.rs`).
    fn on_result(&mut self, result: SubsResult, out: &mut Outcome) {
        self.take_result(result, out);
    }

    /// `:sub ID`: the table filtered to `id`, its detail open when one row
    /// is left.
    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        if !self.show(id) {
            out.toast = Some(format!("no subscription matches {id}"));
        }
    }

    /// Every command of the pane, grouped for the help overlay.
    fn help_sections() -> Vec<CommandSection<SubsCommand>> {
        let section = |title, commands| CommandSection { title, commands };
        vec![
            section("Subscriptions", table_commands(true, true)),
            section("Detail", detail_commands()),
            section("Filter (typing)", filter_commands()),
            section("New subscription form", form_commands(true)),
            section("Delete dialog", delete_commands()),
            section("Edit dialog", edit_commands(true)),
            // The check has every key of the dialog; the other steps are
            // `enter` and `esc`, as their footers say.
            section(
                "Rotate dialog (step 2: check)",
                rotate_commands(Stage::Check, false),
            ),
            section("New secret (shown once)", secret_commands()),
        ]
    }

    /// The first load, and the change log's baseline.
    fn init(&mut self, out: &mut Outcome) {
        self.refresh(out);
        out.effects.push(SubsEffect::NewestChange);
    }

    /// Loads the list again, superseding a load still running.
    fn refresh(&mut self, out: &mut Outcome) {
        self.refresh_list(out);
    }

    /// The list's age moves on, and the change log is watched.
    fn wants_tick(&self) -> bool {
        true
    }

    /// Asks for the newest change every [`freshness::WATCH_EVERY`], reads
    /// the list again every [`freshness::LIST_EVERY`]; redraws when the
    /// age's words change (once a second at most).
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        if self.changes_seen.due(at) {
            out.effects.push(SubsEffect::NewestChange);
        }
        let listed_long_ago = self
            .list
            .succeeded_at()
            .is_some_and(|listed| at.saturating_duration_since(listed) >= freshness::LIST_EVERY);
        if listed_long_ago && !self.list.loading() {
            self.refresh_list(out);
        }
        let before = self.age_words();
        self.clock = at;
        self.age_words() != before
    }

    fn run(&mut self, command: SubsCommand, out: &mut Outcome) {
        use SubsCommand::*;
        match command {
            Move(to) => self.table.apply(to),
            Open => {
                if self.selected().is_some() {
                    self.view = View::Detail;
                }
            }
            Back => self.view = View::Table,
            Table(command) => self.table.run(command, self.list.value()),
            ToggleDisabled => {
                self.include_disabled = !self.include_disabled;
                out.toast = Some(if self.include_disabled {
                    "showing paused subscriptions".into()
                } else {
                    "hiding paused subscriptions".into()
                });
                self.refresh(out);
            }
            New => self.modal = Some(Modal::Create(Box::default())),
            PauseResume => self.pause_resume(out),
            Rotate => {
                if let Some(row) = self.selected() {
                    self.modal = Some(Modal::Rotate(Box::new(RotateForm::new(row))));
                }
            }
            Delete => {
                if let Some(row) = self.selected() {
                    self.modal = Some(Modal::Delete(DeleteConfirm::new(row)));
                }
            }
            Edit => {
                if let Some(row) = self.selected() {
                    self.modal = Some(Modal::Edit(Box::new(EditForm::new(row))));
                }
            }
            CopyId => {
                if let Some(row) = self.selected() {
                    out.console.push(ConsoleEffect::Copy {
                        what: "id",
                        text: SecretString::new(row.id.clone()),
                    });
                    out.toast = Some(format!("copied id {} to the clipboard", row.id));
                }
            }
            NextField | PrevField => self.move_focus(command == NextField),
            ToggleEvent => match &mut self.modal {
                Some(Modal::Create(form)) => {
                    form.toggle_focused_event();
                    form.changed(self.url_policy);
                }
                Some(Modal::Edit(form)) => form.toggle_focused_event(),
                _ => {}
            },
            Submit => self.submit(out),
            Cancel => self.cancel(out),
            CopySecret => {
                let secret = match &mut self.modal {
                    Some(Modal::Secret(shown)) => {
                        shown.copied = true;
                        Some(shown.secret.clone())
                    }
                    Some(Modal::Rotate(dialog)) => {
                        dialog.copied = dialog.new_secret.is_some();
                        dialog.new_secret.clone()
                    }
                    _ => None,
                };
                if let Some(text) = secret {
                    out.console.push(ConsoleEffect::Copy {
                        what: "secret",
                        text,
                    });
                    out.toast = Some("copied the new secret to the clipboard".into());
                }
            }
            SkipCheck => {
                if let Some(Modal::Rotate(dialog)) = &mut self.modal {
                    dialog.skip_check();
                }
            }
            DiscardYes => self.modal = None,
            DiscardNo => {
                if let Some(Modal::Create(form)) = &mut self.modal {
                    form.confirm_discard = false;
                }
            }
        }
    }

    /// A request of this pane is in flight.
    fn busy(&self) -> bool {
        self.list.loading()
            || !self.pending.is_empty()
            || match &self.modal {
                Some(Modal::Create(form)) => form.submitting,
                Some(Modal::Delete(dialog)) => dialog.submitting,
                Some(Modal::Rotate(dialog)) => dialog.submitting,
                Some(Modal::Edit(form)) => form.submitting,
                _ => false,
            }
    }

    /// The commands of the current mode (before read-only filtering).
    fn commands(&self) -> Vec<CommandInfo<SubsCommand>> {
        match self.mode() {
            Mode::Table => table_commands(self.table.filtering(), self.selected().is_some()),
            Mode::Detail => detail_commands(),
            Mode::Filter => filter_commands(),
            Mode::Create { text } => form_commands(!text),
            Mode::ConfirmDiscard => discard_commands(),
            Mode::Delete => delete_commands(),
            Mode::Rotate { stage, text } => rotate_commands(stage, text),
            Mode::Secret => secret_commands(),
            Mode::Edit { text } => edit_commands(!text),
        }
    }

    fn holds_typed_input(&self) -> bool {
        self.is_dirty()
    }

    /// Whether the global commands (pane switching, `q`, `:` …) apply.
    fn allows_global(&self) -> bool {
        matches!(self.mode(), Mode::Table | Mode::Detail)
    }

    /// Whether keys not bound to a command are typed into a field.
    fn captures_text(&self) -> bool {
        matches!(
            self.mode(),
            Mode::Filter
                | Mode::Create { text: true }
                | Mode::Delete
                | Mode::Rotate { text: true, .. }
                | Mode::Edit { text: true }
        )
    }

    /// A key no command claimed, typed into the field that has the keyboard.
    fn type_key(&mut self, key: &KeyEvent) {
        let policy = self.url_policy;
        match &mut self.modal {
            Some(Modal::Create(form)) if !form.submitting => {
                if let Some(input) = form.focused_input()
                    && text::type_key(input, key)
                {
                    form.changed(policy);
                }
            }
            Some(Modal::Delete(dialog)) if !dialog.submitting => {
                text::type_key(&mut dialog.input, key);
                dialog.error = None;
            }
            Some(Modal::Rotate(dialog)) => {
                if let Some(input) = dialog.focused_input() {
                    text::type_key(input, key);
                    dialog.error = None;
                }
            }
            Some(Modal::Edit(form)) if !form.submitting => {
                if let Some(input) = form.focused_input() {
                    text::type_key(input, key);
                }
            }
            None if self.table.prompting() => self.table.type_key(key, self.list.value()),
            _ => {}
        }
    }

    /// Pasted text, into the field that has the keyboard.
    fn paste(&mut self, pasted: &str) {
        let policy = self.url_policy;
        match &mut self.modal {
            Some(Modal::Create(form)) if !form.submitting => {
                if let Some(input) = form.focused_input()
                    && text::paste(input, pasted)
                {
                    form.changed(policy);
                }
            }
            Some(Modal::Delete(dialog)) if !dialog.submitting => {
                text::paste(&mut dialog.input, pasted);
            }
            Some(Modal::Rotate(dialog)) => {
                if let Some(input) = dialog.focused_input() {
                    text::paste(input, pasted);
                }
            }
            Some(Modal::Edit(form)) if !form.submitting => {
                if let Some(input) = form.focused_input() {
                    text::paste(input, pasted);
                }
            }
            None if self.table.prompting() => self.table.paste(pasted, self.list.value()),
            _ => {}
        }
    }

    fn would_lose(&self) -> Vec<String> {
        let mut losing = Vec::new();
        if self.holds_typed_input() {
            losing.push("the subscription form (typed input, or a secret shown once)".to_owned());
        }
        if let Some(Modal::Rotate(dialog)) = &self.modal
            && dialog.stage == Stage::Watch
        {
            losing.push("the watch after the rotation (it stops)".into());
        }
        losing
    }

    fn receive(&mut self, message: &Handover, _out: &mut Outcome) -> Received {
        match message {
            Handover::SubscriptionChanges(changes) => {
                self.set_changes(changes.clone());
                Received::Kept
            }
            _ => Received::Ignored,
        }
    }
}

