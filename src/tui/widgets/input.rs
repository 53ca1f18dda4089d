//! Text fields: feeding keys and pastes to a `tui_input::Input`, and
//! drawing one on a line (plain or masked, with the cursor placed).

use ratatui::Frame;
use ratatui::crossterm::event::{Event, KeyEvent};
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use tui_input::backend::crossterm::EventHandler;
use tui_input::{Input, InputRequest};

use crate::tui::theme::{Role, Theme};

/// Types a key into the field; whether the value or cursor changed.
pub fn type_key(input: &mut Input, key: &KeyEvent) -> bool {
    input.handle_event(&Event::Key(*key)).is_some()
}

/// Inserts pasted text at the cursor; line breaks and tabs are dropped
/// (every field is one line, and a secret copied with a newline must still
/// validate).
pub fn paste(input: &mut Input, text: &str) -> bool {
    let mut changed = false;
    for c in text.chars().filter(|c| !matches!(c, '\n' | '\r' | '\t')) {
        changed |= input.handle(InputRequest::InsertChar(c)).is_some();
    }
    changed
}

/// How a field shows its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Echo {
    Plain,
    /// One `•` per character: for secrets.
    Masked,
}

/// Draws `input` in `area` (one line), scrolled so the cursor shows; sets
/// the terminal cursor there when `focused`.
pub fn draw(
    frame: &mut Frame<'_>,
    area: Rect,
    input: &Input,
    echo: Echo,
    style: Style,
    focused: bool,
) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let width = usize::from(area.width.saturating_sub(1)).max(1);
    let scroll = input.visual_scroll(width);
    let text: String = match echo {
        Echo::Plain => input.value().chars().skip(scroll).collect(),
        Echo::Masked => "•".repeat(input.value().chars().count().saturating_sub(scroll)),
    };
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(text, style))),
        Rect { height: 1, ..area },
    );
    if focused {
        let offset = input.visual_cursor().saturating_sub(scroll);
        let x = area
            .x
            .saturating_add(u16::try_from(offset).unwrap_or(u16::MAX))
            .min(area.right().saturating_sub(1));
        frame.set_cursor_position(Position::new(x, area.y));
    }
}

/// An accented `label` and, after it, `input` focused and plain in the
/// selection style (the panes' one-line prompts).
pub fn draw_prompt(frame: &mut Frame<'_>, area: Rect, label: &str, input: &Input, theme: &Theme) {
    let [label_area, input_area] = Layout::horizontal([
        Constraint::Length(u16::try_from(label.len()).unwrap_or(u16::MAX)),
        Constraint::Min(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(Span::styled(label, theme.style(Role::Accent))),
        label_area,
    );
    draw(
        frame,
        input_area,
        input,
        Echo::Plain,
        theme.style(Role::Fg).patch(theme.selection()),
        true,
    );
}

/// Row `index` of a form drawn one field per line in `area`: the cells
/// of its label and of its field, or `None` below the bottom.
pub fn form_row(area: Rect, index: usize, label_width: u16) -> Option<[Rect; 2]> {
    let y = area.y.saturating_add(u16::try_from(index).ok()?);
    if y >= area.bottom() {
        return None;
    }
    let line = Rect {
        y,
        height: 1,
        ..area
    };
    Some(Layout::horizontal([Constraint::Length(label_width), Constraint::Min(1)]).areas(line))
}

/// A form field's label: marked `›` and accented while `active`, muted
/// otherwise.
pub fn draw_label(frame: &mut Frame<'_>, area: Rect, label: &str, active: bool, theme: &Theme) {
    let (marker, role) = if active {
        ("›", Role::Accent)
    } else {
        (" ", Role::Muted)
    };
    frame.render_widget(
        Paragraph::new(Span::styled(format!("{marker} {label}"), theme.style(role))),
        area,
    );
}

/// The field after `current` in `order` (before it unless `forward`),
/// wrapping round; counted from the first when `current` is not there.
pub fn cycle<T: Copy + PartialEq>(order: &[T], current: T, forward: bool) -> T {
    let position = order.iter().position(|item| *item == current).unwrap_or(0);
    let step = if forward { 1 } else { order.len() - 1 };
    order[(position + step) % order.len()]
}
