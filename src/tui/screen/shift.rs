//! Rows the terminal already shows, one or more rows higher or lower in
//! the next frame: a table that took a new row at its top. Found by
//! comparing row hashes of what is shown and what comes next, and moved
//! by the terminal itself — a scroll region (`DECSTBM`, `CSI top;bottom r`)
//! and an insert or delete of lines (`CSI n L`, `CSI n M`) inside it, then
//! the region reset — instead of writing every cell of every row again.
//!
//! A scroll is planned only when it saves bytes: the cells it makes right,
//! less the cells of the rows it blanks and what its sequence costs.
//! Each planned scroll is applied to the model of the screen too, so the
//! cell diff that follows ([`super::encode`]) starts from what the
//! terminal then shows.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;

use ratatui::buffer::{Buffer, Cell};

use super::encode::{self, Look, Pen};

/// A band of rows `top..=bottom` moved `by` rows: down when positive (a
/// new row at its top), up when negative; the rows it uncovers are blank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scroll {
    pub(crate) top: u16,
    pub(crate) bottom: u16,
    pub(crate) by: i32,
}

/// About what a scroll's sequences cost, in bytes (a cell is about one).
const SCROLL_COST: usize = 24;
/// At most this many scrolls a frame: a table, and one more band (a
/// list beside a detail).
const MAX_SCROLLS: usize = 4;

/// The scrolls that bring `shown` closest to `next` for fewer bytes, each
/// already applied to `shown`. Same areas, else none.
pub(crate) fn plan(shown: &mut Buffer, next: &Buffer) -> Vec<Scroll> {
    let width = usize::from(next.area.width);
    let height = usize::from(next.area.height);
    if shown.area != next.area || width == 0 || height < 2 {
        return Vec::new();
    }
    let row = |buffer: &Buffer, y: usize| -> Vec<Cell> {
        buffer.content[y * width..(y + 1) * width].to_vec()
    };
    let next_rows: Vec<Vec<Cell>> = (0..height).map(|y| row(next, y)).collect();
    let next_hash: Vec<u64> = next_rows.iter().map(|cells| hash(cells)).collect();
    let blank_cost: Vec<usize> = next_rows
        .iter()
        .map(|cells| cells.iter().filter(|cell| **cell != Cell::EMPTY).count())
        .collect();
    let mut shown_rows: Vec<Vec<Cell>> = (0..height).map(|y| row(shown, y)).collect();
    let mut shown_hash: Vec<u64> = shown_rows.iter().map(|cells| hash(cells)).collect();
    let mut cost: Vec<usize> = (0..height)
        .map(|y| differing(&shown_rows[y], &next_rows[y]))
        .collect();

    let mut scrolls = Vec::new();
    while scrolls.len() < MAX_SCROLLS {
        let Some(scroll) = best(&shown_hash, &next_hash, &cost, &blank_cost) else {
            break;
        };
        apply(&mut shown_rows, scroll, width);
        for y in usize::from(scroll.top)..=usize::from(scroll.bottom) {
            shown_hash[y] = hash(&shown_rows[y]);
            cost[y] = differing(&shown_rows[y], &next_rows[y]);
        }
        scrolls.push(scroll);
    }
    if !scrolls.is_empty() {
        for (y, cells) in shown_rows.into_iter().enumerate() {
            shown.content[y * width..(y + 1) * width].clone_from_slice(&cells);
        }
    }
    scrolls
}

/// The scroll that saves the most, if one saves anything: for each shift,
/// each run of rows that the shift makes right.
fn best(shown: &[u64], next: &[u64], cost: &[usize], blank_cost: &[usize]) -> Option<Scroll> {
    let height = isize::try_from(next.len()).ok()?;
    let mut found: Option<(usize, Scroll)> = None;
    for by in (1 - height)..height {
        if by == 0 {
            continue;
        }
        // Rows y of `next` that row y - by of `shown` would make right:
        // y in first..end keeps y - by on the screen.
        let (first, end) = (
            by.max(0).unsigned_abs(),
            (height + by.min(0)).unsigned_abs(),
        );
        let shift = by.unsigned_abs();
        let matches = |y: usize| shown[y.wrapping_add_signed(-by)] == next[y];
        let mut y = first;
        while y < end {
            if !matches(y) {
                y += 1;
                continue;
            }
            let run_start = y;
            while y < end && matches(y) {
                y += 1;
            }
            let run_end = y - 1;
            // The band and the rows it leaves blank.
            let (top, bottom, blanked) = if by > 0 {
                (run_start - shift, run_end, run_start - shift..run_start)
            } else {
                (run_start, run_end + shift, run_end + 1..run_end + 1 + shift)
            };
            let saved: usize = cost[top..=bottom].iter().sum();
            let spent: usize = blank_cost[blanked].iter().sum::<usize>() + SCROLL_COST;
            if saved > spent && found.is_none_or(|(gain, _)| saved - spent > gain) {
                found = Some((
                    saved - spent,
                    Scroll {
                        top: u16::try_from(top).ok()?,
                        bottom: u16::try_from(bottom).ok()?,
                        by: i32::try_from(by).ok()?,
                    },
                ));
            }
        }
    }
    found.map(|(_, scroll)| scroll)
}

/// Moves the rows of the band as the terminal does.
fn apply(rows: &mut [Vec<Cell>], scroll: Scroll, width: usize) {
    let band = &mut rows[usize::from(scroll.top)..=usize::from(scroll.bottom)];
    let shift = usize::try_from(scroll.by.unsigned_abs()).unwrap_or(usize::MAX);
    let shift = shift.min(band.len());
    if scroll.by > 0 {
        band.rotate_right(shift);
        for row in &mut band[..shift] {
            *row = vec![Cell::EMPTY; width];
        }
    } else {
        band.rotate_left(shift);
        let len = band.len();
        for row in &mut band[len - shift..] {
            *row = vec![Cell::EMPTY; width];
        }
    }
}

/// The sequences of one scroll: the region, the cursor at its top, lines
/// inserted (down) or deleted (up) there, the region reset. Erased lines
/// take the current background, so the rendition is reset first; the
/// cursor is unknown after.
pub(crate) fn write(out: &mut Vec<u8>, scroll: Scroll, pen: &mut Pen) {
    encode::set_look(out, Look::default(), pen);
    let top = scroll.top + 1;
    let _ = write!(out, "\x1b[{top};{}r\x1b[{top}H", scroll.bottom + 1);
    let lines = scroll.by.unsigned_abs();
    let op = if scroll.by > 0 { 'L' } else { 'M' };
    if lines == 1 {
        let _ = write!(out, "\x1b[{op}");
    } else {
        let _ = write!(out, "\x1b[{lines}{op}");
    }
    out.extend_from_slice(b"\x1b[r");
    pen.at = None;
}

fn hash(cells: &[Cell]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for cell in cells {
        cell.symbol().hash(&mut hasher);
        cell.fg.hash(&mut hasher);
        cell.bg.hash(&mut hasher);
        cell.underline_color.hash(&mut hasher);
        cell.modifier.hash(&mut hasher);
    }
    hasher.finish()
}

fn differing(a: &[Cell], b: &[Cell]) -> usize {
    a.iter().zip(b).filter(|(a, b)| a != b).count()
}
