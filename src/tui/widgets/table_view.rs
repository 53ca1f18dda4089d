//! What every console table does with its rows: the `/` filter in the one
//! query language ([`earshot_core::query`]) over the fields the table declares,
//! the `S` sort by any column, and the order they give.
//!
//! A pane declares a [`Schema`] for its rows (each column's header, the
//! text free words match and the key it sorts by; each field's name and
//! how to read it from a row; what identifies a row) and owns a
//! [`TableView`]: the filter, the sort, the selection, and the order they
//! give as row indices, kept until the rows, the filter or the sort change
//! (so no frame filters or sorts; with neither set there is no order to
//! keep and a table costs what it did). Whenever the order changes the
//! selection stays on its record if it is still shown. Also here: the keys
//! of `/`, `S` and the filter prompt ([`TableCommand`]), the title's
//! `filter: … · 3 of 40`, the prompt line and the "nothing matches" note.
//! What the rows are and when they change is the pane's.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fmt;

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row};
use tui_input::Input;

use super::fit;
use super::input as field;
use super::table::{self, Columns, SortMark, TableState};
use crate::tui::keymap::{CommandInfo, ENTER, ESC, Key, Move, keys};
use crate::tui::theme::{Role, Theme};
use earshot_core::query::{self, FieldName, Since, Term};

/// Reads a text from a row.
pub type Text<R> = fn(&R) -> Cow<'_, str>;

/// A column as the view filters and sorts it.
pub struct Column<R: 'static> {
    pub header: &'static str,
    /// Its text, which free words match (`None`: a column that moves with
    /// the clock, such as an age).
    pub text: Option<Text<R>>,
    /// What it sorts by.
    pub sort: fn(&R) -> SortKey<'_>,
}

/// What a column sorts by: numbers by value, text in any case; rows
/// without a value come last whichever the direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortKey<'a> {
    Number(i64),
    Text(Cow<'a, str>),
    Missing,
}

impl<'a> SortKey<'a> {
    pub fn text(text: &'a str) -> SortKey<'a> {
        SortKey::Text(Cow::Borrowed(text))
    }

    /// A time or a count when there is one.
    pub fn number(value: Option<i64>) -> SortKey<'a> {
        value.map_or(SortKey::Missing, SortKey::Number)
    }
}

/// How a field reads a row and what its value keeps.
pub enum FieldKind<R: 'static> {
    /// Rows whose text contains the value (any case).
    Text(Text<R>),
    /// Rows whose word is the value, one of `values` (any case).
    Choice {
        values: &'static [&'static str],
        read: Text<R>,
    },
    /// Rows whose time (Unix milliseconds) is at or after the `since:`
    /// value (a duration back from now, or an RFC 3339 time).
    Since(fn(&R) -> Option<i64>),
}

/// A field of the filter: `name:value`.
pub struct Field<R: 'static> {
    pub name: FieldName,
    pub kind: FieldKind<R>,
}

/// What a table's rows look like to the view.
pub struct Schema<R: 'static> {
    /// In the order the table shows them.
    pub columns: &'static [Column<R>],
    pub fields: &'static [Field<R>],
    /// What identifies a row: the selection follows it.
    pub key: Text<R>,
    /// `/`'s help line, naming the fields (`filter: status:S sub:ID …`).
    pub filter_help: &'static str,
}

impl<R> Schema<R> {
    fn names(&self) -> Vec<FieldName> {
        self.fields.iter().map(|field| field.name).collect()
    }

