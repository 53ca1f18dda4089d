//! The Signatures pane: check an `X-SVC-Signature` by hand, the way
//! `earshot verify` does, with a live checklist.
//!
//! Owns the form (header, body — pasted text or `file:PATH` —, current
//! and previous secret, a `now` override, the receiver's digest) and the
//! [`Report`] computed from it with the pure [`diagnose`] on every edit.
//! A body file is read by the worker ([`SigsEffect::ReadBodyFile`], answered
//! by [`SigsResult::BodyLoaded`]). A delivery another pane hands over
//! replaces everything in the form; one a receiver refused with 401 is
//! checked by asking the receiver (`refused.rs`), the only work here that
//! sends anything (duplicates of an event, to that receiver; nothing
//! changes on the platform). Secrets are drawn masked, never logged, and
//! masked in `Debug`. Drawing is in `view.rs`, the keys in `commands.rs`.

mod commands;
pub(crate) mod refused;
pub(crate) mod tasks;
pub(crate) mod view;

use std::convert::Infallible;
use std::fmt;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, Handover, Pane, Received, RefusedDelivery};
use crate::tui::keymap::{CommandInfo, CommandSection};
use crate::tui::load::Load;
use crate::tui::theme::Theme;
use crate::tui::widgets::input as text;
use earshot_core::redact::mask;
use earshot_core::signature::{
    Candidate, Check, ChecklistInput, DEFAULT_TOLERANCE_SECS, Diagnosis, TriedSecret, Verdict,
    checklist, diagnose,
};
use refused::{Asked, Located, RefusedForm};
use tasks::SigsEffect;

use commands::{browse_commands, edit_commands};

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<SigsEffect>;

/// Lines one scroll of the check moves.
const SCROLL_STEP: u16 = 3;

/// The prefix that makes the body field name a file.
pub(crate) const FILE_PREFIX: &str = "file:";
/// A body field starting with this replays a request captured by
/// `earshot listen --capture` (`capture:PATH` for the last signed one,
/// `capture:PATH#LINE` for one line): header, exact body and receive time.
pub(crate) const CAPTURE_PREFIX: &str = "capture:";

/// Where the body comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BodySource {
    /// What is typed or pasted, byte for byte.
    Typed,
    File(String),
    Capture {
        path: String,
        line: Option<usize>,
    },
}

/// Results of the Signatures pane's background work.
#[derive(Clone, Debug)]
pub(crate) enum SigsResult {
    /// `seq` identifies the read; a superseded read's answer is dropped.
    BodyLoaded {
        seq: u64,
        path: String,
        result: Result<Vec<u8>, String>,
    },
    /// A captured request was read for replay.
    CaptureLoaded {
        seq: u64,
        result: Result<earshot_core::receiver::capture::Replay, String>,
    },
    /// The store said which event a refused delivery was (read `seq`).
    RefusedLoaded {
        seq: u64,
        result: Result<Located, String>,
    },
    /// A receiver answered the probe `seq`.
    Asked { seq: u64, asked: Box<Asked> },
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SigsCommand {
    /// Start typing into the form.
    Edit,
    /// Stop typing (the global keys work again).
    Done,
    NextField,
    PrevField,
    /// Check now; loads a `file:PATH` body first (for a refused delivery
    /// with no header in the form: asks the receiver).
    Check,
    /// Ask the receiver of a refused delivery which secret it holds.
    AskReceiver,
    /// Empty every field.
    Clear,
    /// Scroll the check up / down a few lines.
    ScrollUp,
    ScrollDown,
}

/// A form field, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Header,
    Body,
    Current,
    Previous,
    Now,
    Receiver,
}

impl Field {
    pub(crate) const ORDER: [Field; 6] = [
        Field::Header,
        Field::Body,
        Field::Current,
        Field::Previous,
        Field::Now,
        Field::Receiver,
    ];

    pub(crate) fn next(self) -> Field {
        text::cycle(&Field::ORDER, self, true)
    }

