//! The panes' tables: only the rows on screen are built, under a muted
//! header, with the window moved as little as keeps the selection on
//! screen; and what a table with no rows shows instead.

use std::cell::Cell;
use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::{Constraint, Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, Wrap};

use crate::tui::keymap::Move;
use crate::tui::theme::{Role, Theme};

/// Keeps `selected` on screen, moving the window as little as possible.
pub(crate) fn scroll_offset(previous: usize, selected: usize, height: usize, len: usize) -> usize {
    let height = height.max(1);
    let mut offset = previous.min(len.saturating_sub(height));
    if selected < offset {
        offset = selected;
    } else if selected >= offset + height {
        offset = selected + 1 - height;
    }
    offset
}

/// The positions of the rows a table of `len` rows shows in `area` (one
/// line of it is the header). Remembers the page height (the page up /
/// down step) in `page` and the window's start in `offset`.
pub(crate) fn visible_window(
    area: Rect,
    page: &Cell<usize>,
    offset: &Cell<usize>,
    selected: Option<usize>,
    len: usize,
) -> Range<usize> {
    let height = usize::from(area.height.saturating_sub(1));
    page.set(height);
    let start = scroll_offset(offset.get(), selected.unwrap_or(0), height, len);
    offset.set(start);
    start..(start + height).min(len)
}

/// Blank cells between two columns.
pub(crate) const COLUMN_GAP: u16 = 1;

/// What is left of `width` for the flexible columns once the `fixed` ones
/// and the gaps between all `columns` are taken.
pub(crate) fn rest_width(width: u16, fixed: &[u16], columns: usize) -> u16 {
    let gaps = u16::try_from(columns.saturating_sub(1)).unwrap_or(u16::MAX);
    width
        .saturating_sub(fixed.iter().sum())
        .saturating_sub(gaps.saturating_mul(COLUMN_GAP))
}

/// `fixed` columns, then one that takes what is left of `width`: the
/// widths, and the last column's.
pub(crate) fn fixed_then_rest(width: u16, fixed: &[u16]) -> (Vec<Constraint>, u16) {
    let rest = rest_width(width, fixed, fixed.len() + 1);
    let widths = fixed
        .iter()
        .chain([&rest])
        .map(|width| Constraint::Length(*width))
        .collect();
    (widths, rest)
}

/// A table's header and the widths of all its columns but the last, which
/// takes what they leave ([`TableState::draw_window`]), and the column
/// the rows are sorted by.
pub(crate) struct Columns<'c> {
    pub(crate) header: &'c [&'static str],
    pub(crate) fixed: &'c [u16],
    pub(crate) sorted: Option<SortMark>,
}

/// The column a table is sorted by, and which way: its header ends in
/// `▲` (ascending) or `▼` (descending).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SortMark {
    pub(crate) column: usize,
    pub(crate) descending: bool,
}

/// `header` with the sort arrow, in `width` columns when given (the
/// header is cut to make room rather than the arrow).
pub(crate) fn marked_header(header: &str, descending: bool, width: Option<u16>) -> String {
    let arrow = if descending { '▼' } else { '▲' };
    let width = width.map_or(usize::MAX, usize::from);
    if super::width(header) + 2 <= width {
        return format!("{header} {arrow}");
    }
    let mut cut = String::new();
    let mut used = 0;
    for c in header.chars() {
        let w = super::width(c.encode_utf8(&mut [0u8; 4]));
        if used + w + 1 > width {
            break;
        }
        used += w;
        cut.push(c);
    }
    cut.push(arrow);
    cut
}

/// Draws `rows` under a muted `header` (the `sorted` column marked),
/// [`COLUMN_GAP`] apart.
pub(crate) fn draw<'a>(
    frame: &mut Frame<'_>,
    area: Rect,
    header: &[&'static str],
    sorted: Option<SortMark>,
    rows: impl IntoIterator<Item = Row<'a>>,
    widths: impl IntoIterator<Item = Constraint>,
    theme: &Theme,
) {
    let widths: Vec<Constraint> = widths.into_iter().collect();
    let cells = header.iter().enumerate().map(|(at, title)| match sorted {
        Some(mark) if mark.column == at => {
            let width = match widths.get(at) {
                Some(Constraint::Length(width)) => Some(*width),
                _ => None,
            };
            marked_header(title, mark.descending, width)
        }
        _ => (*title).to_owned(),
    });
    let header = Row::new(cells).style(theme.style(Role::Muted));
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(COLUMN_GAP)
        .style(theme.base());
    frame.render_widget(table, area);
}

/// In place of a table with no rows: a muted note, inset, under a blank
/// line.
pub(crate) fn draw_note(frame: &mut Frame<'_>, area: Rect, note: &str, theme: &Theme) {
    frame.render_widget(
        Paragraph::new(vec![Line::default(), Line::from(note.to_owned())])
            .style(theme.style(Role::Muted))
            .wrap(Wrap { trim: false }),
        area.inner(Margin::new(2, 0)),
    );
}

/// In place of a table that could not load: `what` failed (and how to try
/// again) in the error colour, then why.
pub(crate) fn draw_load_error(
    frame: &mut Frame<'_>,
    area: Rect,
    what: &str,
    why: &str,
    theme: &Theme,
) {
    let lines = vec![
        Line::default(),
        Line::from(Span::styled(what.to_owned(), theme.style(Role::Error))),
        Line::from(Span::styled(why.to_owned(), theme.style(Role::Fg))),
    ];
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }),
        area.inner(Margin::new(2, 0)),
    );
}