    /// The headers, in order.
    pub fn headers(&self) -> Vec<&'static str> {
        self.columns.iter().map(|column| column.header).collect()
    }

    /// `text` as a filter of these rows; an error says what to write.
    fn parse(&self, text: &str) -> Result<Filter, String> {
        let names = self.names();
        let mut checks = Vec::new();
        for term in query::terms(text, &names)? {
            let (name, value, term) = match term {
                Term::Word(word) => {
                    checks.push(Check::Word(word));
                    continue;
                }
                Term::Field { name, value, term } => (name, value, term),
            };
            let Some(at) = self.fields.iter().position(|f| f.name.name == name) else {
                return Err(query::unknown_field(name, &names));
            };
            checks.push(match &self.fields[at].kind {
                FieldKind::Text(_) => Check::Text {
                    field: at,
                    needle: value.to_lowercase(),
                },
                FieldKind::Choice { values, .. } => {
                    let value = value.to_lowercase();
                    if !values.contains(&value.as_str()) {
                        return Err(query::not_one_of(term, name, values));
                    }
                    Check::Choice { field: at, value }
                }
                FieldKind::Since(_) => Check::Since {
                    field: at,
                    since: Since::parse(value).map_err(|why| format!("{name}: {why}"))?,
                },
            });
        }
        Ok(Filter {
            text: text.trim().to_owned(),
            checks,
        })
    }

    /// Whether `row` passes every check of `filter` at `now_ms`.
    fn keeps(&self, filter: &Filter, row: &R, now_ms: i64) -> bool {
        filter.checks.iter().all(|check| match check {
            Check::Word(word) => self
                .columns
                .iter()
                .filter_map(|column| column.text)
                .any(|text| contains_any_case(&text(row), word)),
            Check::Text { field, needle } => match &self.fields[*field].kind {
                FieldKind::Text(read) => contains_any_case(&read(row), needle),
                _ => false,
            },
            Check::Choice { field, value } => match &self.fields[*field].kind {
                FieldKind::Choice { read, .. } => read(row).eq_ignore_ascii_case(value),
                _ => false,
            },
            Check::Since { field, since } => match &self.fields[*field].kind {
                FieldKind::Since(read) => read(row).is_some_and(|at| at >= since.at(now_ms)),
                _ => false,
            },
        })
    }
}

/// Whether `haystack` contains `needle` (lower-case), in any case; no
/// copy of an ASCII haystack is made.
pub fn contains_any_case(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if haystack.is_ascii() && needle.is_ascii() {
        return haystack
            .as_bytes()
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()));
    }
    haystack.to_lowercase().contains(needle)
}

/// A filter in force: the text typed and its checks.
#[derive(Clone, Debug, Default)]
struct Filter {
    text: String,
    checks: Vec<Check>,
}

#[derive(Clone, Debug)]
enum Check {
    /// A free word (lower-case): some column's text contains it.
    Word(String),
    Text {
        field: usize,
        needle: String,
    },
    Choice {
        field: usize,
        value: String,
    },
    Since {
        field: usize,
        since: Since,
    },
}

/// Rows a view can order: a slice, a `Vec` or a `VecDeque`.
pub trait Rows<R> {
    fn count(&self) -> usize;
    fn row(&self, index: usize) -> Option<&R>;
}

impl<R> Rows<R> for [R] {
    fn count(&self) -> usize {
        self.len()
    }

    fn row(&self, index: usize) -> Option<&R> {
        self.get(index)
    }
}

impl<R> Rows<R> for Vec<R> {
    fn count(&self) -> usize {
        self.len()
    }

    fn row(&self, index: usize) -> Option<&R> {
        self.get(index)
    }
}

impl<R> Rows<R> for VecDeque<R> {
    fn count(&self) -> usize {
        self.len()
    }

    fn row(&self, index: usize) -> Option<&R> {
        self.get(index)
    }
}

/// The `/` prompt: what is typed, why it does not parse, the filter in
/// force before it opened (`esc` goes back to it) and the record selected
/// then (each filter typed selects it again when it shows it, so a
/// half-typed word that hides it for a moment does not lose it).
#[derive(Debug)]
pub struct Prompt {
    pub input: Input,
    pub error: Option<String>,
    before: String,
    anchor: Option<String>,
}