    pub(crate) fn prev(self) -> Field {
        text::cycle(&Field::ORDER, self, false)
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Field::Header => "X-SVC-Signature",
            Field::Body => "body",
            Field::Current => "current secret",
            Field::Previous => "previous secret",
            Field::Now => "now (unix s)",
            Field::Receiver => "receiver digest",
        }
    }

    pub(crate) fn is_secret(self) -> bool {
        matches!(self, Field::Current | Field::Previous)
    }
}

/// Body bytes that stand for the body field while it reads `source`
/// exactly (a `file:PATH`, or a body handed over by another pane).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct LoadedBody {
    pub(crate) source: String,
    pub(crate) result: Result<Vec<u8>, String>,
}

/// What the form adds up to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// Not enough to check yet, or an input to fix first: why.
    Waiting(String),
    Checked {
        checks: Vec<Check>,
        diagnosis: Diagnosis,
    },
}

/// The pane's state. `Debug` masks the secrets.
pub(crate) struct SignaturesPane {
    pub(crate) header: Input,
    pub(crate) body: Input,
    pub(crate) current: Input,
    pub(crate) previous: Input,
    pub(crate) now: Input,
    pub(crate) receiver: Input,
    pub(crate) focus: Field,
    /// Keys go to the form.
    pub(crate) editing: bool,
    /// `EARSHOT_WEBHOOK_SECRET`, asked with when no secret is typed (a
    /// fixed one in tests).
    pub(crate) env_secret: fn() -> Option<earshot_core::redact::SecretString>,
    /// Bytes for a `file:PATH` (or handed-over) body, and the read of a
    /// body file or capture line.
    read: Load<Option<LoadedBody>>,
    /// Who signed it, as another pane knew it (e.g. a subscription id).
    pub(crate) secret_hint: Option<String>,
    /// A delivery its receiver refused with 401, when one was handed over.
    pub(crate) refused: Option<RefusedForm>,
    /// The receiver's answers to the last probe (kept with the event and
    /// subscription they are for).
    probe: Load<Option<Asked>>,
    pub(crate) report: Report,
    /// Lines of the check scrolled away (reset by every edit).
    pub(crate) scroll: u16,
    clock: fn() -> i64,
}

impl fmt::Debug for SignaturesPane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |input: &Input| {
            if input.value().is_empty() {
                "<empty>"
            } else {
                "<redacted>"
            }
        };
        f.debug_struct("SignaturesPane")
            .field("header", &self.header.value())
            .field("body", &self.body.value())
            .field("current", &secret(&self.current))
            .field("previous", &secret(&self.previous))
            .field("now", &self.now.value())
            .field("receiver", &self.receiver.value())
            .field("focus", &self.focus)
            .field("editing", &self.editing)
            .field(
                "loaded",
                &self.loaded().map(|loaded| {
                    (
                        loaded.source.clone(),
                        loaded.result.as_ref().map(Vec::len).map_err(Clone::clone),
                    )
                }),
            )
            .field("loading", &self.read.loading())
            .field("refused", &self.refused)
            .field("asking", &self.probe.loading())
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

