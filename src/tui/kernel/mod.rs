//! The pane kernel: everything a pane needs from the console, and nothing
//! of the console itself. The [`Pane`] trait, what a pane takes (the
//! [`ConsoleConfig`] it reads, its commands' [`CommandInfo`]) and returns
//! (its [`Outcome`]: its own effects, the console's [`ConsoleEffect`]s, a
//! [`Handover`] to another pane, a toast or a [`Failure`]), its `:NAME ID`
//! ([`Jump`]) and its background work ([`PaneEffect`], handed a
//! [`TaskInput`], reporting through a [`Report`]), with the store access
//! the panes' tasks share ([`store`]).
//!
//! The app (`tui::console`) imports this module; this module and the panes
//! import nothing of the app. The console's modules are private to
//! `tui/console/`, so a pane that tried would not compile.

mod config;
mod outcome;
pub(crate) mod store;

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use crate::tui::keymap::{CommandInfo, CommandSection};
use crate::tui::theme::Theme;

pub(crate) use config::ConsoleConfig;
pub(crate) use outcome::{ConsoleEffect, Failure, Handover, Outcome, Received, RefusedDelivery};
pub(crate) use store::{StoreAt, StorePath};

/// What a pane is: the console drives every pane through this trait alone.
pub(crate) trait Pane {
    /// Its commands (keys run them), wrapped by the console into its own
    /// `Command` so the key machinery (`keymap.rs`) knows no pane.
    type Command: Copy + Debug + Eq;
    /// What its background work (the worker's tasks) reports to it.
    type Result: Clone + Debug + Send + 'static;
    /// Its own background work (its tasks live in its folder; the worker
    /// runs them as [`PaneEffect`] says), wrapped by the registry into the
    /// console's `Effect`; [`NoEffect`] when it asks only for the
    /// console's ([`ConsoleEffect`]).
    type Effect: PaneEffect<Self::Result>;
    /// Its tab's title.
    const TITLE: &'static str;
    /// The title when the tab bar is short of room.
    const SHORT_TITLE: &'static str = Self::TITLE;
    /// Its names at the `:` prompt (besides its number), lower case.
    const NAMES: &'static [&'static str];
    /// Its results answer platform calls, so the status bar's connection
    /// follows them; `false`: local work (the store, files, a receiver),
    /// whose failures are notices.
    const CALLS_PLATFORM: bool;
    /// Its `:NAME ID` command, if it has one (`:sub ID`, `:session ID`,
    /// `:event ID`, `:job ID`): the `:` line lists it and runs it as
    /// [`Pane::jump_to`].
    const JUMP: Option<Jump> = None;

    /// An empty pane for the account `config` describes.
    fn create(config: &ConsoleConfig) -> Self
    where
        Self: Sized;
    /// The commands that exist now: keys match these, the footer shows
    /// the quick ones.
    fn commands(&self) -> Vec<CommandInfo<Self::Command>>;
    /// Every command, grouped for the help overlay.
    fn help_sections() -> Vec<CommandSection<Self::Command>>
    where
        Self: Sized;
    /// One of its commands.
    fn run(&mut self, command: Self::Command, out: &mut Outcome<Self::Effect>);
    /// A result of its background work.
    fn on_result(&mut self, result: Self::Result, out: &mut Outcome<Self::Effect>);
    /// Draws the pane into `area` (`read_only`: commands that change the
    /// platform are gone, and hints do not offer them).
    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, read_only: bool);

    /// The work to start with (the first loads), when the console starts
    /// or moves to another account.
    fn init(&mut self, _out: &mut Outcome<Self::Effect>) {}
    /// The pane came on screen.
    fn on_shown(&mut self, _out: &mut Outcome<Self::Effect>) {}
    /// Its `:NAME ID` command ([`Pane::JUMP`]): the pane is on screen,
    /// show that id.
    fn jump_to(&mut self, _id: &str, _out: &mut Outcome<Self::Effect>) {}
    /// A handover is on its way to the panes: add what this pane knows to
    /// it first (the Inbox fills in the body it captured).
    fn annotate(&mut self, _message: &mut Handover, _out: &mut Outcome<Self::Effect>) {}
    /// A handover from another pane or the console: take it if it is this
    /// pane's.
    fn receive(&mut self, _message: &Handover, _out: &mut Outcome<Self::Effect>) -> Received {
        Received::Ignored
    }
    /// `r` (or `:r`): read again what the pane shows.
    fn refresh(&mut self, out: &mut Outcome<Self::Effect>) {
        out.toast = Some("nothing to refresh in this pane yet".into());
    }
    /// The clock should tick while it is on screen: something counts down
    /// or is read again on a timer.
    fn wants_tick(&self) -> bool {
        false
    }
    /// The clock, while it is on screen and wants it; whether to redraw.
    fn on_tick(&mut self, _at: Instant, _out: &mut Outcome<Self::Effect>) -> bool {
        false
    }
    /// A request of this pane is in flight (the status bar says so).
    fn busy(&self) -> bool {
        false
    }
    /// The global keys (tab, 1–8, `q`, …) work: no text field holds them.
    fn allows_global(&self) -> bool;
    /// A text field has the keyboard: keys no command claims are typed.
    fn captures_text(&self) -> bool;
    /// A key no command claimed, for the field with the keyboard.
    fn type_key(&mut self, key: &KeyEvent);
    /// Pasted text, for the field with the keyboard.
    fn paste(&mut self, pasted: &str);
    /// Text the operator typed would be lost if the console quit now
    /// (`q` asks first).
    fn holds_typed_input(&self) -> bool {
        false
    }
    /// What switching accounts would throw away or stop here, worded for
    /// the question asked first (empty: nothing).
    fn would_lose(&self) -> Vec<String> {
        if self.holds_typed_input() {
            vec![format!("what is typed in {}", Self::TITLE)]
        } else {
            Vec::new()
        }
    }
}

