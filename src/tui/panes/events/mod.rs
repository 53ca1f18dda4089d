//! The Events pane (eighth tab): every event the observer stored, newest
//! first, with its outcome per subscription (delivered, pending, missed,
//! recovered, unknown), live from the store.
//!
//! Owns the list and its follow mode (at the top the view follows the
//! newest event, as `less +F` does; moving the cursor pauses following and
//! the selection stays on its event while rows arrive), the `/` filter in
//! the [`EventQuery`] language (the store applies it; `S` sorts what it
//! read as every table, `table.rs` its columns), one event in full
//! (headers, the body with
//! personal data masked until `n`, per subscription its attempts), and the
//! re-send of that event to one subscription (its secret, and its short id
//! typed as confirmation) or to any URL with a secret the operator gives.
//! Store reads and sends are its [`EventsEffect`]s, run by the worker
//! from `tasks.rs`. Drawing is in `view.rs`.

mod commands;
mod form;
pub(crate) mod freshness;
pub(crate) mod table;
pub(crate) mod tasks;
pub(crate) mod view;

pub(crate) use form::{Field, FormTarget, ResendForm};

use std::cell::Cell;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, Failure, Handover, Jump, Pane, RefusedDelivery};
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::load::Load;
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::Theme;
use crate::tui::widgets::input as text;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::history::event_list::{EventDetail, EventRow};
use earshot_core::history::event_query::EventQuery;
use earshot_core::redact::SecretString;
use earshot_core::signature::HEADER_NAME;

use commands::{detail_commands, filter_commands, list_commands, resend_commands};
use freshness::{Freshness, ListMark, with_newer};
use tasks::{EventsEffect, ResendTarget};

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<EventsEffect>;

/// How often the list (and an open event) is read again while on screen.
pub(crate) const RELOAD_EVERY: Duration = Duration::from_secs(2);
/// The newest events the list holds; a filter narrows to older ones.
pub(crate) const LIST_LIMIT: usize = 5_000;
/// The list's window when the filter gives no `since:`.
const DEFAULT_SINCE_MS: i64 = 7 * 86_400_000;

/// What reaches the Events pane.
#[derive(Clone, Debug)]
pub(crate) enum EventsResult {
    /// The list read from the store; `seq` identifies the read.
    Loaded {
        seq: u64,
        result: Result<Vec<EventRow>, Failure>,
        /// The store's mark taken before the read.
        mark: Option<ListMark>,
    },
    /// Nothing a list shows changed since the last full read: the list
    /// stands. `mark`: the store's new mark, when a commit of something
    /// else moved it.
    Unchanged { seq: u64, mark: Option<ListMark> },
    /// Only events were filed since the last read: those the filter passes
    /// (`freshness::with_newer` adds them to the list, and takes out what
    /// left the window, which starts at `window_from`), and the new mark.
    Newer {
        seq: u64,
        rows: Vec<EventRow>,
        window_from: i64,
        mark: Option<ListMark>,
    },
    /// One event in full (`None`: the store no longer holds it).
    Detail {
        seq: u64,
        result: Result<Option<Box<EventDetail>>, Failure>,
    },
    /// A re-send ended.
    Resent(Result<Resent, Failure>),
}

/// A re-send's answer: whether a 2xx came, and the line saying so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resent {
    pub(crate) delivered: bool,
    pub(crate) summary: String,
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventsCommand {
    /// In the list: the selection; in an event: scrolling.
    Move(Move),
    /// Open the selected event.
    Open,
    /// Back to the list.
    Back,
    /// `/` (type a filter), its prompt's keys, `esc` dropping the filter
    /// in force, and `S`.
    Table(TableCommand),
    /// The subscription re-send and the timeline's marker point at.
    NextSubscription,
    /// Re-send the event to the marked subscription.
    Resend,
    /// Send the event to a URL the operator gives.
    SendToUrl,
    OpenInSignatures,
    /// Show or mask personal data in the body.
    TogglePersonal,
    NextField,
    ResendSubmit,
    ResendCancel,
}

