//! The screen over a thin link: a ratatui backend that writes to the
//! terminal only what it takes to go from what the terminal shows to the
//! next frame, in as few bytes as it can.
//!
//! ratatui's `Terminal` renders each frame and hands this backend the
//! cells that changed since its previous frame; the backend applies them
//! to its copy of the frame ([`ScreenBackend::draw`]) and, when the
//! `Terminal` flushes, compares that frame with its model of what the
//! terminal shows: rows that only moved are scrolled by the terminal
//! ([`shift`]: a scroll region and an insert or delete of lines), then the
//! cells still different are written ([`encode`]: short cursor moves, one
//! rendition change per change of style, an erase for a blank tail). The
//! cursor (hidden, or shown at a text field) is set after the cells, and
//! only when it changes. A frame that changes nothing writes nothing.
//!
//! Everything it writes is counted ([`ByteMeter`]): the event loop paces
//! frames by it. `EARSHOT_SCREEN=ratatui` hands every call to ratatui's
//! own `CrosstermBackend` instead ([`Flusher::Ratatui`]), the "before" of
//! `benches/console_bytes.py`.

pub(crate) mod encode;
mod shift;
mod slide;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod vt;

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::{Buffer, Cell, CellWidth};
use ratatui::layout::{Position, Rect, Size};

use encode::{Look, Pen};

/// Which code writes the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flusher {
    /// This module: scrolls, then the cells that still differ.
    Scroll,
    /// ratatui's `CrosstermBackend`: every changed cell, as ratatui diffs.
    Ratatui,
}

impl Flusher {
    /// `EARSHOT_SCREEN=ratatui` selects ratatui's own; anything else, this
    /// module's.
    pub(crate) fn from_env() -> Flusher {
        match std::env::var("EARSHOT_SCREEN") {
            Ok(value) if value == "ratatui" => Flusher::Ratatui,
            _ => Flusher::Scroll,
        }
    }
}

/// The bytes written to the terminal so far (shared with the event loop).
#[derive(Clone, Debug, Default)]
pub(crate) struct ByteMeter(Arc<AtomicU64>);

impl ByteMeter {
    pub(crate) fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, bytes: usize) {
        self.0
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// A writer that counts what it writes.
pub(crate) struct Metered<W> {
    out: W,
    meter: ByteMeter,
}

impl<W: Write> Write for Metered<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.out.write(buf)?;
        self.meter.add(written);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// What the frame asks of the cursor, and what the terminal was last told.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    wanted_visible: bool,
    wanted_at: Option<Position>,
    /// `None`: never said.
    visible: Option<bool>,
    at: Option<Position>,
}

/// `cell` without what must not reach the terminal as itself (controls,
/// bidirectional overrides: [`earshot_core::terminal_text`]), whatever
/// widget drew text from outside into it; a cell left empty is a blank.
fn terminal_safe(cell: &Cell) -> Cow<'_, Cell> {
    match earshot_core::terminal_text::stripped(cell.symbol()) {
        Cow::Borrowed(_) => Cow::Borrowed(cell),
        Cow::Owned(clean) => {
            let mut safe = cell.clone();
            safe.set_symbol(if clean.is_empty() { " " } else { &clean });
            Cow::Owned(safe)
        }
    }
}

/// The backend the console draws through (see the module doc).
pub(crate) struct ScreenBackend<W: Write> {
    inner: CrosstermBackend<Metered<W>>,
    flusher: Flusher,
    meter: ByteMeter,
    /// What the terminal shows; `None`: unknown (cleared and drawn whole
    /// at the next flush).
    shown: Option<Buffer>,
    /// The frame ratatui asked for.
    next: Buffer,
    /// The rendition the terminal is left in between frames.
    look: Option<Look>,
    cursor: Cursor,
    /// A size given instead of the terminal's (tests).
    fixed_size: Option<Size>,
}

impl<W: Write> ScreenBackend<W> {
    /// Writes to `out`, the real terminal, whose size it asks crossterm.
    pub(crate) fn new(out: W, flusher: Flusher) -> ScreenBackend<W> {
        let meter = ByteMeter::default();
        let inner = CrosstermBackend::new(Metered {
            out,
            meter: meter.clone(),
        });
        let mut backend = ScreenBackend {
            inner,
            flusher,
            meter,
            shown: None,
            next: Buffer::empty(Rect::default()),
            look: None,
            cursor: Cursor::default(),
            fixed_size: None,
        };
        if let Ok(size) = backend.size() {
            backend.next = Buffer::empty(Rect::from((Position::ORIGIN, size)));
        }
        backend
    }

    /// A screen of a fixed size (for tests: no terminal to ask).
    #[cfg(test)]
    pub(crate) fn with_size(out: W, flusher: Flusher, size: Size) -> ScreenBackend<W> {
        let mut backend = ScreenBackend::new(out, flusher);
        backend.fixed_size = Some(size);
        backend.next = Buffer::empty(Rect::from((Position::ORIGIN, size)));
        backend
    }

