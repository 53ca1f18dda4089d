//! The Deliveries pane: every delivery attempt of one session or call.
//!
//! Owns the id prompt (`i`: the ids loaded recently, then every session
//! the incident history knows, narrowed by what is typed; `enter` loads
//! the highlighted one, and only an id that loaded is remembered), the
//! attempts table (all attempts, or the latest per subscription; `/`
//! filters and `S` sorts it as every table, `table.rs` its columns), the
//! detail view with
//! its retry verdict and likely causes, and the auto-refresh while a
//! retry is still to come. Loads are [`DeliveriesEffect::Load`], answered
//! by [`DeliveriesResult`]; a newer load supersedes an older one by
//! sequence number. Above the attempts, the session record
//! ([`SessionView`]): status, event times, artifacts and their links'
//! expiry (counting down only while the pane is on screen), a key to copy
//! a link with OSC 52 and one to reveal the caller's number, masked
//! otherwise. Read-only: nothing here changes the platform.
//! Drawing is in `view.rs`, the retry rules in [`verdict`].

mod commands;
mod live;
pub(crate) mod table;
pub(crate) mod tasks;
pub(crate) use earshot_core::api::delivery_verdict as verdict;
pub(crate) mod view;

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, ConsoleEffect, Failure, Handover, Jump, Pane, Received, RefusedDelivery};
use tasks::DeliveriesEffect;
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::load::Load;
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::Theme;
use crate::tui::widgets::age;
use crate::tui::widgets::input as text;
use crate::tui::widgets::table_view::{TableCommand, TableView, prompt_commands, wrapped};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::history::session_view::SessionView;
use earshot_core::redact::SecretString;

use commands::{detail_commands, id_prompt_commands, table_commands};
use live::Liveness;

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<DeliveriesEffect>;

/// Most recently viewed ids kept.
pub(crate) const RECENT_MAX: usize = 20;
/// Most ids the prompt lists at once (type to narrow them).
const CHOICES_MAX: usize = 1_000;
/// How often the attempts are loaded again while a retry is to come.
pub(crate) const REFRESH_EVERY: Duration = Duration::from_secs(2);

/// Results of the Deliveries pane's platform calls.
#[derive(Clone, Debug)]
pub(crate) enum DeliveriesResult {
    /// `seq` identifies the load; a superseded load's answer is dropped.
    Loaded {
        seq: u64,
        result: Result<Vec<DeliveryRecord>, Failure>,
    },
    /// The session record with the stored events, put together; sent after
    /// each load's attempts, under the same `seq`.
    Session {
        seq: u64,
        id: String,
        result: Result<Box<earshot_core::history::session_view::SessionView>, Failure>,
    },
    /// When the platform gave up on this account, as the store shows it;
    /// sent after each load, under the same `seq`.
    GiveUp { seq: u64, text: String },
    /// The sessions the incident history knows, for the prompt.
    Known(Vec<String>),
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DlvCommand {
    /// Through the table (or the detail's rows).
    Move(Move),
    /// Table → detail.
    Open,
    /// Detail → table.
    Back,
    /// Open the id prompt.
    Prompt,
    /// Load the id typed (or picked).
    PromptSubmit,
    PromptCancel,
    RecentUp,
    RecentDown,
    /// All attempts ↔ the latest per subscription.
    ToggleLatest,
    /// Hand the selected 401 failure to the Signatures pane.
    CheckSignature,
    /// Copy the session's next link (recording, then transcript) with
    /// OSC 52.
    CopyLink,
    /// Show or mask the caller's number.
    RevealNumber,
    /// `/`, `S` and the filter prompt.
    Table(TableCommand),
}

/// Table or detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Table,
    Detail,
}

