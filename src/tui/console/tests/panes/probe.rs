//! Tests of the Probe pane's `update`: region checkboxes, runs and their
//! sequence numbers, answers stored (or dropped when superseded), and
//! what the results draw, through the [`App`] where keys matter.

use crate::tui::kernel::Handover;
use std::path::PathBuf;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode};
use serde_json::{Map, json};

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::test_keys::{press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::kernel::Pane;
use crate::tui::panes::PaneId;
use crate::tui::panes::probe::Outcome;
use crate::tui::panes::probe::ProbeResult;
use crate::tui::panes::probe::tasks::ProbeEffect;
use crate::tui::panes::probe::{
    Call, Field, ProbeCommand, ProbePane, RegionChoice, expand_home, view,
};
use crate::tui::theme::Theme;
use earshot_core::api::Region;
use earshot_core::api::types::dictation::{Dictation, SyncTranscript};

fn run(pane: &mut ProbePane, command: ProbeCommand) -> Outcome {
    let mut out = Outcome::default();
    pane.run(command, &mut out);
    out
}

fn answer(text: &str, rewrite: Option<&str>, llm_error: Option<&str>) -> Box<Dictation> {
    Box::new(Dictation {
        text: text.into(),
        words: Vec::new(),
        confidence: 0.9,
        llm_response: rewrite.map(str::to_owned),
        llm_error: llm_error.map(str::to_owned),
        audio_duration_ms: 2000.0,
        session_id: "0b7f3f5e-9c1a-4c8e-8a52-3f1d2e4b5a69".into(),
        request_time_ms: Some(41.5),
        auth_time_ms: Some(0.25),
        sync_time_ms: Some(30.0),
        extra: Map::new(),
    })
}

fn sync_answer(text: &str) -> SyncTranscript {
    let mut extra = Map::new();
    extra.insert("request_time_ms".into(), json!(12.5));
    SyncTranscript {
        text: text.into(),
        extra,
    }
}

fn dictation_done(
    seq: u64,
    region: Region,
    result: Result<Box<Dictation>, Failure>,
) -> ProbeResult {
    ProbeResult::Dictation {
        seq,
        region,
        latency_ms: 87.25,
        result,
    }
}

fn sync_done(seq: u64, region: Region, result: Result<SyncTranscript, Failure>) -> ProbeResult {
    ProbeResult::Sync {
        seq,
        region,
        latency_ms: 20.0,
        result,
    }
}

fn filled() -> ProbePane {
    let mut pane = ProbePane::new().with_home(Some(PathBuf::from("/home/op")));
    pane.set(Field::File, "~/audio/sample.wav");
    pane
}

/// Runs the probe; the effect's seq.
fn start(pane: &mut ProbePane) -> u64 {
    let out = run(pane, ProbeCommand::Run);
    match out.effects.as_slice() {
        [ProbeEffect::Run { seq, .. }] => *seq,
        other => panic!("expected one RunProbe, got {other:?}"),
    }
}

fn screen(pane: &ProbePane, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = Theme::fallback();
    terminal
        .draw(|frame| view::draw(frame, frame.area(), pane, &theme))
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn every_region_starts_checked_and_space_toggles_the_one_under_the_cursor() {
    let mut pane = ProbePane::new();
    assert_eq!(
        pane.checked_regions(),
        vec![Region::Global, Region::Us, Region::Eu]
    );
    run(&mut pane, ProbeCommand::NextRegion);
    run(&mut pane, ProbeCommand::ToggleRegion);
    assert_eq!(pane.checked_regions(), vec![Region::Global, Region::Eu]);
    run(&mut pane, ProbeCommand::ToggleRegion);
    assert_eq!(pane.checked_regions().len(), 3);
    // The cursor stops at both ends.
    for _ in 0..5 {
        run(&mut pane, ProbeCommand::NextRegion);
    }
    assert_eq!(pane.region_cursor, 2);
    for _ in 0..5 {
        run(&mut pane, ProbeCommand::PrevRegion);
    }
    assert_eq!(pane.region_cursor, 0);
}

#[test]
fn the_last_checked_region_cannot_be_unchecked() {
    let mut pane = ProbePane::new();
    run(&mut pane, ProbeCommand::ToggleRegion);
    run(&mut pane, ProbeCommand::NextRegion);
    run(&mut pane, ProbeCommand::ToggleRegion);
    assert_eq!(pane.checked_regions(), vec![Region::Eu]);
    run(&mut pane, ProbeCommand::NextRegion);
    let out = run(&mut pane, ProbeCommand::ToggleRegion);
    assert_eq!(pane.checked_regions(), vec![Region::Eu]);
    assert!(
        out.toast
            .is_some_and(|toast| toast.contains("stays checked"))
    );
    run(&mut pane, ProbeCommand::AllRegions);
    assert_eq!(pane.checked_regions().len(), 3);
}

#[test]
fn a_run_is_one_effect_with_a_new_seq_the_checked_regions_and_the_expanded_path() {
    let mut pane = filled();
    pane.set(Field::Instruction, "  all in uppercase ");
    run(&mut pane, ProbeCommand::ToggleRegion);
    let out = run(&mut pane, ProbeCommand::Run);
    let [
        ProbeEffect::Run {
            seq,
            file,
            regions,
            options,
        },
    ] = out.effects.as_slice()
    else {
        panic!("expected one RunProbe, got {:?}", out.effects);
    };
    assert_eq!(*seq, 1);
    assert_eq!(file, &PathBuf::from("/home/op/audio/sample.wav"));
    assert_eq!(regions, &vec![Region::Us, Region::Eu]);
    assert_eq!(options.instruction.as_deref(), Some("all in uppercase"));
    assert!(!options.model.is_empty());
    let run_state = pane.run.as_ref().unwrap();
    assert_eq!(run_state.progress(), (0, 4));
    assert!(pane.busy());
    assert_eq!(start(&mut pane), 2, "the next run has a new seq");
}

#[test]
fn an_empty_file_field_opens_the_form_instead_of_running() {
    let mut pane = ProbePane::new();
    let out = run(&mut pane, ProbeCommand::Run);
    assert!(out.effects.is_empty());
    assert!(pane.editing);
    assert_eq!(pane.focus, Field::File);
    assert!(pane.run.is_none());
}

#[test]
fn home_is_expanded_only_at_the_start() {
    let home = Some(std::path::Path::new("/h"));
    assert_eq!(expand_home("~/a.wav", home), PathBuf::from("/h/a.wav"));
    assert_eq!(expand_home("~", home), PathBuf::from("/h"));
    assert_eq!(expand_home("a/~/b.wav", home), PathBuf::from("a/~/b.wav"));
    assert_eq!(expand_home("~/a.wav", None), PathBuf::from("~/a.wav"));
}

#[test]
fn answers_are_stored_per_region_and_the_last_one_says_done() {
    let mut pane = filled();
    let seq = start(&mut pane);
    let mut out = Outcome::default();
    pane.on_result(
        dictation_done(seq, Region::Us, Ok(answer("um hi", Some("Hi."), None))),
        &mut out,
    );
    assert!(out.succeeded);
    let run_state = pane.run.as_ref().unwrap();
    assert_eq!(run_state.progress(), (1, 6));
    let us = &run_state.regions[1];
    assert_eq!(us.region, Region::Us);
    assert!(
        matches!(&us.dictation, Call::Done { latency_ms, result: Ok(a) }
        if *latency_ms == 87.25 && a.llm_response.as_deref() == Some("Hi."))
    );
    assert!(us.sync.is_running());
    for region in [Region::Global, Region::Us, Region::Eu] {
        let mut out = Outcome::default();
        pane.on_result(sync_done(seq, region, Ok(sync_answer("um hi"))), &mut out);
        assert!(out.toast.is_none(), "not done yet");
    }
    pane.on_result(
        dictation_done(seq, Region::Global, Ok(answer("um hi", Some("Hi."), None))),
        &mut Outcome::default(),
    );
    let mut out = Outcome::default();
    pane.on_result(
        dictation_done(
            seq,
            Region::Eu,
            Err(Failure {
                status: Some(503),
                ..Failure::new("dictation (eu) failed: HTTP 503: busy")
            }),
        ),
        &mut out,
    );
    assert!(!pane.busy());
    assert_eq!(
        out.toast.as_deref(),
        Some("probe done: 5 of 6 calls answered")
    );
    // The results carry the time they were taken, in the title.
    let finished = pane.run.as_ref().and_then(|run| run.finished_ms);
    let now = earshot_core::store::now_ms();
    assert!(
        finished.is_some_and(|at| (now - 5_000..=now).contains(&at)),
        "{finished:?}"
    );
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 30)).unwrap();
    terminal
        .draw(|frame| {
            crate::tui::kernel::Pane::draw(&pane, frame, frame.area(), &Theme::fallback(), false)
        })
        .unwrap();
    let title = terminal.backend().to_string();
    let clock = earshot_core::clock_text::utc_clock(finished.unwrap_or_default());
    assert!(
        title.contains(&format!("· results of {clock} UTC")),
        "{title}"
    );
}

