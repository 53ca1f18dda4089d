//! The Inbox pane: what a local webhook receiver (`receiver::listen`, the
//! receiver behind `earshot listen`) gets, live, with each request's
//! verdict.
//!
//! Owns the start form (address, current and previous secret), the rows
//! (newest first, at most [`ROWS_MAX`] and [`HELD_MAX`] bytes: a body over
//! [`BODY_KEEP_MAX`] keeps only a [`PREVIEW_BYTES`] preview), the counts,
//! and the table and detail views. Starting is [`InboxEffect::Listen`], answered by
//! [`InboxResult::Started`]; requests arrive as [`InboxResult::Received`].
//! `s` on a signed request opens it in the Signatures pane with its header
//! and exact body; `app.rs` hands a pre-recorded webhook to the job watcher
//! at once. `/` filters and `S` sorts the table as every table (`table.rs`
//! its columns). Nothing here changes the platform. Drawing is in
//! `view.rs`.

mod commands;
pub(crate) mod table;
pub(crate) mod tasks;
pub(crate) mod view;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, Failure, Handover, Pane};
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::theme::Theme;
use crate::tui::widgets::input::{self as text, cycle};
use crate::tui::widgets::table_view::{TableCommand, TableView, prompt_commands, wrapped};
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::receiver::capture::{Kind, VerdictCode};
use earshot_core::receiver::listen::Received;
use earshot_core::redact::SecretString;
use earshot_core::signature::HEADER_NAME;
use tasks::InboxEffect;

use commands::{detail_commands, form_commands, table_commands};

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<InboxEffect>;

/// Requests kept on screen; older ones stay in the capture file only.
pub(crate) const ROWS_MAX: usize = 2_000;
/// Bodies up to this size are kept exactly (the Signatures pane can check
/// them); webhook payloads are a few KiB.
pub(crate) const BODY_KEEP_MAX: usize = 256 * 1024;
/// What a larger body keeps: its first bytes, to look at.
pub(crate) const PREVIEW_BYTES: usize = 4 * 1024;
/// Most bytes the rows hold together (bodies, headers, fields); the oldest
/// rows go first.
pub(crate) const HELD_MAX: usize = 32 * 1024 * 1024;
/// Where the form proposes to listen.
pub(crate) const DEFAULT_ADDRESS: &str = "127.0.0.1:8787";

/// What reaches the Inbox pane.
#[derive(Clone, Debug)]
pub(crate) enum InboxResult {
    /// The receiver asked for with `seq` listens at this URL, or not.
    Started {
        seq: u64,
        result: Result<String, Failure>,
    },
    /// A request the receiver answered.
    Received(Box<earshot_core::receiver::listen::Received>),
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InboxCommand {
    Move(Move),
    /// Table → detail.
    Open,
    /// Detail → table.
    Back,
    /// Open the selected signed request in the Signatures pane.
    CheckSignature,
    /// Open the start form.
    Listen,
    FormSubmit,
    FormCancel,
    NextField,
    PrevField,
    /// Forget the rows on screen (the counts stay).
    Clear,
    /// Show or mask secret header values and personal data in the detail.
    Reveal,
    /// `/`, `S` and the filter prompt.
    Table(TableCommand),
}

/// A field of the start form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Address,
    Current,
    Previous,
    ForwardTo,
}

const FIELDS: [Field; 4] = [
    Field::Address,
    Field::Current,
    Field::Previous,
    Field::ForwardTo,
];

/// What the start form asks for: where to listen, the secrets to verify
/// with, and the app every verified, new event is passed on to, if any.
#[derive(Clone, Debug)]
pub(crate) struct ListenRequest {
    pub(crate) bind: SocketAddr,
    pub(crate) secrets: Vec<(String, SecretString)>,
    pub(crate) forward_to: Option<url::Url>,
}

/// The start form: where to listen and the secrets to verify with.
#[derive(Debug)]
pub(crate) struct ListenForm {
    pub(crate) address: Input,
    pub(crate) current: Input,
    pub(crate) previous: Input,
    /// The developer's app (`listen --forward-to`); empty: none.
    pub(crate) forward_to: Input,
    pub(crate) focus: Field,
    /// Why the last submit was refused.
    pub(crate) error: Option<String>,
}