/// A table's filter, sort, order and selection.
pub struct TableView<R: 'static> {
    schema: &'static Schema<R>,
    /// The selection (a position in the order) and the scroll.
    pub state: TableState,
    filter: Filter,
    sort: Option<SortMark>,
    /// Row indices in the order shown; `None`: every row, in its own
    /// order (no filter, no sort).
    order: Option<Vec<usize>>,
    /// Rows when the order was last made.
    total: usize,
    /// The `/` prompt, while it is open.
    pub prompt: Option<Prompt>,
    /// Unix milliseconds now, for `since:` (a fixed clock in tests).
    clock: fn() -> i64,
}

impl<R> fmt::Debug for TableView<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableView")
            .field("state", &self.state)
            .field("filter", &self.filter.text)
            .field("sort", &self.sort)
            .field("shown", &self.len())
            .field("total", &self.total)
            .field("prompt", &self.prompt)
            .finish()
    }
}

impl<R> TableView<R> {
    pub fn new(schema: &'static Schema<R>) -> TableView<R> {
        TableView {
            schema,
            state: TableState::default(),
            filter: Filter::default(),
            sort: None,
            order: None,
            total: 0,
            prompt: None,
            clock: earshot_core::store::now_ms,
        }
    }

    /// Replaces the wall clock `since:` counts back from (tests).
    #[cfg(test)]
    pub fn with_clock(mut self, clock: fn() -> i64) -> TableView<R> {
        self.clock = clock;
        self
    }