#[test]
fn a_superseded_runs_answers_are_dropped() {
    let mut pane = filled();
    let old = start(&mut pane);
    let new = start(&mut pane);
    assert_ne!(old, new);
    let mut out = Outcome::default();
    pane.on_result(
        dictation_done(old, Region::Global, Ok(answer("stale", None, None))),
        &mut out,
    );
    assert!(!out.succeeded);
    assert_eq!(pane.run.as_ref().unwrap().progress(), (0, 6));
    pane.on_result(
        dictation_done(new, Region::Global, Ok(answer("fresh", None, None))),
        &mut Outcome::default(),
    );
    assert_eq!(pane.run.as_ref().unwrap().progress(), (1, 6));
}

#[test]
fn an_answer_for_a_region_not_in_the_run_is_ignored() {
    let mut pane = filled();
    pane.regions = vec![RegionChoice {
        region: Region::Eu,
        checked: true,
    }];
    let seq = start(&mut pane);
    pane.on_result(
        sync_done(seq, Region::Us, Ok(sync_answer("x"))),
        &mut Outcome::default(),
    );
    assert_eq!(pane.run.as_ref().unwrap().progress(), (0, 2));
}

#[test]
fn results_show_text_rewrite_llm_error_verbatim_timings_and_errors() {
    let mut pane = filled();
    let seq = start(&mut pane);
    let odd_error = "Timeout: upstream said \"no\"";
    pane.on_result(
        dictation_done(
            seq,
            Region::Global,
            Ok(answer("um send it, no, keep it", None, Some(odd_error))),
        ),
        &mut Outcome::default(),
    );
    pane.on_result(
        dictation_done(
            seq,
            Region::Us,
            Ok(answer("um hi", Some("Hi there."), None)),
        ),
        &mut Outcome::default(),
    );
    pane.on_result(
        sync_done(
            seq,
            Region::Eu,
            Err(Failure::new(
                "sync transcription (eu) failed: could not reach the server",
            )),
        ),
        &mut Outcome::default(),
    );
    let text = screen(&pane, 120, 30);
    assert!(text.contains("um send it, no, keep it"), "{text}");
    assert!(text.contains(odd_error), "llm_error verbatim: {text}");
    assert!(text.contains("Hi there."), "{text}");
    assert!(text.contains("41 ms (auth 0.2 ms,"), "{text}");
    assert!(text.contains("transcribe 30 ms)"), "{text}");
    assert!(text.contains("87 ms round trip"), "{text}");
    assert!(text.contains("could not reach"), "{text}");
    assert!(text.contains("running…"), "calls still out say so: {text}");
}

