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
//! selection stays on its record if it is still shown. Beside it:
//! `schema.rs` (what a table declares, the filter's checks, the sort's
//! order), `keys.rs` (the keys of `/`, `S` and the filter prompt,
//! [`TableCommand`]) and `draw.rs` (the rows on screen, the title's
//! `filter: … · 3 of 40`, the prompt line, the "nothing matches" note).
//! What the rows are and when they change is the pane's.

mod draw;
mod keys;
mod schema;

use std::collections::VecDeque;
use std::fmt;

use ratatui::crossterm::event::KeyEvent;
use tui_input::Input;

use super::input as field;
use super::table::{SortMark, TableState};
use crate::tui::keymap::Move;

pub(crate) use draw::{draw_prompt, filter_title, prompt_line};
pub(crate) use keys::{TableCommand, prompt_commands, table_commands, wrapped};
pub(crate) use schema::{Column, Field, FieldKind, Schema, SortKey};
use schema::{Filter, compare};

/// Rows a view can order: a slice, a `Vec` or a `VecDeque`.
pub(crate) trait Rows<R> {
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
pub(crate) struct Prompt {
    pub(crate) input: Input,
    pub(crate) error: Option<String>,
    before: String,
    anchor: Option<String>,
}

/// A table's filter, sort, order and selection.
pub(crate) struct TableView<R: 'static> {
    schema: &'static Schema<R>,
    /// The selection (a position in the order) and the scroll.
    pub(crate) state: TableState,
    filter: Filter,
    sort: Option<SortMark>,
    /// Row indices in the order shown; `None`: every row, in its own
    /// order (no filter, no sort).
    order: Option<Vec<usize>>,
    /// Rows when the order was last made.
    total: usize,
    /// The `/` prompt, while it is open.
    pub(crate) prompt: Option<Prompt>,
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
    pub(crate) fn new(schema: &'static Schema<R>) -> TableView<R> {
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
    pub(crate) fn with_clock(mut self, clock: fn() -> i64) -> TableView<R> {
        self.clock = clock;
        self
    }

    pub(crate) fn schema(&self) -> &'static Schema<R> {
        self.schema
    }

    // ---- the order and the selection ------------------------------------

