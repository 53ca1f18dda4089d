//! The Jobs pane: pre-recorded transcript jobs as the job watcher
//! (`poll/watcher.rs`) sees them.
//!
//! Owns the rows (the watcher's latest [`JobView`] and what the pane
//! shows of the latest [`Transcript`] per id, a [`JobRecord`]), the
//! add-ids and submit-a-file prompts, the request budget gauge and the
//! "polling paused" banner. The watcher runs
//! in the worker: ids go to it as [`Effect::WatchJobs`], the rows on
//! screen as [`Effect::FocusJobs`], and its events come back as
//! [`JobsResult::Watch`]. Submitting a file (`s`, hidden in read-only) is
//! [`Effect::SubmitFile`]. `/` filters and `S` sorts the table as every
//! table (`table.rs` its columns). The queue over time under the table
//! is `queue.rs` (its buckets, rebuilt only when a job changes or a
//! bucket turns) drawn by `chart.rs`; a job's own timeline in its record
//! is `timeline.rs`. Drawing is in `view.rs`.

pub(crate) mod chart;
mod handover;
mod commands;
pub(crate) mod queue;
pub(crate) mod table;
mod timeline;
pub(crate) mod view;
mod watch;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, ConsoleEffect, Failure, Handover, Jump, NoEffect, Pane, Received};
use crate::tui::keymap::{CommandInfo, CommandSection, Move};
use crate::tui::theme::Theme;
use crate::tui::widgets::input as text;
use crate::tui::widgets::table_view::{TableCommand, TableView, prompt_commands, wrapped};
use earshot_core::api::types::prerecorded::{Transcript, TranscriptStatus};
use earshot_core::poll::Tick;
use earshot_core::poll::schedule::{JobView, Spent};

use commands::{detail_commands, job_prompt_commands, table_commands};
use queue::{BudgetMinutes, JobSpan, QueueSeries};

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<NoEffect>;

/// What reaches the Jobs pane from the background.
#[derive(Clone, Debug)]
pub(crate) enum JobsResult {
    /// The watcher's report.
    Watch(earshot_core::poll::watcher::WatchEvent),
    /// A file upload in progress (bytes sent of total).
    Uploading { sent: u64, total: u64 },
    /// Upload and `create_transcript` done: the new job's id.
    Submitted { result: Result<String, Failure> },
    /// Jobs submitted elsewhere (the demo's traffic) to watch too.
    Discovered(Vec<String>),
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobsCommand {
    /// Through the table (or the detail's rows).
    Move(Move),
    /// Open the add-ids prompt.
    Add,
    /// Open the submit-a-file prompt.
    Submit,
    /// Run what was typed at the prompt.
    PromptSubmit,
    PromptCancel,
    /// The selected job's record.
    Open,
    /// Back to the table.
    Back,
    /// Copy the selected job's whole id (OSC 52).
    CopyId,
    /// Show or hide what spent the request budget.
    Breakdown,
    /// `/`, `S` and the filter prompt.
    Table(TableCommand),
}

/// Which prompt is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// Job ids, comma or space separated.
    AddIds,
    /// A path to an audio file.
    SubmitFile,
}

/// Rows the pane holds; older finished jobs make room for new ones.
pub(crate) const ROWS_MAX: usize = 1_000;

/// One watched job.
#[derive(Clone, Debug)]
pub(crate) struct JobRow {
    pub(crate) id: String,
    /// The watcher's latest view (`None` until its first report).
    pub(crate) view: Option<JobView>,
    /// What the pane shows of the latest record fetched for it.
    pub(crate) transcript: Option<JobRecord>,
    /// The last poll failure, until a good answer.
    pub(crate) poll_error: Option<String>,
    /// Each attempt of the job's pre-recorded webhook the Inbox answered:
    /// when (Unix ms) and what, oldest first (the platform's record says
    /// the last answer too, once polled).
    pub(crate) hook_attempts: Vec<(i64, u16)>,
    /// When the pane started watching it, in Unix milliseconds (`since:`).
    pub(crate) added_ms: i64,
    /// When this console submitted it (`s`), in Unix milliseconds; `None`
    /// for a job submitted elsewhere.
    pub(crate) submitted_ms: Option<i64>,
    /// When it was handed to the watcher, on the pane's clock (the
    /// chart's, before the watcher's first report).
    pub(crate) added_tick: Tick,
}

