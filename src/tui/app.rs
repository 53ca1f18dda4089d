//! The console's state ([`App`]) and its one `update` (The Elm
//! Architecture): an [`Action`] in, state changed, [`Effect`]s out.
//!
//! Owns what is common to every pane: which pane is on screen, the
//! overlays (help, `:` prompt, quit question), the status bar's facts, the
//! toast, the quit flag and the `dirty` flag the event loop draws by. Keys
//! become commands here, through the same command lists help is drawn
//! from (`keymap.rs`). `update` never blocks and never does I/O.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event, KeyEvent, KeyEventKind};
use tui_input::Input;

use super::action::{Action, Effect, Failure, HealthResult, InboxResult};
use super::command::{
    Command, command_line_commands, confirm_commands, global_commands, help_commands,
    interrupt_command,
};
use super::command_line::{self, Typed};
use super::context::{Contexts, picker_commands};
use super::keymap::{self, CommandInfo, CommandSection, permitted};
use super::panes::deliveries::DeliveriesPane;
use super::panes::events::EventsPane;
use super::panes::health::HealthPane;
use super::panes::inbox::{self, InboxPane};
use super::panes::jobs::JobsPane;
use super::panes::probe::ProbePane;
use super::panes::signatures::SignaturesPane;
use super::panes::subscriptions::SubscriptionsPane;
use super::panes::{Pane, PaneCommands, PaneId};
use super::widgets::input as text;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::signature::HEADER_NAME;

/// How long a toast stays up.
pub const TOAST_FOR: Duration = Duration::from_secs(4);

/// Facts the console is started with.
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Running on the built-in emulator (`earshot demo`): shows DEMO.
    pub demo: bool,
    /// `--read-only`, or the profile's `read_only`: no command that
    /// changes the platform exists.
    pub read_only: bool,
    pub profile_label: String,
    pub region: String,
    /// Which receiver URLs the create form accepts.
    pub url_policy: UrlPolicy,
    /// The platform's clock, as a factor of real time (1: real time).
    pub time_scale: f64,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            demo: false,
            read_only: false,
            profile_label: "-".into(),
            region: earshot_core::api::Region::default().as_str().into(),
            url_policy: UrlPolicy::PublicHttps,
            time_scale: 1.0,
        }
    }
}

/// Something drawn over the panes.
#[derive(Clone, Debug)]
pub enum Overlay {
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

/// The platform as the status bar reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    /// No answer yet.
    Unknown,
    Ok,
    Error,
}

/// The status bar's facts.
///
/// The connection state is the latest answer of *every* area (pane) that
/// calls the platform, not of whichever answered last: `error` while any
/// area's latest call failed, `ok` once each has recovered. A platform
/// error leaves the error slot when its area recovers; a local notice (a
/// theme, an unknown command, the clipboard) leaves at the next key.
#[derive(Clone, Debug)]
pub struct Status {
    pub connection: Connection,
    /// Requests used of the account budget; the Jobs pane fills it.
    pub budget: Option<String>,
    /// What the error slot shows.
    pub last_error: Option<Failure>,
    /// Areas whose latest platform call failed, oldest failure first (at
    /// most one entry per pane).
    failing: Vec<(PaneId, Failure)>,
    /// The area `last_error` came from; `None` for a local notice.
    error_from: Option<PaneId>,
}

impl Status {
    pub(crate) fn new() -> Status {
        Status {
            connection: Connection::Unknown,
            budget: None,
            last_error: None,
            failing: Vec::new(),
            error_from: None,
        }
    }

    /// The latest platform call of `area` failed.
    pub fn failed(&mut self, area: PaneId, failure: Failure) {
        self.failing.retain(|(failing, _)| *failing != area);
        self.failing.push((area, failure.clone()));
        self.connection = Connection::Error;
        self.last_error = Some(failure);
        self.error_from = Some(area);
    }

    /// The latest platform call of `area` succeeded.
    pub fn succeeded(&mut self, area: PaneId) {
        self.failing.retain(|(failing, _)| *failing != area);
        match self.failing.last() {
            Some((other, failure)) => {
                self.connection = Connection::Error;
                if self.error_from == Some(area) {
                    self.last_error = Some(failure.clone());
                    self.error_from = Some(*other);
                }
            }
            None => {
                self.connection = Connection::Ok;
                if self.error_from.take().is_some() {
                    self.last_error = None;
                }
            }
        }
    }

    /// A message that is not about the platform, shown in the error slot
    /// until the next key.
    pub(crate) fn notice(&mut self, failure: Failure) {
        self.last_error = Some(failure);
        self.error_from = None;
    }