impl Default for SignaturesPane {
    fn default() -> Self {
        SignaturesPane::new()
    }
}

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl SignaturesPane {
    pub(crate) fn new() -> SignaturesPane {
        SignaturesPane {
            header: Input::default(),
            body: Input::default(),
            current: Input::default(),
            previous: Input::default(),
            now: Input::default(),
            receiver: Input::default(),
            focus: Field::Header,
            editing: false,
            env_secret: || {
                std::env::var("EARSHOT_WEBHOOK_SECRET")
                    .ok()
                    .filter(|secret| !secret.is_empty())
                    .map(earshot_core::redact::SecretString::new)
            },
            read: Load::new(),
            secret_hint: None,
            refused: None,
            probe: Load::new(),
            report: Report::Waiting(WAITING.into()),
            scroll: 0,
            clock: unix_now,
        }
    }

    /// Replaces the clock used when `now` is empty (tests, snapshots).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self.recheck();
        self
    }

    pub(crate) fn input(&self, field: Field) -> &Input {
        match field {
            Field::Header => &self.header,
            Field::Body => &self.body,
            Field::Current => &self.current,
            Field::Previous => &self.previous,
            Field::Now => &self.now,
            Field::Receiver => &self.receiver,
        }
    }

    fn input_mut(&mut self, field: Field) -> &mut Input {
        match field {
            Field::Header => &mut self.header,
            Field::Body => &mut self.body,
            Field::Current => &mut self.current,
            Field::Previous => &mut self.previous,
            Field::Now => &mut self.now,
            Field::Receiver => &mut self.receiver,
        }
    }

    /// Sets a field as if typed, and checks again.
    #[cfg(test)]
    pub(crate) fn set(&mut self, field: Field, value: &str) {
        *self.input_mut(field) = Input::new(value.to_owned());
        self.recheck();
    }

    /// The body bytes read for a `file:PATH` or capture (or handed over),
    /// with what they stand for.
    pub(crate) fn loaded(&self) -> Option<&LoadedBody> {
        self.read.value().as_ref()
    }

    /// Whether the body field names a file or a capture.
    pub(crate) fn body_source(&self) -> BodySource {
        let value = self.body.value();
        let named = |prefix: &str| {
            value
                .strip_prefix(prefix)
                .map(str::trim)
                .filter(|path| !path.is_empty())
        };
        if let Some(path) = named(FILE_PREFIX) {
            return BodySource::File(path.to_owned());
        }
        match named(CAPTURE_PREFIX) {
            None => BodySource::Typed,
            Some(spec) => match spec.rsplit_once('#') {
                Some((path, line)) if line.parse::<usize>().is_ok() => BodySource::Capture {
                    path: path.to_owned(),
                    line: line.parse().ok(),
                },
                _ => BodySource::Capture {
                    path: spec.to_owned(),
                    line: None,
                },
            },
        }
    }

    // ---- update -------------------------------------------------------

    /// Another pane hands a delivery over to be checked: it replaces
    /// everything in the form (fields, bytes, any verdict). A delivery
    /// refused with 401 (`refused`) gets the receiver probe; its header is
    /// kept only when it is the one that receiver got (`header` is then the
    /// Inbox's capture, the handing panes pass none of their own).
    pub(crate) fn open_with(
        &mut self,
        header: Option<String>,
        body: Option<Vec<u8>>,
        secret_hint: Option<String>,
        refused: Option<RefusedDelivery>,
        out: &mut Outcome,
    ) {
        self.empty_form();
        if let Some(header) = header {
            self.header = Input::new(header);
        }
        match refused {
            Some(target) => self.open_refused(target, body, out),
            None => {
                if let Some(bytes) = body {
                    let source = format!("<delivery body, {} bytes>", bytes.len());
                    self.body = Input::new(source.clone());
                    self.read.set(Some(LoadedBody {
                        source,
                        result: Ok(bytes),
                    }));
                }
            }
        }
        self.secret_hint = secret_hint;
        self.focus = Field::Current;
        self.editing = true;
        self.recheck();
    }

    /// Every field, the bytes, the refused delivery and any verdict gone
    /// (a read or probe in flight answers late and is dropped).
    fn empty_form(&mut self) {
        for field in Field::ORDER {
            *self.input_mut(field) = Input::default();
        }
        self.read.clear();
        self.probe.clear();
        self.refused = None;
        self.secret_hint = None;
        self.focus = Field::Header;
    }

    /// `enter` asks the receiver: a refused delivery with no header in the
    /// form, so there is nothing to compare.
    pub(crate) fn asks_receiver(&self) -> bool {
        self.refused.is_some() && self.header.value().trim().is_empty()
    }

    /// Computes the report again from the form (pure and fast: a header
    /// over [`MAX_HEADER_LEN`] bytes is reported too long unread, so a key
    /// typed into a huge paste costs no more than one into a header).
    ///
    /// [`MAX_HEADER_LEN`]: earshot_core::signature::MAX_HEADER_LEN
    pub(crate) fn recheck(&mut self) {
        self.scroll = 0;
        self.report = self.compute();
    }

    /// The body bytes to check (borrowed: a check copies no body), or why
    /// there are none yet.
    fn body_bytes(&self) -> Result<&[u8], String> {
        let typed = self.body.value();
        if let Some(loaded) = self.loaded().filter(|l| l.source == typed) {
            return loaded
                .result
                .as_deref()
                .map_err(|error| format!("the body file could not be read: {error}"));
        }
        match self.body_source() {
            BodySource::Typed => Ok(typed.as_bytes()),
            _ if self.read.loading() => Err("reading the body file…".into()),
            BodySource::File(_) => Err("the body is a file: press enter to read it".into()),
            BodySource::Capture { .. } => {
                Err("the body is a capture: press enter to replay it".into())
            }
        }
    }

    fn compute(&self) -> Report {
        let header = self.header.value().trim();
        if header.is_empty() {
            return Report::Waiting(self.refused_note().unwrap_or_else(|| WAITING.into()));
        }
        let now = match self.now.value().trim() {
            "" => (self.clock)(),
            typed => match typed.parse::<i64>() {
                Ok(now) => now,
                Err(_) => {
                    return Report::Waiting(format!(
                        "now must be unix seconds (or empty for the current time), not {typed:?}"
                    ));
                }
            },
        };
        let body = match self.body_bytes() {
            Ok(body) => body,
            Err(why) => return Report::Waiting(why),
        };
        let mut candidates = Vec::new();
        if !self.current.value().is_empty() {
            candidates.push(Candidate {
                label: "current",
                secret: self.current.value().as_bytes(),
            });
        }
        if !self.previous.value().is_empty() {
            candidates.push(Candidate {
                label: "previous",
                secret: self.previous.value().as_bytes(),
            });
        }
        let receiver = Some(self.receiver.value().trim()).filter(|text| !text.is_empty());
        let diagnosis = diagnose(
            header,
            body,
            &candidates,
            now,
            DEFAULT_TOLERANCE_SECS,
            receiver,
        );
        let tried: Vec<TriedSecret<'_>> = candidates
            .iter()
            .map(|c| TriedSecret {
                label: c.label,
                masked: mask(&String::from_utf8_lossy(c.secret)),
            })
            .collect();
        let input = ChecklistInput {
            header,
            body_len: body.len(),
            tried: &tried,
            now,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        };
        Report::Checked {
            checks: checklist(&input, &diagnosis),
            diagnosis,
        }
    }
}

