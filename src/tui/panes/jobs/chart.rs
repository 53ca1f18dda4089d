//! Drawing the Jobs chart under the table: the watched jobs queued (until
//! seen started), processing, completed and failed per bucket
//! ([`super::queue`]: a job counts as processing only between the first
//! and the last poll that saw it so, and as unknown from there to the
//! answer that saw it finish), the processing
//! row's bars measured against the most jobs seen processing at one moment
//! (a full bar; the platform does not state the account's concurrency,
//! which is at least that; its figure "now" is as the last polls saw the
//! jobs, the table's STATUS), and the request budget's peak per minute
//! against the share. One row per state, so the mono theme tells them
//! apart by label and glyph (bars `▁…█`, a bucket a job failed in `✗`,
//! `·` none);
//! narrower than the buckets, runs of buckets merge (the most of each run),
//! and on a short screen the error and budget rows fold into the title.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::JobsPane;
use super::queue::QueueCounts;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::bar_rows::{LABEL_W, bar, bars, row};
use crate::tui::widgets::{age, width};
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::duration_text;
use earshot_core::history::sparkline::{Glyphs, Mark};

/// The chart's lines: the title and a row per state and the budget.
pub(crate) const FULL_HEIGHT: u16 = 6;
/// On a short screen: the title (with errors and budget) and three rows.
pub(crate) const SHORT_HEIGHT: u16 = 4;
/// Width kept for a row's figures after its bars.
const VALUE_W: usize = 38;

/// The chart's height in a body `height` rows high: the whole chart when
/// the table keeps at least ten rows, else the short one, else none.
pub(crate) fn height_in(height: u16) -> u16 {
    if height >= FULL_HEIGHT + 12 {
        FULL_HEIGHT
    } else if height >= SHORT_HEIGHT + 6 {
        SHORT_HEIGHT
    } else {
        0
    }
}

/// Draws the chart in `area` (its height says which).
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let short = area.height < FULL_HEIGHT;
    let series = &pane.queue;
    let cells = usize::from(area.width)
        .saturating_sub(LABEL_W + VALUE_W)
        .clamp(8, super::queue::COLUMNS_MAX);
    let (merged, per_cell) = merge(&series.counts, cells);
    let now = merged.last().copied().unwrap_or_default();
    let muted = theme.style(Role::Muted);
    let fg = theme.style(Role::Fg);

    let mut title = vec![Span::styled(" queue", theme.style(Role::Accent))];
    if merged.is_empty() {
        title.push(Span::styled(
            "  no job seen queued or processing yet",
            muted,
        ));
    } else {
        let bucket = series.bucket * u32::try_from(per_cell).unwrap_or(u32::MAX);
        title.push(Span::styled(
            format!(
                "  last {}, one per {}",
                duration_text::of(bucket * u32::try_from(merged.len()).unwrap_or(u32::MAX)),
                duration_text::of(bucket)
            ),
            muted,
        ));
    }
    if let Some(at) = pane.reported_at {
        title.push(Span::styled(
            format!(" · as of {}", age::ago(at, pane.now)),
            muted,
        ));
    }
    if short {
        title.push(Span::styled(format!(" · error {}", now.error), fg));
        title.push(Span::styled(format!(" · budget {}", budget_now(pane)), fg));
    }
    // What the counts rest on, where the title has room: a job counts as
    // processing between the first and the last poll that saw it so, as
    // queued (also behind a job seen queued) until seen started.
    let note = " · processing between polls seeing it, queued till seen started";
    let used: usize = title.iter().map(|span| width(&span.content)).sum();
    if !merged.is_empty() && used + width(note) <= usize::from(area.width) {
        title.push(Span::styled(note, muted));
    }
    let mut lines = vec![Line::from(title)];
    if !merged.is_empty() {
        let queued: Vec<u32> = merged.iter().map(|c| c.queued).collect();
        let processing: Vec<u32> = merged.iter().map(|c| c.processing).collect();
        let completed: Vec<u32> = merged.iter().map(|c| c.completed).collect();
        let peak = |values: &[u32]| values.iter().copied().max().unwrap_or(0);
        lines.push(row(
            "queued",
            bars(&queued, peak(&queued), Role::Warn, theme),
            format!("{} now · peak {}", now.queued, peak(&queued)),
            theme,
        ));
        let limit = series.seen_limit;
        // Now: as the last polls saw them (the table's STATUS); the newest
        // bucket's proven count trails by a poll gap, so it would say 0
        // while jobs run.
        let polled = pane
            .rows()
            .iter()
            .filter(|row| row.status() == Some(&TranscriptStatus::Processing))
            .count();
        lines.push(row(
            "processing",
            bars(
                &processing,
                limit.unwrap_or(0).max(peak(&processing)),
                Role::Accent,
                theme,
            ),
            match limit {
                Some(most) => format!("{polled} as last polled · most at once {most} (█)"),
                None => format!("{polled} as last polled · limit unknown"),
            },
            theme,
        ));
        lines.push(row(
            "completed",
            bars(&completed, peak(&completed), Role::Ok, theme),
            format!(
                "{} of {} watched · {} unknown",
                now.completed,
                pane.rows().len(),
                now.unknown
            ),
            theme,
        ));
        if !short {
            let errors: Vec<Span<'static>> = merged
                .iter()
                .map(|counts| {
                    let mark = if counts.failed == 0 {
                        Mark::Empty
                    } else {
                        Mark::Missed
                    };
                    Span::styled(
                        Glyphs::Unicode.of(mark).to_string(),
                        theme.style(if counts.failed == 0 {
                            Role::Muted
                        } else {
                            Role::Error
                        }),
                    )
                })
                .collect();
            lines.push(row(
                "error",
                errors,
                format!("{} in all · ✗ a job failed then", now.error),
                theme,
            ));
        }
    }
    if !short {
        lines.push(budget_row(pane, cells, theme));
    }
    frame.render_widget(Paragraph::new(lines).style(theme.base()), area);
}

