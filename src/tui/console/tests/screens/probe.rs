//! The Probe pane: the empty form, a seeded file, results side by side or
//! stacked, and the colours of an LLM error and a failed call.

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::kernel::Failure;
use crate::tui::kernel::Handover;
use crate::tui::panes::probe::ProbeResult;
use crate::tui::panes::probe::tasks::ProbeEffect;
use crate::tui::theme::Role;
use earshot_core::api::Region;
use earshot_core::api::types::dictation::{Dictation, SyncTranscript};
use ratatui::crossterm::event::KeyCode;
use serde_json::{Map, json};

use super::{app, colour, fg_at, find, key, keys, pane_area, render, snapshot};

fn dictation(rewrite: Option<&str>, llm_error: Option<&str>) -> Box<Dictation> {
    Box::new(Dictation {
        text: "um send the report to Dana, no, to Alex by Friday".into(),
        words: Vec::new(),
        confidence: 0.93,
        llm_response: rewrite.map(str::to_owned),
        llm_error: llm_error.map(str::to_owned),
        audio_duration_ms: 2000.0,
        session_id: "0b7f3f5e-9c1a-4c8e-8a52-3f1d2e4b5a69".into(),
        request_time_ms: Some(142.5),
        auth_time_ms: Some(3.1),
        sync_time_ms: Some(120.4),
        extra: Map::new(),
    })
}

fn sync() -> SyncTranscript {
    let mut extra = Map::new();
    extra.insert("request_time_ms".into(), json!(88.0));
    SyncTranscript {
        text: "um send the report to Dana, no, to Alex by Friday".into(),
        extra,
    }
}

fn probe_app() -> App {
    let mut app = app();
    app.seed(Handover::ProbeFile(std::path::PathBuf::from(
        "/tmp/earshot-demo-x1/probe-sample.wav",
    )));
    keys(&mut app, "6");
    app
}

/// A run with every kind of answer: global all well, us a rewrite
/// timeout and sync still running, eu a refused dictation.
fn results_app() -> App {
    let mut app = probe_app();
    let effects = app.update(key(KeyCode::Enter));
    let Some(Effect::Probe(ProbeEffect::Run { seq, .. })) = effects.first() else {
        panic!("{effects:?}");
    };
    let seq = *seq;
    let answers = vec![
        ProbeResult::Dictation {
            seq,
            region: Region::Global,
            latency_ms: 161.25,
            result: Ok(dictation(Some("Send the report to Alex by Friday."), None)),
        },
        ProbeResult::Sync {
            seq,
            region: Region::Global,
            latency_ms: 97.5,
            result: Ok(sync()),
        },
        ProbeResult::Dictation {
            seq,
            region: Region::Us,
            latency_ms: 5210.0,
            result: Ok(dictation(None, Some("timeout"))),
        },
        ProbeResult::Dictation {
            seq,
            region: Region::Eu,
            latency_ms: 31.0,
            result: Err(Failure {
                status: Some(503),
                ..Failure::new(
                    "dictation (eu, /v1/transcribe/live) failed: HTTP 503: Service \
                     Unavailable — the platform is overloaded; retry shortly",
                )
            }),
        },
        ProbeResult::Sync {
            seq,
            region: Region::Eu,
            latency_ms: 102.0,
            result: Ok(sync()),
        },
    ];
    for answer in answers {
        app.update(Action::Probe(answer));
    }
    app
}

#[test]
fn probe_empty_form() {
    let mut app = app();
    keys(&mut app, "6");
    snapshot("probe_empty", &app);
}

#[test]
fn probe_seeded_file_waits_for_enter() {
    snapshot("probe_seeded", &probe_app());
}

#[test]
fn probe_results_side_by_side_or_stacked() {
    let mut app = results_app();
    snapshot("probe_results", &app);
    // At 80×24 the regions are stacked: page down to the last one.
    app.update(key(KeyCode::PageDown));
    let terminal = render(&app, (80, 24));
    insta::assert_snapshot!("probe_results_scrolled_80x24", pane_area(&terminal));
}

#[test]
fn probe_llm_error_warns_and_a_failed_call_is_an_error() {
    let terminal = render(&results_app(), (120, 40));
    let colour_of = |needle: &str| fg_at(&terminal, find(&terminal, needle));
    assert_eq!(colour_of("llm_error timeout"), colour(Role::Warn));
    assert_eq!(colour_of("HTTP 503 ·"), colour(Role::Error));
    assert_eq!(colour_of("200 ok"), colour(Role::Ok));
}