impl Pane for SignaturesPane {
    type Command = SigsCommand;
    type Result = SigsResult;
    type Effect = SigsEffect;
    const TITLE: &'static str = "Signatures";
    const SHORT_TITLE: &'static str = "Sigs";
    const NAMES: &'static [&'static str] = &["signatures", "sigs", "sig"];
    const CALLS_PLATFORM: bool = false;

    fn create(_: &ConsoleConfig) -> SignaturesPane {
        SignaturesPane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    fn help_sections() -> Vec<CommandSection<SigsCommand>> {
        vec![
            CommandSection {
                title: "Signatures",
                commands: browse_commands(true),
            },
            CommandSection {
                title: "Signature form (typing)",
                commands: edit_commands(true, false),
            },
        ]
    }

    fn run(&mut self, command: SigsCommand, out: &mut Outcome) {
        match command {
            SigsCommand::Edit => self.editing = true,
            SigsCommand::Done => self.editing = false,
            SigsCommand::NextField => self.focus = self.focus.next(),
            SigsCommand::PrevField => self.focus = self.focus.prev(),
            SigsCommand::Check if self.asks_receiver() => self.ask_receiver(out),
            SigsCommand::AskReceiver => self.ask_receiver(out),
            SigsCommand::Check => match self.body_source() {
                BodySource::Typed => self.recheck(),
                BodySource::File(path) => {
                    out.effects.push(SigsEffect::ReadBodyFile {
                        seq: self.read.start(),
                        path,
                    });
                }
                BodySource::Capture { path, line } => {
                    out.effects.push(SigsEffect::ReadCapture {
                        seq: self.read.start(),
                        path,
                        line,
                    });
                }
            },
            SigsCommand::ScrollUp => self.scroll = self.scroll.saturating_sub(SCROLL_STEP),
            SigsCommand::ScrollDown => self.scroll = self.scroll.saturating_add(SCROLL_STEP),
            SigsCommand::Clear => {
                self.empty_form();
                self.recheck();
                out.toast = Some("form cleared".into());
            }
        }
    }

    /// A body file was read.
    fn on_result(&mut self, result: SigsResult, out: &mut Outcome) {
        match result {
            SigsResult::BodyLoaded { seq, path, result } => {
                if !self.read.is_current(seq) {
                    return;
                }
                if let Err(error) = &result {
                    out.toast = Some(format!("could not read {path}: {error}"));
                }
                let body = LoadedBody {
                    source: format!("{FILE_PREFIX}{path}"),
                    result,
                };
                self.read.finish(seq, Ok::<_, Infallible>(Some(body)));
                self.recheck();
            }
            SigsResult::CaptureLoaded { seq, result } => {
                if !self.read.is_current(seq) {
                    return;
                }
                let source = self.body.value().to_owned();
                let body = match result {
                    Ok(replay) => {
                        self.header = Input::new(replay.header);
                        self.now = Input::new(replay.received_unix.to_string());
                        out.toast = Some(format!(
                            "replaying capture line {}, checked at its receive time",
                            replay.line
                        ));
                        LoadedBody {
                            source,
                            result: Ok(replay.body),
                        }
                    }
                    Err(error) => {
                        out.toast = Some(format!("could not replay the capture: {error}"));
                        LoadedBody {
                            source,
                            result: Err(error),
                        }
                    }
                };
                self.read.finish(seq, Ok::<_, Infallible>(Some(body)));
                self.recheck();
            }
            SigsResult::RefusedLoaded { seq, result } => self.on_refused_loaded(seq, result, out),
            SigsResult::Asked { seq, asked } => self.on_asked(seq, asked, out),
        }
    }

    fn busy(&self) -> bool {
        self.read.loading() || self.probe.loading()
    }

    fn commands(&self) -> Vec<CommandInfo<SigsCommand>> {
        let refused = self.refused.is_some();
        if self.editing {
            edit_commands(refused, self.asks_receiver())
        } else {
            browse_commands(refused)
        }
    }

    fn allows_global(&self) -> bool {
        !self.editing
    }

    fn holds_typed_input(&self) -> bool {
        [
            &self.header,
            &self.body,
            &self.current,
            &self.previous,
            &self.receiver,
        ]
        .iter()
        .any(|field| !field.value().is_empty())
    }

    fn captures_text(&self) -> bool {
        self.editing
    }

    /// A key no command claimed, typed into the focused field.
    fn type_key(&mut self, key: &KeyEvent) {
        if self.editing && text::type_key(self.input_mut(self.focus), key) {
            self.recheck();
        }
    }

    /// Pasted text: into the body byte for byte (line breaks kept), into
    /// every other field without line breaks.
    fn paste(&mut self, pasted: &str) {
        if !self.editing {
            return;
        }
        // One insertion and one check per paste, however long it is.
        let changed = if self.focus == Field::Body {
            text::insert(&mut self.body, pasted)
        } else {
            text::paste(self.input_mut(self.focus), pasted)
        };
        if changed {
            self.recheck();
        }
    }

    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        let Handover::OpenInSignatures {
            header,
            body,
            secret_hint,
            refused,
            ..
        } = message
        else {
            return Received::Ignored;
        };
        self.open_with(
            header.clone(),
            body.clone(),
            secret_hint.clone(),
            refused.clone(),
            out,
        );
        Received::Shown
    }
}

const WAITING: &str = "paste an X-SVC-Signature header (press enter or i to edit the form)";

/// The verdict line over the checklist.
pub(crate) fn verdict_line(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Valid { matched, .. } => format!("valid: signed with the {matched} secret"),
        Verdict::Invalid(reason) => format!("invalid: {reason}"),
    }
}