    pub fn schema(&self) -> &'static Schema<R> {
        self.schema
    }

    // ---- the order and the selection ------------------------------------

    /// Rows shown.
    pub fn len(&self) -> usize {
        self.order.as_ref().map_or(self.total, Vec::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row index shown at `position`.
    pub fn index(&self, position: usize) -> Option<usize> {
        match &self.order {
            Some(order) => order.get(position).copied(),
            None => (position < self.total).then_some(position),
        }
    }

    /// The row shown at `position`.
    pub fn row_at<'r, S: Rows<R> + ?Sized>(&self, rows: &'r S, position: usize) -> Option<&'r R> {
        rows.row(self.index(position)?)
    }

    /// The selected position (none when nothing is shown).
    pub fn selected_position(&self) -> Option<usize> {
        self.state.selected(self.len())
    }

    /// The selected row's index in the rows.
    pub fn selected_index(&self) -> Option<usize> {
        self.index(self.state.position())
    }

    pub fn selected<'r, S: Rows<R> + ?Sized>(&self, rows: &'r S) -> Option<&'r R> {
        rows.row(self.selected_index()?)
    }

    /// What identifies the selected row.
    pub fn selected_key<S: Rows<R> + ?Sized>(&self, rows: &S) -> Option<String> {
        self.selected(rows)
            .map(|row| (self.schema.key)(row).into_owned())
    }

    /// Where the row `key` identifies is shown.
    pub fn position_of<S: Rows<R> + ?Sized>(&self, rows: &S, key: &str) -> Option<usize> {
        (0..self.len()).find(|position| {
            self.row_at(rows, *position)
                .is_some_and(|row| (self.schema.key)(row) == key)
        })
    }

    pub fn apply(&mut self, to: Move) {
        self.state.apply(to, self.len());
    }

    pub fn select(&mut self, position: usize) {
        self.state.select(position);
    }

    /// Back to the first row, scrolled to the top.
    pub fn reset(&mut self) {
        self.state.reset();
    }

    /// The rows changed (or were mutated in place): the order is made
    /// again; the selection goes to `kept` (a row's key, taken before the
    /// change) if it is shown, else stays inside the table.
    pub fn refresh<S: Rows<R> + ?Sized>(&mut self, rows: &S, kept: Option<String>) {
        self.recompute(rows);
        let position = kept.and_then(|kept| self.find_near(rows, &kept));
        self.state.select_or_clamp(position, self.len());
    }

    /// Where the row `key` identifies is shown, looked for first where
    /// the selection is and a row either side (a row arrived above it,
    /// or one went), then everywhere.
    fn find_near<S: Rows<R> + ?Sized>(&self, rows: &S, key: &str) -> Option<usize> {
        let at = self.state.position();
        let is = |position: usize| {
            self.row_at(rows, position)
                .is_some_and(|row| (self.schema.key)(row) == key)
        };
        [Some(at), at.checked_add(1), at.checked_sub(1)]
            .into_iter()
            .flatten()
            .find(|position| is(*position))
            .or_else(|| self.position_of(rows, key))
    }

    /// Replaces `rows` with `fresh`, the selection staying on its record.
    pub fn replace(&mut self, rows: &mut Vec<R>, fresh: Vec<R>) {
        let kept = self.selected_key(rows);
        *rows = fresh;
        self.refresh(rows, kept);
    }

    fn recompute<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.total = rows.count();
        if self.filter.checks.is_empty() && self.sort.is_none() {
            self.order = None;
            return;
        }
        let schema = self.schema;
        let now = (self.clock)();
        let mut order: Vec<usize> = (0..self.total)
            .filter(|index| {
                rows.row(*index)
                    .is_some_and(|row| schema.keeps(&self.filter, row, now))
            })
            .collect();
        if let Some(mark) = self.sort
            && let Some(column) = schema.columns.get(mark.column)
        {
            let mut keyed: Vec<(SortKey<'_>, usize)> = order
                .iter()
                .filter_map(|index| Some(((column.sort)(rows.row(*index)?), *index)))
                .collect();
            // Stable: rows that compare equal keep their own order.
            keyed.sort_by(|(a, _), (b, _)| compare(a, b, mark.descending));
            order = keyed.into_iter().map(|(_, index)| index).collect();
        }
        self.order = Some(order);
    }

    // ---- the filter -----------------------------------------------------

    /// The filter in force, as typed (empty: none).
    pub fn filter_text(&self) -> &str {
        &self.filter.text
    }

    pub fn filtering(&self) -> bool {
        !self.filter.text.is_empty()
    }

    /// Filters by `text`, the selection staying on its record if it is
    /// still shown; an error (nothing changed) says what to write.
    pub fn set_filter<S: Rows<R> + ?Sized>(&mut self, text: &str, rows: &S) -> Result<(), String> {
        let kept = self.selected_key(rows);
        self.filter_keeping(text, rows, kept)
    }

    /// Filters by `text`, then selects `kept` if it is shown.
    fn filter_keeping<S: Rows<R> + ?Sized>(
        &mut self,
        text: &str,
        rows: &S,
        kept: Option<String>,
    ) -> Result<(), String> {
        self.filter = self.schema.parse(text)?;
        self.refresh(rows, kept);
        Ok(())
    }

    pub fn prompting(&self) -> bool {
        self.prompt.is_some()
    }

    /// `/`: the prompt, holding the filter in force.
    pub fn open_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.prompt = Some(Prompt {
            input: Input::new(self.filter.text.clone()),
            error: None,
            before: self.filter.text.clone(),
            anchor: self.selected_key(rows),
        });
    }

    /// What is typed filters as it is typed when it parses; else the
    /// prompt says why and the last filter that parsed stays.
    fn typed<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        let Some(prompt) = &self.prompt else {
            return;
        };
        let (text, anchor) = (prompt.input.value().to_owned(), prompt.anchor.clone());
        let result = self.filter_keeping(&text, rows, anchor);
        if let Some(prompt) = &mut self.prompt {
            prompt.error = result.err();
        }
    }

    /// `enter`: the filter typed stays, and the prompt closes (unless it
    /// does not parse).
    pub fn submit_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.typed(rows);
        if self.prompt.as_ref().is_some_and(|p| p.error.is_none()) {
            self.prompt = None;
        }
    }

    /// `esc` in the prompt: back to the filter in force before it opened.
    pub fn cancel_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        if let Some(prompt) = self.prompt.take()
            && self
                .filter_keeping(&prompt.before, rows, prompt.anchor)
                .is_err()
        {
            self.clear_filter(rows);
        }
    }

    /// `esc` on the table: no filter.
    pub fn clear_filter<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.prompt = None;
        let kept = self.selected_key(rows);
        self.filter = Filter::default();
        self.refresh(rows, kept);
    }

    /// A key for the prompt (refilters when the text changed).
    pub fn type_key<S: Rows<R> + ?Sized>(&mut self, key: &KeyEvent, rows: &S) {
        if let Some(prompt) = &mut self.prompt
            && field::type_key(&mut prompt.input, key)
        {
            self.typed(rows);
        }
    }

    /// Pasted text for the prompt.
    pub fn paste<S: Rows<R> + ?Sized>(&mut self, pasted: &str, rows: &S) {
        if let Some(prompt) = &mut self.prompt
            && field::paste(&mut prompt.input, pasted)
        {
            self.typed(rows);
        }
    }

    // ---- the sort -------------------------------------------------------

    /// The column sorted by, and which way.
    pub fn sorted(&self) -> Option<SortMark> {
        self.sort
    }

    /// `S`: the column sorted by goes ▲, then ▼, then on to the next
    /// column; after the last column's ▼ the rows are in their own order
    /// again. The selection stays on its record.
    pub fn cycle_sort<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        let last = self.schema.columns.len().checked_sub(1);
        let next = match (self.sort, last) {
            (_, None) => None,
            (None, Some(_)) => Some(SortMark {
                column: 0,
                descending: false,
            }),
            (Some(mark), _) if !mark.descending => Some(SortMark {
                descending: true,
                ..mark
            }),
            (Some(mark), Some(last)) if mark.column < last => Some(SortMark {
                column: mark.column + 1,
                descending: false,
            }),
            (Some(_), Some(_)) => None,
        };
        self.set_sort(next, rows);
    }

    /// Sorts by `sort` (`None`: the rows' own order), the selection
    /// staying on its record.
    pub fn set_sort<S: Rows<R> + ?Sized>(&mut self, sort: Option<SortMark>, rows: &S) {
        let kept = self.selected_key(rows);
        self.sort = sort.filter(|mark| mark.column < self.schema.columns.len());
        self.refresh(rows, kept);
    }

    /// Runs a table command on `rows` (a table the view filters itself).
    pub fn run<S: Rows<R> + ?Sized>(&mut self, command: TableCommand, rows: &S) {
        match command {
            TableCommand::Filter => self.open_prompt(rows),
            TableCommand::ApplyFilter => self.submit_prompt(rows),
            TableCommand::CancelFilter => self.cancel_prompt(rows),
            TableCommand::ClearFilter => self.clear_filter(rows),
            TableCommand::Sort => self.cycle_sort(rows),
        }
    }

    // ---- drawing --------------------------------------------------------

    /// Draws the rows shown that are on screen in `area`: the schema's
    /// headers (the sorted one marked), `fixed` widths, then one column
    /// that takes the rest. `build(row, selected, rest_width)` builds
    /// each row on screen.
    pub fn draw<S: Rows<R> + ?Sized>(
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
    pub fn title_spans(&self, theme: &Theme) -> Vec<Span<'static>> {
        filter_title(self.filter_text(), self.len(), Some(self.total), theme)
    }

    /// The note in place of a table whose rows the filter all hides.
    pub fn draw_no_match(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        draw_no_match(frame, area, self.filter_text(), theme);
    }

    /// `area` less its last line while the prompt is open, and that line.
    pub fn split_prompt(&self, area: Rect) -> (Rect, Rect) {
        prompt_line(area, self.prompting())
    }

    /// The prompt on its line, if it is open.
    pub fn draw_prompt(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        if let Some(prompt) = &self.prompt {
            draw_prompt(frame, area, &prompt.input, prompt.error.as_deref(), theme);
        }
    }
}

