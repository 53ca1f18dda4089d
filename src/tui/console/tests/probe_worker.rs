//! The Probe pane's background side against the emulator over real HTTP:
//! the worker runs dictation and sync in every region at once and reports
//! each call; fed to the [`App`], the pane draws the text, the rewrite,
//! the server's timings and the round trip. A failing call shows its
//! error, and a rewrite failure its `llm_error`.

use crate::tui::kernel::Handover;
use std::collections::HashSet;
use std::time::Duration;

use super::support::{Harness, NoClipboard, start, wav};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::command::Command;
use crate::tui::console::view;
use crate::tui::console::worker::Worker;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::PaneId;
use crate::tui::panes::probe::ProbeResult;
use crate::tui::panes::probe::tasks::ProbeEffect;
use crate::tui::panes::probe::{Call, ProbeCommand};
use crate::tui::theme::Theme;
use earshot_core::api::Region;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use tokio::sync::mpsc;

const SENTENCE: &str = "um send the report to Dana, no, to Alex by Friday";

/// Receives the probe's answers (`calls` of them) into `app`.
async fn collect(app: &mut App, rx: &mut mpsc::UnboundedReceiver<Action>, calls: usize) {
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut seen = 0;
        while seen < calls {
            let action = rx.recv().await.expect("the worker is alive");
            if matches!(action, Action::Probe(_)) {
                seen += 1;
            }
            app.update(action);
        }
    })
    .await
    .expect("every call answers within 30 s");
}

/// A console on the Probe pane with a WAV of [`SENTENCE`] to send (in
/// `region` only, or every region), and a worker calling `harness` that
/// reports into `rx`.
struct Probe {
    app: App,
    worker: Worker,
    rx: mpsc::UnboundedReceiver<Action>,
    _dir: tempfile::TempDir,
}

impl Probe {
    fn new(harness: &Harness, region: Option<Region>) -> Probe {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.wav");
        std::fs::write(&path, wav(1.0, Some(SENTENCE))).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let worker = Worker::new(harness.client.clone(), tx, Box::new(NoClipboard));
        let mut app = App::new(ConsoleConfig::default());
        app.pane = PaneId::Probe;
        if let Some(region) = region {
            app.panes
                .probe
                .regions
                .retain(|choice| choice.region == region);
            app.panes.probe.region_cursor = 0;
        }
        app.seed(Handover::ProbeFile(path.clone()));
        Probe {
            app,
            worker,
            rx,
            _dir: dir,
        }
    }

    /// Presses Run: the effects, started.
    fn run(&mut self) -> Vec<Effect> {
        let effects = self
            .app
            .update(Action::Run(Command::Probe(ProbeCommand::Run)));
        self.worker.start_all(effects.clone());
        effects
    }

    /// Receives the run's answers (`calls` of them) into the app.
    async fn collect(&mut self, calls: usize) {
        collect(&mut self.app, &mut self.rx, calls).await;
    }
}

