//! The Health pane (first tab): the account-wide board of the incident
//! history (DESIGN §9), live from the store and the sweep.
//!
//! Owns the per-subscription board counted in events (delivered, missed,
//! recovered, pending, failing since, the largest failure group) under the
//! observer's coverage, the window (1 h, 24 h,
//! 7 d), the drill-down to a subscription's failing sessions (enter opens
//! one in Deliveries), and recover: a form with the subscription's secret
//! (masked, never kept) and the short id typed as confirmation, then
//! progress and the result. Store queries and the sweep run in the worker
//! ([`HealthEffect::Load`], [`HealthEffect::Sweep`], …), never on the
//! render path. Drawing is in `view.rs`.

mod commands;
pub(crate) mod incidents;
mod incidents_view;
pub(crate) mod recover;
pub(crate) mod tables;
pub(crate) mod tasks;
pub(crate) mod view;

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, Failure, Handover, Pane, Received, RefusedDelivery};
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::load::Load;
use crate::tui::theme::Theme;
use crate::tui::widgets::input as text;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::history::coverage::Coverage;
use earshot_core::history::report::{FailureGroup, SubscriptionHealth};
use earshot_core::history::sweep::SweepReport;
use earshot_core::store::deliveries::FailingSession;

use crate::tui::panes::subscriptions::short_id;
use crate::tui::widgets::table_view::{prompt_commands, wrapped};
use commands::{
    ack_commands, board_commands, incidents_commands, recover_commands, sessions_commands,
};
use incidents::Incidents;
pub(crate) use recover::{Field, RecoverForm};
use tasks::HealthEffect;

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<HealthEffect>;

/// How often the board is read again from the store while on screen.
pub(crate) const RELOAD_EVERY: Duration = Duration::from_secs(5);
/// How often the sweep asks the platform while the pane is on screen (each
/// sweep spends at most its small budget, one request when nothing is due).
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Whether `every` has passed since `last` (or nothing happened yet).
fn due(last: Option<Instant>, every: Duration, at: Instant) -> bool {
    last.is_none_or(|last| at.saturating_duration_since(last) >= every)
}

/// What reaches the Health pane.
#[derive(Clone, Debug)]
pub(crate) enum HealthResult {
    /// The board read from the store; `seq` identifies the read.
    Loaded {
        seq: u64,
        result: Result<earshot_core::history::report::Board, Failure>,
    },
    /// The board's events per time bucket, read after the board `seq`.
    Trend {
        seq: u64,
        result: Result<earshot_core::store::timeline::Timeline, Failure>,
    },
    /// When the platform gave up retrying on this account, in words,
    /// read after the board `seq`.
    GiveUp { seq: u64, text: String },
    /// One subscription's failing sessions, read with the board `seq`.
    Sessions {
        seq: u64,
        subscription_id: String,
        result: Result<Vec<earshot_core::store::deliveries::FailingSession>, Failure>,
    },
    /// A sweep ended (an `Err` is the platform's or the network's).
    Swept(Result<earshot_core::history::sweep::SweepReport, Failure>),
    /// The store could not be opened for a sweep: local, not the platform.
    NoStore(String),
    /// What recover would send for `subscription_id` (before it asks).
    Planned {
        subscription_id: String,
        result: Result<earshot_core::history::recover::Preview, Failure>,
    },
    /// Recover sent `done` of `total` events; `sent` is the last one.
    RecoverProgress {
        done: usize,
        total: usize,
        sent: Option<Box<earshot_core::history::recover::Sent>>,
    },
    /// Recover ended: its summary line.
    Recovered(Result<String, Failure>),
    /// The incidents read with `seq`.
    Incidents {
        seq: u64,
        result: Result<Vec<earshot_core::history::incidents::Incident>, Failure>,
    },
    /// An acknowledgement was stored (its line) or not.
    Acknowledged(Result<String, Failure>),
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HealthCommand {
    Move(Move),
    /// Board → failing sessions; sessions → open one in Deliveries.
    Open,
    /// Back to the board.
    Back,
    /// 1 h → 24 h → 7 d.
    CycleWindow,
    /// Open the recover form for the selected subscription.
    Recover,
    /// The selected subscription's 401 failure group: its example event in
    /// Signatures, to ask the receiver which secret it holds.
    CheckRefused,
    /// Between the secret and the confirmation.
    NextField,
    RecoverSubmit,
    RecoverCancel,
    /// Board → incidents.
    Incidents,
    /// Resolved incidents shown or not.
    ToggleResolved,
    /// The incidents in the store's order now (the order shown holds
    /// while the operator works in the list).
    Reorder,
    /// Acknowledge the selected incident (a note prompt).
    Ack,
    AckSubmit,
    AckCancel,
    /// `/`, `S` and the filter prompt of the table on screen.
    Table(TableCommand),
}

/// The board's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Window {
    Hour,
    Day,
    Week,
}