/// `counts` merged into at most `cells` cells (the most of each run of
/// buckets, the newest run ending now), and how many buckets a cell holds.
fn merge(counts: &[QueueCounts], cells: usize) -> (Vec<QueueCounts>, usize) {
    let per_cell = counts.len().div_ceil(cells.max(1)).max(1);
    // Runs end at the newest bucket: the oldest run may be shorter.
    let skip = (per_cell - counts.len() % per_cell) % per_cell;
    let mut merged = Vec::with_capacity(cells);
    let mut run = QueueCounts::default();
    for (at, counts) in counts.iter().enumerate() {
        run.queued = run.queued.max(counts.queued);
        run.processing = run.processing.max(counts.processing);
        run.completed = run.completed.max(counts.completed);
        run.error = run.error.max(counts.error);
        run.unknown = run.unknown.max(counts.unknown);
        run.failed += counts.failed;
        if (at + skip + 1).is_multiple_of(per_cell) {
            merged.push(std::mem::take(&mut run));
        }
    }
    (merged, per_cell)
}

/// The share's requests in its window as last reported, of the share
/// (`unknown` before the first report).
fn budget_now(pane: &JobsPane) -> String {
    match pane.budget {
        Some((used, budget)) => format!("{used}/{budget}"),
        None => "unknown".into(),
    }
}

/// The request budget per minute: each minute's peak of the share's
/// window against the share, `?` for a minute with no report.
fn budget_row(pane: &JobsPane, cells: usize, theme: &Theme) -> Line<'static> {
    let minutes = &pane.budget_minutes;
    let peaks = minutes.peaks(pane.now_tick(), cells);
    let limit = u64::from(minutes.limit);
    let spans: Vec<Span<'static>> = peaks
        .iter()
        .map(|peak| match peak {
            None => Span::styled(
                Glyphs::Unicode.of(Mark::Unknown).to_string(),
                theme.style(Role::Muted),
            ),
            Some(used) => {
                let ratio = f64::from(*used) / (limit.max(1) as f64);
                let role = if ratio >= 0.9 {
                    Role::Error
                } else if ratio >= 0.7 {
                    Role::Warn
                } else {
                    Role::Ok
                };
                Span::styled(
                    Glyphs::Unicode.of(bar(u64::from(*used), limit)).to_string(),
                    theme.style(role),
                )
            }
        })
        .collect();
    let value = if peaks.is_empty() {
        "unknown: no request yet".to_owned()
    } else {
        format!("{} in 5 min · █ share · ? none", budget_now(pane))
    };
    row("budget/min", spans, value, theme)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn processing(values: &[u32]) -> Vec<QueueCounts> {
        values
            .iter()
            .map(|&processing| QueueCounts {
                processing,
                ..QueueCounts::default()
            })
            .collect()
    }

    #[test]
    fn merged_runs_end_at_the_newest_bucket_and_keep_their_most() {
        let (merged, per_cell) = merge(&processing(&[1, 5, 2, 3, 4]), 2);
        assert_eq!(per_cell, 3);
        let most: Vec<u32> = merged.iter().map(|c| c.processing).collect();
        assert_eq!(most, vec![5, 4], "[1, 5] then [2, 3, 4]");
        let (merged, per_cell) = merge(&processing(&[1, 2]), 10);
        assert_eq!((merged.len(), per_cell), (2, 1));
    }
}
