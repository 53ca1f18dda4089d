//! The panes: the one list of them ([`registry!`]), their ids
//! ([`PaneId`]: tab order, titles, `:` names, `:NAME ID`), what every
//! pane answers ([`Pane`]): its drawing, its commands (keys) and help, its
//! tick, `r`, its `:NAME ID` ([`Jump`]) and the results of its background
//! work, and what that work is ([`PaneEffect`]: handed [`TaskInput`],
//! reporting through [`Report`]).
//!
//! Each pane lives in its own folder and owns its state, its commands (in
//! its own type), its update, its view and its background work (its
//! `tasks.rs`). The app holds one of each (the registry makes the `App`
//! field, the `Command`, `Action` and `Effect` variants and the
//! dispatch; the worker runs each pane's effects alike; the `:` line
//! lists each pane's `:NAME ID`), and asks the pane on screen through
//! [`AnyPane`]; so adding a pane is its folder, its `pub mod` line here
//! and its line in the registry.

pub(crate) mod deliveries;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod inbox;
pub(crate) mod jobs;
pub(crate) mod probe;
pub(crate) mod pulse;
pub(crate) mod signatures;
pub(crate) mod subscriptions;

use std::fmt::Debug;
use std::time::Instant;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use super::action::Action;
use super::app::{AppConfig, Outcome};
use super::command::Command;
use super::context::ActionTx;
use super::keymap::{CommandInfo, CommandSection};
use super::theme::Theme;
use super::widgets::input::cycle;

/// Every pane, in tab order: its [`PaneId`], the `App` field holding it,
/// its type, and the name of its `Command`, `Action` and `Effect`
/// variants. The one place a pane is registered: `registry!(callback)`
/// hands the list to a macro that builds from it ([`PaneId`] here,
/// `Command` in `command.rs`, `Action` and `Effect` in `action.rs`, the
/// `App` and its dispatch in `app.rs`, the running of pane effects in
/// `worker.rs`).
macro_rules! registry {
    ($then:ident) => {
        $then! {
            Health: health: $crate::tui::panes::health::HealthPane => Health,
            Subscriptions: subs: $crate::tui::panes::subscriptions::SubscriptionsPane => Subs,
            Deliveries: deliveries: $crate::tui::panes::deliveries::DeliveriesPane => Deliveries,
            Jobs: jobs: $crate::tui::panes::jobs::JobsPane => Jobs,
            Signatures: sigs: $crate::tui::panes::signatures::SignaturesPane => Sigs,
            Probe: probe: $crate::tui::panes::probe::ProbePane => Probe,
            Inbox: inbox: $crate::tui::panes::inbox::InboxPane => Inbox,
            Events: events: $crate::tui::panes::events::EventsPane => Events,
            Pulse: pulse: $crate::tui::panes::pulse::PulsePane => Pulse,
        }
    };
}
pub(crate) use registry;

/// What a pane is: the app drives every pane through this trait alone.
pub(crate) trait Pane {
    /// Its commands (keys run them), wrapped by the app into its own
    /// `Command` so the key machinery (`keymap.rs`) knows no pane.
    type Command: Copy + Debug + Eq;
    /// What its background work (the worker's tasks) reports to it.
    type Result: Clone + Debug + Send + 'static;
    /// Its own background work (its tasks live in its folder; the worker
    /// runs them as [`PaneEffect`] says), wrapped by the registry into the
    /// console's `Effect`; [`NoEffect`] when it asks only for the
    /// console's.
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
    fn create(config: &AppConfig) -> Self
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
    fn run(&mut self, command: Self::Command, out: &mut Outcome);
    /// A result of its background work.
    fn on_result(&mut self, result: Self::Result, out: &mut Outcome);
    /// Draws the pane into `area` (`read_only`: commands that change the
    /// platform are gone, and hints do not offer them).
    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, read_only: bool);

    /// The work to start with (the first loads), when the console starts
    /// or moves to another account.
    fn init(&mut self, _out: &mut Outcome) {}
    /// The pane came on screen.
    fn on_shown(&mut self, _out: &mut Outcome) {}
    /// Its `:NAME ID` command ([`Pane::JUMP`]): the pane is on screen,
    /// show that id.
    fn jump_to(&mut self, _id: &str, _out: &mut Outcome) {}
    /// `r` (or `:r`): read again what the pane shows.
    fn refresh(&mut self, out: &mut Outcome) {
        out.toast = Some("nothing to refresh in this pane yet".into());
    }
    /// The clock should tick while it is on screen: something counts down
    /// or is read again on a timer.
    fn wants_tick(&self) -> bool {
        false
    }
    /// The clock, while it is on screen and wants it; whether to redraw.
    fn on_tick(&mut self, _at: Instant, _out: &mut Outcome) -> bool {
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

/// What the worker hands every task of a pane: the account's client and
/// its incident-history store.
pub(crate) struct TaskInput {
    pub(crate) client: earshot_core::api::Client,
    pub(crate) store: super::history_tasks::StorePath,
}

/// Where a pane's task sends what it reports (`R`, the pane's `Result`):
/// to the console, as the pane's `Action` variant.
pub(crate) struct Report<R> {
    tx: ActionTx,
    wrap: fn(R) -> Action,
}

impl<R> Clone for Report<R> {
    fn clone(&self) -> Self {
        Report {
            tx: self.tx.clone(),
            wrap: self.wrap,
        }
    }
}

impl<R> Report<R> {
    pub(crate) fn new(tx: ActionTx, wrap: fn(R) -> Action) -> Self {
        Report { tx, wrap }
    }

    /// Sends `result` to the pane; `false`: the console is gone (or has
    /// moved to another account), so the task may stop.
    pub(crate) fn send(&self, result: R) -> bool {
        self.tx.send((self.wrap)(result)).is_ok()
    }
}

/// A pane's background work, `R` being what it reports (the pane's
/// `Result`): the worker spawns [`PaneEffect::run`], whose reports reach
/// the pane as its `Action` variant.
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
    P: Pane,
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
        Pane::init(self, out);
    }

    fn on_shown(&mut self, out: &mut Outcome) {
        Pane::on_shown(self, out);
    }

    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        Pane::jump_to(self, id, out);
    }

    fn refresh(&mut self, out: &mut Outcome) {
        Pane::refresh(self, out);
    }

    fn wants_tick(&self) -> bool {
        Pane::wants_tick(self)
    }

    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        Pane::on_tick(self, at, out)
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

