//! The Signatures pane's background work ([`SigsEffect`]): reading a
//! body file or one request of a capture file, off the render path. Both
//! are local and run to their end; the pane drops an answer whose
//! sequence number a newer read has passed.

use super::SigsResult;
use crate::tui::panes::{PaneEffect, Report, TaskInput};
use earshot_core::receiver::capture::{self, Selector};

/// What the Signatures pane asks the worker for.
#[derive(Clone, Debug)]
pub(crate) enum SigsEffect {
    /// Read a body file.
    ReadBodyFile { seq: u64, path: String },
    /// Read one request from a capture file (`line`: its line; `None`:
    /// the last signed one).
    ReadCapture {
        seq: u64,
        path: String,
        line: Option<usize>,
    },
}

impl PaneEffect<SigsResult> for SigsEffect {
    fn latest_key(&self) -> Option<&'static str> {
        None
    }

    async fn run(self, _: TaskInput, report: Report<SigsResult>) {
        let result = match self {
            SigsEffect::ReadBodyFile { seq, path } => {
                // The path only: the body may carry anything.
                tracing::debug!(seq, %path, "read body file");
                let file = std::path::PathBuf::from(&path);
                let result = tokio::task::spawn_blocking(move || {
                    earshot_core::bounded_file::read(&file, earshot_core::bounded_file::BODY_FILE)
                        .map_err(|error| error.to_string())
                })
                .await
                .unwrap_or_else(|error| Err(error.to_string()));
                SigsResult::BodyLoaded { seq, path, result }
            }
            SigsEffect::ReadCapture { seq, path, line } => {
                tracing::debug!(seq, %path, ?line, "read a capture");
                let selector = line.map_or(Selector::LastSigned, Selector::Line);
                let result = tokio::task::spawn_blocking(move || {
                    capture::replay(std::path::Path::new(&path), &selector)
                })
                .await
                .unwrap_or_else(|error| Err(error.to_string()));
                SigsResult::CaptureLoaded { seq, result }
            }
        };
        report.send(result);
    }
}