/// What the pane shows of a job's record: its text, its error and its
/// webhook's answer. The platform's record carries the rest of the
/// transcript besides (word timings: thousands of small values a job),
/// which the pane never shows and its 1,000 rows would keep, every poll
/// freeing one copy among the others (`docs/performance.md`, "Memory and
/// idle CPU").
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct JobRecord {
    pub(crate) text: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) webhook_status_code: Option<u16>,
}

impl From<Transcript> for JobRecord {
    fn from(transcript: Transcript) -> Self {
        JobRecord {
            text: transcript.text,
            error: transcript.error,
            webhook_status_code: transcript.webhook_status_code,
        }
    }
}

impl JobRow {
    fn new(id: String) -> JobRow {
        JobRow {
            id,
            view: None,
            transcript: None,
            poll_error: None,
            hook_attempts: Vec::new(),
            added_ms: earshot_core::store::now_ms(),
            submitted_ms: None,
            added_tick: Tick::ZERO,
        }
    }

    /// The receiver's answer to the job's webhook: the platform's record,
    /// else what the Inbox answered.
    pub(crate) fn hook(&self) -> Option<u16> {
        self.transcript
            .as_ref()
            .and_then(|transcript| transcript.webhook_status_code)
            .or(self.hook_received())
    }

    /// What the Inbox answered the webhook's last attempt.
    pub(crate) fn hook_received(&self) -> Option<u16> {
        self.hook_attempts.last().map(|(_, answered)| *answered)
    }

    pub(crate) fn status(&self) -> Option<&TranscriptStatus> {
        self.view.as_ref().and_then(|view| view.status.as_ref())
    }

    pub(crate) fn stale(&self) -> bool {
        self.view.as_ref().is_some_and(|view| view.stale)
    }

    pub(crate) fn is_error(&self) -> bool {
        self.status() == Some(&TranscriptStatus::Error)
    }

    pub(crate) fn is_terminal(&self) -> bool {
        self.status().is_some_and(TranscriptStatus::is_terminal)
    }
}

/// An upload in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Upload {
    pub(crate) path: String,
    pub(crate) sent: u64,
    pub(crate) total: u64,
}

/// The pane's state.
#[derive(Debug)]
pub(crate) struct JobsPane {
    rows: Vec<JobRow>,
    /// The filter, the sort, the order and the selection in it.
    pub(crate) table: TableView<JobRow>,
    pub(crate) prompt: Input,
    pub(crate) prompting: Option<Prompt>,
    /// Requests used of the account share, and the share.
    pub(crate) budget: Option<(u32, u32)>,
    /// What spent them.
    pub(crate) spent: Spent,
    /// The breakdown shows under the gauge (`b`).
    pub(crate) breakdown: bool,
    /// Polling paused by a 403: until when (the banner counts down).
    pub(crate) paused_until: Option<Instant>,
    pub(crate) upload: Option<Upload>,
    /// The ids last sent as the focus.
    focus: Vec<String>,
    /// When the watcher started (its ticks count from here), roughly: it
    /// starts with the first [`Effect::WatchJobs`].
    pub(crate) epoch: Instant,
    /// A [`Effect::WatchJobs`] was sent (the watcher runs).
    watching: bool,
    /// The time ages are drawn at; moved on by the tick.
    pub(crate) now: Instant,
    /// The selected job's record is open.
    pub(crate) detail: bool,
    /// When the watcher last reported (a poll answered or failed): the
    /// title's age.
    pub(crate) reported_at: Option<Instant>,
    /// The watched jobs' queue over time, as of the last change or turn
    /// of a bucket (the chart redraws only then).
    pub(crate) queue: QueueSeries,
    /// The request budget's peak per minute.
    pub(crate) budget_minutes: BudgetMinutes,
    /// A job changed since `queue` was built: the next tick builds it.
    queue_dirty: bool,
}

impl Default for JobsPane {
    fn default() -> Self {
        JobsPane::new()
    }
}