/// What has the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    List,
    Filter,
    Detail,
    Resend,
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct EventsPane {
    /// The events as last read (a failed read of the event open shows
    /// here too).
    list: Load<Vec<EventRow>>,
    /// The sort, the order and the selection in it.
    pub(crate) table: TableView<EventRow>,
    pub(crate) mode: Mode,
    /// The filter being typed.
    pub(crate) filter_input: Input,
    /// The filter in force, as typed.
    pub(crate) filter: String,
    query: EventQuery,
    /// Why the typed filter was refused.
    pub(crate) filter_error: Option<String>,
    /// While paused: the newest event when following stopped.
    paused_at: Option<String>,
    /// While paused: events that arrived above it since.
    pub(crate) new_above: usize,
    /// The event open in full, and which event it is.
    pub(crate) detail: Option<Box<EventDetail>>,
    pub(crate) detail_of: Option<String>,
    /// The first line of the event shown; the view clamps it.
    pub(crate) detail_scroll: Cell<usize>,
    /// The subscription (index in the event's timelines) marked for re-send.
    pub(crate) marked: usize,
    /// Personal data shown in full in the body.
    pub(crate) reveal: bool,
    pub(crate) resend: Option<ResendForm>,
    /// The latest read of the event open: an answer to another is late.
    detail_seq: u64,
    last_load: Option<Instant>,
    freshness: Freshness,
    /// The last tick: the data's age is drawn from it.
    pub(crate) ticked: Instant,
    /// Milliseconds since the epoch, for `since:` (a fixed clock in tests).
    clock: fn() -> i64,
}

impl Default for EventsPane {
    fn default() -> Self {
        EventsPane::new()
    }
}

impl EventsPane {
    pub(crate) fn new() -> EventsPane {
        EventsPane {
            list: Load::new(),
            table: TableView::new(&table::TABLE),
            mode: Mode::List,
            filter_input: Input::default(),
            filter: String::new(),
            query: EventQuery::default(),
            filter_error: None,
            paused_at: None,
            new_above: 0,
            detail: None,
            detail_of: None,
            detail_scroll: Cell::new(0),
            marked: 0,
            reveal: false,
            resend: None,
            detail_seq: 0,
            last_load: None,
            freshness: Freshness::default(),
            ticked: Instant::now(),
            clock: earshot_core::store::now_ms,
        }
    }

    /// Now, by the pane's clock (fixed in tests).
    pub(crate) fn now_ms(&self) -> i64 {
        (self.clock)()
    }

