//! Printing for the command line: aligned tables, JSON, short ids.

use std::io::{self, Write};

use serde::Serialize;

pub(crate) use earshot_core::api::short_id;

/// Text on stdout; an error (not a panic) when the reader has gone away.
pub(crate) fn emit(text: &str) -> io::Result<()> {
    emit_styled(&plain(text))
}

/// [`emit`] for text whose escape sequences are earshot's own (colours),
/// never values from the store or the network.
pub(crate) fn emit_styled(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// `text` with every character that could drive or mislead the operator's
/// terminal (controls but newline and tab, bidirectional overrides) shown
/// as an escape (`\x{1b}`): [`earshot_core::terminal_text`].
pub(crate) fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    earshot_core::terminal_text::escaped(text)
}

/// Pretty JSON on stdout, one document.
pub(crate) fn print_json<T: Serialize>(value: &T) -> color_eyre::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Terminal columns `text` takes: wide characters (CJK, most emoji)
/// count two, combining marks none.
fn columns(text: &str) -> usize {
    textwrap::core::display_width(text)
}

/// A plain-text table with a header row and columns padded to fit, by
/// display width, so cells with wide characters still line up.
pub(crate) struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| columns(h)).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(columns(cell));
            }
        }
        let mut text = String::new();
        let header_cells: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        for row in std::iter::once(&header_cells).chain(&self.rows) {
            let mut line = String::new();
            for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
                if index + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let pad = width.saturating_sub(columns(cell));
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }

    pub(crate) fn print(&self) -> io::Result<()> {
        emit(&self.render())
    }
}

/// A timestamp as `2026-11-21 10:00:03Z`, or `-`.
pub(crate) fn time<Tz: chrono::TimeZone>(at: Option<&chrono::DateTime<Tz>>) -> String {
    at.map_or_else(
        || "-".to_owned(),
        |at| earshot_core::clock_text::utc_datetime(at.timestamp_millis()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_columns_align() {
        let mut table = Table::new(&["ID", "URL"]);
        table.row(vec!["a".into(), "https://x".into()]);
        table.row(vec!["abcdef".into(), "-".into()]);
        assert_eq!(
            table.render(),
            "ID      URL\na       https://x\nabcdef  -\n"
        );
    }

    #[test]
    fn wide_characters_count_by_display_width() {
        let mut table = Table::new(&["NAME", "STATE"]);
        table.row(vec!["会議録".into(), "ok".into()]);
        table.row(vec!["café".into(), "ok".into()]);
        // "会議録" takes six columns, "café" four (é may be one char or two).
        assert_eq!(table.render(), "NAME    STATE\n会議録  ok\ncafé    ok\n");
        let mut combining = Table::new(&["A", "B"]);
        combining.row(vec!["cafe\u{301}".into(), "x".into()]);
        assert_eq!(combining.render(), "A     B\ncafe\u{301}  x\n");
    }
}