impl JobsPane {
    pub(crate) fn new() -> JobsPane {
        let now = Instant::now();
        JobsPane {
            rows: Vec::new(),
            table: TableView::new(&table::TABLE),
            prompt: Input::default(),
            prompting: None,
            budget: None,
            spent: Spent::default(),
            breakdown: false,
            paused_until: None,
            upload: None,
            focus: Vec::new(),
            detail: false,
            reported_at: None,
            epoch: now,
            now,
            watching: false,
            queue: QueueSeries::default(),
            budget_minutes: BudgetMinutes::default(),
            queue_dirty: false,
        }
    }

    /// Builds the queue's buckets again when a job changed or the newest
    /// bucket's time is over (once a tick at most, however many reports
    /// came); whether a bucket changed.
    pub(crate) fn queue_on_tick(&mut self) -> bool {
        let bucket = self.queue.bucket.as_nanos().max(1);
        let newest = self.queue.counts.len() as u128;
        let first = self.queue.first_index;
        let turned = self.now_tick().as_nanos() / bucket >= u128::from(first) + newest;
        if !(self.queue_dirty || turned) {
            return false;
        }
        self.refresh_queue()
    }

    /// Builds the queue's buckets again as of the pane's clock; whether
    /// a bucket changed.
    pub(crate) fn refresh_queue(&mut self) -> bool {
        self.queue_dirty = false;
        // Submission order: older batches first (rows hold the newest
        // batch on top, each batch in its own order).
        let mut order: Vec<(usize, &JobRow)> = self.rows.iter().enumerate().collect();
        order.sort_by_key(|(at, row)| (row.added_tick, *at));
        let spans: Vec<JobSpan> = order
            .iter()
            .map(|(_, row)| JobSpan::of(row.added_tick, row.view.as_ref()))
            .collect();
        let Some(since) = spans.iter().map(|span| span.added).min() else {
            return false;
        };
        let series = queue::series(&spans, since, self.now_tick(), queue::COLUMNS_MAX);
        if series == self.queue {
            return false;
        }
        self.queue = series;
        true
    }

    /// The watcher's clock now.
    pub(crate) fn now_tick(&self) -> Tick {
        self.now.saturating_duration_since(self.epoch)
    }

    pub(crate) fn rows(&self) -> &[JobRow] {
        &self.rows
    }

    /// The rows to change, for fixtures that fix their wall-clock times.
    #[cfg(test)]
    pub(crate) fn rows_mut(&mut self) -> &mut [JobRow] {
        &mut self.rows
    }

    /// The selected row's position in the table (as filtered and sorted).
    pub(crate) fn selected_index(&self) -> Option<usize> {
        self.table.selected_position()
    }

    pub(crate) fn selected(&self) -> Option<&JobRow> {
        self.table.selected(&self.rows)
    }

    /// Ids to watch from the start (the demo's jobs); `init` sends them.
    pub(crate) fn seed(&mut self, ids: Vec<String>) {
        let kept = self.table.selected_key(&self.rows);
        for (at, id) in ids.iter().enumerate() {
            self.insert(id, at);
        }
        self.table.refresh(&self.rows, kept);
    }

    /// The Inbox answered `status` to an attempt of the pre-recorded
    /// webhook for `id`, at `at_ms`.
    pub(crate) fn note_webhook(&mut self, id: &str, status: u16, at_ms: i64) {
        if let Some(row) = self.row_mut(id) {
            row.hook_attempts.push((at_ms, status));
        }
    }

    /// `:job ID`: opens the watched job whose id is `typed` or starts
    /// with it (the table's 8-character ids work); a full id not watched
    /// yet is added and opened.
    pub(crate) fn open_job(&mut self, typed: &str, out: &mut Outcome) {
        let matches: Vec<&str> = self
            .rows
            .iter()
            .map(|row| row.id.as_str())
            .filter(|id| id.starts_with(typed))
            .collect();
        let found = match matches.as_slice() {
            _ if matches.contains(&typed) => Some(typed.to_owned()),
            [id] => Some((*id).to_owned()),
            [] if typed.len() > earshot_core::api::SHORT_ID_LEN => {
                self.add_ids(vec![typed.to_owned()], out);
                Some(typed.to_owned())
            }
            [] => {
                out.toast = Some(format!(
                    "no watched job starts with {typed}: the platform needs the whole id"
                ));
                None
            }
            several => {
                out.toast = Some(format!(
                    "{} watched jobs start with {typed}: type more of the id",
                    several.len()
                ));
                None
            }
        };
        let Some(id) = found else { return };
        match self.table.position_of(&self.rows, &id) {
            Some(position) => {
                self.table.select(position);
                self.detail = true;
            }
            None => {
                out.toast = Some(format!(
                    "job {} is hidden by the filter (esc on the table clears it)",
                    earshot_core::api::short_id(&id)
                ));
            }
        }
    }