impl ListenForm {
    fn new() -> ListenForm {
        ListenForm {
            address: Input::new(DEFAULT_ADDRESS.into()),
            current: Input::default(),
            previous: Input::default(),
            forward_to: Input::default(),
            focus: Field::Address,
            error: None,
        }
    }

    fn focused(&mut self) -> &mut Input {
        match self.focus {
            Field::Address => &mut self.address,
            Field::Current => &mut self.current,
            Field::Previous => &mut self.previous,
            Field::ForwardTo => &mut self.forward_to,
        }
    }

    /// What to start, or what is wrong (naming the field).
    fn parse(&self) -> Result<ListenRequest, String> {
        let address = self.address.value().trim();
        let bind: SocketAddr = address
            .parse()
            .map_err(|_| format!("address: {address:?} is not HOST:PORT (e.g. 127.0.0.1:8787)"))?;
        let current = self.current.value().trim();
        if current.is_empty() {
            return Err("current secret: required to verify X-SVC-Signature".into());
        }
        let mut secrets = vec![("current".to_owned(), SecretString::new(current))];
        let previous = self.previous.value().trim();
        if !previous.is_empty() {
            secrets.push(("previous".to_owned(), SecretString::new(previous)));
        }
        let forward = self.forward_to.value().trim();
        let forward_to = if forward.is_empty() {
            None
        } else {
            let url = url::Url::parse(forward)
                .ok()
                .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
                .ok_or_else(|| {
                    format!("forward to: {forward:?} is not an http:// or https:// URL")
                })?;
            Some(url)
        };
        Ok(ListenRequest {
            bind,
            secrets,
            forward_to,
        })
    }
}

/// Whether a receiver runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Listening {
    Off,
    Starting(SocketAddr),
    On { url: String },
    Failed(String),
}

/// Requests by outcome, since the receiver started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) received: u64,
    pub(crate) accepted: u64,
    pub(crate) duplicates: u64,
    pub(crate) rejected: u64,
}

/// Table or detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    Table,
    Detail,
}

/// One request as the Inbox holds it: the receiver's record without the
/// capture file's copies of the body (`body_base64`, `body`), and `body`
/// itself whole up to [`BODY_KEEP_MAX`], else its first [`PREVIEW_BYTES`].
#[derive(Clone, Debug)]
pub(crate) struct InboxRow {
    request: Received,
    /// The body's real size.
    pub(crate) body_len: usize,
    /// Bytes this row holds (its share of [`HELD_MAX`]).
    held: usize,
    /// What identifies it in the table: the order it arrived in.
    pub(crate) key: String,
}

impl InboxRow {
    pub(crate) fn new(mut request: Received) -> InboxRow {
        let body_len = request.body.len();
        let kept = if body_len > BODY_KEEP_MAX {
            PREVIEW_BYTES
        } else {
            body_len
        };
        // A copy: a slice would keep the whole received buffer alive.
        request.body = axum::body::Bytes::copy_from_slice(&request.body[..kept]);
        request.entry.body_base64 = String::new();
        request.entry.body = None;
        let entry = &request.entry;
        let fields = [
            &entry.received_at,
            &entry.source,
            &entry.method,
            &entry.path,
        ]
        .iter()
        .map(|field| field.len())
        .sum::<usize>();
        let headers: usize = entry
            .headers
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum();
        let held = request.body.len() + headers + fields;
        InboxRow {
            request,
            body_len,
            held,
            key: String::new(),
        }
    }

    /// The exact body is held (not only a preview).
    pub(crate) fn body_whole(&self) -> bool {
        self.request.body.len() == self.body_len
    }

    /// Why the Signatures pane cannot have this body.
    pub(crate) fn too_large(&self) -> String {
        format!(
            "the body ({} bytes) is larger than the Inbox keeps ({} KiB; the first {} KiB \
             are shown): to check its signature, capture it with `earshot listen --capture FILE` \
             and run `earshot verify --capture FILE`",
            self.body_len,
            BODY_KEEP_MAX / 1024,
            PREVIEW_BYTES / 1024
        )
    }
}