/// What has the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The id prompt.
    Prompt,
    /// The table's `/` prompt.
    Filter,
    Table,
    Detail,
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct DeliveriesPane {
    /// The session or call id on screen.
    pub(crate) id: Option<String>,
    /// The last id added to the incident history's known sessions.
    remembered: Option<String>,
    /// The attempts of `id`, as last loaded.
    pub(crate) list: Load<Vec<DeliveryRecord>>,
    /// What makes `rows` live, kept with them (see [`Self::live`]).
    liveness: Liveness,
    /// The filter, the sort, the order and the selection in it.
    pub(crate) table: TableView<DeliveryRecord>,
    /// Showing `/latest` rather than every attempt.
    pub(crate) latest: bool,
    pub(crate) prompt: Input,
    pub(crate) prompting: bool,
    /// Ids that loaded recently, most recent first.
    recent: Vec<String>,
    /// Every session the incident history knows, most recently active
    /// first (offered after the recent ones).
    known: Vec<String>,
    /// What was typed in the prompt (not what ↑↓ put there): it narrows
    /// the ids offered.
    typed: String,
    /// The recent id picked with ↑↓, if any.
    pub(crate) recent_selected: Option<usize>,
    pub(crate) view: View,
    /// When the last load was issued (the auto-refresh's pace).
    last_load: Option<Instant>,
    /// Wall-clock time countdowns are drawn from; moved on by the tick.
    pub(crate) now: DateTime<Utc>,
    clock: fn() -> DateTime<Utc>,
    /// The last tick: the attempts' age is drawn from it.
    pub(crate) ticked: Instant,
    /// The session record of the id on screen, once loaded.
    session: Option<Box<SessionView>>,
    /// Why the session record could not be loaded.
    pub(crate) session_error: Option<String>,
    /// When the platform gave up on this account (`store::give_up`), said
    /// beside a retrying attempt; empty until read.
    pub(crate) give_up: String,
    /// The caller's number shown in full (the operator asked).
    pub(crate) reveal_number: bool,
    /// The link `c` copies next (cycles through the session's links).
    next_link: usize,
}

impl Default for DeliveriesPane {
    fn default() -> Self {
        DeliveriesPane::new()
    }
}

impl DeliveriesPane {
    pub(crate) fn new() -> DeliveriesPane {
        DeliveriesPane {
            id: None,
            remembered: None,
            list: Load::new(),
            liveness: Liveness::default(),
            table: TableView::new(&table::TABLE),
            latest: false,
            prompt: Input::default(),
            prompting: false,
            recent: Vec::new(),
            known: Vec::new(),
            typed: String::new(),
            recent_selected: None,
            view: View::Table,
            last_load: None,
            now: Utc::now(),
            clock: Utc::now,
            ticked: Instant::now(),
            session: None,
            session_error: None,
            give_up: String::new(),
            reveal_number: false,
            next_link: 0,
        }
    }

    /// Replaces the wall clock (tests and snapshots use a fixed one).
    pub(crate) fn with_clock(mut self, clock: fn() -> DateTime<Utc>) -> Self {
        self.clock = clock;
        self.now = clock();
        self
    }

    /// Remembers ids viewed elsewhere (the demo's latest conversations),
    /// most recent first; with no id on screen yet, the first becomes it
    /// and the first load (`init`) fetches it.
    pub(crate) fn seed_recent(&mut self, ids: Vec<String>) {
        for id in ids.into_iter().rev() {
            self.remember(&id);
        }
        if self.id.is_none() {
            self.id = self.recent.first().cloned();
        }
    }

    #[cfg(test)]
    pub(crate) fn recent(&self) -> &[String] {
        &self.recent
    }

    /// The sessions the incident history knows (the worker reads them).
    pub(crate) fn set_known(&mut self, ids: Vec<String>) {
        self.known = ids;
    }

    /// The ids the prompt offers: recent ones, then known ones, each once,
    /// narrowed to those containing what was typed (case-insensitive).
    pub(crate) fn choices(&self) -> Vec<&str> {
        let needle = self.typed.trim().to_ascii_lowercase();
        let mut seen = std::collections::HashSet::new();
        self.recent
            .iter()
            .chain(&self.known)
            .map(String::as_str)
            .filter(|id| needle.is_empty() || id.to_ascii_lowercase().contains(&needle))
            .filter(|id| seen.insert(*id))
            .take(CHOICES_MAX)
            .collect()
    }

