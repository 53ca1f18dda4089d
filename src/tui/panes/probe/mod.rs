//! The Probe pane: pick a WAV file and regions, then dictation and sync in
//! every checked region at once, side by side: the verbatim text, the
//! rewrite (or its `llm_error`, verbatim), the server's timings and the
//! round trip measured here; a failed call shows its operator-worded error.
//!
//! Owns the form (file path, optional `llm_instruction`), the region
//! checkboxes (one always stays checked) and the results of the latest
//! run. A run is [`ProbeEffect::Run`]; each call's end comes back as a
//! [`ProbeResult`] with the run's `seq`, so a superseded run's answers are
//! dropped. The calls are [`earshot_core::api::probe`]'s, shared with `earshot
//! probe`. Drawing is in `view.rs`, the keys in `commands.rs`.

mod commands;
pub(crate) mod tasks;
pub(crate) mod view;

use std::path::{Path, PathBuf};

use chrono::Local;
use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use tui_input::Input;

use crate::tui::kernel::{self, ConsoleConfig, Failure, Handover, Pane, Received};
use crate::tui::keymap::{CommandInfo, CommandSection};
use crate::tui::theme::Theme;
use crate::tui::widgets::input as text;
use earshot_core::api::Region;
use earshot_core::api::probe::{Answer, ProbeOptions, REGIONS};
use earshot_core::api::types::dictation::{DEFAULT_SYNC_MODEL, Dictation, SyncTranscript};
use tasks::ProbeEffect;

use commands::{browse_commands, edit_commands};

/// What this pane's update returns (the kernel's outcome, with this
/// pane's own effects).
pub(crate) type Outcome = kernel::Outcome<ProbeEffect>;

/// Lines one scroll step moves the results.
const SCROLL_STEP: u16 = 1;
/// Lines a page moves the results.
const PAGE_STEP: u16 = 10;

/// One call of a Probe pane run, as it ended; `seq` identifies the run
/// (a superseded run's answers are dropped). `latency_ms` is measured here.
#[derive(Clone, Debug)]
pub(crate) enum ProbeResult {
    Dictation {
        seq: u64,
        region: earshot_core::api::Region,
        latency_ms: f64,
        result: Result<Box<earshot_core::api::types::dictation::Dictation>, Failure>,
    },
    Sync {
        seq: u64,
        region: earshot_core::api::Region,
        latency_ms: f64,
        result: Result<earshot_core::api::types::dictation::SyncTranscript, Failure>,
    },
}

/// What the pane can be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProbeCommand {
    /// Probe every checked region with the file (supersedes a run).
    Run,
    /// Start typing into the form.
    Edit,
    /// Stop typing (the global keys work again).
    Done,
    NextField,
    PrevRegion,
    NextRegion,
    /// Check or uncheck the region under the cursor.
    ToggleRegion,
    AllRegions,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
}

/// A form field, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    File,
    Instruction,
}

impl Field {
    pub(crate) const ORDER: [Field; 2] = [Field::File, Field::Instruction];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Field::File => "WAV file",
            Field::Instruction => "instruction",
        }
    }
}

/// A region and whether the next run probes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegionChoice {
    pub(crate) region: Region,
    pub(crate) checked: bool,
}

/// One call of a run: still running, or ended after `latency_ms`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Call<T> {
    Running,
    Done {
        latency_ms: f64,
        result: Result<T, Failure>,
    },
}

impl<T> Call<T> {
    pub(crate) fn is_running(&self) -> bool {
        matches!(self, Call::Running)
    }

    pub(crate) fn is_ok(&self) -> bool {
        matches!(self, Call::Done { result: Ok(_), .. })
    }
}

/// A region's two calls in a run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RegionRun {
    pub(crate) region: Region,
    pub(crate) dictation: Call<Box<Dictation>>,
    pub(crate) sync: Call<SyncTranscript>,
}

/// The latest run: what was sent, and each region's calls.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    pub(crate) seq: u64,
    /// The file as typed.
    pub(crate) file: String,
    pub(crate) instruction: Option<String>,
    pub(crate) regions: Vec<RegionRun>,
    /// When its last answer arrived (Unix ms): the results' time, said in
    /// the title (a probe is run by hand, not refreshed).
    pub(crate) finished_ms: Option<i64>,
}

impl Run {
    /// Calls answered so far, of all.
    pub(crate) fn progress(&self) -> (usize, usize) {
        let done = self
            .regions
            .iter()
            .map(|r| usize::from(!r.dictation.is_running()) + usize::from(!r.sync.is_running()))
            .sum();
        (done, self.regions.len() * 2)
    }

    pub(crate) fn running(&self) -> bool {
        let (done, all) = self.progress();
        done < all
    }
}