    /// The next key clears a notice (a platform error stays while its
    /// area is failing).
    fn key_pressed(&mut self) {
        if self.error_from.is_none() {
            self.last_error = None;
        }
    }

    /// The areas whose latest platform call failed.
    #[cfg(test)]
    pub fn failing_areas(&self) -> impl Iterator<Item = PaneId> + '_ {
        self.failing.iter().map(|(area, _)| *area)
    }
}

/// A short message that goes away by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub until: Instant,
}

/// What a pane's update produced besides its own state changes.
#[derive(Debug, Default)]
pub struct Outcome {
    pub effects: Vec<Effect>,
    pub toast: Option<String>,
    pub failure: Option<Failure>,
    /// A platform call succeeded.
    pub succeeded: bool,
    /// An action for the whole app to run next (e.g. open another pane).
    pub then: Option<Action>,
}

/// The whole console's state.
#[derive(Debug)]
pub struct App {
    pub config: AppConfig,
    pub pane: PaneId,
    pub health: HealthPane,
    pub subs: SubscriptionsPane,
    pub deliveries: DeliveriesPane,
    pub jobs: JobsPane,
    pub sigs: SignaturesPane,
    pub probe: ProbePane,
    pub inbox: InboxPane,
    pub events: EventsPane,
    pub overlay: Option<Overlay>,
    pub status: Status,
    pub toast: Option<Toast>,
    /// The profiles `:ctx` switches between, and the account generation.
    pub ctx: Contexts,
    /// Something changed since the last frame.
    pub dirty: bool,
    pub quit: bool,
}

impl App {
    pub fn new(config: AppConfig) -> App {
        let subs = SubscriptionsPane::new(config.url_policy);
        let ctx = Contexts {
            forced_read_only: config.read_only,
            ..Contexts::default()
        };
        App {
            config,
            pane: PaneId::Health,
            health: HealthPane::new(),
            subs,
            deliveries: DeliveriesPane::new(),
            jobs: JobsPane::new(),
            sigs: SignaturesPane::new(),
            probe: ProbePane::new(),
            inbox: InboxPane::new(),
            events: EventsPane::new(),
            overlay: None,
            status: Status::new(),
            toast: None,
            ctx,
            dirty: true,
            quit: false,
        }
    }

    /// The work to start with: the first load.
    pub fn init(&mut self) -> Vec<Effect> {
        let mut out = Outcome::default();
        self.health.init(&mut out);
        self.subs.init(&mut out);
        self.deliveries.init(&mut out);
        self.jobs.init(&mut out);
        self.absorb(None, out)
    }

    /// Remembers session and call ids for the Deliveries pane (most recent
    /// first); the first is loaded by `init` when nothing is on screen.
    pub fn seed_recent_ids(&mut self, ids: Vec<String>) {
        self.deliveries.seed_recent(ids);
        self.dirty = true;
    }

    /// Transcript job ids the Jobs pane watches from the start.
    pub fn seed_job_ids(&mut self, ids: Vec<String>) {
        self.jobs.seed(ids);
        self.dirty = true;
    }

    /// The WAV file the Probe pane offers first (the demo's sample).
    pub fn seed_probe_file(&mut self, path: &std::path::Path) {
        self.probe.seed_file(path);
        self.dirty = true;
    }

    /// Shows a message in the status bar's error slot (e.g. a theme that
    /// could not be loaded).
    pub(crate) fn notice(&mut self, message: impl Into<String>) {
        self.status.notice(Failure::new(message));
        self.dirty = true;
    }

    /// Whether the loop should run its tick: something counts down.
    pub fn wants_tick(&self) -> bool {
        self.toast.is_some()
            || (self.pane == PaneId::Health && self.health.wants_tick())
            || (self.pane == PaneId::Deliveries && self.deliveries.wants_tick())
            || (self.pane == PaneId::Jobs && self.jobs.wants_tick())
            || self.pane == PaneId::Events
    }

    /// A request is in flight.
    pub fn busy(&self) -> bool {
        self.subs.busy()
            || self.health.busy()
            || self.deliveries.busy()
            || self.sigs.busy()
            || self.jobs.busy()
            || self.probe.busy()
            || self.inbox.busy()
            || self.events.busy()
    }