impl Window {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Window::Hour => "1 h",
            Window::Day => "24 h",
            Window::Week => "7 d",
        }
    }

    fn millis(self) -> i64 {
        match self {
            Window::Hour => 3_600_000,
            Window::Day => 86_400_000,
            Window::Week => 604_800_000,
        }
    }

    fn next(self) -> Window {
        match self {
            Window::Hour => Window::Day,
            Window::Day => Window::Week,
            Window::Week => Window::Hour,
        }
    }
}

/// What has the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Board,
    Sessions,
    Recover,
    Incidents,
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct HealthPane {
    /// The board's rows, as last read from the store.
    pub(crate) board: Load<Vec<SubscriptionHealth>>,
    /// What the observer covers, from the last read.
    pub(crate) coverage: Option<Coverage>,
    /// The board's filter, sort and selection.
    pub(crate) table: TableView<SubscriptionHealth>,
    pub(crate) window: Window,
    pub(crate) mode: Mode,
    /// The subscription whose failing sessions are listed.
    pub(crate) sessions_of: Option<String>,
    sessions: Vec<FailingSession>,
    /// Why the failing sessions could not be read, shown in their view
    /// (kept apart from the board's error, which the next board read
    /// clears).
    pub(crate) sessions_error: Option<String>,
    pub(crate) sessions_table: TableView<FailingSession>,
    pub(crate) recover: Option<RecoverForm>,
    pub(crate) incidents: Incidents,
    pub(crate) sweeping: bool,
    pub(crate) last_sweep: Option<Result<SweepReport, String>>,
    last_load: Option<Instant>,
    /// The last tick: the data's age is drawn from it.
    pub(crate) ticked: Instant,
    last_sweep_at: Option<Instant>,
    /// When the last sweep's answer arrived: the title says its age once
    /// sweeps stall.
    pub(crate) swept_at: Option<Instant>,
    /// The board's events per time bucket: the selected subscription's
    /// trend line.
    pub(crate) trend: Option<earshot_core::store::timeline::Timeline>,
    /// When the platform gave up on this account (`store::give_up`), said
    /// beside the retries due; empty until read.
    pub(crate) give_up: String,
    /// Milliseconds since the epoch, for "since" (a fixed clock in tests).
    clock: fn() -> i64,
}

impl Default for HealthPane {
    fn default() -> Self {
        HealthPane::new()
    }
}

impl HealthPane {
    pub(crate) fn new() -> HealthPane {
        HealthPane {
            board: Load::new(),
            coverage: None,
            table: TableView::new(&tables::BOARD),
            window: Window::Day,
            mode: Mode::Board,
            sessions_of: None,
            sessions: Vec::new(),
            sessions_error: None,
            sessions_table: TableView::new(&tables::SESSIONS),
            recover: None,
            incidents: Incidents::default(),
            sweeping: false,
            last_sweep: None,
            last_load: None,
            ticked: Instant::now(),
            last_sweep_at: None,
            swept_at: None,
            trend: None,
            give_up: String::new(),
            clock: earshot_core::store::now_ms,
        }
    }

