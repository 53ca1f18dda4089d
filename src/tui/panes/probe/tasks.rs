//! The Probe pane's background work ([`ProbeEffect`]): dictation and sync
//! in every chosen region at once, each call's end reported as it comes.
//! A new run supersedes (aborts) the one still running.

use super::ProbeResult;
use crate::tui::kernel::{PaneEffect, Report, TaskInput};

/// What the Probe pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum ProbeEffect {
    /// Dictation and sync in every region of `regions` at once.
    Run {
        seq: u64,
        file: std::path::PathBuf,
        regions: Vec<earshot_core::api::Region>,
        options: earshot_core::api::probe::ProbeOptions,
    },
}

impl PaneEffect<ProbeResult> for ProbeEffect {
    fn latest_key(&self) -> Option<&'static str> {
        match self {
            ProbeEffect::Run { .. } => Some("run"),
        }
    }

    async fn run(self, input: TaskInput, report: Report<ProbeResult>) {
        let ProbeEffect::Run {
            seq,
            file,
            regions,
            options,
        } = self;
        tracing::info!(seq, regions = regions.len(), "probe dictation and sync");
        earshot_core::api::probe::all_at_once(&input.client, &file, &regions, &options, |answer| {
            report.send(super::result_of(seq, answer));
        })
        .await;
    }
}
