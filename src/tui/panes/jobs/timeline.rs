//! A job's own timeline in its detail: submitted, queued, processing,
//! finished and the webhook answered, each at the UTC time earshot first
//! saw it (the watcher's first sight of a state, the Inbox's answer), with
//! how long the step before took. A step the job went past between two
//! polls reads "unknown", one it has not reached "not yet".

use ratatui::text::{Line, Span};

use super::JobRow;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::utc_clock;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::duration_text;
use earshot_core::poll::Tick;

/// One step: its label, when (Unix ms) if seen, and what follows the time.
struct Step {
    label: &'static str,
    at_ms: Option<i64>,
    note: String,
}

/// The timeline's lines, under a heading.
pub(super) fn lines(row: &JobRow, theme: &Theme) -> Vec<Line<'static>> {
    let muted = theme.style(Role::Muted);
    let fg = theme.style(Role::Fg);
    let mut lines = vec![
        Line::default(),
        Line::from(Span::styled(
            "  timeline (UTC, when earshot first saw each step)",
            muted,
        )),
    ];
    for step in steps(row) {
        let (text, style) = match step.at_ms {
            Some(at) => (format!("{}  {}", utc_clock(at), step.note), fg),
            None => (step.note, muted),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("    {:<19}", step.label), muted),
            Span::styled(text.trim_end().to_owned(), style),
        ]));
    }
    lines
}

/// The watcher's `tick` on the wall clock: the row's added time is known
/// on both.
fn wall_ms(row: &JobRow, tick: Tick) -> Option<i64> {
    let view = row.view.as_ref()?;
    let after = i64::try_from(tick.saturating_sub(view.added_at).as_millis()).ok()?;
    Some(row.added_ms.saturating_add(after))
}

/// How long from `start` to `end`, when both were seen.
fn took(start: Option<Tick>, end: Option<Tick>, what: &str) -> String {
    match (start, end) {
        (Some(start), Some(end)) => format!(
            "after {} {what}",
            duration_text::of_secs(end.saturating_sub(start).as_secs())
        ),
        _ => String::new(),
    }
}

/// "unknown" for a step the job went past unseen, "not yet" for one ahead.
fn unseen(past: bool) -> String {
    if past {
        "unknown (not seen: it went past between two polls)".into()
    } else {
        "not yet".into()
    }
}

fn steps(row: &JobRow) -> Vec<Step> {
    let view = row.view.as_ref();
    let queued = view.and_then(|v| v.queued_since);
    let processing = view.and_then(|v| v.processing_since);
    let finished = view.and_then(|v| v.finished_at);
    let status = row.status();
    let finished_as = match status {
        Some(TranscriptStatus::Error) => "error",
        _ => "completed",
    };
    let at = |tick: Option<Tick>| tick.and_then(|tick| wall_ms(row, tick));
    let submitted = match row.submitted_ms {
        Some(at_ms) => Step {
            label: "submitted",
            at_ms: Some(at_ms),
            note: "by this console".into(),
        },
        None => Step {
            label: "submitted",
            at_ms: None,
            note: format!(
                "unknown (submitted elsewhere; watched from {})",
                utc_clock(row.added_ms)
            ),
        },
    };
    let hook = match (row.hook_attempts.last(), row.hook()) {
        (Some(&(at_ms, code)), _) => Step {
            label: "webhook answered",
            at_ms: Some(at_ms),
            note: format!("{code} (answered by the Inbox)"),
        },
        (None, Some(code)) => Step {
            label: "webhook answered",
            at_ms: None,
            note: format!("{code} (the platform's record; when: unknown)"),
        },
        (None, None) => Step {
            label: "webhook answered",
            at_ms: None,
            note: if finished.is_some() {
                "unknown (no answer seen)".into()
            } else {
                "not yet".into()
            },
        },
    };
    vec![
        submitted,
        Step {
            label: "queued",
            at_ms: at(queued),
            note: if queued.is_some() {
                String::new()
            } else {
                unseen(processing.is_some() || finished.is_some())
            },
        },
        Step {
            label: "processing",
            at_ms: at(processing),
            note: if processing.is_some() {
                took(queued, processing, "queued")
            } else {
                unseen(finished.is_some())
            },
        },
        Step {
            label: finished_as,
            at_ms: at(finished),
            note: if finished.is_some() {
                took(processing, finished, "processing")
            } else {
                // Still queued or processing: ahead.
                unseen(false)
            },
        },
        hook,
    ]
}