    /// Whether the job `id` is watched.
    pub(crate) fn watches(&self, id: &str) -> bool {
        self.rows.iter().any(|row| row.id == id)
    }

    /// How long polling stays paused, as of the pane's clock.
    pub(crate) fn paused_for(&self) -> Option<Duration> {
        self.paused_until
            .map(|until| until.saturating_duration_since(self.now))
    }

    // ---- update -------------------------------------------------------

    // ---- helpers ------------------------------------------------------

    /// Adds ids not watched yet and asks the watcher to watch them;
    /// whether any was new (`:job ID` and the `a` prompt).
    pub(crate) fn add_ids(&mut self, ids: Vec<String>, out: &mut Outcome) -> bool {
        let fresh: Vec<String> = ids
            .into_iter()
            .filter(|id| !self.rows.iter().any(|row| &row.id == id))
            .collect();
        if fresh.is_empty() {
            return false;
        }
        let kept = self.kept_selection();
        let mut forgotten = Vec::new();
        // Newest first; ids that came together keep their order.
        for (at, id) in fresh.iter().enumerate() {
            forgotten.extend(self.insert(id, at));
        }
        if !forgotten.is_empty() {
            out.console.push(ConsoleEffect::UnwatchJobs(forgotten));
        }
        self.table.refresh(&self.rows, kept);
        self.watch(fresh, out);
        true
    }

    /// Asks the watcher to watch `ids`; the first time, the watcher starts
    /// now and the clock ages are drawn from starts with it.
    fn watch(&mut self, ids: Vec<String>, out: &mut Outcome) {
        if !self.watching {
            self.watching = true;
            self.epoch = Instant::now();
            self.now = self.epoch;
        }
        let at = self.now_tick();
        for id in &ids {
            if let Some(row) = self.row_mut(id) {
                row.added_tick = at;
            }
        }
        out.console.push(ConsoleEffect::WatchJobs(ids));
    }

    /// Where the selection goes when rows change: on the top row of the
    /// newest-first order it follows the newest job (as `less +F` does);
    /// anywhere else, or sorted by a column, it stays on its job.
    fn kept_selection(&self) -> Option<String> {
        match self.table.selected_position() {
            Some(0) if self.table.sorted().is_none() => None,
            _ => self.table.selected_key(&self.rows),
        }
    }

    fn row_mut(&mut self, id: &str) -> Option<&mut JobRow> {
        self.rows.iter_mut().find(|row| row.id == id)
    }

    /// Adds `id` at row `at` (new jobs go on top) unless it is there; the
    /// id of the job forgotten to make room, if one was.
    fn insert(&mut self, id: &str, at: usize) -> Option<String> {
        if self.rows.iter().any(|row| row.id == id) {
            return None;
        }
        let forgotten = (self.rows.len() >= ROWS_MAX).then(|| self.forget_oldest());
        let at = at.min(self.rows.len());
        self.rows.insert(at, JobRow::new(id.to_owned()));
        forgotten
    }

    /// Makes room for a row: the oldest finished job goes (else the
    /// oldest), so the pane holds at most [`ROWS_MAX`] rows however long
    /// jobs keep coming (the demo's traffic never stops). Its id; the
    /// caller makes the table's order again, the selection on its job.
    fn forget_oldest(&mut self) -> String {
        let finished = self.rows.iter().rposition(|row| {
            matches!(
                row.status(),
                Some(TranscriptStatus::Completed | TranscriptStatus::Error)
            )
        });
        let removed = finished.unwrap_or(self.rows.len() - 1);
        self.rows.remove(removed).id
    }

    /// The ids the table shows (as the view will lay it out).
    pub(crate) fn visible_ids(&self) -> Vec<String> {
        self.table
            .state
            .next_window(self.table.len())
            .filter_map(|position| self.table.row_at(&self.rows, position))
            .map(|row| row.id.clone())
            .collect()
    }

