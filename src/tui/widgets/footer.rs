//! The footer: the quick commands of what has the keyboard (from the same
//! list keys are matched against), and the toast at the right.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{fit, width};
use crate::tui::keymap::CommandInfo;
use crate::tui::theme::{Role, Theme};

/// Draws `commands`' quick entries, dropping the middle ones when the line
/// is too narrow (the last two, help and quit, stay), and `toast`.
pub(crate) fn draw<C>(
    frame: &mut Frame<'_>,
    area: Rect,
    commands: &[CommandInfo<C>],
    toast: Option<&str>,
    theme: &Theme,
) {
    let toast_text = toast.map(|text| format!(" {text} "));
    let toast_width = toast_text.as_deref().map_or(0, width);
    let available = usize::from(area.width).saturating_sub(toast_width);
    let mut items: Vec<&CommandInfo<C>> = commands
        .iter()
        .filter(|command| command.quick && command.in_help)
        .collect();
    let item_width = |item: &CommandInfo<C>| width(item.keys) + width(item.footer_label()) + 3;
    while items.len() > 2
        && items.iter().map(|item| item_width(item)).sum::<usize>() + 1 > available
    {
        items.remove(items.len() - 3);
    }
    let mut spans = vec![Span::raw(" ")];
    for item in items {
        spans.push(Span::styled(item.keys, theme.style(Role::Accent)));
        spans.push(Span::styled(
            format!(" {}  ", item.footer_label()),
            theme.style(Role::Muted),
        ));
    }
    let used: usize = spans.iter().map(|span| span.width()).sum();
    if let Some(text) = toast_text {
        let room = usize::from(area.width).saturating_sub(used);
        let shown = fit(&text, room);
        let pad = room.saturating_sub(width(&shown));
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(shown, theme.style(Role::Ok)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}