    /// The one update.
    pub fn update(&mut self, action: Action) -> Vec<Effect> {
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
            Action::Tick(now) => {
                if self.toast.as_ref().is_some_and(|toast| now >= toast.until) {
                    self.toast = None;
                    self.dirty = true;
                }
                if self.pane == PaneId::Jobs && self.jobs.wants_tick() {
                    self.jobs.on_tick(now);
                    self.dirty = true;
                }
                if self.pane == PaneId::Health && self.health.wants_tick() {
                    let mut out = Outcome::default();
                    if self.health.on_tick(now, &mut out) {
                        self.dirty = true;
                    }
                    return self.absorb(None, out);
                }
                if self.pane == PaneId::Events {
                    let mut out = Outcome::default();
                    // The sweep files the attempts the Events list shows
                    // (the board it reads after each sweep is not needed
                    // on a timer of its own here).
                    let swept = self.health.sweep_if_due(now, &mut out);
                    if self.events.on_tick(now, &mut out) || swept {
                        self.dirty = true;
                    }
                    return self.absorb(None, out);
                }
                if self.pane == PaneId::Deliveries && self.deliveries.wants_tick() {
                    let mut out = Outcome::default();
                    if self.deliveries.on_tick(now, &mut out) {
                        self.dirty = true;
                    }
                    return out.effects;
                }
                Vec::new()
            }
            Action::Subs(result) => self.apply_from(Some(PaneId::Subscriptions), |app, out| {
                app.subs.on_result(result, out);
            }),
            Action::Deliveries(result) => self.apply_from(Some(PaneId::Deliveries), |app, out| {
                app.deliveries.on_result(result, out);
            }),
            // Local file reads, not the platform.
            Action::Sigs(result) => self.apply(|app, out| app.sigs.on_result(result, out)),
            Action::Probe(result) => self.apply_from(Some(PaneId::Probe), |app, out| {
                app.probe.on_result(result, out);
            }),
            Action::Health(result) => self.apply_from(Some(PaneId::Health), |app, out| {
                let board = matches!(result, HealthResult::Loaded { .. });
                app.health.on_result(result, out);
                if board {
                    // The Subscriptions detail names the newest change too.
                    let changes = app
                        .health
                        .rows()
                        .iter()
                        .filter_map(|row| Some((row.id.clone(), row.latest_change.clone()?)))
                        .collect();
                    app.subs.set_changes(changes);
                }
            }),
            // The store and a receiver of the operator's, not the platform.
            Action::Events(result) => self.apply(|app, out| app.events.on_result(result, out)),
            Action::KnownSessions(ids) => {
                self.dirty = true;
                self.deliveries.set_known(ids);
                Vec::new()
            }
            Action::OpenInDeliveries(id) => {
                self.overlay = None;
                self.pane = PaneId::Deliveries;
                self.apply(|app, out| app.deliveries.open(id, out))
            }
            Action::Inbox(result) => {
                self.dirty = true;
                let job_update = match &result {
                    InboxResult::Received(received) => inbox::job_update(received)
                        .map(|(id, status)| (id, status, received.status())),
                    InboxResult::Started { .. } => None,
                };
                let mut out = Outcome::default();
                self.inbox.on_result(result, &mut out);
                if let Some((id, status, answered)) = job_update
                    && self.jobs.watches(&id)
                {
                    self.jobs.note_webhook(&id, answered);
                    out.effects.push(Effect::JobWebhook { id, status });
                }
                // The local receiver, not the platform.
                self.absorb(None, out)
            }
            Action::OpenInSignatures {
                header,
                body,
                secret_hint,
                delivery_id,
            } => {
                self.dirty = true;
                // The platform keeps no bodies; the Inbox may have this one.
                let captured = delivery_id
                    .as_deref()
                    .filter(|_| header.is_none())
                    .and_then(|id| self.inbox.by_delivery_id(id));
                let (header, body) = match captured {
                    Some(received) if received.body_whole() => (
                        received.entry.header(HEADER_NAME).map(str::to_owned),
                        Some(received.body.to_vec()),
                    ),
                    Some(received) => {
                        self.status.notice(Failure::new(received.too_large()));
                        (header, body)
                    }
                    None => (header, body),
                };
                self.overlay = None;
                self.pane = PaneId::Signatures;
                self.sigs.open_with(header, body, secret_hint);
                Vec::new()
            }
            Action::Jobs(result) => {
                self.dirty = true;
                let mut out = Outcome::default();
                self.jobs.on_result(result, &mut out);
                if let Some((used, budget)) = self.jobs.budget {
                    self.status.budget = Some(format!("{used}/{budget}"));
                }
                self.absorb(Some(PaneId::Jobs), out)
            }
            Action::Failed(failure) => {
                self.dirty = true;
                self.status.notice(failure);
                Vec::new()
            }
            Action::Shutdown => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    /// The commands that exist right now: keys match these, the footer
    /// shows their quick ones. Read-only filtering happens here, once.
    pub fn commands(&self) -> Vec<CommandInfo<Command>> {
        permitted(self.all_commands(), self.config.read_only)
    }

    /// The commands that exist right now, before the read-only filter.
    fn all_commands(&self) -> Vec<CommandInfo<Command>> {
        match &self.overlay {
            Some(Overlay::Help { .. }) => help_commands(),
            Some(Overlay::CommandLine(_)) => {
                let mut list = command_line_commands();
                list.push(interrupt_command());
                list
            }
            Some(Overlay::ConfirmQuit | Overlay::ConfirmSwitch { .. }) => {
                let mut list = confirm_commands();
                list.push(interrupt_command());
                list
            }
            Some(Overlay::Profiles { .. }) => {
                let mut list = picker_commands();
                list.push(interrupt_command());
                list
            }
            None => {
                let pane = self.on_screen();
                let mut list = self.pane_commands();
                if pane.allows_global() {
                    list.extend(global_commands());
                } else {
                    list.push(interrupt_command());
                }
                list
            }
        }
    }

    /// A key read-only mode took away: which, so the operator is told
    /// rather than nothing happening.
    fn read_only_hidden(&self, key: &KeyEvent) -> Option<&'static str> {
        if !self.config.read_only {
            return None;
        }
        self.all_commands()
            .into_iter()
            .find(|info| info.mutating && info.bindings.iter().any(|k| k.matches(key)))
            .map(|info| info.description)
    }

