//! The panes as the app asks them: [`AnyPane`], whichever pane is on
//! screen, with its commands wrapped into the console's `Command` and its
//! outcome into the console's; [`Registered`], how the registry wraps a
//! pane's own effects; [`own`], running pane work on the pane's own
//! [`kernel::Outcome`](crate::tui::kernel::Outcome).

use std::time::Instant;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use super::Outcome;
use crate::tui::console::action::Effect;
use crate::tui::console::command::Command;
use crate::tui::kernel::{self, Handover, Pane, Received};
use crate::tui::keymap::{CommandInfo, CommandSection};
use crate::tui::theme::Theme;

/// A pane in the registry: its own effects become the console's
/// `Effect` variant for it (implemented by the registry).
pub(crate) trait Registered: Pane {
    fn wrap(effect: Self::Effect) -> Effect;
}

/// Runs `work` on `pane` with the pane's own outcome, then adds that to
/// the console's `out`.
pub(crate) fn own<P: Registered, T>(
    pane: &mut P,
    out: &mut Outcome,
    work: impl FnOnce(&mut P, &mut kernel::Outcome<P::Effect>) -> T,
) -> T {
    let mut own = kernel::Outcome::default();
    let answer = work(pane, &mut own);
    out.merge(own, P::wrap);
    answer
}

/// Whichever pane is on screen, as the app and the view ask it: [`Pane`]
/// with its commands wrapped into the console's `Command` (every pane is
/// one, through the blanket impl).
pub(crate) trait AnyPane {
    fn commands(&self) -> Vec<CommandInfo<Command>>;
    fn help_sections(&self) -> Vec<CommandSection<Command>>;
    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, read_only: bool);
    fn init(&mut self, out: &mut Outcome);
    fn on_shown(&mut self, out: &mut Outcome);
    fn jump_to(&mut self, id: &str, out: &mut Outcome);
    fn refresh(&mut self, out: &mut Outcome);
    fn annotate(&mut self, message: &mut Handover, out: &mut Outcome);
    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received;
    fn wants_tick(&self) -> bool;
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool;
    fn busy(&self) -> bool;
    fn allows_global(&self) -> bool;
    fn captures_text(&self) -> bool;
    fn type_key(&mut self, key: &KeyEvent);
    fn paste(&mut self, pasted: &str);
    fn holds_typed_input(&self) -> bool;
    fn would_lose(&self) -> Vec<String>;
}

impl<P> AnyPane for P
where
    P: Registered,
    Command: From<P::Command>,
{
    fn commands(&self) -> Vec<CommandInfo<Command>> {
        Pane::commands(self)
            .into_iter()
            .map(|info| info.map(Command::from))
            .collect()
    }

    fn help_sections(&self) -> Vec<CommandSection<Command>> {
        P::help_sections()
            .into_iter()
            .map(|section| section.map(Command::from))
            .collect()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, read_only: bool) {
        Pane::draw(self, frame, area, theme, read_only);
    }

    fn init(&mut self, out: &mut Outcome) {
        own(self, out, |pane, own| Pane::init(pane, own));
    }

    fn on_shown(&mut self, out: &mut Outcome) {
        own(self, out, |pane, own| Pane::on_shown(pane, own));
    }

    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        own(self, out, |pane, own| Pane::jump_to(pane, id, own));
    }

    fn refresh(&mut self, out: &mut Outcome) {
        own(self, out, |pane, own| Pane::refresh(pane, own));
    }

    fn annotate(&mut self, message: &mut Handover, out: &mut Outcome) {
        own(self, out, |pane, own| Pane::annotate(pane, message, own));
    }

    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        own(self, out, |pane, own| Pane::receive(pane, message, own))
    }

    fn wants_tick(&self) -> bool {
        Pane::wants_tick(self)
    }

    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        own(self, out, |pane, own| Pane::on_tick(pane, at, own))
    }

    fn busy(&self) -> bool {
        Pane::busy(self)
    }

    fn allows_global(&self) -> bool {
        Pane::allows_global(self)
    }

    fn captures_text(&self) -> bool {
        Pane::captures_text(self)
    }

    fn type_key(&mut self, key: &KeyEvent) {
        Pane::type_key(self, key);
    }

    fn paste(&mut self, pasted: &str) {
        Pane::paste(self, pasted);
    }

    fn holds_typed_input(&self) -> bool {
        Pane::holds_typed_input(self)
    }

    fn would_lose(&self) -> Vec<String> {
        Pane::would_lose(self)
    }
}
