//! The console's state ([`App`]) and its one `update` (The Elm
//! Architecture): an [`Action`] in, state changed, [`Effect`]s out.
//!
//! Owns what is common to every pane: which pane is on screen, the
//! overlays (help, `:` prompt, quit question), the toast, the quit flag
//! and the `dirty` flag the event loop draws by; the status bar's facts
//! are in `status.rs`, the keys and help of what is on screen in
//! `keys.rs`. The panes themselves are reached through their trait
//! ([`AnyPane`], the kernel's `Pane`): [`Panes`] (`panes.rs`, from the
//! registry) holds a field per pane and the dispatch from a [`PaneId`], a
//! pane's command or its result to it, so nothing here lists the panes.
//! `update` never blocks and never does I/O.

mod any_pane;
mod keys;
mod panes;
mod status;

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event, KeyEvent, KeyEventKind};
use tui_input::Input;

use super::action::{Action, Effect};
use super::command::Command;
use super::command_line::{self, Typed};
use super::context::Contexts;
use crate::tui::kernel::{self, ConsoleConfig, Failure, Handover, Received};
use crate::tui::keymap;
use crate::tui::panes::PaneId;
use crate::tui::widgets::input as text;

pub(crate) use any_pane::AnyPane;
pub(crate) use panes::{Panes, Routed};
pub(crate) use status::{Connection, Status, Toast};

/// How long a toast stays up.
pub(crate) const TOAST_FOR: Duration = Duration::from_secs(4);

/// Something drawn over the panes.
#[derive(Clone, Debug)]
pub(crate) enum Overlay {
    Help {
        scroll: u16,
    },
    CommandLine(Input),
    /// "A form would be lost: quit anyway?"
    ConfirmQuit,
    /// `:ctx`: the profiles to switch to, `selected` highlighted.
    Profiles {
        selected: usize,
    },
    /// "Switching to `to` loses or stops `losing`: switch anyway?"
    ConfirmSwitch {
        to: String,
        losing: Vec<String>,
    },
}

/// A pane's outcome as the app absorbs it: its effects already the
/// console's.
pub(crate) type Outcome = kernel::Outcome<Effect>;

/// The whole console's state.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) config: ConsoleConfig,
    /// The pane on screen.
    pub(crate) pane: PaneId,
    /// Every pane, one field each (`panes.rs`, from the registry).
    pub(crate) panes: Panes,
    pub(crate) overlay: Option<Overlay>,
    pub(crate) status: Status,
    pub(crate) toast: Option<Toast>,
    /// The profiles `:ctx` switches between, and the account generation.
    pub(crate) ctx: Contexts,
    /// Something changed since the last frame.
    pub(crate) dirty: bool,
    /// The console is to end: the event loop leaves ([`App::quit_now`]).
    pub(crate) quit: bool,
}

impl App {
    pub(crate) fn new(config: ConsoleConfig) -> App {
        let ctx = Contexts {
            forced_read_only: config.read_only,
            ..Contexts::default()
        };
        App {
            panes: Panes::new(&config),
            config,
            pane: PaneId::ALL[0],
            overlay: None,
            status: Status::new(),
            toast: None,
            ctx,
            dirty: true,
            quit: false,
        }
    }

    /// Every pane empty, for the account the config now describes (a
    /// profile switch).
    pub(crate) fn recreate_panes(&mut self) {
        self.panes = Panes::new(&self.config);
    }

    /// The pane `id`.
    pub(crate) fn pane_ref(&self, id: PaneId) -> &dyn AnyPane {
        self.panes.get(id)
    }

    pub(crate) fn pane_mut(&mut self, id: PaneId) -> &mut dyn AnyPane {
        self.panes.get_mut(id)
    }

    /// The one update: a pane's result goes to that pane, any other action
    /// to [`App::handle`]. The answers of platform calls say how the
    /// platform is (the status bar); local work's failures are notices.
    pub(crate) fn update(&mut self, action: Action) -> Vec<Effect> {
        let mut out = Outcome::default();
        match self.panes.on_result(action, &mut out) {
            Routed::Answered(area) => self.absorb(area, out),
            Routed::Other(other) => self.handle(*other),
        }
    }

    /// A command: a pane's own goes to that pane (wherever it is), any
    /// other to [`App::run_global`].
    fn run(&mut self, command: Command) -> Vec<Effect> {
        let mut out = Outcome::default();
        match self.panes.run(command, &mut out) {
            Ok(()) => self.absorb(None, out),
            Err(other) => self.run_global(other),
        }
    }
}

impl App {
    /// The work to start with: every pane's first loads.
    pub(crate) fn init(&mut self) -> Vec<Effect> {
        let mut out = Outcome::default();
        for id in PaneId::ALL {
            self.pane_mut(id).init(&mut out);
        }
        self.absorb(None, out)
    }

    /// Shows a message in the status bar's error slot (e.g. a theme that
    /// could not be loaded).
    pub(crate) fn notice(&mut self, message: impl Into<String>) {
        self.status.notice(Failure::new(message));
        self.dirty = true;
    }