    /// Rows as if just loaded for `id` (fixtures for tests and snapshots).
    #[cfg(test)]
    pub(crate) fn set_rows(&mut self, id: &str, rows: Vec<DeliveryRecord>) {
        self.id = Some(id.to_owned());
        self.liveness = Liveness::of(&rows);
        let mut shown = std::mem::take(self.list.value_mut());
        self.table.replace(&mut shown, rows);
        self.list.set(shown);
    }

    /// The session record as if just loaded (fixtures for tests and
    /// snapshots).
    #[cfg(test)]
    pub(crate) fn set_session(&mut self, view: SessionView) {
        self.session = Some(Box::new(view));
        self.session_error = None;
    }

    pub(crate) fn session(&self) -> Option<&SessionView> {
        self.session.as_deref()
    }

    pub(crate) fn rows(&self) -> &[DeliveryRecord] {
        self.list.value()
    }

    /// The selected row's position in the table (as filtered and sorted).
    pub(crate) fn selected_index(&self) -> Option<usize> {
        self.table.selected_position()
    }

    pub(crate) fn selected(&self) -> Option<&DeliveryRecord> {
        self.table.selected(self.list.value())
    }

    pub(crate) fn mode(&self) -> Mode {
        if self.prompting {
            Mode::Prompt
        } else if self.table.prompting() {
            Mode::Filter
        } else if self.view == View::Detail && self.selected().is_some() {
            Mode::Detail
        } else {
            Mode::Table
        }
    }

    /// The selected attempt is a 401 the Signatures pane can explain.
    pub(crate) fn selected_is_signature_rejection(&self) -> bool {
        self.selected().is_some_and(is_signature_rejection)
    }

    /// An attempt is pending or a retry is (about to be) due: the
    /// attempts are loaded again and countdowns move. Asked on every frame
    /// and loop pass, so it reads the summary kept when the rows change
    /// rather than scanning them: constant time at any row count.
    pub(crate) fn live(&self) -> bool {
        self.liveness.live_at(self.now)
    }

    /// The period the data's age is judged against: the refresh period
    /// while the pane refreshes itself; none once nothing more is to come
    /// (a finished session is not "stale", it is as of when it was read).
    pub(crate) fn age_period(&self) -> Duration {
        if self.live() {
            REFRESH_EVERY
        } else {
            crate::tui::widgets::age::NOT_REFRESHED
        }
    }

    // ---- update -------------------------------------------------------