/// The pane's state.
#[derive(Clone, Debug)]
pub(crate) struct ProbePane {
    pub(crate) file: Input,
    pub(crate) instruction: Input,
    pub(crate) focus: Field,
    /// Keys go to the form.
    pub(crate) editing: bool,
    pub(crate) regions: Vec<RegionChoice>,
    /// The region `space` toggles.
    pub(crate) region_cursor: usize,
    pub(crate) run: Option<Run>,
    seq: u64,
    /// Lines of the results scrolled away.
    pub(crate) scroll: u16,
    /// For `~/` in the file field.
    home: Option<PathBuf>,
}

impl Default for ProbePane {
    fn default() -> Self {
        ProbePane::new()
    }
}

impl ProbePane {
    pub(crate) fn new() -> ProbePane {
        ProbePane {
            file: Input::default(),
            instruction: Input::default(),
            focus: Field::File,
            editing: false,
            regions: REGIONS
                .iter()
                .map(|&region| RegionChoice {
                    region,
                    checked: true,
                })
                .collect(),
            region_cursor: 0,
            run: None,
            seq: 0,
            scroll: 0,
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// Replaces the home directory `~/` stands for (tests).
    #[cfg(test)]
    pub(crate) fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Pre-fills the file field (the demo's sample WAV).
    pub(crate) fn seed_file(&mut self, path: &Path) {
        self.file = Input::new(path.display().to_string());
    }

    pub(crate) fn input(&self, field: Field) -> &Input {
        match field {
            Field::File => &self.file,
            Field::Instruction => &self.instruction,
        }
    }

    fn input_mut(&mut self, field: Field) -> &mut Input {
        match field {
            Field::File => &mut self.file,
            Field::Instruction => &mut self.instruction,
        }
    }

    /// Sets a field as if typed.
    #[cfg(test)]
    pub(crate) fn set(&mut self, field: Field, value: &str) {
        *self.input_mut(field) = Input::new(value.to_owned());
    }

    /// The regions the next run probes, in order.
    pub(crate) fn checked_regions(&self) -> Vec<Region> {
        self.regions
            .iter()
            .filter(|choice| choice.checked)
            .map(|choice| choice.region)
            .collect()
    }

    // ---- update -------------------------------------------------------

    fn toggle(&mut self, out: &mut Outcome) {
        let checked = self.checked_regions().len();
        let Some(choice) = self.regions.get_mut(self.region_cursor) else {
            return;
        };
        if choice.checked && checked == 1 {
            out.toast = Some("one region at least stays checked".into());
            return;
        }
        choice.checked = !choice.checked;
    }

    /// Starts a run with the form as it is (the previous run's answers
    /// will be dropped).
    fn start(&mut self, out: &mut Outcome) {
        let typed = self.file.value().trim().to_owned();
        if typed.is_empty() {
            self.editing = true;
            self.focus = Field::File;
            out.toast = Some("type the WAV file's path first".into());
            return;
        }
        let instruction = Some(self.instruction.value().trim())
            .filter(|text| !text.is_empty())
            .map(str::to_owned);
        let regions = self.checked_regions();
        self.seq += 1;
        self.editing = false;
        self.scroll = 0;
        self.run = Some(Run {
            seq: self.seq,
            file: typed.clone(),
            instruction: instruction.clone(),
            regions: regions
                .iter()
                .map(|&region| RegionRun {
                    region,
                    dictation: Call::Running,
                    sync: Call::Running,
                })
                .collect(),
            finished_ms: None,
        });
        out.effects.push(ProbeEffect::Run {
            seq: self.seq,
            file: expand_home(&typed, self.home.as_deref()),
            regions,
            options: ProbeOptions {
                model: DEFAULT_SYNC_MODEL.to_owned(),
                instruction,
            },
        });
    }
}

impl Pane for ProbePane {
    type Command = ProbeCommand;
    type Result = ProbeResult;
    type Effect = ProbeEffect;
    const TITLE: &'static str = "Probe";
    const NAMES: &'static [&'static str] = &["probe"];
    const CALLS_PLATFORM: bool = true;

    fn create(_: &ConsoleConfig) -> ProbePane {
        ProbePane::new()
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, _read_only: bool) {
        view::draw(frame, area, self, theme);
    }

    fn help_sections() -> Vec<CommandSection<ProbeCommand>> {
        vec![
            CommandSection {
                title: "Probe",
                commands: browse_commands(),
            },
            CommandSection {
                title: "Probe form (typing)",
                commands: edit_commands(),
            },
        ]
    }

    fn run(&mut self, command: ProbeCommand, out: &mut Outcome) {
        match command {
            ProbeCommand::Run => self.start(out),
            ProbeCommand::Edit => self.editing = true,
            ProbeCommand::Done => self.editing = false,
            ProbeCommand::NextField => {
                self.focus = text::cycle(&Field::ORDER, self.focus, true);
            }
            ProbeCommand::PrevRegion => {
                self.region_cursor = self.region_cursor.saturating_sub(1);
            }
            ProbeCommand::NextRegion => {
                self.region_cursor = (self.region_cursor + 1).min(self.regions.len() - 1);
            }
            ProbeCommand::ToggleRegion => self.toggle(out),
            ProbeCommand::AllRegions => {
                for choice in &mut self.regions {
                    choice.checked = true;
                }
            }
            ProbeCommand::ScrollUp => self.scroll = self.scroll.saturating_sub(SCROLL_STEP),
            ProbeCommand::ScrollDown => self.scroll = self.scroll.saturating_add(SCROLL_STEP),
            ProbeCommand::PageUp => self.scroll = self.scroll.saturating_sub(PAGE_STEP),
            ProbeCommand::PageDown => self.scroll = self.scroll.saturating_add(PAGE_STEP),
        }
    }

    /// `r` on this pane: the same probe again.
    fn refresh(&mut self, out: &mut Outcome) {
        self.start(out);
    }

    /// One call of a run ended; a superseded run's answer is dropped.
    fn on_result(&mut self, result: ProbeResult, out: &mut Outcome) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        let (seq, region) = match &result {
            ProbeResult::Dictation { seq, region, .. } | ProbeResult::Sync { seq, region, .. } => {
                (*seq, *region)
            }
        };
        if seq != run.seq {
            return;
        }
        let Some(entry) = run.regions.iter_mut().find(|r| r.region == region) else {
            return;
        };
        let ok = match result {
            ProbeResult::Dictation {
                latency_ms, result, ..
            } => {
                entry.dictation = Call::Done { latency_ms, result };
                entry.dictation.is_ok()
            }
            ProbeResult::Sync {
                latency_ms, result, ..
            } => {
                entry.sync = Call::Done { latency_ms, result };
                entry.sync.is_ok()
            }
        };
        out.succeeded |= ok;
        if !run.running() {
            run.finished_ms = Some(earshot_core::store::now_ms());
            let all = run.progress().1;
            let answered = run
                .regions
                .iter()
                .map(|r| usize::from(r.dictation.is_ok()) + usize::from(r.sync.is_ok()))
                .sum::<usize>();
            out.toast = Some(format!("probe done: {answered} of {all} calls answered"));
        }
    }

    /// A run is waiting for answers.
    fn busy(&self) -> bool {
        self.run.as_ref().is_some_and(Run::running)
    }

    fn commands(&self) -> Vec<CommandInfo<ProbeCommand>> {
        if self.editing {
            edit_commands()
        } else {
            browse_commands()
        }
    }

    /// The instruction (the file field may hold the demo's sample, and a
    /// path is quick to type again).
    fn holds_typed_input(&self) -> bool {
        !self.instruction.value().is_empty()
    }

    fn allows_global(&self) -> bool {
        !self.editing
    }

    fn captures_text(&self) -> bool {
        self.editing
    }

    /// A key no command claimed, typed into the focused field.
    fn type_key(&mut self, key: &KeyEvent) {
        if self.editing {
            text::type_key(self.input_mut(self.focus), key);
        }
    }

    /// Pasted text, without line breaks, into the focused field.
    fn paste(&mut self, pasted: &str) {
        if self.editing {
            text::paste(self.input_mut(self.focus), pasted);
        }
    }

    fn receive(&mut self, message: &Handover, _out: &mut Outcome) -> Received {
        match message {
            Handover::ProbeFile(path) => {
                self.seed_file(path);
                Received::Kept
            }
            _ => Received::Ignored,
        }
    }
}

/// `~/…` under `home`; anything else as typed.
pub(crate) fn expand_home(typed: &str, home: Option<&Path>) -> PathBuf {
    match (typed.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if typed == "~" => home.map_or_else(|| PathBuf::from(typed), Path::to_path_buf),
        _ => PathBuf::from(typed),
    }
}

/// A finished call as the pane's action: the error worded for an operator.
pub(crate) fn result_of(seq: u64, answer: Answer) -> ProbeResult {
    let failure = |message: String, status: Option<u16>| Failure {
        message,
        status,
        at: Local::now(),
    };
    match answer {
        Answer::Dictation { region, timed } => ProbeResult::Dictation {
            seq,
            region,
            latency_ms: timed.latency_ms(),
            result: timed
                .result
                .map(Box::new)
                .map_err(|error| failure(error.to_string(), error.status())),
        },
        Answer::Sync { region, timed } => ProbeResult::Sync {
            seq,
            region,
            latency_ms: timed.latency_ms(),
            result: timed
                .result
                .map_err(|error| failure(error.to_string(), error.status())),
        },
    }
}