/// A pane's `:NAME ID` command, as the `:` line parses, completes and
/// lists it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Jump {
    /// As help shows it: `:event ID`.
    pub(crate) usage: &'static str,
    /// Its spellings, lower case (the first in the line's hint).
    pub(crate) names: &'static [&'static str],
    pub(crate) description: &'static str,
    /// Its place among the jumps in the help overlay and the hint (the
    /// order an operator follows a trail: subscription, session, event,
    /// job), lowest first.
    pub(crate) help_order: u8,
}

/// What the worker hands every task of a pane: the account's client, its
/// incident-history store, and the flag it sets when the console moves to
/// another account (work that must end cleanly, such as recover, stops at
/// its next step; the rest is aborted or left to finish).
pub(crate) struct TaskInput {
    pub(crate) client: earshot_core::api::Client,
    pub(crate) store: StorePath,
    pub(crate) account_left: Arc<AtomicBool>,
}

/// Where a pane's task sends what it reports (`R`, the pane's `Result`):
/// to the console, which hands it to the pane. Built by the worker; a
/// pane's task only sends through it.
pub(crate) struct Report<R> {
    send: Arc<dyn Fn(R) -> bool + Send + Sync>,
}

impl<R> Clone for Report<R> {
    fn clone(&self) -> Self {
        Report {
            send: Arc::clone(&self.send),
        }
    }
}

impl<R> Report<R> {
    /// A report that hands each result to `send`, which answers `false`
    /// once nobody listens.
    pub(crate) fn new(send: impl Fn(R) -> bool + Send + Sync + 'static) -> Self {
        Report {
            send: Arc::new(send),
        }
    }

    /// Sends `result` to the pane; `false`: the console is gone (or has
    /// moved to another account), so the task may stop.
    pub(crate) fn send(&self, result: R) -> bool {
        (self.send)(result)
    }
}

/// A pane's background work, `R` being what it reports (the pane's
/// `Result`): the worker spawns [`PaneEffect::run`], whose reports reach
/// the pane's [`Pane::on_result`].
pub(crate) trait PaneEffect<R>: Clone + Debug + Send + 'static {
    /// "Latest request wins": effects with the same key (within the pane)
    /// share one slot, and a new one aborts the one still running (an
    /// effect that does nothing but stop the one running is one too);
    /// `None`: it runs to its end (changes, sends).
    fn latest_key(&self) -> Option<&'static str>;
    /// The work itself, in a task of its own: it reports as often as it
    /// has something to say (a read: once).
    fn run(self, input: TaskInput, report: Report<R>) -> impl Future<Output = ()> + Send + 'static;
}

/// The effects of a pane that asks only for the console's.
#[derive(Clone, Debug)]
pub(crate) enum NoEffect {}

impl<R: Send + 'static> PaneEffect<R> for NoEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match *self {}
    }

    async fn run(self, _: TaskInput, _: Report<R>) {
        match self {}
    }
}