    /// Which code writes the frames.
    pub(crate) fn flusher(&self) -> Flusher {
        self.flusher
    }

    /// What counts the bytes written.
    pub(crate) fn meter(&self) -> ByteMeter {
        self.meter.clone()
    }

    /// Writes the frame: scrolls, cells, cursor; nothing if nothing changed.
    fn flush_frame(&mut self) -> io::Result<()> {
        let mut out = Vec::new();
        let mut pen = Pen {
            at: None,
            look: self.look,
        };
        let mut shown = match self.shown.take() {
            Some(shown) if shown.area == self.next.area => shown,
            _ => {
                encode::set_look(&mut out, Look::default(), &mut pen);
                out.extend_from_slice(b"\x1b[2J");
                Buffer::empty(self.next.area)
            }
        };
        if shown.content != self.next.content {
            for scroll in shift::plan(&mut shown, &self.next) {
                shift::write(&mut out, scroll, &mut pen);
            }
            encode::rows(&mut out, &shown, &self.next, &mut pen);
        }
        let cursor = &mut self.cursor;
        if !out.is_empty() {
            // Where the cells left it.
            cursor.at = None;
        }
        if let (true, Some(at)) = (cursor.wanted_visible, cursor.wanted_at)
            && cursor.at != Some(at)
        {
            encode::move_to(&mut out, at.x, at.y, &mut pen);
            cursor.at = Some(at);
        }
        if cursor.visible != Some(cursor.wanted_visible) {
            out.extend_from_slice(if cursor.wanted_visible {
                b"\x1b[?25h"
            } else {
                b"\x1b[?25l"
            });
            cursor.visible = Some(cursor.wanted_visible);
        }
        // Left at the default rendition: what else writes to the terminal
        // (the clipboard, the way out) finds it plain.
        encode::set_look(&mut out, Look::default(), &mut pen);
        self.look = pen.look;
        shown.clone_from(&self.next);
        self.shown = Some(shown);
        if !out.is_empty() {
            self.inner.write_all(&out)?;
        }
        Write::flush(&mut self.inner)
    }

    /// Starts a blank frame of the terminal's size.
    fn reset_to_size(&mut self) -> io::Result<()> {
        let size = self.size()?;
        self.next = Buffer::empty(Rect::from((Position::ORIGIN, size)));
        Ok(())
    }
}

impl<W: Write> Backend for ScreenBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        if self.flusher == Flusher::Ratatui {
            let cells: Vec<(u16, u16, Cell)> = content
                .map(|(x, y, cell)| (x, y, terminal_safe(cell).into_owned()))
                .collect();
            return self
                .inner
                .draw(cells.iter().map(|(x, y, cell)| (*x, *y, cell)));
        }
        for (x, y, cell) in content {
            let cell = terminal_safe(cell);
            let cell = cell.as_ref();
            let position = Position { x, y };
            if !self.next.area.contains(position) {
                // ratatui's area and ours parted: take the terminal's.
                self.reset_to_size()?;
                self.shown = None;
            }
            if self.next.area.contains(position) {
                self.next[position].clone_from(cell);
                // ratatui sends no update for the cells a wide symbol
                // covers; they are blank in its frame, as here.
                let columns = cell.symbol().cell_width();
                for covered in x.saturating_add(1)..x.saturating_add(columns) {
                    let position = Position { x: covered, y };
                    if self.next.area.contains(position) {
                        self.next[position].reset();
                    }
                }
            }
        }
        Ok(())
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        match self.flusher {
            Flusher::Ratatui => self.inner.hide_cursor(),
            Flusher::Scroll => {
                self.cursor.wanted_visible = false;
                Ok(())
            }
        }
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        match self.flusher {
            Flusher::Ratatui => self.inner.show_cursor(),
            Flusher::Scroll => {
                self.cursor.wanted_visible = true;
                Ok(())
            }
        }
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        match self.flusher {
            Flusher::Ratatui => self.inner.set_cursor_position(position),
            Flusher::Scroll => {
                self.cursor.wanted_at = Some(position.into());
                Ok(())
            }
        }
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        if self.flusher == Flusher::Ratatui {
            return self.inner.clear_region(clear_type);
        }
        // ratatui clears the whole screen (a resize) and draws every cell
        // after; anything less is not used full screen: the next flush
        // clears and draws all.
        self.reset_to_size()?;
        self.shown = None;
        self.cursor.at = None;
        Ok(())
    }

    fn size(&self) -> io::Result<Size> {
        match self.fixed_size {
            Some(size) => Ok(size),
            None => self.inner.size(),
        }
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.flusher {
            Flusher::Ratatui => Backend::flush(&mut self.inner),
            Flusher::Scroll => self.flush_frame(),
        }
    }
}