/// Orders two sort keys: `Missing` last both ways, numbers before text.
fn compare(a: &SortKey<'_>, b: &SortKey<'_>, descending: bool) -> Ordering {
    let way = |ordering: Ordering| {
        if descending {
            ordering.reverse()
        } else {
            ordering
        }
    };
    match (a, b) {
        (SortKey::Missing, SortKey::Missing) => Ordering::Equal,
        (SortKey::Missing, _) => Ordering::Greater,
        (_, SortKey::Missing) => Ordering::Less,
        (SortKey::Number(a), SortKey::Number(b)) => way(a.cmp(b)),
        (SortKey::Text(a), SortKey::Text(b)) => way(a
            .bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))),
        (SortKey::Number(_), SortKey::Text(_)) => way(Ordering::Less),
        (SortKey::Text(_), SortKey::Number(_)) => way(Ordering::Greater),
    }
}

/// What a key on a table asks of its view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableCommand {
    /// `/`: open the prompt.
    Filter,
    /// `enter` in the prompt.
    ApplyFilter,
    /// `esc` in the prompt: the filter before it opened.
    CancelFilter,
    /// `esc` on the table.
    ClearFilter,
    /// `S`: the next sort.
    Sort,
}

/// A table's `/` (its line in help is `filter_help`), `S`, and `esc`
/// while a filter is in force.
pub fn table_commands(filter_help: &'static str, filtered: bool) -> Vec<CommandInfo<TableCommand>> {
    let mut commands = vec![
        CommandInfo::new(
            "/",
            filter_help,
            keys![Key::char('/')],
            TableCommand::Filter,
        )
        .quick_as("filter"),
        CommandInfo::new(
            "S",
            "sort: by a column ▲, again ▼, again the next column (the header marks it)",
            keys![Key::char('S')],
            TableCommand::Sort,
        ),
    ];
    if filtered {
        commands.push(
            CommandInfo::new("esc", "clear the filter", ESC, TableCommand::ClearFilter)
                .quick_as("clear filter"),
        );
    }
    commands
}