#[test]
fn narrow_and_tiny_areas_stack_the_regions_and_never_panic() {
    let mut pane = filled();
    let seq = start(&mut pane);
    pane.on_result(
        dictation_done(
            seq,
            Region::Global,
            Ok(answer(&"long words ".repeat(40), Some("x\ny"), None)),
        ),
        &mut Outcome::default(),
    );
    let text = screen(&pane, 80, 30);
    // Stacked: each region's name starts a line of its own.
    for name in ["global", "us", "eu"] {
        assert!(
            text.lines()
                .any(|line| line.trim_matches('"').trim() == name),
            "{name}: {text}"
        );
    }
    for (width, height) in [(1, 1), (5, 3), (20, 6), (200, 4)] {
        screen(&pane, width, height);
    }
    for _ in 0..100 {
        run(&mut pane, ProbeCommand::PageDown);
    }
    let text = screen(&pane, 80, 12);
    let title = |name: &str| {
        text.lines()
            .any(|line| line.trim_matches('"').trim() == name)
    };
    assert!(!title("global"), "scrolled: {text}");
    assert!(title("eu"), "to the end, not past it: {text}");
}

// ---- through the App -------------------------------------------------------

#[test]
fn keys_edit_the_file_toggle_regions_and_run_even_in_read_only() {
    let mut app = App::new(ConsoleConfig {
        read_only: true,
        ..ConsoleConfig::default()
    });
    app.update(press(KeyCode::Char('6')));
    assert_eq!(app.pane, PaneId::Probe);
    app.update(press(KeyCode::Char('e')));
    assert!(app.panes.probe.editing);
    // `q` and `5` are typed, not global keys, while editing.
    type_text(&mut app, "/tmp/q5.wav");
    assert!(!app.quit);
    assert_eq!(app.panes.probe.file.value(), "/tmp/q5.wav");
    app.update(press(KeyCode::Tab));
    app.update(Action::Input(Event::Paste("make it\nformal".into())));
    assert_eq!(app.panes.probe.instruction.value(), "make itformal");
    app.update(press(KeyCode::Esc));
    assert!(!app.panes.probe.editing);
    app.update(press(KeyCode::Right));
    app.update(press(KeyCode::Char(' ')));
    assert_eq!(
        app.panes.probe.checked_regions(),
        vec![Region::Global, Region::Eu]
    );
    let effects = app.update(press(KeyCode::Char('p')));
    assert!(
        matches!(effects.as_slice(), [Effect::Probe(ProbeEffect::Run { regions, .. })] if regions.len() == 2),
        "{effects:?}"
    );
    assert!(app.busy());
    // `r` runs the same probe again, with a new seq.
    let effects = app.update(press(KeyCode::Char('r')));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Probe(ProbeEffect::Run { seq: 2, .. })]
    ));
    // Help lists the pane's keys.
    let help = app.help_sections();
    assert_eq!(help[0].title, "Probe");
}

#[test]
fn a_seeded_file_is_ready_to_probe_with_enter() {
    let mut app = App::new(ConsoleConfig::default());
    app.seed(Handover::ProbeFile(std::path::PathBuf::from(
        "/tmp/demo/sample.wav",
    )));
    app.update(press(KeyCode::Char('6')));
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        matches!(effects.as_slice(), [Effect::Probe(ProbeEffect::Run { file, .. })]
            if file == &PathBuf::from("/tmp/demo/sample.wav")),
        "{effects:?}"
    );
    let seq = match effects.as_slice() {
        [Effect::Probe(ProbeEffect::Run { seq, .. })] => *seq,
        _ => unreachable!(),
    };
    app.update(Action::Probe(dictation_done(
        seq,
        Region::Global,
        Ok(answer("hello", Some("Hello."), None)),
    )));
    assert!(
        app.panes.probe.run.as_ref().unwrap().regions[0]
            .dictation
            .is_ok()
    );
}
