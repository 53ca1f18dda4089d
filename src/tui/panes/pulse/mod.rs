//! The Pulse pane (`:pulse`): the whole account on one screen, each a
//! small chart with its current value and unit: events per minute by
//! outcome, deliveries in flight, the observer's filing per hour and the
//! sweep's requests against its budget.
//!
//! Owns the last store read ([`data::PulseData`], a [`Load`]: its age in
//! the title), the in-flight count of each read and each sweep's requests
//! (kept in memory: the console's own samples, since the store keeps no
//! history of either; before the first, "unknown"). While on screen it
//! reads the store and sweeps every [`EVERY`], as the Health pane does;
//! off screen it costs nothing. Drawing is `view.rs`; the reads and the
//! sweep `tasks.rs`.

pub(crate) mod data;
pub(crate) mod tasks;
pub(crate) mod view;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use crate::tui::kernel::{self, ConsoleConfig, Failure, Pane};
use crate::tui::keymap::{CommandInfo, CommandSection};
use crate::tui::load::Load;
use crate::tui::theme::Theme;
use crate::tui::widgets::age;
use data::PulseData;
use earshot_core::history::sweep::SweepReport;
use tasks::PulseEffect;

/// What the pane hands the console.
pub(crate) type Outcome = kernel::Outcome<PulseEffect>;

/// How often the store is read and swept while the pane is on screen.
pub(crate) const EVERY: Duration = Duration::from_secs(5);
/// Samples kept of the in-flight count and of the sweeps.
pub(crate) const SAMPLES: usize = 60;

/// What reaches the Pulse pane.
#[derive(Clone, Debug)]
pub(crate) enum PulseResult {
    /// The store read `seq`.
    Loaded {
        seq: u64,
        result: Result<PulseData, Failure>,
    },
    /// A sweep ended (an `Err`: the store, the platform or the network).
    Swept(Result<SweepReport, Failure>),
}

/// The pane has no keys of its own (`r` reads and sweeps now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PulseCommand {}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct PulsePane {
    pub(crate) data: Load<PulseData>,
    /// The in-flight count of each read, oldest first.
    pub(crate) in_flight: VecDeque<i64>,
    /// Each sweep's requests and the sessions it left for later, oldest
    /// first.
    pub(crate) sweeps: VecDeque<(usize, i64)>,
    /// When the last sweep ended, and why it failed if it did.
    pub(crate) swept_at: Option<Instant>,
    pub(crate) sweep_error: Option<String>,
    sweeping: bool,
    last_load: Option<Instant>,
    last_sweep: Option<Instant>,
    /// The time ages are drawn at; moved on by the tick.
    pub(crate) now: Instant,
}

impl PulsePane {
    pub(crate) fn new() -> PulsePane {
        PulsePane {
            data: Load::new(),
            in_flight: VecDeque::new(),
            sweeps: VecDeque::new(),
            swept_at: None,
            sweep_error: None,
            sweeping: false,
            last_load: None,
            last_sweep: None,
            now: Instant::now(),
        }
    }

    fn load(&mut self, at: Instant, out: &mut Outcome) {
        let seq = self.data.start();
        self.last_load = Some(at);
        out.effects.push(PulseEffect::Load { seq });
    }

    fn sweep(&mut self, at: Instant, out: &mut Outcome) {
        if self.sweeping {
            return;
        }
        self.sweeping = true;
        self.last_sweep = Some(at);
        out.effects.push(PulseEffect::Sweep);
    }
}

/// Adds `value` to `samples`, the oldest dropped past [`SAMPLES`].
fn push<T>(samples: &mut VecDeque<T>, value: T) {
    samples.push_back(value);
    while samples.len() > SAMPLES {
        samples.pop_front();
    }
}

fn due(last: Option<Instant>, at: Instant) -> bool {
    last.is_none_or(|last| at.saturating_duration_since(last) >= EVERY)
}

impl Default for PulsePane {
    fn default() -> Self {
        PulsePane::new()
    }
}

impl Pane for PulsePane {
    type Command = PulseCommand;
    type Result = PulseResult;
    type Effect = PulseEffect;
    const TITLE: &'static str = "Pulse";
    /// Only the number in a short tab bar (80 columns): the pane's title
    /// line says what it is.
    const SHORT_TITLE: &'static str = "";
    const NAMES: &'static [&'static str] = &["pulse"];
    const CALLS_PLATFORM: bool = true;

    fn create(_: &ConsoleConfig) -> PulsePane {
        PulsePane::new()
    }

    fn commands(&self) -> Vec<CommandInfo<PulseCommand>> {
        Vec::new()
    }

    fn help_sections() -> Vec<CommandSection<PulseCommand>> {
        Vec::new()
    }

    fn run(&mut self, command: PulseCommand, _out: &mut Outcome) {
        match command {}
    }

    fn on_result(&mut self, result: PulseResult, out: &mut Outcome) {
        match result {
            PulseResult::Loaded { seq, result } => {
                // Each read's in-flight count is a sample of the chart.
                let samples = &mut self.in_flight;
                let answer = self
                    .data
                    .finish_with(seq, result, |value, fresh: PulseData| {
                        push(samples, fresh.in_flight);
                        *value = fresh;
                    });
                if let Some(Err(failure)) = answer {
                    out.failure = Some(failure);
                }
            }
            PulseResult::Swept(result) => {
                self.sweeping = false;
                self.swept_at = Some(Instant::now().max(self.now));
                match result {
                    Ok(report) => {
                        push(&mut self.sweeps, (report.requests, report.left_for_later));
                        self.sweep_error = report.stopped.clone();
                        match report.stopped {
                            Some(why) => {
                                out.failure =
                                    Some(Failure::new(format!("sweep stopped early: {why}")));
                            }
                            None => out.succeeded = true,
                        }
                    }
                    Err(failure) => {
                        self.sweep_error = Some(failure.message.clone());
                        out.failure = Some(failure);
                    }
                }
            }
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    /// On screen: read and sweep at once.
    fn on_shown(&mut self, out: &mut Outcome) {
        let at = Instant::now();
        self.now = self.now.max(at);
        self.load(at, out);
        self.sweep(at, out);
    }

    /// `r`: read and sweep now.
    fn refresh(&mut self, out: &mut Outcome) {
        self.on_shown(out);
    }

    fn wants_tick(&self) -> bool {
        true
    }

    /// Reads and sweeps every [`EVERY`]; a redraw only when the age words
    /// moved (the charts change with a read's answer, not with the clock).
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        let aged = age::moved(&self.data, self.now, at, EVERY);
        self.now = self.now.max(at);
        if !self.data.loading() && due(self.last_load, at) {
            self.load(at, out);
        }
        if due(self.last_sweep, at) {
            self.sweep(at, out);
        }
        aged
    }

    fn allows_global(&self) -> bool {
        true
    }

    fn captures_text(&self) -> bool {
        false
    }

    fn type_key(&mut self, _key: &KeyEvent) {}

    fn paste(&mut self, _pasted: &str) {}
}