    /// What the session block says of each link's expiry now.
    fn countdown_words(&self) -> Vec<String> {
        self.session()
            .map(|view| {
                view.links
                    .iter()
                    .map(|link| link.expiry(self.now))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Copies the next link of the session (recording, then transcript,
    /// then around again) to the clipboard with OSC 52.
    fn copy_link(&mut self, out: &mut Outcome) {
        let Some(view) = self.session.as_deref() else {
            return;
        };
        if view.links.is_empty() {
            out.toast = Some("no link to copy: the session has none yet".into());
            return;
        }
        let link = &view.links[self.next_link % view.links.len()];
        self.next_link = (self.next_link + 1) % view.links.len();
        out.console.push(ConsoleEffect::Copy {
            what: "link",
            text: SecretString::new(link.url.clone()),
        });
        let warning = if link.expired(self.now) {
            " (it has expired)"
        } else {
            ""
        };
        out.toast = Some(format!(
            "copied the {} link{warning} to the clipboard",
            link.kind
        ));
    }

    // ---- helpers ------------------------------------------------------

    /// Shows `id` (from another pane), loading its attempts.
    pub(crate) fn open(&mut self, id: String, out: &mut Outcome) {
        self.open_id(id, out);
    }

    fn open_id(&mut self, id: String, out: &mut Outcome) {
        if self.id.as_deref() != Some(id.as_str()) {
            self.session = None;
            self.session_error = None;
            self.reveal_number = false;
            self.next_link = 0;
            self.list.reset();
            self.liveness = Liveness::default();
            self.table.refresh(self.list.value(), None);
            self.table.reset();
        }
        self.id = Some(id);
        self.view = View::Table;
        self.refresh(out);
    }

    /// Puts `id` first in the recent list (no duplicates, at most
    /// [`RECENT_MAX`]).
    fn remember(&mut self, id: &str) {
        let id = id.trim();
        if id.is_empty() {
            return;
        }
        self.recent.retain(|known| known != id);
        self.recent.insert(0, id.to_owned());
        self.recent.truncate(RECENT_MAX);
    }

    /// The id `enter` loads from the list: the one picked with ↑↓, else,
    /// once typing has narrowed the list, the one typed exactly or the
    /// first; none before anything is typed.
    pub(crate) fn highlighted(&self) -> Option<usize> {
        if self.recent_selected.is_some() {
            return self.recent_selected;
        }
        let typed = self.typed.trim();
        if typed.is_empty() {
            return None;
        }
        let choices = self.choices();
        if choices.is_empty() {
            return None;
        }
        Some(
            choices
                .iter()
                .position(|id| id.eq_ignore_ascii_case(typed))
                .unwrap_or(0),
        )
    }

    fn pick_recent(&mut self, down: bool) {
        let choices = self.choices();
        let Some(last) = choices.len().checked_sub(1) else {
            return;
        };
        let next = match (self.highlighted(), down) {
            (None, _) => 0,
            (Some(at), true) => (at + 1).min(last),
            (Some(at), false) => at.saturating_sub(1),
        };
        let picked = choices[next].to_owned();
        self.recent_selected = Some(next);
        self.prompt = Input::new(picked);
    }
}

impl Pane for DeliveriesPane {
    type Command = DlvCommand;
    type Result = DeliveriesResult;
    type Effect = DeliveriesEffect;
    const TITLE: &'static str = "Deliveries";
    const SHORT_TITLE: &'static str = "Dlv";
    const NAMES: &'static [&'static str] = &["deliveries", "dlv", "del"];
    const CALLS_PLATFORM: bool = true;
    const JUMP: Option<Jump> = Some(Jump {
        usage: ":session ID",
        names: &["session", "call", "ses"],
        description: "a session's or call's delivery attempts",
        help_order: 2,
    });

    fn create(_: &ConsoleConfig) -> DeliveriesPane {
        DeliveriesPane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    /// `:session ID`: that session's or call's attempts.
    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        self.open(id.to_owned(), out);
    }

    /// Whether the tick should run for this pane (the app asks only while
    /// the pane is on screen): retries to come, or links counting down.
    /// With an id on screen, its attempts' age moves on too.
    fn wants_tick(&self) -> bool {
        self.id.is_some()
    }

    fn help_sections() -> Vec<CommandSection<DlvCommand>> {
        let section = |title, commands| CommandSection { title, commands };
        vec![
            section(
                "Deliveries",
                table_commands(true, true, true, true, true, true),
            ),
            section("Attempt detail", detail_commands(true)),
            section("Id prompt (typing)", id_prompt_commands()),
            section(
                "Filter (typing)",
                wrapped(prompt_commands(), DlvCommand::Table),
            ),
        ]
    }

    /// The first load, when an id was seeded.
    fn init(&mut self, out: &mut Outcome) {
        if self.id.is_some() {
            self.refresh(out);
        }
    }

    /// Loads the attempts of the id on screen again, superseding a load
    /// still running.
    fn refresh(&mut self, out: &mut Outcome) {
        let Some(id) = self.id.clone() else {
            out.toast = Some("no id yet: press i to enter a session or call id".into());
            return;
        };
        self.last_load = Some(Instant::now());
        if self.remembered.as_deref() != Some(id.as_str()) {
            self.remembered = Some(id.clone());
            out.effects
                .push(DeliveriesEffect::Remember { id: id.clone() });
        }
        out.effects.push(DeliveriesEffect::Load {
            seq: self.list.start(),
            id,
            latest: self.latest,
        });
    }

    /// The clock: moves countdowns on and reloads every [`REFRESH_EVERY`]
    /// while something is live. Whether the pane needs a redraw.
    /// With only links counting down, it redraws when their words change
    /// (once a minute, once a second in the last minute), not every tick.
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        let before = self.countdown_words();
        let aged = age::moved(&self.list, self.ticked, at, self.age_period());
        self.ticked = at;
        self.now = (self.clock)();
        let live = self.id.is_some() && self.live();
        if live
            && self
                .last_load
                .is_none_or(|last| at.saturating_duration_since(last) >= REFRESH_EVERY)
        {
            self.refresh(out);
        }
        live || aged || self.countdown_words() != before
    }

    fn run(&mut self, command: DlvCommand, out: &mut Outcome) {
        use DlvCommand::*;
        match command {
            Move(to) => self.table.apply(to),
            Table(command) => self.table.run(command, self.list.value()),
            Open => {
                if self.selected().is_some() {
                    self.now = (self.clock)();
                    self.view = View::Detail;
                }
            }
            Back => self.view = View::Table,
            Prompt => {
                self.prompting = true;
                self.prompt.reset();
                self.typed.clear();
                self.recent_selected = None;
                out.effects.push(DeliveriesEffect::LoadKnownSessions);
            }
            PromptCancel => self.prompting = false,
            RecentUp | RecentDown => self.pick_recent(command == RecentDown),
            PromptSubmit => {
                // What the list below has narrowed to and highlights, else
                // what was typed.
                let id = match self.highlighted() {
                    Some(at) => self.choices().get(at).map(|id| (*id).to_owned()),
                    None => None,
                }
                .unwrap_or_else(|| self.prompt.value().trim().to_owned());
                if id.is_empty() {
                    out.toast = Some("type a session or call id, or pick one with ↑↓".into());
                    return;
                }
                self.prompting = false;
                self.open_id(id, out);
            }
            CheckSignature => {
                if let Some(record) = self.selected().filter(|r| is_signature_rejection(r)) {
                    out.then = Some(signature_handover(record));
                }
            }
            CopyLink => self.copy_link(out),
            RevealNumber => {
                if self
                    .session()
                    .is_some_and(|view| view.from_number.is_some())
                {
                    self.reveal_number = !self.reveal_number;
                    out.toast = Some(if self.reveal_number {
                        "showing the caller's number (personal data): n masks it".into()
                    } else {
                        "caller's number masked".into()
                    });
                }
            }
            ToggleLatest => {
                if self.id.is_some() {
                    self.latest = !self.latest;
                    out.toast = Some(if self.latest {
                        "showing the latest attempt per subscription".into()
                    } else {
                        "showing every attempt".into()
                    });
                    self.view = View::Table;
                    self.refresh(out);
                }
            }
        }
    }

    /// A load finished.
    fn on_result(&mut self, result: DeliveriesResult, out: &mut Outcome) {
        match result {
            DeliveriesResult::Known(ids) => self.set_known(ids),
            DeliveriesResult::Loaded { seq, result, .. } => {
                let (table, liveness) = (&mut self.table, &mut self.liveness);
                let answer = self.list.finish_with(seq, result, |rows, fresh| {
                    *liveness = Liveness::of(&fresh);
                    table.replace(rows, fresh);
                });
                let Some(answer) = answer else { return };
                self.now = (self.clock)();
                match answer {
                    Ok(()) => {
                        // Only an id that loaded is offered again.
                        if let Some(id) = self.id.clone() {
                            self.remember(&id);
                        }
                        out.succeeded = true;
                    }
                    Err(failure) => out.failure = Some(failure),
                }
            }
            DeliveriesResult::Session { seq, id, result } => {
                if !self.list.is_current(seq) || self.id.as_deref() != Some(id.as_str()) {
                    return;
                }
                self.now = (self.clock)();
                match result {
                    Ok(view) => {
                        self.session = Some(view);
                        self.session_error = None;
                    }
                    // The attempts still show; the block says why it is empty.
                    Err(failure) => self.session_error = Some(failure.message),
                }
            }
            DeliveriesResult::GiveUp { seq, text } => {
                if self.list.is_current(seq) {
                    self.give_up = text;
                }
            }
        }
    }

    fn busy(&self) -> bool {
        self.list.loading()
    }

    fn commands(&self) -> Vec<CommandInfo<DlvCommand>> {
        match self.mode() {
            Mode::Prompt => id_prompt_commands(),
            Mode::Filter => wrapped(prompt_commands(), DlvCommand::Table),
            Mode::Table => table_commands(
                self.selected().is_some(),
                self.table.filtering(),
                self.id.is_some(),
                self.selected_is_signature_rejection(),
                self.session().is_some_and(|view| !view.links.is_empty()),
                self.session()
                    .is_some_and(|view| view.from_number.is_some()),
            ),
            Mode::Detail => detail_commands(self.selected_is_signature_rejection()),
        }
    }

    fn allows_global(&self) -> bool {
        !matches!(self.mode(), Mode::Prompt | Mode::Filter)
    }

    fn captures_text(&self) -> bool {
        matches!(self.mode(), Mode::Prompt | Mode::Filter)
    }

    /// A key no command claimed, typed into the prompt.
    fn type_key(&mut self, key: &KeyEvent) {
        if self.prompting {
            if text::type_key(&mut self.prompt, key) {
                self.typed = self.prompt.value().to_owned();
                self.recent_selected = None;
            }
        } else {
            self.table.type_key(key, self.list.value());
        }
    }

    fn paste(&mut self, pasted: &str) {
        if self.prompting {
            if text::paste(&mut self.prompt, pasted) {
                self.typed = self.prompt.value().to_owned();
                self.recent_selected = None;
            }
        } else {
            self.table.paste(pasted, self.list.value());
        }
    }

    fn would_lose(&self) -> Vec<String> {
        if self.prompting && !self.prompt.value().trim().is_empty() {
            vec!["the Deliveries prompt".into()]
        } else {
            Vec::new()
        }
    }

    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        match message {
            Handover::OpenInDeliveries(id) => {
                self.open(id.clone(), out);
                Received::Shown
            }
            Handover::RecentSessions(ids) => {
                self.seed_recent(ids.clone());
                Received::Kept
            }
            _ => Received::Ignored,
        }
    }
}

/// A receiver answered 401: per the troubleshooting table, a signature
/// the receiver could not verify.
fn is_signature_rejection(record: &DeliveryRecord) -> bool {
    record.status == DeliveryStatus::Failed && record.http_status_code == Some(401)
}

/// What the Signatures pane gets for a 401 attempt: the attempt, so it
/// loads the observer's copy of its event and asks the receiver (the
/// platform does not return a delivery's header; the Inbox's capture of
/// it, when earshot's own receiver got it, fills the header in).
fn signature_handover(record: &DeliveryRecord) -> Handover {
    Handover::OpenInSignatures {
        header: None,
        body: None,
        secret_hint: Some(format!(
            "subscription {}'s receiver refused delivery {} (attempt {}) with 401",
            short_id(&record.subscription_id),
            short_id(&record.id),
            record.attempt_count,
        )),
        delivery_id: Some(record.id.clone()),
        refused: Some(RefusedDelivery {
            subscription_id: record.subscription_id.clone(),
            session_id: record.session_id.clone(),
            event_id: None,
            delivery_id: Some(record.id.clone()),
        }),
    }
}