    /// Replaces the wall clock (tests use a fixed one), also the one the
    /// tables' `since:` counts back from.
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self.table = TableView::new(&tables::BOARD).with_clock(clock);
        self.sessions_table = TableView::new(&tables::SESSIONS).with_clock(clock);
        self.incidents.table = TableView::new(&tables::INCIDENTS).with_clock(clock);
        self
    }

    pub(crate) fn rows(&self) -> &[SubscriptionHealth] {
        self.board.value()
    }

    /// Rows as if just loaded (fixtures for tests and snapshots).
    #[cfg(test)]
    pub(crate) fn set_rows(&mut self, rows: Vec<SubscriptionHealth>) {
        let mut shown = std::mem::take(self.board.value_mut());
        self.table.replace(&mut shown, rows);
        self.board.set(shown);
    }

    pub(crate) fn sessions(&self) -> &[FailingSession] {
        &self.sessions
    }

    pub(crate) fn selected(&self) -> Option<&SubscriptionHealth> {
        self.table.selected(self.board.value())
    }

    /// The selected row's position on the board (as filtered and sorted).
    #[cfg(test)]
    pub(crate) fn selected_index(&self) -> Option<usize> {
        self.table.selected_position()
    }

    pub(crate) fn selected_session(&self) -> Option<&FailingSession> {
        self.sessions_table.selected(&self.sessions)
    }

    /// The `/` prompt of the table on screen is open.
    pub(crate) fn prompting(&self) -> bool {
        match self.mode {
            Mode::Board => self.table.prompting(),
            Mode::Sessions => self.sessions_table.prompting(),
            Mode::Incidents => self.incidents.table.prompting(),
            Mode::Recover => false,
        }
    }

    /// `/`, `S` or the prompt's keys, for the table on screen.
    fn run_table(&mut self, command: TableCommand) {
        match self.mode {
            Mode::Board => self.table.run(command, self.board.value()),
            Mode::Sessions => self.sessions_table.run(command, &self.sessions),
            Mode::Incidents => self.incidents.run_table(command),
            Mode::Recover => {}
        }
    }

    fn recovering(&self) -> bool {
        self.recover.as_ref().is_some_and(RecoverForm::running)
    }

    fn since_ms(&self) -> i64 {
        (self.clock)() - self.window.millis()
    }

    // ---- update -------------------------------------------------------

    fn reload(&mut self, out: &mut Outcome) {
        let seq = self.board.start();
        self.last_load = Some(Instant::now());
        out.effects.push(HealthEffect::Load {
            seq,
            since_ms: self.since_ms(),
        });
        self.incidents.reload(self.since_ms(), out);
        if let (Mode::Sessions, Some(id)) = (self.mode, self.sessions_of.clone()) {
            out.effects.push(HealthEffect::LoadFailingSessions {
                seq,
                subscription_id: id,
                since_ms: self.since_ms(),
            });
        }
    }

    fn sweep(&mut self, out: &mut Outcome) {
        if self.sweeping {
            return;
        }
        self.sweeping = true;
        self.last_sweep_at = Some(Instant::now());
        out.effects.push(HealthEffect::Sweep);
    }

    /// Sweeps when [`SWEEP_EVERY`] has passed and none is running (the
    /// Events pane keeps the sweep going this way); whether it started one.
    pub(crate) fn sweep_if_due(&mut self, at: Instant, out: &mut Outcome) -> bool {
        if self.sweeping || !due(self.last_sweep_at, SWEEP_EVERY, at) {
            return false;
        }
        self.sweep(out);
        true
    }

    fn open(&mut self, out: &mut Outcome) {
        match self.mode {
            Mode::Board => {
                let Some(row) = self.selected() else { return };
                if row.failed == 0 {
                    out.toast = Some("no failures in this window for that subscription".into());
                    return;
                }
                self.sessions_of = Some(row.id.clone());
                self.sessions.clear();
                self.sessions_error = None;
                self.sessions_table.refresh(&self.sessions, None);
                self.sessions_table.reset();
                self.mode = Mode::Sessions;
                self.reload(out);
            }
            Mode::Sessions => {
                if let Some(session) = self.selected_session() {
                    out.then = Some(Handover::OpenInDeliveries(session.session_id.clone()));
                }
            }
            Mode::Recover | Mode::Incidents => {}
        }
    }

    /// The 401 failure group of the selected row, if any.
    fn refused_group(&self) -> Option<(&SubscriptionHealth, &FailureGroup)> {
        let row = self.selected()?;
        let group = row
            .failures
            .iter()
            .find(|group| group.http_status == Some(401))?;
        Some((row, group))
    }

    /// `s`: the 401 group's example event in the Signatures form, which
    /// asks the receiver (the observer's header is no evidence for it).
    fn check_refused(&mut self, out: &mut Outcome) {
        let Some((row, group)) = self.refused_group() else {
            out.toast = Some("no failure refused with 401 for that subscription".into());
            return;
        };
        out.then = Some(Handover::OpenInSignatures {
            header: None,
            body: None,
            secret_hint: Some(format!(
                "subscription {}'s receiver refused {} events with 401 (e.g. {})",
                short_id(&row.id),
                group.count,
                group.example_session_id
            )),
            delivery_id: None,
            refused: Some(RefusedDelivery {
                subscription_id: row.id.clone(),
                session_id: group.example_session_id.clone(),
                event_id: None,
                delivery_id: None,
            }),
        });
    }

    fn open_recover(&mut self, out: &mut Outcome) {
        let since_ms = self.since_ms();
        let Some(row) = self.selected() else { return };
        self.recover = Some(RecoverForm::open(&row.id, &row.url, since_ms, out));
        self.mode = Mode::Recover;
    }
}