/// [`PaneId`], from the registry: a variant per pane, in tab order.
macro_rules! pane_ids {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// A pane, in tab order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum PaneId {
            $($id,)*
        }

        impl PaneId {
            /// Every pane, in tab order.
            pub(crate) const ALL: [PaneId; [$(PaneId::$id),*].len()] = [$(PaneId::$id),*];

            pub(crate) fn title(self) -> &'static str {
                match self {
                    $(PaneId::$id => <$ty as Pane>::TITLE,)*
                }
            }

            /// The title when the tab bar is short of room.
            pub(crate) fn short_title(self) -> &'static str {
                match self {
                    $(PaneId::$id => <$ty as Pane>::SHORT_TITLE,)*
                }
            }

            /// Its `:NAME ID` command, if it has one.
            pub(crate) fn jump(self) -> Option<Jump> {
                match self {
                    $(PaneId::$id => <$ty as Pane>::JUMP,)*
                }
            }

            /// Its names at the `:` prompt, besides its number.
            fn names(self) -> &'static [&'static str] {
                match self {
                    $(PaneId::$id => <$ty as Pane>::NAMES,)*
                }
            }
        }
    };
}
registry!(pane_ids);

impl PaneId {
    pub(crate) fn next(self) -> PaneId {
        cycle(&PaneId::ALL, self, true)
    }

    pub(crate) fn prev(self) -> PaneId {
        cycle(&PaneId::ALL, self, false)
    }

    /// A pane by `:` name: its number, its title, or a short form
    /// (`subs`, `dlv`, `sigs`, …), case-insensitive.
    pub(crate) fn from_name(name: &str) -> Option<PaneId> {
        let name = name.trim().to_ascii_lowercase();
        PaneId::ALL
            .into_iter()
            .enumerate()
            .find(|(index, pane)| {
                (index + 1).to_string() == name || pane.names().contains(&name.as_str())
            })
            .map(|(_, pane)| pane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_cycle_in_tab_order_both_ways() {
        assert_eq!(PaneId::Probe.next(), PaneId::Inbox);
        assert_eq!(PaneId::Inbox.next(), PaneId::Events);
        assert_eq!(PaneId::Events.next(), PaneId::Pulse);
        assert_eq!(PaneId::Pulse.next(), PaneId::Health);
        assert_eq!(PaneId::Health.prev(), PaneId::Pulse);
        assert_eq!(PaneId::Health.next(), PaneId::Subscriptions);
        assert_eq!(PaneId::Jobs.next(), PaneId::Signatures);
    }

    #[test]
    fn panes_are_found_by_number_title_and_short_name() {
        assert_eq!(PaneId::from_name("subs"), Some(PaneId::Subscriptions));
        assert_eq!(PaneId::from_name("1"), Some(PaneId::Health));
        assert_eq!(PaneId::from_name("3"), Some(PaneId::Deliveries));
        assert_eq!(PaneId::from_name("Signatures"), Some(PaneId::Signatures));
        assert_eq!(PaneId::from_name("7"), Some(PaneId::Inbox));
        assert_eq!(PaneId::from_name("listen"), Some(PaneId::Inbox));
        assert_eq!(PaneId::from_name("8"), Some(PaneId::Events));
        assert_eq!(PaneId::from_name("events"), Some(PaneId::Events));
        assert_eq!(PaneId::from_name("nope"), None);
    }
}