    /// Sends the focus when the rows on screen changed.
    pub(crate) fn focus_changed(&mut self, out: &mut Outcome) {
        let visible = self.visible_ids();
        if visible != self.focus && !visible.is_empty() {
            self.focus.clone_from(&visible);
            out.console.push(ConsoleEffect::FocusJobs(visible));
        }
    }

    fn open_prompt(&mut self, prompt: Prompt) {
        self.prompting = Some(prompt);
        self.prompt.reset();
    }
}

impl Pane for JobsPane {
    type Command = JobsCommand;
    type Result = JobsResult;
    type Effect = NoEffect;
    const TITLE: &'static str = "Jobs";
    const NAMES: &'static [&'static str] = &["jobs", "job"];
    const CALLS_PLATFORM: bool = true;
    const JUMP: Option<Jump> = Some(Jump {
        usage: ":job ID",
        names: &["job"],
        description: "a transcript job (a watched job's 8-character id works)",
        help_order: 4,
    });

    fn create(_: &ConsoleConfig) -> JobsPane {
        JobsPane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    /// `:job ID`: that job, watched.
    fn jump_to(&mut self, id: &str, out: &mut Outcome) {
        self.open_job(id, out);
    }

    fn help_sections() -> Vec<CommandSection<JobsCommand>> {
        vec![
            CommandSection {
                title: "Jobs",
                commands: table_commands(true, true),
            },
            CommandSection {
                title: "A job's record",
                commands: detail_commands(),
            },
            CommandSection {
                title: "Jobs prompt (typing)",
                commands: job_prompt_commands(Prompt::AddIds),
            },
            CommandSection {
                title: "Filter (typing)",
                commands: wrapped(prompt_commands(), JobsCommand::Table),
            },
        ]
    }

    /// Something on screen moves with the clock: a job's AGE counts up
    /// even once it finished.
    fn wants_tick(&self) -> bool {
        self.paused_until.is_some() || !self.rows.is_empty()
    }

    /// Starts watching the seeded ids.
    fn init(&mut self, out: &mut Outcome) {
        if !self.rows.is_empty() {
            let ids = self.rows.iter().map(|row| row.id.clone()).collect();
            self.watch(ids, out);
        }
        // The pane's platform calls have recovered only when no row still
        // says its last poll failed.
        if out.succeeded && self.rows.iter().any(|row| row.poll_error.is_some()) {
            out.succeeded = false;
        }
        self.focus_changed(out);
    }

    /// The clock moves the countdowns and ages on: a redraw while a job
    /// or the banner moves, else only when the whole second turns (AGE
    /// moves by seconds at most).
    fn on_tick(&mut self, at: Instant, _out: &mut Outcome) -> bool {
        let before = self.now_tick().as_secs();
        self.now = at.max(self.now);
        // Before the rest: a turned bucket is kept whatever else redraws.
        let queue_moved = self.queue_on_tick();
        queue_moved
            || self.paused_until.is_some()
            || self.rows.iter().any(|row| !row.is_terminal())
            || self.now_tick().as_secs() != before
    }

    fn run(&mut self, command: JobsCommand, out: &mut Outcome) {
        use JobsCommand::*;
        match command {
            Move(to) => self.table.apply(to),
            Table(command) => self.table.run(command, &self.rows),
            Open => self.detail = self.selected().is_some(),
            Back => self.detail = false,
            Breakdown => self.breakdown = !self.breakdown,
            CopyId => {
                if let Some(row) = self.selected() {
                    out.console.push(ConsoleEffect::Copy {
                        what: "job id",
                        text: earshot_core::redact::SecretString::new(row.id.clone()),
                    });
                    out.toast = Some(format!("copied job id {}", row.id));
                }
            }
            Add => self.open_prompt(Prompt::AddIds),
            Submit => self.open_prompt(Prompt::SubmitFile),
            PromptCancel => self.prompting = None,
            PromptSubmit => {
                let typed = self.prompt.value().trim().to_owned();
                match self.prompting {
                    Some(Prompt::AddIds) => {
                        let ids = parse_ids(&typed);
                        if ids.is_empty() {
                            out.toast =
                                Some("type one or more job ids (comma or space separated)".into());
                            return;
                        }
                        self.prompting = None;
                        if !self.add_ids(ids, out) {
                            out.toast = Some("already watched".into());
                        }
                    }
                    Some(Prompt::SubmitFile) => {
                        if typed.is_empty() {
                            out.toast = Some("type the path of an audio file".into());
                            return;
                        }
                        self.prompting = None;
                        self.upload = Some(Upload {
                            path: typed.clone(),
                            sent: 0,
                            total: 0,
                        });
                        out.toast = Some(format!("uploading {typed}…"));
                        out.console.push(ConsoleEffect::SubmitFile {
                            path: PathBuf::from(typed),
                        });
                    }
                    None => {}
                }
            }
        }
        // The pane's platform calls have recovered only when no row still
        // says its last poll failed.
        if out.succeeded && self.rows.iter().any(|row| row.poll_error.is_some()) {
            out.succeeded = false;
        }
        self.focus_changed(out);
    }

    /// A report from the watcher or a submission.
    fn on_result(&mut self, result: JobsResult, out: &mut Outcome) {
        let kept = self.kept_selection();
        match result {
            JobsResult::Watch(event) => self.on_watch(event, out),
            JobsResult::Discovered(ids) => {
                self.add_ids(ids, out);
            }
            JobsResult::Uploading { sent, total } => {
                if let Some(upload) = &mut self.upload {
                    upload.sent = sent;
                    upload.total = total;
                }
            }
            JobsResult::Submitted { result } => {
                let path = self.upload.take().map(|upload| upload.path);
                match result {
                    Ok(id) => {
                        out.toast = Some(format!(
                            "submitted {}: job {id}",
                            path.as_deref().unwrap_or("the file")
                        ));
                        out.succeeded = true;
                        self.add_ids(vec![id.clone()], out);
                        if let Some(row) = self.row_mut(&id) {
                            row.submitted_ms = Some(earshot_core::store::now_ms());
                        }
                    }
                    Err(failure) => out.failure = Some(failure),
                }
            }
        }
        self.table.refresh(&self.rows, kept);
        // The pane's platform calls have recovered only when no row still
        // says its last poll failed.
        if out.succeeded && self.rows.iter().any(|row| row.poll_error.is_some()) {
            out.succeeded = false;
        }
        self.focus_changed(out);
        if let Some((used, budget)) = self.budget {
            out.budget = Some(format!("{used}/{budget}"));
        }
    }

    fn busy(&self) -> bool {
        self.upload.is_some()
    }

    fn commands(&self) -> Vec<CommandInfo<JobsCommand>> {
        match self.prompting {
            Some(prompt) => job_prompt_commands(prompt),
            None if self.table.prompting() => wrapped(prompt_commands(), JobsCommand::Table),
            None if self.detail && self.selected().is_some() => detail_commands(),
            None => table_commands(self.selected().is_some(), self.table.filtering()),
        }
    }

    fn allows_global(&self) -> bool {
        self.prompting.is_none() && !self.table.prompting()
    }

    fn captures_text(&self) -> bool {
        self.prompting.is_some() || self.table.prompting()
    }

    fn type_key(&mut self, key: &KeyEvent) {
        if self.prompting.is_some() {
            text::type_key(&mut self.prompt, key);
        } else {
            self.table.type_key(key, &self.rows);
        }
    }

    fn paste(&mut self, pasted: &str) {
        if self.prompting.is_some() {
            text::paste(&mut self.prompt, pasted);
        } else {
            self.table.paste(pasted, &self.rows);
        }
    }

    fn would_lose(&self) -> Vec<String> {
        let mut losing = Vec::new();
        if self.upload.is_some() {
            losing.push("the upload in progress (it finishes, unwatched)".into());
        }
        if self.prompting.is_some() && !self.prompt.value().trim().is_empty() {
            losing.push("the Jobs prompt".into());
        }
        losing
    }

    fn receive(&mut self, message: &Handover, out: &mut Outcome) -> Received {
        self.take(message, out)
    }
}

/// Ids typed at the prompt: comma or whitespace separated, no duplicates.
pub(crate) fn parse_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in text.split(|c: char| c == ',' || c.is_whitespace()) {
        if !id.is_empty() && !ids.iter().any(|known| known == id) {
            ids.push(id.to_owned());
        }
    }
    ids
}