    /// What `?` shows: the current pane's commands, then the global ones,
    /// through the same read-only filter as the keys.
    pub fn help_sections(&self) -> Vec<CommandSection<Command>> {
        fn wrap<C: Copy>(
            sections: Vec<CommandSection<C>>,
            into: fn(C) -> Command,
        ) -> Vec<CommandSection<Command>> {
            sections
                .into_iter()
                .map(|section| section.map(into))
                .collect()
        }
        let mut sections = match self.pane {
            PaneId::Health => wrap(HealthPane::help_sections(), Command::Health),
            PaneId::Subscriptions => wrap(SubscriptionsPane::help_sections(), Command::Subs),
            PaneId::Deliveries => wrap(DeliveriesPane::help_sections(), Command::Dlv),
            PaneId::Jobs => wrap(JobsPane::help_sections(), Command::Jobs),
            PaneId::Signatures => wrap(SignaturesPane::help_sections(), Command::Sigs),
            PaneId::Probe => wrap(ProbePane::help_sections(), Command::Probe),
            PaneId::Inbox => wrap(InboxPane::help_sections(), Command::Inbox),
            PaneId::Events => wrap(EventsPane::help_sections(), Command::Events),
        };
        sections.push(CommandSection {
            title: "Global",
            commands: global_commands(),
        });
        sections.push(CommandSection {
            title: "Command line (:)",
            commands: command_line::help_entries(Command::OpenCommandLine),
        });
        sections
            .into_iter()
            .map(|section| CommandSection {
                title: section.title,
                commands: permitted(section.commands, self.config.read_only)
                    .into_iter()
                    .filter(|command| command.in_help)
                    .collect(),
            })
            .filter(|section| !section.commands.is_empty())
            .collect()
    }

    /// The commands of the pane on screen, as the console's.
    fn pane_commands(&self) -> Vec<CommandInfo<Command>> {
        fn wrap<P: PaneCommands>(
            pane: &P,
            into: fn(P::Command) -> Command,
        ) -> Vec<CommandInfo<Command>> {
            pane.commands()
                .into_iter()
                .map(|info| info.map(into))
                .collect()
        }
        match self.pane {
            PaneId::Health => wrap(&self.health, Command::Health),
            PaneId::Subscriptions => wrap(&self.subs, Command::Subs),
            PaneId::Deliveries => wrap(&self.deliveries, Command::Dlv),
            PaneId::Jobs => wrap(&self.jobs, Command::Jobs),
            PaneId::Signatures => wrap(&self.sigs, Command::Sigs),
            PaneId::Probe => wrap(&self.probe, Command::Probe),
            PaneId::Inbox => wrap(&self.inbox, Command::Inbox),
            PaneId::Events => wrap(&self.events, Command::Events),
        }
    }

    /// The pane on screen.
    fn on_screen(&self) -> &dyn Pane {
        self.pane_ref(self.pane)
    }