impl std::ops::Deref for InboxRow {
    type Target = Received;

    fn deref(&self) -> &Received {
        &self.request
    }
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct InboxPane {
    /// Newest first.
    rows: VecDeque<InboxRow>,
    /// Bytes the rows hold together, at most [`HELD_MAX`].
    held: usize,
    /// The filter, the sort, the order and the selection in it.
    pub(crate) table: TableView<InboxRow>,
    /// Requests pushed so far (each row's key).
    pushed: u64,
    pub(crate) view: View,
    pub(crate) form: Option<ListenForm>,
    pub(crate) listening: Listening,
    pub(crate) counts: Counts,
    /// Requests that arrived above the selection since it left the top
    /// (the view follows the newest only at the top, as `less +F`).
    pub(crate) new_above: usize,
    /// The detail shows secret header values and personal data in full.
    pub(crate) reveal: bool,
    start_seq: u64,
    /// When the last request arrived, and the clock's last tick: the title
    /// says how long ago ("last in 12 s ago"), so a receiver gone quiet
    /// shows.
    pub(crate) last_in: Option<Instant>,
    pub(crate) ticked: Instant,
}

impl Default for InboxPane {
    fn default() -> Self {
        InboxPane::new()
    }
}

impl InboxPane {
    pub(crate) fn new() -> InboxPane {
        InboxPane {
            rows: VecDeque::new(),
            held: 0,
            table: TableView::new(&table::TABLE),
            pushed: 0,
            view: View::Table,
            form: None,
            listening: Listening::Off,
            counts: Counts::default(),
            new_above: 0,
            reveal: false,
            start_seq: 0,
            last_in: None,
            ticked: Instant::now(),
        }
    }

    /// The selection is on the newest request, and stays there as more
    /// arrive.
    pub(crate) fn following(&self) -> bool {
        self.table.state.position() == 0 && self.view == View::Table
    }

    /// A receiver started outside the pane (the demo's) delivers here.
    pub(crate) fn set_listening(&mut self, url: String) {
        self.listening = Listening::On { url };
    }

    pub(crate) fn rows(&self) -> &VecDeque<InboxRow> {
        &self.rows
    }

    /// Bytes the rows hold together (at most [`HELD_MAX`]).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.held
    }

    pub(crate) fn selected(&self) -> Option<&InboxRow> {
        self.table.selected(&self.rows)
    }

    /// The newest captured attempt with this `X-SVC-Delivery-Id`.
    pub(crate) fn by_delivery_id(&self, delivery_id: &str) -> Option<&InboxRow> {
        self.rows
            .iter()
            .find(|row| row.entry.delivery_id() == Some(delivery_id))
    }

    fn submit(&mut self, out: &mut Outcome) {
        let Some(form) = &mut self.form else {
            return;
        };
        match form.parse() {
            Err(why) => form.error = Some(why),
            Ok(request) => {
                self.form = None;
                self.start_seq += 1;
                self.listening = Listening::Starting(request.bind);
                out.effects.push(InboxEffect::Listen {
                    seq: self.start_seq,
                    request,
                });
            }
        }
    }

    /// A new request goes on top (cut to what a row holds); the oldest go
    /// past [`ROWS_MAX`] rows or [`HELD_MAX`] bytes. Following, the
    /// selection stays at the top; else on its request, counting what
    /// arrived above it.
    fn push(&mut self, received: Received) {
        self.count(&received);
        self.last_in = Some(Instant::now());
        let following = self.following();
        let kept = (!following)
            .then(|| self.table.selected_key(&self.rows))
            .flatten();
        let before = self.table.selected_position();
        let mut row = InboxRow::new(received);
        self.pushed += 1;
        row.key = self.pushed.to_string();
        self.held += row.held;
        self.rows.push_front(row);
        while self.rows.len() > ROWS_MAX || (self.held > HELD_MAX && self.rows.len() > 1) {
            if let Some(oldest) = self.rows.pop_back() {
                self.held -= oldest.held;
            }
        }
        self.table.refresh(&self.rows, kept);
        if following {
            self.table.select(0);
        } else if let (Some(before), Some(after)) = (before, self.table.selected_position()) {
            self.new_above += after.saturating_sub(before);
        }
    }