    /// Rows shown.
    pub(crate) fn len(&self) -> usize {
        self.order.as_ref().map_or(self.total, Vec::len)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row index shown at `position`.
    pub(crate) fn index(&self, position: usize) -> Option<usize> {
        match &self.order {
            Some(order) => order.get(position).copied(),
            None => (position < self.total).then_some(position),
        }
    }

    /// The row shown at `position`.
    pub(crate) fn row_at<'r, S: Rows<R> + ?Sized>(
        &self,
        rows: &'r S,
        position: usize,
    ) -> Option<&'r R> {
        rows.row(self.index(position)?)
    }

    /// The selected position (none when nothing is shown).
    pub(crate) fn selected_position(&self) -> Option<usize> {
        self.state.selected(self.len())
    }

    /// The selected row's index in the rows.
    pub(crate) fn selected_index(&self) -> Option<usize> {
        self.index(self.state.position())
    }

    pub(crate) fn selected<'r, S: Rows<R> + ?Sized>(&self, rows: &'r S) -> Option<&'r R> {
        rows.row(self.selected_index()?)
    }

    /// What identifies the selected row.
    pub(crate) fn selected_key<S: Rows<R> + ?Sized>(&self, rows: &S) -> Option<String> {
        self.selected(rows)
            .map(|row| (self.schema.key)(row).into_owned())
    }

    /// Where the row `key` identifies is shown.
    pub(crate) fn position_of<S: Rows<R> + ?Sized>(&self, rows: &S, key: &str) -> Option<usize> {
        (0..self.len()).find(|position| {
            self.row_at(rows, *position)
                .is_some_and(|row| (self.schema.key)(row) == key)
        })
    }

    pub(crate) fn apply(&mut self, to: Move) {
        self.state.apply(to, self.len());
    }

    pub(crate) fn select(&mut self, position: usize) {
        self.state.select(position);
    }

    /// Back to the first row, scrolled to the top.
    pub(crate) fn reset(&mut self) {
        self.state.reset();
    }

    /// The rows changed (or were mutated in place): the order is made
    /// again; the selection goes to `kept` (a row's key, taken before the
    /// change) if it is shown, else stays inside the table.
    pub(crate) fn refresh<S: Rows<R> + ?Sized>(&mut self, rows: &S, kept: Option<String>) {
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
    pub(crate) fn replace(&mut self, rows: &mut Vec<R>, fresh: Vec<R>) {
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
    pub(crate) fn filter_text(&self) -> &str {
        &self.filter.text
    }

    pub(crate) fn filtering(&self) -> bool {
        !self.filter.text.is_empty()
    }

    /// Filters by `text`, the selection staying on its record if it is
    /// still shown; an error (nothing changed) says what to write.
    pub(crate) fn set_filter<S: Rows<R> + ?Sized>(
        &mut self,
        text: &str,
        rows: &S,
    ) -> Result<(), String> {
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

    pub(crate) fn prompting(&self) -> bool {
        self.prompt.is_some()
    }

    /// `/`: the prompt, holding the filter in force.
    pub(crate) fn open_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
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
    pub(crate) fn submit_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.typed(rows);
        if self.prompt.as_ref().is_some_and(|p| p.error.is_none()) {
            self.prompt = None;
        }
    }

    /// `esc` in the prompt: back to the filter in force before it opened.
    pub(crate) fn cancel_prompt<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        if let Some(prompt) = self.prompt.take()
            && self
                .filter_keeping(&prompt.before, rows, prompt.anchor)
                .is_err()
        {
            self.clear_filter(rows);
        }
    }

    /// `esc` on the table: no filter.
    pub(crate) fn clear_filter<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
        self.prompt = None;
        let kept = self.selected_key(rows);
        self.filter = Filter::default();
        self.refresh(rows, kept);
    }

    /// A key for the prompt (refilters when the text changed).
    pub(crate) fn type_key<S: Rows<R> + ?Sized>(&mut self, key: &KeyEvent, rows: &S) {
        if let Some(prompt) = &mut self.prompt
            && field::type_key(&mut prompt.input, key)
        {
            self.typed(rows);
        }
    }

    /// Pasted text for the prompt.
    pub(crate) fn paste<S: Rows<R> + ?Sized>(&mut self, pasted: &str, rows: &S) {
        if let Some(prompt) = &mut self.prompt
            && field::paste(&mut prompt.input, pasted)
        {
            self.typed(rows);
        }
    }

    // ---- the sort -------------------------------------------------------

    /// The column sorted by, and which way.
    pub(crate) fn sorted(&self) -> Option<SortMark> {
        self.sort
    }

    /// `S`: the column sorted by goes ▲, then ▼, then on to the next
    /// column; after the last column's ▼ the rows are in their own order
    /// again. The selection stays on its record.
    pub(crate) fn cycle_sort<S: Rows<R> + ?Sized>(&mut self, rows: &S) {
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
    pub(crate) fn set_sort<S: Rows<R> + ?Sized>(&mut self, sort: Option<SortMark>, rows: &S) {
        let kept = self.selected_key(rows);
        self.sort = sort.filter(|mark| mark.column < self.schema.columns.len());
        self.refresh(rows, kept);
    }

    /// Runs a table command on `rows` (a table the view filters itself).
    pub(crate) fn run<S: Rows<R> + ?Sized>(&mut self, command: TableCommand, rows: &S) {
        match command {
            TableCommand::Filter => self.open_prompt(rows),
            TableCommand::ApplyFilter => self.submit_prompt(rows),
            TableCommand::CancelFilter => self.cancel_prompt(rows),
            TableCommand::ClearFilter => self.clear_filter(rows),
            TableCommand::Sort => self.cycle_sort(rows),
        }
    }
}

#[cfg(test)]
mod tests;