/// A table's selection and scroll state: the selected row, the window's
/// start last frame and the page height last frame (kept by the view).
#[derive(Debug)]
pub(crate) struct TableState {
    selected: usize,
    /// First row on screen; kept by the view so the selection stays visible.
    pub(crate) offset: Cell<usize>,
    /// Rows the table showed last frame (the page up / down step).
    pub(crate) page: Cell<usize>,
}

impl Default for TableState {
    fn default() -> Self {
        TableState {
            selected: 0,
            offset: Cell::new(0),
            page: Cell::new(10),
        }
    }
}

impl TableState {
    /// The selected position in a table of `len` rows (none when empty).
    pub(crate) fn selected(&self, len: usize) -> Option<usize> {
        (len > 0).then_some(self.selected)
    }

    /// The selected position, even in an empty table.
    pub(crate) fn position(&self) -> usize {
        self.selected
    }

    pub(crate) fn select(&mut self, position: usize) {
        self.selected = position;
    }

    /// Keeps the selection inside a table of `len` rows.
    pub(crate) fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    /// Selects `position` if there is one, else keeps the selection inside
    /// a table of `len` rows.
    pub(crate) fn select_or_clamp(&mut self, position: Option<usize>, len: usize) {
        match position {
            Some(position) => self.selected = position,
            None => self.clamp(len),
        }
    }

    pub(crate) fn apply(&mut self, to: Move, len: usize) {
        self.selected = to.apply(self.selected, len, self.page.get());
    }

    /// Back to the first row, scrolled to the top.
    pub(crate) fn reset(&mut self) {
        self.selected = 0;
        self.offset.set(0);
    }

    /// The rows a table of `len` rows shows in `area`; see
    /// [`visible_window`].
    pub(crate) fn window(&self, area: Rect, len: usize) -> Range<usize> {
        visible_window(area, &self.page, &self.offset, self.selected(len), len)
    }

    /// Draws the rows of a table of `len` rows that are on screen in
    /// `area` under `columns.header`: `columns.fixed` widths, then one
    /// column that takes the rest. `row(position, selected, rest_width)`
    /// builds each row on screen; `None` leaves it out.
    pub(crate) fn draw_window<'a>(
        &self,
        frame: &mut Frame<'_>,
        area: Rect,
        len: usize,
        columns: Columns<'_>,
        theme: &Theme,
        mut row: impl FnMut(usize, bool, usize) -> Option<Row<'a>>,
    ) {
        debug_assert_eq!(columns.header.len(), columns.fixed.len() + 1);
        let selected = self.selected(len);
        let window = self.window(area, len);
        let (widths, rest) = fixed_then_rest(area.width, columns.fixed);
        let rows = window
            .filter_map(|position| row(position, selected == Some(position), usize::from(rest)));
        draw(
            frame,
            area,
            columns.header,
            columns.sorted,
            rows,
            widths,
            theme,
        );
    }

    /// The rows the view will show on the next frame, from the page height
    /// it showed last (without moving the remembered offset).
    pub(crate) fn next_window(&self, len: usize) -> Range<usize> {
        let height = self.page.get().max(1);
        let start = scroll_offset(
            self.offset.get(),
            self.selected(len).unwrap_or(0),
            height,
            len,
        );
        start..(start + height).min(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_column_gets_what_the_fixed_ones_and_the_gaps_leave() {
        let (widths, rest) = fixed_then_rest(40, &[8, 10]);
        // 40 - 18 - two gaps.
        assert_eq!(rest, 20);
        assert_eq!(
            widths,
            [
                Constraint::Length(8),
                Constraint::Length(10),
                Constraint::Length(20)
            ]
        );
        assert_eq!(fixed_then_rest(10, &[8, 10]).1, 0, "never negative");
        // Two flexible columns among six share what is left.
        assert_eq!(rest_width(100, &[8, 8, 8, 8], 6), 100 - 32 - 5);
    }

    #[test]
    fn draw_window_builds_only_the_rows_on_screen_and_marks_the_selected_one() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;

        let items = ["a", "b", "c", "d", "e"];
        let mut state = TableState::default();
        state.select(3);
        let theme = Theme::fallback();
        let mut built = Vec::new();
        let mut terminal = Terminal::new(TestBackend::new(12, 3)).unwrap();
        terminal
            .draw(|frame| {
                let columns = Columns {
                    header: &["ID", "REST"],
                    fixed: &[4],
                    sorted: None,
                };
                state.draw_window(
                    frame,
                    frame.area(),
                    items.len(),
                    columns,
                    &theme,
                    |at, selected, rest| {
                        built.push((at, selected, rest));
                        Some(Row::new([items[at].to_owned(), format!("w{rest}")]))
                    },
                );
            })
            .unwrap();
        // A header and two rows: the window scrolls to keep row 3 on screen;
        // the last column gets 12 - 4 - one gap.
        assert_eq!(built, [(2, false, 7), (3, true, 7)]);
        let screen = terminal.backend().to_string();
        assert!(screen.contains("ID   REST"), "{screen}");
        assert!(screen.contains("d    w7"), "{screen}");
        assert_eq!(state.page.get(), 2);
    }

    #[test]
    fn the_sorted_header_ends_in_its_arrow_cut_to_its_width() {
        assert_eq!(marked_header("AGE", true, Some(6)), "AGE ▼");
        assert_eq!(marked_header("AGE", false, None), "AGE ▲");
        // No room for the space: the arrow follows the name.
        assert_eq!(marked_header("HTTP", true, Some(5)), "HTTP▼");
        // No room for the name: it is cut, the arrow stays.
        assert_eq!(marked_header("MISSED", true, Some(6)), "MISSE▼");
        assert_eq!(marked_header("#", false, Some(2)), "#▲");
    }
}