    fn count(&mut self, received: &Received) {
        self.counts.received += 1;
        match received.verdict() {
            VerdictCode::Ok => self.counts.accepted += 1,
            VerdictCode::Duplicate => self.counts.duplicates += 1,
            _ => self.counts.rejected += 1,
        }
    }
}

impl Pane for InboxPane {
    type Command = InboxCommand;
    type Result = InboxResult;
    type Effect = InboxEffect;
    const TITLE: &'static str = "Inbox";
    const NAMES: &'static [&'static str] = &["inbox", "listen"];
    const CALLS_PLATFORM: bool = false;

    fn create(_: &ConsoleConfig) -> InboxPane {
        InboxPane::new()
    }

    /// Ticks while something arrived: the title's "last in … ago" moves.
    fn wants_tick(&self) -> bool {
        self.last_in.is_some()
    }

    fn on_tick(&mut self, at: Instant, _out: &mut Outcome) -> bool {
        let moved = self.last_in.is_some_and(|last| {
            crate::tui::widgets::age::ago(last, self.ticked)
                != crate::tui::widgets::age::ago(last, at)
        });
        self.ticked = at;
        moved
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    fn help_sections() -> Vec<CommandSection<InboxCommand>> {
        let section = |title, commands| CommandSection { title, commands };
        vec![
            section("Inbox", table_commands(true, true, true)),
            section("Request detail", detail_commands(true)),
            section("Start a receiver", form_commands()),
            section(
                "Filter (typing)",
                wrapped(prompt_commands(), InboxCommand::Table),
            ),
        ]
    }

    fn run(&mut self, command: InboxCommand, out: &mut Outcome) {
        use InboxCommand::*;
        match command {
            Table(command) => self.table.run(command, &self.rows),
            Move(to) => {
                self.table.apply(to);
                if self.following() {
                    self.new_above = 0;
                }
            }
            Open => {
                if self.selected().is_some() {
                    self.view = View::Detail;
                }
            }
            Back => self.view = View::Table,
            CheckSignature => {
                if let Some(row) = self.selected().filter(|row| is_signed(row)) {
                    if row.body_whole() {
                        out.then = Some(signature_handover(row));
                    } else {
                        out.failure = Some(Failure::new(row.too_large()));
                    }
                }
            }
            Listen => self.form = Some(ListenForm::new()),
            FormCancel => self.form = None,
            NextField | PrevField => {
                if let Some(form) = &mut self.form {
                    form.focus = cycle(&FIELDS, form.focus, command == NextField);
                }
            }
            FormSubmit => self.submit(out),
            Reveal => {
                self.reveal = !self.reveal;
                out.toast = Some(if self.reveal {
                    "showing secrets and personal data in full: n masks them".into()
                } else {
                    "secrets and personal data masked".into()
                });
            }
            Clear => {
                self.rows.clear();
                self.held = 0;
                self.table.refresh(&self.rows, None);
                self.table.reset();
                self.view = View::Table;
            }
        }
    }

    fn on_result(&mut self, result: InboxResult, out: &mut Outcome) {
        match result {
            InboxResult::Started { seq, result } => {
                if seq != self.start_seq {
                    return;
                }
                match result {
                    Ok(url) => {
                        out.toast = Some(format!("receiving webhooks at {url}"));
                        self.counts = Counts::default();
                        self.listening = Listening::On { url };
                    }
                    Err(failure) => {
                        self.listening = Listening::Failed(failure.message.clone());
                        out.failure = Some(failure);
                    }
                }
            }
            InboxResult::Received(received) => {
                // A pre-recorded webhook says how a job stands: for the
                // Jobs pane, if it watches that job.
                out.then = job_update(&received).map(|(id, status)| Handover::WebhookForJob {
                    id,
                    status,
                    answered: received.status(),
                    at_ms: received.entry.received_unix.saturating_mul(1000),
                });
                self.push(*received);
            }
        }
    }

    fn busy(&self) -> bool {
        matches!(self.listening, Listening::Starting(_))
    }

    fn commands(&self) -> Vec<CommandInfo<InboxCommand>> {
        if self.form.is_some() {
            return form_commands();
        }
        if self.table.prompting() {
            return wrapped(prompt_commands(), InboxCommand::Table);
        }
        let signed = self.selected().is_some_and(|row| is_signed(row));
        match self.view {
            View::Detail if self.selected().is_some() => detail_commands(signed),
            _ => table_commands(self.selected().is_some(), signed, self.table.filtering()),
        }
    }

    fn allows_global(&self) -> bool {
        self.form.is_none() && !self.table.prompting()
    }

    fn captures_text(&self) -> bool {
        self.form.is_some() || self.table.prompting()
    }

    fn type_key(&mut self, key: &KeyEvent) {
        match &mut self.form {
            Some(form) => {
                if text::type_key(form.focused(), key) {
                    form.error = None;
                }
            }
            None => self.table.type_key(key, &self.rows),
        }
    }

    fn paste(&mut self, pasted: &str) {
        match &mut self.form {
            Some(form) => {
                if text::paste(form.focused(), pasted) {
                    form.error = None;
                }
            }
            None => self.table.paste(pasted, &self.rows),
        }
    }

    fn would_lose(&self) -> Vec<String> {
        let typed = |input: &Input| !input.value().trim().is_empty();
        let mut losing = Vec::new();
        if let Some(form) = &self.form
            && (typed(&form.current) || typed(&form.previous))
        {
            losing.push("the Inbox receiver form".into());
        }
        match &self.listening {
            Listening::On { url } => losing.push(format!("the Inbox receiver at {url} (it stops)")),
            Listening::Starting(_) => losing.push("the Inbox receiver (it stops)".into()),
            Listening::Off | Listening::Failed(_) => {}
        }
        losing
    }

    /// A delivery handed to Signatures without its header: the capture of
    /// it here, if whole, gives its header and body (the platform keeps no
    /// bodies).
    fn annotate(&mut self, message: &mut Handover, out: &mut Outcome) {
        let Handover::OpenInSignatures {
            header,
            body,
            delivery_id: Some(delivery_id),
            ..
        } = message
        else {
            return;
        };
        if header.is_some() {
            return;
        }
        match self.by_delivery_id(delivery_id) {
            Some(received) if received.body_whole() => {
                *header = received.entry.header(HEADER_NAME).map(str::to_owned);
                *body = Some(received.body.to_vec());
            }
            Some(received) => out.failure = Some(Failure::new(received.too_large())),
            None => {}
        }
    }

    fn receive(&mut self, message: &Handover, _out: &mut Outcome) -> kernel::Received {
        match message {
            Handover::Listening(url) => {
                self.set_listening(url.clone());
                kernel::Received::Kept
            }
            _ => kernel::Received::Ignored,
        }
    }
}

