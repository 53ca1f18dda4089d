//! Drawing a table through its view: the rows on screen with the sorted
//! header marked, the title's `filter: … · 3 of 40`, the `/` prompt line
//! and the "nothing matches" note.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row};
use tui_input::Input;

use super::super::fit;
use super::super::input as field;
use super::super::table::{self, Columns};
use super::{Rows, TableView};
use crate::tui::theme::{Role, Theme};

impl<R> TableView<R> {
    /// Draws the rows shown that are on screen in `area`: the schema's
    /// headers (the sorted one marked), `fixed` widths, then one column
    /// that takes the rest. `build(row, selected, rest_width)` builds
    /// each row on screen.
    pub(crate) fn draw<S: Rows<R> + ?Sized>(
        &self,
        frame: &mut Frame<'_>,
        area: Rect,
        rows: &S,
        fixed: &[u16],
        theme: &Theme,
        mut build: impl FnMut(&R, bool, usize) -> Row<'static>,
    ) {
        let header = self.schema.headers();
        let columns = Columns {
            header: &header,
            fixed,
            sorted: self.sort,
        };
        let draw_row = |position: usize, selected: bool, rest: usize| {
            Some(build(self.row_at(rows, position)?, selected, rest))
        };
        self.state
            .draw_window(frame, area, self.len(), columns, theme, draw_row);
    }

    /// ` · filter: status:failed · 3 of 40` while a filter is in force.
    pub(crate) fn title_spans(&self, theme: &Theme) -> Vec<Span<'static>> {
        filter_title(self.filter_text(), self.len(), Some(self.total), theme)
    }

    /// The note in place of a table whose rows the filter all hides.
    pub(crate) fn draw_no_match(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        draw_no_match(frame, area, self.filter_text(), theme);
    }

    /// `area` less its last line while the prompt is open, and that line.
    pub(crate) fn split_prompt(&self, area: Rect) -> (Rect, Rect) {
        prompt_line(area, self.prompting())
    }

    /// The prompt on its line, if it is open.
    pub(crate) fn draw_prompt(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        if let Some(prompt) = &self.prompt {
            draw_prompt(frame, area, &prompt.input, prompt.error.as_deref(), theme);
        }
    }
}

/// ` · filter: TEXT · 3 of 40` (` · 3` with no `total`) while `text` is
/// not empty; nothing otherwise.
pub(crate) fn filter_title(
    text: &str,
    shown: usize,
    total: Option<usize>,
    theme: &Theme,
) -> Vec<Span<'static>> {
    if text.is_empty() {
        return Vec::new();
    }
    let counts = match total {
        Some(total) => format!(" · {shown} of {total}"),
        None => format!(" · {shown}"),
    };
    vec![
        Span::styled(" · filter: ", theme.style(Role::Muted)),
        Span::styled(text.to_owned(), theme.style(Role::Warn)),
        Span::styled(counts, theme.style(Role::Muted)),
    ]
}

/// In place of a table whose rows the filter `text` all hides.
pub(crate) fn draw_no_match(frame: &mut Frame<'_>, area: Rect, text: &str, theme: &Theme) {
    let note = format!("no row matches the filter `{text}` (esc clears it)");
    table::draw_note(frame, area, &note, theme);
}

/// `area` less its last line while `open`, and that line.
pub(crate) fn prompt_line(area: Rect, open: bool) -> (Rect, Rect) {
    let [rest, line] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(u16::from(open))]).areas(area);
    (rest, line)
}

/// The `/` prompt on one line, and why what is typed does not parse.
pub(crate) fn draw_prompt(
    frame: &mut Frame<'_>,
    area: Rect,
    input: &Input,
    error: Option<&str>,
    theme: &Theme,
) {
    let label = " / ";
    match error {
        Some(why) => {
            let [prompt, said] =
                Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                    .areas(area);
            field::draw_prompt(frame, prompt, label, input, theme);
            frame.render_widget(
                Paragraph::new(Line::from(Span::styled(
                    fit(why, usize::from(said.width)),
                    theme.style(Role::Error),
                ))),
                said,
            );
        }
        None => field::draw_prompt(frame, area, label, input, theme),
    }
}
