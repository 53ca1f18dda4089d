//! A dialog box: a bordered, titled rectangle centred over what is below,
//! clamped to the screen so it never draws outside it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear};

use crate::tui::theme::{Role, Theme};

/// Clears a centred `width`×`height` box in `area` (clamped), draws its
/// border and title, and answers the inner area.
pub(crate) fn open(
    frame: &mut Frame<'_>,
    area: Rect,
    width: u16,
    height: u16,
    title: &str,
    theme: &Theme,
) -> Rect {
    // A box nearly as wide as the screen takes all of it: no slivers of
    // the table beside it.
    let width = if area.width.saturating_sub(width) < 4 {
        area.width
    } else {
        width
    };
    let height = height.min(area.height);
    let rect = area.centered(Constraint::Length(width), Constraint::Length(height));
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.style(Role::Border))
        .style(theme.base())
        .title(Line::from(Span::styled(
            format!(" {title} "),
            theme.style(Role::Accent),
        )));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    inner
}
