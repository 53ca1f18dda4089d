//! The `?` overlay: every command of the current pane and the global ones,
//! grouped, from the same lists keys are matched against. A long
//! description wraps within its own column, under its first line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::popup;
use crate::tui::keymap::CommandSection;
use crate::tui::theme::{Role, Theme};

/// Width of the keys column, indent included.
const KEYS_WIDTH: usize = 16;
/// A description gets at least this many columns, however narrow the box.
const MIN_DESCRIPTION: usize = 12;

/// The help text as lines at most `room` columns wide where it can be
/// (also what tests read): a description that does not fit wraps onto
/// lines indented to the description column.
pub(crate) fn lines<C>(
    sections: &[CommandSection<C>],
    theme: &Theme,
    room: usize,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for section in sections {
        if !lines.is_empty() {
            lines.push(Line::default());
        }
        lines.push(Line::from(Span::styled(
            section.title,
            theme.style(Role::Accent),
        )));
        for command in &section.commands {
            let keys = format!("  {:<width$}", command.keys, width = KEYS_WIDTH - 2);
            let indent = super::width(&keys);
            let fit = room.saturating_sub(indent).max(MIN_DESCRIPTION);
            let mut first = Some(Span::styled(keys, theme.style(Role::Accent)));
            for part in super::wrap_words(command.description, fit) {
                let lead = first
                    .take()
                    .unwrap_or_else(|| Span::raw(" ".repeat(indent)));
                lines.push(Line::from(vec![
                    lead,
                    Span::styled(part, theme.style(Role::Fg)),
                ]));
            }
        }
    }
    lines
}

/// Screens at least this wide get help in two columns.
const TWO_COLUMNS_FROM: u16 = 110;

/// Draws the overlay; `scroll` is clamped so the last line stays in view.
pub(crate) fn draw<C>(
    frame: &mut Frame<'_>,
    area: Rect,
    sections: &[CommandSection<C>],
    scroll: u16,
    read_only: bool,
    theme: &Theme,
) {
    let title = if read_only {
        "Keys (read-only: changes are hidden) · esc closes"
    } else {
        "Keys · esc closes · ↑↓ scroll"
    };
    let two = area.width >= TWO_COLUMNS_FROM;
    let width = if two { 104 } else { 64 };
    let column_count: u16 = if two { 2 } else { 1 };
    let column_width = width.min(area.width).saturating_sub(2) / column_count;
    let room = usize::from(column_width);
    let columns: Vec<Vec<Line<'static>>> = if two {
        let split = balanced_split(sections);
        vec![
            lines(&sections[..split], theme, room),
            lines(&sections[split..], theme, room),
        ]
    } else {
        vec![lines(sections, theme, room)]
    };
    // Descriptions are wrapped already; a line still too wide (a very
    // narrow screen) wraps again: count the rows, so the box is tall
    // enough and scrolling reaches the last line.
    let tallest = columns
        .iter()
        .map(|column| rows(column, column_width))
        .max()
        .unwrap_or(0);
    let height = u16::try_from(tallest + 2).unwrap_or(u16::MAX);
    let inner = popup::open(frame, area, width, height, title, theme);
    let total = u16::try_from(tallest).unwrap_or(u16::MAX);
    let scroll = scroll.min(total.saturating_sub(inner.height));
    let parts = Layout::horizontal(vec![Constraint::Fill(1); columns.len()]).split(inner);
    for (column, part) in columns.into_iter().zip(parts.iter()) {
        frame.render_widget(
            Paragraph::new(column)
                .wrap(Wrap { trim: false })
                .scroll((scroll, 0)),
            *part,
        );
    }
}

/// Rows `lines` take when word-wrapped to `width` (an overestimate by at
/// most a row per wrapped line: wrapping at spaces leaves lines short).
fn rows(lines: &[Line<'_>], width: u16) -> usize {
    let width = usize::from(width.max(1));
    lines
        .iter()
        .map(|line| match line.width() {
            fits if fits <= width => 1,
            long => long.div_ceil(width) + 1,
        })
        .sum()
}

/// Where to cut the sections so both columns are about as tall.
fn balanced_split<C>(sections: &[CommandSection<C>]) -> usize {
    let heights: Vec<usize> = sections
        .iter()
        .map(|section| section.commands.len() + 2)
        .collect();
    let total: usize = heights.iter().sum();
    let mut best = (usize::MAX, sections.len());
    let mut left = 0;
    for (index, height) in heights.iter().enumerate() {
        left += height;
        let taller = left.max(total - left);
        if taller < best.0 {
            best = (taller, index + 1);
        }
    }
    best.1
}