impl Pane for HealthPane {
    type Command = HealthCommand;
    type Result = HealthResult;
    type Effect = HealthEffect;
    const TITLE: &'static str = "Health";
    const NAMES: &'static [&'static str] = &["health", "board"];
    const CALLS_PLATFORM: bool = true;

    fn create(_: &ConsoleConfig) -> HealthPane {
        HealthPane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    fn help_sections() -> Vec<CommandSection<HealthCommand>> {
        let section = |title, commands| CommandSection { title, commands };
        vec![
            section("Health board", board_commands(true, true, true)),
            section("Failing sessions", sessions_commands(true, true)),
            section("Recover (typing)", recover_commands(false)),
            section("Recover (sending)", recover_commands(true)),
            section("Incidents", incidents_commands(true, true)),
            section("Acknowledge (typing)", ack_commands()),
            section(
                "Filter (typing)",
                wrapped(prompt_commands(), HealthCommand::Table),
            ),
        ]
    }

    /// The board reloads and the sweep runs while the pane is on screen.
    fn wants_tick(&self) -> bool {
        true
    }

    /// The first read of the store, and a first sweep.
    fn init(&mut self, out: &mut Outcome) {
        self.reload(out);
        self.sweep(out);
    }

    /// `r`: sweep now, then read the board again.
    fn refresh(&mut self, out: &mut Outcome) {
        self.sweep(out);
        self.reload(out);
    }

    /// The clock, while the pane is on screen: reload every
    /// [`RELOAD_EVERY`], sweep every [`SWEEP_EVERY`]. Whether to redraw.
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        let aged = crate::tui::widgets::age::moved(&self.board, self.ticked, at, RELOAD_EVERY);
        self.ticked = at;
        let swept = self.sweep_if_due(at, out);
        let reloaded = !self.board.loading() && due(self.last_load, RELOAD_EVERY, at);
        if reloaded {
            self.reload(out);
        }
        swept || reloaded || aged
    }

    fn run(&mut self, command: HealthCommand, out: &mut Outcome) {
        use HealthCommand::*;
        if self.mode == Mode::Incidents {
            self.incidents.touch((self.clock)());
        }
        match command {
            Move(to) => match self.mode {
                Mode::Sessions => self.sessions_table.apply(to),
                Mode::Incidents => self.incidents.table.apply(to),
                _ => self.table.apply(to),
            },
            Open => self.open(out),
            Back => {
                self.mode = Mode::Board;
                self.sessions_of = None;
            }
            CycleWindow => {
                self.window = self.window.next();
                out.toast = Some(format!("window: the last {}", self.window.label()));
                self.reload(out);
            }
            Recover => self.open_recover(out),
            CheckRefused => self.check_refused(out),
            NextField => {
                if let Some(form) = &mut self.recover {
                    form.next_field();
                }
            }
            RecoverCancel => match &mut self.recover {
                Some(form) if form.running() => form.cancel(out),
                _ => {
                    self.recover = None;
                    self.mode = Mode::Board;
                }
            },
            RecoverSubmit => {
                let since_ms = self.since_ms();
                if let Some(form) = &mut self.recover {
                    form.submit(since_ms, out);
                }
            }
            Incidents => {
                // The order seen on entering holds while the operator works.
                self.mode = Mode::Incidents;
                self.incidents.touch((self.clock)());
                self.incidents.reload(self.since_ms(), out);
            }
            ToggleResolved => {
                self.incidents.all = !self.incidents.all;
                out.toast = Some(if self.incidents.all {
                    "resolved incidents shown too".into()
                } else {
                    "open and acknowledged incidents only".into()
                });
                self.incidents.reorder(self.since_ms(), out);
            }
            Reorder => {
                out.toast = Some("incidents in the store's order: latest activity first".into());
                self.incidents.reorder(self.since_ms(), out);
            }
            Ack => {
                self.incidents.start_ack();
            }
            AckSubmit => self.incidents.submit_ack(out),
            AckCancel => self.incidents.cancel_ack(),
            Table(command) => self.run_table(command),
        }
    }

    /// A background result for this pane.
    fn on_result(&mut self, result: HealthResult, out: &mut Outcome) {
        match result {
            HealthResult::Loaded { seq, result } => {
                let (table, coverage) = (&mut self.table, &mut self.coverage);
                self.board.finish_with(seq, result, |rows, board| {
                    table.replace(rows, board.subscriptions);
                    *coverage = Some(board.observer);
                });
                // The Subscriptions detail names the newest change too.
                let changes = self
                    .rows()
                    .iter()
                    .filter_map(|row| Some((row.id.clone(), row.latest_change.clone()?)))
                    .collect();
                out.then = Some(Handover::SubscriptionChanges(changes));
            }
            HealthResult::Trend { seq, result } => {
                if self.board.is_current(seq) {
                    // A trend that cannot be read leaves none, not an old one.
                    self.trend = result.ok();
                }
            }
            HealthResult::GiveUp { seq, text } => {
                if self.board.is_current(seq) {
                    self.give_up = text;
                }
            }
            HealthResult::Sessions {
                seq,
                subscription_id,
                result,
            } => {
                if !self.board.is_current(seq)
                    || self.sessions_of.as_deref() != Some(&subscription_id)
                {
                    return;
                }
                match result {
                    Ok(sessions) => {
                        self.sessions_error = None;
                        self.sessions_table.replace(&mut self.sessions, sessions);
                    }
                    Err(failure) => {
                        self.board.fail(failure.message.clone());
                        self.sessions_error = Some(failure.message);
                    }
                }
            }
            HealthResult::Swept(result) => {
                self.sweeping = false;
                self.swept_at = Some(Instant::now());
                match result {
                    Ok(report) => {
                        if let Some(why) = &report.stopped {
                            out.failure = Some(crate::tui::kernel::Failure::new(format!(
                                "sweep stopped early: {why}"
                            )));
                        } else {
                            out.succeeded = true;
                        }
                        self.last_sweep = Some(Ok(report));
                    }
                    Err(failure) => {
                        self.last_sweep = Some(Err(failure.message.clone()));
                        out.failure = Some(failure);
                    }
                }
                self.reload(out);
            }
            HealthResult::NoStore(why) => {
                self.sweeping = false;
                self.last_sweep = Some(Err(why.clone()));
                self.board.fail(why);
            }
            HealthResult::Planned {
                subscription_id,
                result,
            } => {
                if let Some(form) = &mut self.recover
                    && form.subscription_id == subscription_id
                {
                    form.preview = Some(result.map_err(|failure| failure.message));
                }
            }
            HealthResult::RecoverProgress { done, total, sent } => {
                if let Some(form) = &mut self.recover {
                    form.on_progress(done, total, sent.map(|sent| *sent));
                }
            }
            HealthResult::Incidents { seq, result } => {
                if let Some(why) = self.incidents.on_loaded(seq, result, (self.clock)()) {
                    self.board.fail(why);
                }
            }
            HealthResult::Acknowledged(result) => {
                match result {
                    Ok(line) => out.toast = Some(line),
                    Err(failure) => out.failure = Some(failure),
                }
                self.incidents.reload(self.since_ms(), out);
            }
            HealthResult::Recovered(result) => {
                if let Some(form) = &mut self.recover {
                    form.on_end(result.map_err(|failure| failure.message));
                }
                self.reload(out);
            }
        }
    }

    fn busy(&self) -> bool {
        self.board.loading() || self.sweeping || self.recovering()
    }

    fn commands(&self) -> Vec<CommandInfo<HealthCommand>> {
        match self.mode {
            _ if self.prompting() => wrapped(prompt_commands(), HealthCommand::Table),
            Mode::Board => board_commands(
                self.selected().is_some(),
                self.refused_group().is_some(),
                self.table.filtering(),
            ),
            Mode::Sessions => sessions_commands(
                self.selected_session().is_some(),
                self.sessions_table.filtering(),
            ),
            Mode::Recover => recover_commands(self.recovering()),
            Mode::Incidents if self.incidents.note().is_some() => ack_commands(),
            Mode::Incidents => incidents_commands(
                self.incidents.selected().is_some(),
                self.incidents.table.filtering(),
            ),
        }
    }

    fn allows_global(&self) -> bool {
        self.mode != Mode::Recover && self.incidents.note().is_none() && !self.prompting()
    }

    fn captures_text(&self) -> bool {
        (self.mode == Mode::Recover && !self.recovering())
            || self.incidents.note().is_some()
            || self.prompting()
    }

    fn type_key(&mut self, key: &KeyEvent) {
        if let Some(note) = self.incidents.note_mut() {
            text::type_key(note, key);
            return;
        }
        match self.mode {
            Mode::Board => self.table.type_key(key, self.board.value()),
            Mode::Sessions => self.sessions_table.type_key(key, &self.sessions),
            Mode::Incidents => {
                self.incidents.touch((self.clock)());
                self.incidents.type_key(key);
            }
            Mode::Recover => {
                if let Some(form) = &mut self.recover {
                    text::type_key(form.input_mut(), key);
                }
            }
        }
    }

    fn paste(&mut self, pasted: &str) {
        if let Some(note) = self.incidents.note_mut() {
            text::paste(note, pasted);
            return;
        }
        match self.mode {
            Mode::Board => self.table.paste(pasted, self.board.value()),
            Mode::Sessions => self.sessions_table.paste(pasted, &self.sessions),
            Mode::Incidents => self.incidents.paste(pasted),
            Mode::Recover => {
                if let Some(form) = &mut self.recover {
                    text::paste(form.input_mut(), pasted);
                }
            }
        }
    }

    fn would_lose(&self) -> Vec<String> {
        let typed = |input: &Input| !input.value().trim().is_empty();
        let mut losing = Vec::new();
        if let Some(form) = &self.recover {
            if form.running() {
                losing.push("the recover in progress (it stops after the event being sent)".into());
            } else if typed(&form.secret) || typed(&form.confirm) {
                losing.push("the recover form".into());
            }
        }
        if self.incidents.note().is_some_and(typed) {
            losing.push("the incident note".into());
        }
        losing
    }

    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        match message {
            Handover::SweepIfDue(at) => {
                self.sweep_if_due(*at, out);
                Received::Kept
            }
            _ => Received::Ignored,
        }
    }
}