    /// Replaces the wall clock (tests use a fixed one).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    pub(crate) fn rows(&self) -> &[EventRow] {
        self.list.value()
    }

    /// Rows as if just loaded (fixtures for tests, snapshots, benches).
    #[cfg(test)]
    pub(crate) fn set_rows(&mut self, rows: Vec<EventRow>) {
        let mut shown = std::mem::take(self.list.value_mut());
        take_rows(&mut self.table, self.paused_at.is_none(), &mut shown, rows);
        self.list.set(shown);
        self.count_new_above();
    }

    pub(crate) fn selected(&self) -> Option<&EventRow> {
        self.table.selected(self.list.value())
    }

    /// The view follows the newest event (the selection is at the top).
    pub(crate) fn following(&self) -> bool {
        self.paused_at.is_none()
    }

    // ---- update -------------------------------------------------------

    fn reload(&mut self, out: &mut Outcome) {
        let now = Instant::now();
        self.last_load = Some(now);
        out.effects.push(EventsEffect::Load {
            known: self.freshness.known(&self.query, now).map(Box::new),
            seq: self.list.start(),
            query: self.query.clone(),
            since_ms: (self.clock)() - DEFAULT_SINCE_MS,
            limit: LIST_LIMIT,
        });
        if let Some(id) = &self.detail_of {
            self.detail_seq += 1;
            out.effects.push(EventsEffect::Detail {
                seq: self.detail_seq,
                event_id: id.clone(),
            });
        }
    }

    /// At the top the view follows; anywhere else it pauses.
    fn follow_or_pause(&mut self) {
        if self.table.state.position() == 0 {
            self.follow();
        } else {
            self.pause();
        }
    }

    fn follow(&mut self) {
        self.paused_at = None;
        self.new_above = 0;
    }

    /// Stops following, remembering the newest event at that moment (what
    /// arrives above it is counted).
    fn pause(&mut self) {
        if self.paused_at.is_none() {
            self.paused_at = self.rows().first().map(|row| row.event_id.clone());
        }
    }

    /// A new list (another filter): from the top, following, read now.
    fn restart_list(&mut self, out: &mut Outcome) {
        self.table.reset();
        self.follow();
        self.reload(out);
    }

    fn scroll(&mut self, to: Move) {
        let at = self.detail_scroll.get();
        let page = self.table.state.page.get().max(1);
        self.detail_scroll.set(match to {
            Move::Up => at.saturating_sub(1),
            Move::Down => at + 1,
            Move::PageUp => at.saturating_sub(page),
            Move::PageDown => at + page,
            Move::Top => 0,
            Move::Bottom => usize::MAX,
        });
    }

    fn open(&mut self, out: &mut Outcome) {
        let Some(row) = self.selected() else { return };
        let id = row.event_id.clone();
        // The list keeps its place under the event while it is open.
        self.pause();
        self.detail = None;
        self.detail_of = Some(id.clone());
        self.detail_scroll.set(0);
        self.marked = 0;
        self.reveal = false;
        self.mode = Mode::Detail;
        self.detail_seq += 1;
        out.effects.push(EventsEffect::Detail {
            seq: self.detail_seq,
            event_id: id,
        });
    }

    /// `:event ID`: the list filtered to what `text` matches.
    pub(crate) fn filter_to(&mut self, text: &str, out: &mut Outcome) {
        self.mode = Mode::List;
        self.detail = None;
        self.detail_of = None;
        self.filter_input = Input::new(text.to_owned());
        self.apply_filter(out);
    }

    fn apply_filter(&mut self, out: &mut Outcome) {
        let typed = self.filter_input.value().trim().to_owned();
        match EventQuery::parse(&typed, (self.clock)()) {
            Ok(query) => {
                self.query = query;
                self.filter = typed;
                self.filter_error = None;
                self.mode = Mode::List;
                self.restart_list(out);
            }
            Err(why) => self.filter_error = Some(why),
        }
    }

    fn marked_subscription(&self) -> Option<(String, Option<String>)> {
        let detail = self.detail.as_ref()?;
        let timeline = detail.subscriptions.get(self.marked)?;
        Some((
            timeline.outcome.subscription_id.clone(),
            timeline.url.clone(),
        ))
    }

    fn open_resend(&mut self, to_subscription: bool, out: &mut Outcome) {
        let Some(event_id) = self.detail_of.clone() else {
            return;
        };
        let target = if to_subscription {
            let Some((id, url)) = self.marked_subscription() else {
                out.toast =
                    Some("no subscription was sent this event: use u to send it to a URL".into());
                return;
            };
            FormTarget::Subscription { id, url }
        } else {
            FormTarget::AnyUrl
        };
        let field = match target {
            FormTarget::Subscription { .. } => Field::Secret,
            FormTarget::AnyUrl => Field::Url,
        };
        self.resend = Some(ResendForm {
            event_id,
            target,
            url: Input::default(),
            secret: Input::default(),
            confirm: Input::default(),
            field,
            sending: false,
            result: None,
        });
        self.mode = Mode::Resend;
    }

    fn submit_resend(&mut self, out: &mut Outcome) {
        let Some(form) = &mut self.resend else { return };
        if form.sending {
            return;
        }
        // Each field is checked in the order it is filled in.
        let url = form.url.value().trim().to_owned();
        if form.target == FormTarget::AnyUrl
            && let Err(why) = earshot_core::api::validate::http_url(&url)
        {
            form.field = Field::Url;
            out.toast = Some(format!("the URL to send to {why}"));
            return;
        }
        let secret = form.secret.value().trim().to_owned();
        if secret.is_empty() {
            form.field = Field::Secret;
            out.toast = Some("type the secret to sign with first".into());
            return;
        }
        let target = match &form.target {
            FormTarget::Subscription { id, .. } => {
                if form.confirm.value().trim() != short_id(id) {
                    form.field = Field::Confirm;
                    out.toast = Some(format!("type {} to confirm the re-send", short_id(id)));
                    return;
                }
                ResendTarget::Subscription(id.clone())
            }
            FormTarget::AnyUrl => ResendTarget::Url(url),
        };
        form.sending = true;
        form.result = None;
        out.effects.push(EventsEffect::Resend {
            event_id: form.event_id.clone(),
            target,
            secret: SecretString::new(secret),
        });
        // The secret leaves the form as soon as it is sent.
        form.secret = Input::default();
    }

    /// `s`: the event in the Signatures form. For the marked subscription's
    /// delivery refused with 401 the observer's header is not handed over
    /// (it was signed with the observer's secret, so only that one checks
    /// as valid): the form asks that receiver instead.
    fn open_in_signatures(&mut self, out: &mut Outcome) {
        let Some(detail) = &self.detail else { return };
        let event_id = detail.row.event_id.clone();
        let refused = detail
            .subscriptions
            .get(self.marked)
            .filter(|timeline| timeline.outcome.http_status_code == 401)
            .map(|timeline| RefusedDelivery {
                subscription_id: timeline.outcome.subscription_id.clone(),
                session_id: detail.row.session_id.clone(),
                event_id: Some(event_id.clone()),
                delivery_id: None,
            });
        if let Some(refused) = refused {
            out.then = Some(Handover::OpenInSignatures {
                header: None,
                body: Some(detail.body.clone()),
                secret_hint: Some(format!(
                    "subscription {}'s receiver refused event {event_id} with 401",
                    short_id(&refused.subscription_id)
                )),
                delivery_id: None,
                refused: Some(refused),
            });
            return;
        }
        let header = detail
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(HEADER_NAME))
            .map(|(_, value)| value.clone());
        out.then = Some(Handover::OpenInSignatures {
            header,
            body: Some(detail.body.clone()),
            secret_hint: Some(format!(
                "the observer's secret: event {event_id} as the observer received it (signed \
                 for the observer's subscription, not the others)"
            )),
            delivery_id: None,
            refused: None,
        });
    }

    /// After fresh rows, while paused: the rows above the event paused at
    /// are counted, and back at the top of the list the view follows.
    fn count_new_above(&mut self) {
        if self.paused_at.is_none() {
            return;
        }
        let paused_at = self.paused_at.as_deref();
        self.new_above = self
            .rows()
            .iter()
            .position(|row| Some(row.event_id.as_str()) == paused_at)
            .unwrap_or(0);
        if self.table.state.position() == 0 && matches!(self.mode, Mode::List | Mode::Filter) {
            self.follow();
        }
    }
}

