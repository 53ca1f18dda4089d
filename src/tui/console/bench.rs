//! The one door into the console (private to this crate) for the
//! benchmarks and the examples that time it: a console driven by keys and
//! pastes as the terminal sends them, answered as its worker would answer,
//! and drawn on ratatui's `TestBackend` with the fallback theme. Only what
//! `benches/console.rs`, `benches/events_pane.rs` and
//! `benches/signature_typing.rs` read is here; not an API (hidden from
//! the documentation, changed with them).

use chrono::{DateTime, Utc};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::view;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Pane;
use crate::tui::panes::deliveries::DeliveriesPane;
use crate::tui::panes::deliveries::DeliveriesResult;
use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use crate::tui::panes::events::EventsResult;
use crate::tui::panes::events::tasks::EventsEffect;
use crate::tui::theme::Theme;
use earshot_core::api::types::agents::DeliveryRecord;
use earshot_core::history::event_list::EventRow;

/// A load the console asked for, to answer with
/// [`Console::answer_deliveries`] or [`Console::answer_events`].
#[derive(Debug)]
pub struct Load {
    seq: u64,
    pane: LoadOf,
}

/// Which pane a [`Load`] is for.
#[derive(Debug, PartialEq, Eq)]
enum LoadOf {
    Deliveries,
    Events,
}

/// The console with nothing loaded, as it starts.
pub struct Console {
    app: App,
    theme: Theme,
}

impl Default for Console {
    fn default() -> Self {
        Console::new()
    }
}

impl Console {
    /// Profile `-`, the default region.
    pub fn new() -> Console {
        Console::with_app(App::new(ConsoleConfig::default()))
    }

    /// The status bar naming `profile` and `region`.
    pub fn on(profile: &str, region: &str) -> Console {
        Console::with_app(App::new(ConsoleConfig {
            profile_label: profile.into(),
            region: region.into(),
            ..ConsoleConfig::default()
        }))
    }

    fn with_app(app: App) -> Console {
        Console {
            app,
            theme: Theme::fallback(),
        }
    }

    /// The Deliveries pane reads the time from `now` (fixed rows age the
    /// same on every run).
    pub fn with_deliveries_clock(mut self, now: fn() -> DateTime<Utc>) -> Console {
        self.app.panes.deliveries = DeliveriesPane::new().with_clock(now);
        self
    }

    /// A key pressed, with no modifier; the loads it asks for.
    pub fn press(&mut self, code: KeyCode) -> Vec<Load> {
        let effects = self.app.update(Action::Input(Event::Key(KeyEvent::new(
            code,
            KeyModifiers::NONE,
        ))));
        loads(effects)
    }

    /// Each character of `text` pressed in turn.
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    /// `text` pasted at once (bracketed paste).
    pub fn paste(&mut self, text: String) {
        self.app.update(Action::Input(Event::Paste(text)));
    }

    /// One frame of the whole console on `terminal`.
    pub fn draw(&self, terminal: &mut Terminal<TestBackend>) {
        terminal
            .draw(|frame| view::draw(frame, &self.app, &self.theme))
            .expect("a TestBackend draws");
    }

    /// What the console shows on a fresh `width`×`height` screen.
    pub fn screen(&self, (width, height): (u16, u16)) -> String {
        let mut terminal =
            Terminal::new(TestBackend::new(width, height)).expect("a TestBackend terminal");
        self.draw(&mut terminal);
        terminal.backend().to_string()
    }

    /// Answers a Deliveries load with `rows`, as the worker does.
    pub fn answer_deliveries(&mut self, load: Load, rows: Vec<DeliveryRecord>) {
        assert_eq!(load.pane, LoadOf::Deliveries, "a Deliveries load");
        self.app
            .update(Action::Deliveries(DeliveriesResult::Loaded {
                seq: load.seq,
                result: Ok(rows),
            }));
    }

    /// Answers an Events load (a read of the store) with `rows`.
    pub fn answer_events(&mut self, load: Load, rows: Vec<EventRow>) {
        assert_eq!(load.pane, LoadOf::Events, "an Events load");
        self.app.update(Action::Events(EventsResult::Loaded {
            seq: load.seq,
            result: Ok(rows),
            mark: None,
        }));
    }

    /// The attempts the Deliveries pane holds.
    pub fn delivery_rows(&self) -> &[DeliveryRecord] {
        self.app.panes.deliveries.rows()
    }

    /// The Deliveries pane's selected row, by its place in
    /// [`delivery_rows`](Self::delivery_rows).
    pub fn delivery_selected(&self) -> Option<usize> {
        self.app.panes.deliveries.selected_index()
    }

    /// Whether an attempt on the Deliveries pane is still live (pending,
    /// or a retry still to come).
    pub fn deliveries_live(&self) -> bool {
        self.app.panes.deliveries.live()
    }

    /// The Deliveries pane's question to the loop on every pass: does
    /// something on it count down?
    pub fn deliveries_want_tick(&self) -> bool {
        Pane::wants_tick(&self.app.panes.deliveries)
    }

    /// The events the Events pane holds.
    pub fn event_rows(&self) -> &[EventRow] {
        self.app.panes.events.rows()
    }

    /// The Events pane's selected event.
    pub fn event_selected(&self) -> Option<&EventRow> {
        self.app.panes.events.selected()
    }

    /// What the Signatures pane's `X-SVC-Signature` field holds.
    pub fn signature_header(&self) -> &str {
        self.app.panes.sigs.header.value()
    }
}

/// The Deliveries and Events loads among `effects`.
fn loads(effects: Vec<Effect>) -> Vec<Load> {
    effects
        .into_iter()
        .filter_map(|effect| match effect {
            Effect::Deliveries(DeliveriesEffect::Load { seq, .. }) => Some(Load {
                seq,
                pane: LoadOf::Deliveries,
            }),
            Effect::Events(EventsEffect::Load { seq, .. }) => Some(Load {
                seq,
                pane: LoadOf::Events,
            }),
            _ => None,
        })
        .collect()
}