fn screen(app: &App, size: (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    let theme = Theme::fallback();
    terminal
        .draw(|frame| view::draw(frame, app, &theme))
        .unwrap();
    terminal.backend().to_string()
}

#[tokio::test]
async fn a_probe_runs_dictation_and_sync_in_every_region_and_the_pane_shows_them() {
    let harness = start().await;
    let mut probe = Probe::new(&harness, None);
    let effects = probe.run();
    assert_eq!(effects.len(), 1, "{effects:?}");
    probe.collect(6).await;
    let app = &probe.app;

    let run = app.panes.probe.run.as_ref().expect("a run");
    assert!(!run.running());
    let regions: HashSet<Region> = run.regions.iter().map(|r| r.region).collect();
    assert_eq!(regions.len(), 3);
    for region in &run.regions {
        let Call::Done {
            latency_ms,
            result: Ok(answer),
        } = &region.dictation
        else {
            panic!("{:?} dictation: {:?}", region.region, region.dictation);
        };
        assert_eq!(answer.text, SENTENCE);
        let rewrite = answer.llm_response.as_deref().expect("a rewrite");
        assert!(
            rewrite.contains("Alex") && !rewrite.contains("Dana"),
            "{rewrite}"
        );
        assert!(answer.request_time_ms.is_some_and(|ms| ms > 0.0));
        assert!(*latency_ms > 0.0);
        let Call::Done {
            result: Ok(sync), ..
        } = &region.sync
        else {
            panic!("{:?} sync: {:?}", region.region, region.sync);
        };
        assert!(!sync.text.is_empty());
    }
    let text = screen(app, (120, 40));
    assert!(text.contains("Send the report to Alex by"), "{text}");
    assert!(text.contains("200 ok"), "{text}");
    assert!(text.contains("ms round trip"), "{text}");
    assert!(!text.contains("running…"), "{text}");
}

#[tokio::test]
async fn a_failing_call_shows_its_error_and_a_failed_rewrite_its_llm_error() {
    let harness = start().await;
    harness
        .control("/_emulator/dictation", json!({"llm": "error"}))
        .await;
    harness
        .arm_fault(json!({"path_prefix": "/transcribe", "status": 503}))
        .await;
    let mut probe = Probe::new(&harness, Some(Region::Eu));
    probe.run();
    probe.collect(2).await;
    let app = &probe.app;

    let region = &app.panes.probe.run.as_ref().expect("a run").regions[0];
    let Call::Done {
        result: Ok(answer), ..
    } = &region.dictation
    else {
        panic!("dictation: {:?}", region.dictation);
    };
    assert_eq!(answer.llm_error.as_deref(), Some("error"));
    assert_eq!(answer.llm_response, None);
    let Call::Done {
        result: Err(failure),
        ..
    } = &region.sync
    else {
        panic!("sync: {:?}", region.sync);
    };
    assert_eq!(failure.status, Some(503));
    assert!(!app.busy());
    let text = screen(app, (80, 24));
    assert!(text.contains("llm_error error"), "{text}");
    assert!(text.contains("HTTP 503"), "{text}");
    assert!(text.contains("HTTP 503: Service Unavailable"), "{text}");
}

#[tokio::test]
async fn a_new_run_supersedes_the_one_in_flight() {
    let harness = start().await;
    // The first run's two calls (dictation, sync) wait 1 s; the second
    // run's answer at once.
    for path in ["/v1/transcribe", "/transcribe"] {
        harness
            .arm_fault(json!({"path_prefix": path, "latency_ms": 1000, "count": 1}))
            .await;
    }
    let mut probe = Probe::new(&harness, Some(Region::Global));
    probe.run();
    // Both of the first run's calls reached the emulator and are held there.
    harness.wait_fault_uses_left(0).await;
    let second = probe.run();
    let Some(Effect::Probe(ProbeEffect::Run { seq, .. })) = second.first() else {
        panic!("{second:?}");
    };
    let seq = *seq;
    let Probe {
        mut app,
        worker,
        mut rx,
        ..
    } = probe;
    let mut seqs = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while seqs.len() < 2 {
            if let Some(Action::Probe(result)) = rx.recv().await {
                seqs.push(seq_of(&result));
                app.update(Action::Probe(result));
            }
        }
    })
    .await
    .expect("the second run answers");
    assert_eq!(seqs, vec![seq, seq], "the second run answers first");
    assert!(!app.busy());
    // The first run was aborted: once the worker is dropped too, nothing
    // holds a sender, so the channel ends without an answer of it. (Had
    // the first run gone on, its task would hold the channel open and send
    // its answers when its 1 s is over.)
    drop(worker);
    let late = tokio::time::timeout(Duration::from_secs(30), async {
        let mut late = Vec::new();
        while let Some(action) = rx.recv().await {
            if let Action::Probe(result) = action {
                late.push(seq_of(&result));
            }
        }
        late
    })
    .await
    .expect("every task of the worker ends");
    assert!(late.is_empty(), "the superseded run answered: {late:?}");
}

fn seq_of(result: &ProbeResult) -> u64 {
    match result {
        ProbeResult::Dictation { seq, .. } | ProbeResult::Sync { seq, .. } => *seq,
    }
}