/// Fresh rows in place of `shown`: following, the newest is selected;
/// paused, the same event stays selected.
fn take_rows(
    table: &mut TableView<EventRow>,
    following: bool,
    shown: &mut Vec<EventRow>,
    fresh: Vec<EventRow>,
) {
    if following {
        *shown = fresh;
        table.refresh(shown, None);
        table.select(0);
    } else {
        table.replace(shown, fresh);
    }
}

impl Pane for EventsPane {
    type Command = EventsCommand;
    type Result = EventsResult;
    type Effect = EventsEffect;
    const TITLE: &'static str = "Events";
    const SHORT_TITLE: &'static str = "Evts";
    const NAMES: &'static [&'static str] = &["events", "event", "evt"];
    const CALLS_PLATFORM: bool = false;
    const JUMP: Option<Jump> = Some(Jump {
        usage: ":event ID",
        names: &["event", "evt"],
        description: "an event (the Events list filtered to it)",
        help_order: 3,
    });

    fn create(_: &ConsoleConfig) -> EventsPane {
        EventsPane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    /// Read again and again while on screen.
    fn wants_tick(&self) -> bool {
        true
    }

    /// `:event ID`: the list filtered to what `id` matches.
    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        self.filter_to(id, out);
    }

    fn help_sections() -> Vec<CommandSection<EventsCommand>> {
        let section = |title, commands| CommandSection { title, commands };
        vec![
            section("Events", list_commands(true, true)),
            section("Filter (typing)", filter_commands()),
            section("An event", detail_commands(true)),
            section("Re-send (typing)", resend_commands(false)),
        ]
    }

    /// The pane comes on screen: the first read, unless one ran or runs.
    fn on_shown(&mut self, out: &mut Outcome) {
        if !self.list.loaded() && !self.list.loading() {
            self.reload(out);
        }
    }

    /// `r`: read the list (and the event open) again now.
    fn refresh(&mut self, out: &mut Outcome) {
        self.reload(out);
    }

    /// The clock, while the pane is on screen: reload every
    /// [`RELOAD_EVERY`], and keep the sweep going (it files the attempts
    /// the list shows). Whether anything changed.
    fn on_tick(&mut self, at: Instant, out: &mut Outcome) -> bool {
        out.then = Some(Handover::SweepIfDue(at));
        let aged = crate::tui::widgets::age::moved(&self.list, self.ticked, at, RELOAD_EVERY);
        self.ticked = at;
        let due = self
            .last_load
            .is_none_or(|last| at.saturating_duration_since(last) >= RELOAD_EVERY);
        if self.list.loading() || !due {
            return aged;
        }
        self.reload(out);
        true
    }

    fn run(&mut self, command: EventsCommand, out: &mut Outcome) {
        use EventsCommand::*;
        match command {
            Move(to) => match self.mode {
                Mode::Detail => self.scroll(to),
                _ => {
                    self.table.apply(to);
                    self.follow_or_pause();
                }
            },
            Open => self.open(out),
            Back => {
                self.mode = Mode::List;
                self.detail = None;
                self.detail_of = None;
                self.follow_or_pause();
            }
            Table(TableCommand::Filter) => {
                self.filter_input = Input::new(self.filter.clone());
                self.filter_error = None;
                self.mode = Mode::Filter;
            }
            Table(TableCommand::ApplyFilter) => self.apply_filter(out),
            Table(TableCommand::CancelFilter) => {
                self.filter_error = None;
                self.mode = Mode::List;
            }
            Table(TableCommand::ClearFilter) => {
                self.filter.clear();
                self.query = EventQuery::default();
                self.restart_list(out);
            }
            Table(TableCommand::Sort) => {
                self.table.cycle_sort(self.list.value());
                self.follow_or_pause();
            }
            NextSubscription => {
                let count = self.detail.as_ref().map_or(0, |d| d.subscriptions.len());
                if count > 0 {
                    self.marked = (self.marked + 1) % count;
                }
            }
            Resend => self.open_resend(true, out),
            SendToUrl => self.open_resend(false, out),
            OpenInSignatures => self.open_in_signatures(out),
            TogglePersonal => {
                self.reveal = !self.reveal;
                out.toast = Some(if self.reveal {
                    "showing personal data in full: n masks it".into()
                } else {
                    "personal data masked".into()
                });
            }
            NextField => {
                if let Some(form) = &mut self.resend {
                    let fields = form.fields();
                    let at = fields.iter().position(|f| *f == form.field).unwrap_or(0);
                    form.field = fields[(at + 1) % fields.len()];
                }
            }
            ResendSubmit => self.submit_resend(out),
            ResendCancel => {
                if self.resend.as_ref().is_some_and(|form| !form.sending) {
                    self.resend = None;
                    self.mode = Mode::Detail;
                }
            }
        }
    }

    /// A background result for this pane.
    fn on_result(&mut self, result: EventsResult, out: &mut Outcome) {
        match result {
            EventsResult::Loaded { seq, result, mark } => {
                let (table, following) = (&mut self.table, self.paused_at.is_none());
                let taken = self.list.finish_with(seq, result, |shown, fresh| {
                    take_rows(table, following, shown, fresh);
                });
                if let Some(Ok(())) = taken {
                    let read_at = self.last_load.unwrap_or_else(Instant::now);
                    self.freshness.note(&self.query, mark, read_at);
                    self.count_new_above();
                }
            }
            EventsResult::Unchanged { seq, mark } => {
                let taken = self.list.finish_with(seq, Ok::<_, Failure>(()), |_, ()| {});
                if let (Some(Ok(())), Some(mark)) = (taken, mark) {
                    self.freshness.renew(mark);
                }
            }
            EventsResult::Newer {
                seq,
                rows,
                window_from,
                mark,
            } => {
                let (table, following) = (&mut self.table, self.paused_at.is_none());
                let taken = self
                    .list
                    .finish_with(seq, Ok::<_, Failure>(rows), |shown, newer| {
                        let merged = with_newer(shown, newer, window_from, LIST_LIMIT);
                        take_rows(table, following, shown, merged);
                    });
                if let Some(Ok(())) = taken {
                    if let Some(mark) = mark {
                        self.freshness.renew(mark);
                    }
                    self.count_new_above();
                }
            }
            EventsResult::Detail { seq, result } => {
                if seq != self.detail_seq || self.detail_of.is_none() {
                    return;
                }
                match result {
                    Ok(Some(detail)) => {
                        self.marked = self
                            .marked
                            .min(detail.subscriptions.len().saturating_sub(1));
                        self.detail = Some(detail);
                    }
                    Ok(None) => self.list.fail("the store no longer holds this event"),
                    Err(failure) => self.list.fail(failure.message),
                }
            }
            EventsResult::Resent(result) => {
                if let Some(form) = &mut self.resend {
                    form.sending = false;
                    form.confirm = Input::default();
                    form.result = Some(result.map_err(|failure| failure.message));
                }
                // The store records a send to a subscription: show it.
                self.reload(out);
            }
        }
    }

    fn busy(&self) -> bool {
        self.list.loading() || self.resend.as_ref().is_some_and(|form| form.sending)
    }

    fn commands(&self) -> Vec<CommandInfo<EventsCommand>> {
        match self.mode {
            Mode::List => list_commands(self.selected().is_some(), !self.filter.is_empty()),
            Mode::Filter => filter_commands(),
            Mode::Detail => detail_commands(self.detail.is_some()),
            Mode::Resend => resend_commands(self.resend.as_ref().is_some_and(|f| f.sending)),
        }
    }

    fn allows_global(&self) -> bool {
        matches!(self.mode, Mode::List | Mode::Detail)
    }

    fn captures_text(&self) -> bool {
        match self.mode {
            Mode::Filter => true,
            Mode::Resend => self.resend.as_ref().is_some_and(|form| !form.sending),
            _ => false,
        }
    }

    fn type_key(&mut self, key: &KeyEvent) {
        match self.mode {
            Mode::Filter => {
                text::type_key(&mut self.filter_input, key);
            }
            Mode::Resend => {
                if let Some(form) = &mut self.resend {
                    text::type_key(form.input_mut(), key);
                }
            }
            _ => {}
        }
    }

    fn paste(&mut self, pasted: &str) {
        match self.mode {
            Mode::Filter => {
                text::paste(&mut self.filter_input, pasted);
            }
            Mode::Resend => {
                if let Some(form) = &mut self.resend {
                    text::paste(form.input_mut(), pasted);
                }
            }
            _ => {}
        }
    }

    fn would_lose(&self) -> Vec<String> {
        let typed = |input: &Input| !input.value().trim().is_empty();
        match &self.resend {
            Some(form) if form.sending => {
                vec!["the re-send in progress (it finishes, unseen)".into()]
            }
            Some(form) if typed(&form.url) || typed(&form.secret) || typed(&form.confirm) => {
                vec!["the re-send form".into()]
            }
            _ => Vec::new(),
        }
    }
}