/// `commands` as a pane's own (`into` wraps [`TableCommand`]).
pub fn wrapped<C: Copy>(
    commands: Vec<CommandInfo<TableCommand>>,
    into: fn(TableCommand) -> C,
) -> Vec<CommandInfo<C>> {
    commands.into_iter().map(|info| info.map(into)).collect()
}

/// The prompt's keys (everything else is typed into it).
pub fn prompt_commands() -> Vec<CommandInfo<TableCommand>> {
    vec![
        CommandInfo::new(
            "enter",
            "apply the filter",
            ENTER,
            TableCommand::ApplyFilter,
        )
        .quick_as("apply"),
        CommandInfo::new(
            "esc",
            "cancel: back to the filter before /",
            ESC,
            TableCommand::CancelFilter,
        )
        .quick_as("cancel"),
    ]
}

/// ` · filter: TEXT · 3 of 40` (` · 3` with no `total`) while `text` is
/// not empty; nothing otherwise.
pub fn filter_title(
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
pub fn draw_no_match(frame: &mut Frame<'_>, area: Rect, text: &str, theme: &Theme) {
    let note = format!("no row matches the filter `{text}` (esc clears it)");
    table::draw_note(frame, area, &note, theme);
}

/// `area` less its last line while `open`, and that line.
pub fn prompt_line(area: Rect, open: bool) -> (Rect, Rect) {
    let [rest, line] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(u16::from(open))]).areas(area);
    (rest, line)
}

/// The `/` prompt on one line, and why what is typed does not parse.
pub fn draw_prompt(
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

#[cfg(test)]
mod tests;