/// A pre-recorded webhook the Jobs pane should know about: its transcript
/// id, and the status it says only when it passed the receiver's checks
/// (every attempt counts towards the webhook's ten, answered or refused).
fn job_update(received: &Received) -> Option<(String, Option<TranscriptStatus>)> {
    let entry = &received.entry;
    if entry.kind != Kind::Prerecorded {
        return None;
    }
    let status = entry
        .transcript_status
        .as_deref()
        .filter(|_| entry.verdict == VerdictCode::Ok)
        .map(TranscriptStatus::parse);
    Some((entry.transcript_id.clone()?, status))
}

/// The request carries a signature header the Signatures pane can check.
fn is_signed(received: &Received) -> bool {
    received.entry.header(HEADER_NAME).is_some()
}

/// The header and exact body of a captured request, for the Signatures
/// pane (the secret stays with the operator).
pub(crate) fn signature_handover(received: &Received) -> Handover {
    Handover::OpenInSignatures {
        header: received.entry.header(HEADER_NAME).map(str::to_owned),
        body: Some(received.body.to_vec()),
        secret_hint: Some(format!(
            "the secret of the subscription that delivered to {} (the receiver's verdict: {})",
            received.entry.path,
            received.verdict().code()
        )),
        delivery_id: None,
        refused: None,
    }
}