    pub(crate) fn pane_ref(&self, id: PaneId) -> &dyn Pane {
        match id {
            PaneId::Health => &self.health,
            PaneId::Subscriptions => &self.subs,
            PaneId::Deliveries => &self.deliveries,
            PaneId::Jobs => &self.jobs,
            PaneId::Signatures => &self.sigs,
            PaneId::Probe => &self.probe,
            PaneId::Inbox => &self.inbox,
            PaneId::Events => &self.events,
        }
    }

    fn on_screen_mut(&mut self) -> &mut dyn Pane {
        match self.pane {
            PaneId::Health => &mut self.health,
            PaneId::Subscriptions => &mut self.subs,
            PaneId::Deliveries => &mut self.deliveries,
            PaneId::Jobs => &mut self.jobs,
            PaneId::Signatures => &mut self.sigs,
            PaneId::Probe => &mut self.probe,
            PaneId::Inbox => &mut self.inbox,
            PaneId::Events => &mut self.events,
        }
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
            || (self.overlay.is_none() && self.on_screen().captures_text());
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
                let pane = self.on_screen_mut();
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
                let pane = self.on_screen_mut();
                if pane.captures_text() {
                    pane.paste(pasted);
                }
            }
        }
    }

    fn run(&mut self, command: Command) -> Vec<Effect> {
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
                    return self.quit_now();
                }
                self.quit_or_ask()
            }
            Command::ConfirmYes => match self.overlay.take() {
                Some(Overlay::ConfirmSwitch { to, .. }) => self.switch_now(to),
                _ => self.quit_now(),
            },
            Command::Ctx(command) => self.on_picker(command),
            Command::CompleteCommandLine => self.complete_command_line(),
            Command::Subs(command) => self.apply(|app, out| app.subs.run(command, out)),
            Command::Dlv(command) => self.apply(|app, out| app.deliveries.run(command, out)),
            Command::Jobs(command) => self.apply(|app, out| app.jobs.run(command, out)),
            Command::Sigs(command) => self.apply(|app, out| app.sigs.run(command, out)),
            Command::Inbox(command) => self.apply(|app, out| app.inbox.run(command, out)),
            Command::Probe(command) => self.apply(|app, out| app.probe.run(command, out)),
            Command::Health(command) => self.apply(|app, out| app.health.run(command, out)),
            Command::Events(command) => self.apply(|app, out| app.events.run(command, out)),
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
            Typed::QuitNow => self.quit_now(),
            Typed::Help => self.run(Command::Help),
            Typed::Refresh => self.refresh(),
            Typed::GoTo(pane) => self.go_to(pane),
            Typed::Subscription(id) => {
                self.pane = PaneId::Subscriptions;
                if !self.subs.show(&id) {
                    self.set_toast(format!("no subscription matches {id}"));
                }
                Vec::new()
            }
            Typed::Session(id) => self.update(Action::OpenInDeliveries(id)),
            Typed::Event(id) => {
                let mut effects = self.go_to(PaneId::Events);
                effects.extend(self.apply(|app, out| app.events.filter_to(&id, out)));
                effects
            }
            Typed::Context(None) => self.open_profiles(),
            Typed::Context(Some(name)) => self.request_switch(&name),
            Typed::Job(id) => {
                self.pane = PaneId::Jobs;
                self.apply(|app, out| app.jobs.open_job(&id, out))
            }
        }
    }

    fn go_to(&mut self, pane: PaneId) -> Vec<Effect> {
        self.pane = pane;
        if pane == PaneId::Events && !self.events.loaded_once && !self.events.loading {
            return self.apply(|app, out| app.events.init(out));
        }
        Vec::new()
    }

    fn refresh(&mut self) -> Vec<Effect> {
        match self.pane {
            PaneId::Health => self.apply(|app, out| app.health.refresh(out)),
            PaneId::Subscriptions => self.apply(|app, out| app.subs.refresh(out)),
            PaneId::Deliveries => self.apply(|app, out| app.deliveries.refresh(out)),
            PaneId::Probe => self.apply(|app, out| app.probe.refresh(out)),
            PaneId::Events => self.apply(|app, out| app.events.refresh(out)),
            _ => {
                self.set_toast("nothing to refresh in this pane yet".into());
                Vec::new()
            }
        }
    }

    fn quit_or_ask(&mut self) -> Vec<Effect> {
        if PaneId::ALL
            .into_iter()
            .any(|id| self.pane_ref(id).holds_typed_input())
        {
            self.overlay = Some(Overlay::ConfirmQuit);
            return Vec::new();
        }
        self.quit_now()
    }

    fn quit_now(&mut self) -> Vec<Effect> {
        self.quit = true;
        vec![Effect::Quit]
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
        if let Some(action) = out.then {
            effects.extend(self.update(action));
        }
        effects
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