    /// Whether the loop should run its tick: something counts down.
    pub(crate) fn wants_tick(&self) -> bool {
        self.toast.is_some() || self.pane_ref(self.pane).wants_tick()
    }

    /// A request is in flight.
    pub(crate) fn busy(&self) -> bool {
        PaneId::ALL.into_iter().any(|id| self.pane_ref(id).busy())
    }

    /// An action that is not a pane's result.
    fn handle(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Input(Event::Key(key)) => self.on_key(&key),
            Action::Input(Event::Paste(pasted)) => {
                self.dirty = true;
                self.on_paste(&pasted);
                Vec::new()
            }
            Action::Input(Event::Resize(..)) => {
                self.dirty = true;
                Vec::new()
            }
            Action::Input(_) => Vec::new(),
            #[cfg(test)]
            Action::Run(command) => {
                self.dirty = true;
                self.run(command)
            }
            Action::Tick(now) => self.on_tick(now),
            Action::Handover(message) => self.hand_over(message),
            Action::Failed(failure) => {
                self.dirty = true;
                self.status.notice(failure);
                Vec::new()
            }
            // Each pane's results went to it (`update`).
            _ => Vec::new(),
        }
    }

    /// The clock: the toast's time, and the pane on screen's tick while it
    /// wants one.
    fn on_tick(&mut self, now: Instant) -> Vec<Effect> {
        if self.toast.as_ref().is_some_and(|toast| now >= toast.until) {
            self.toast = None;
            self.dirty = true;
        }
        if self.status.flush_budget(now) {
            self.dirty = true;
        }
        let pane = self.pane;
        if !self.pane_ref(pane).wants_tick() {
            return Vec::new();
        }
        let mut out = Outcome::default();
        if self.pane_mut(pane).on_tick(now, &mut out) {
            self.dirty = true;
        }
        if out.is_empty() {
            return Vec::new();
        }
        self.absorb(None, out)
    }

    /// A handover: every pane may add to it (in tab order), then every
    /// pane is offered it, and the one that opened it comes on screen.
    fn hand_over(&mut self, mut message: Handover) -> Vec<Effect> {
        self.dirty = true;
        let mut shown = None;
        let effects = self.apply(|app, out| {
            for id in PaneId::ALL {
                app.pane_mut(id).annotate(&mut message, out);
            }
            for id in PaneId::ALL {
                if app.pane_mut(id).receive(&message, out) == Received::Shown {
                    shown = Some(id);
                }
            }
        });
        if let Some(id) = shown {
            self.overlay = None;
            self.pane = id;
        }
        effects
    }

    /// What the console was started with, handed to the pane it is for
    /// (session ids, job ids, a file, a receiver's URL): it asks for no
    /// work until `init`.
    pub(crate) fn seed(&mut self, message: Handover) {
        let effects = self.hand_over(message);
        debug_assert!(effects.is_empty(), "a seed starts no work: {effects:?}");
    }

    fn on_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.dirty = true;
        self.status.key_pressed();
        if let Some(command) = keymap::find(&self.commands(), key) {
            return self.run(command);
        }
        let typing = matches!(self.overlay, Some(Overlay::CommandLine(_)))
            || (self.overlay.is_none() && self.pane_ref(self.pane).captures_text());
        if !typing && let Some(what) = self.read_only_hidden(key) {
            let why = self.read_only_reason();
            self.status.notice(Failure::new(format!(
                "read-only: \"{what}\" is disabled ({why})"
            )));
            return Vec::new();
        }
        match &mut self.overlay {
            Some(Overlay::CommandLine(input)) => {
                text::type_key(input, key);
            }
            Some(_) => {}
            None => {
                let pane = self.pane_mut(self.pane);
                if pane.captures_text() {
                    pane.type_key(key);
                }
            }
        }
        Vec::new()
    }

    fn on_paste(&mut self, pasted: &str) {
        match &mut self.overlay {
            Some(Overlay::CommandLine(input)) => {
                text::paste(input, pasted);
            }
            Some(_) => {}
            None => {
                let pane = self.pane_mut(self.pane);
                if pane.captures_text() {
                    pane.paste(pasted);
                }
            }
        }
    }

    /// A command that is not a pane's.
    fn run_global(&mut self, command: Command) -> Vec<Effect> {
        match command {
            Command::Help => {
                self.overlay = Some(Overlay::Help { scroll: 0 });
                Vec::new()
            }
            Command::Close | Command::ConfirmNo => {
                self.overlay = None;
                Vec::new()
            }
            Command::ScrollUp | Command::ScrollDown => {
                if let Some(Overlay::Help { scroll }) = &mut self.overlay {
                    *scroll = if command == Command::ScrollUp {
                        scroll.saturating_sub(1)
                    } else {
                        scroll.saturating_add(1)
                    };
                }
                Vec::new()
            }
            Command::NextPane => self.go_to(self.pane.next()),
            Command::PrevPane => self.go_to(self.pane.prev()),
            Command::GoTo(pane) => self.go_to(pane),
            Command::OpenCommandLine => {
                self.overlay = Some(Overlay::CommandLine(Input::default()));
                Vec::new()
            }
            Command::RunCommandLine => {
                let typed = match self.overlay.take() {
                    Some(Overlay::CommandLine(input)) => input.value().to_owned(),
                    _ => String::new(),
                };
                self.run_typed(&typed)
            }
            Command::Refresh => self.refresh(),
            Command::Quit => self.quit_or_ask(),
            Command::Interrupt => {
                if matches!(self.overlay, Some(Overlay::ConfirmQuit)) {
                    self.quit_now();
                    return Vec::new();
                }
                self.quit_or_ask()
            }
            Command::ConfirmYes => match self.overlay.take() {
                Some(Overlay::ConfirmSwitch { to, .. }) => self.switch_now(to),
                _ => {
                    self.quit_now();
                    Vec::new()
                }
            },
            Command::Ctx(command) => self.on_picker(command),
            Command::CompleteCommandLine => self.complete_command_line(),
            // Each pane's commands went to it (`run`).
            _ => Vec::new(),
        }
    }

    /// A line typed at the `:` prompt (the commands: `command_line.rs`).
    fn run_typed(&mut self, typed: &str) -> Vec<Effect> {
        let typed = match command_line::parse(typed) {
            Ok(typed) => typed,
            Err(hint) => {
                self.status.notice(Failure::new(hint));
                return Vec::new();
            }
        };
        match typed {
            Typed::Nothing => Vec::new(),
            Typed::Quit => self.quit_or_ask(),
            Typed::QuitNow => {
                self.quit_now();
                Vec::new()
            }
            Typed::Help => self.run(Command::Help),
            Typed::Refresh => self.refresh(),
            Typed::GoTo(pane) => self.go_to(pane),
            Typed::Jump { pane, id } => {
                let mut effects = self.go_to(pane);
                effects.extend(self.apply(|app, out| app.pane_mut(pane).jump_to(&id, out)));
                effects
            }
            Typed::Context(None) => self.open_profiles(),
            Typed::Context(Some(name)) => self.request_switch(&name),
        }
    }

    fn go_to(&mut self, pane: PaneId) -> Vec<Effect> {
        self.pane = pane;
        self.apply(|app, out| app.pane_mut(pane).on_shown(out))
    }

    fn refresh(&mut self) -> Vec<Effect> {
        self.apply(|app, out| app.pane_mut(app.pane).refresh(out))
    }

    fn quit_or_ask(&mut self) -> Vec<Effect> {
        if PaneId::ALL
            .into_iter()
            .any(|id| self.pane_ref(id).holds_typed_input())
        {
            self.overlay = Some(Overlay::ConfirmQuit);
            return Vec::new();
        }
        self.quit_now();
        Vec::new()
    }

    /// The one way out: every quit (a key, `:q!`, a yes to the question,
    /// a signal, the end of input) sets [`App::quit`], and the event loop
    /// leaves when it sees it set.
    pub(crate) fn quit_now(&mut self) {
        self.quit = true;
    }

    pub(crate) fn set_toast(&mut self, text: String) {
        self.toast = Some(Toast {
            text,
            until: Instant::now() + TOAST_FOR,
        });
    }

    /// Runs pane work that reports in an [`Outcome`] (a key, a command:
    /// not a platform answer), then absorbs it.
    fn apply(&mut self, work: impl FnOnce(&mut App, &mut Outcome)) -> Vec<Effect> {
        self.apply_from(None, work)
    }

    /// [`App::apply`] for the answer of `area`'s platform call (`None`:
    /// local work).
    fn apply_from(
        &mut self,
        area: Option<PaneId>,
        work: impl FnOnce(&mut App, &mut Outcome),
    ) -> Vec<Effect> {
        let mut out = Outcome::default();
        work(self, &mut out);
        self.absorb(area, out)
    }

    /// Applies a pane's outcome to the shared state; its effects. `area`
    /// names the pane whose platform call answered (`None`: local work,
    /// whose failure is a notice and says nothing of the platform).
    fn absorb(&mut self, area: Option<PaneId>, out: Outcome) -> Vec<Effect> {
        if let Some(text) = out.toast {
            self.set_toast(text);
        }
        if let Some(budget) = out.budget
            && self.status.set_budget(budget, Instant::now())
        {
            self.dirty = true;
        }
        match (area, out.failure) {
            (Some(area), Some(failure)) => {
                tracing::warn!(error = %failure.message, "platform call failed");
                self.status.failed(area, failure);
            }
            (None, Some(failure)) => self.status.notice(failure),
            (Some(area), None) if out.succeeded => self.status.succeeded(area),
            _ => {}
        }
        self.dirty = true;
        let mut effects = out.effects;
        effects.extend(out.console.into_iter().map(Effect::Console));
        if let Some(handover) = out.then {
            effects.extend(self.update(Action::Handover(handover)));
        }
        effects
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
