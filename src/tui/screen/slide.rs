//! Cells that moved left or right within a row: a footer that gained or
//! lost a key, a list of outcomes that grew. The terminal moves them
//! itself — an insert of blank characters (`ICH`, `CSI n @`) or a delete
//! (`DCH`, `CSI n P`) at the first cell that differs — and the cell diff
//! then writes only what is new. Only for rows of one-column symbols, and
//! only when it saves bytes. An insert never puts in more blanks than it
//! moves cells: tmux (3.3) then blanks only as many as it moved.

use std::io::Write;

use ratatui::buffer::Cell;

use super::encode::{self, Look, Pen, blank, differing, same};

/// `by` cells inserted (positive) or deleted (negative) at column `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slide {
    pub(crate) at: usize,
    pub(crate) by: isize,
}

/// About what the sequence costs, in bytes (a cell is about one).
const SLIDE_COST: usize = 10;

/// The slide that leaves the fewest cells to write, if it saves more than
/// it costs.
pub(crate) fn plan(old: &[Cell], new: &[Cell]) -> Option<Slide> {
    let width = new.len();
    let at = old.iter().zip(new).position(|(a, b)| !same(a, b))?;
    // Past the new row's last symbol an erase does, whatever is there.
    let tail = new
        .iter()
        .rposition(|cell| !blank(cell))
        .map_or(0, |last| last + 1);
    let cost = |row: &[Cell]| {
        let erase = if row[tail.max(at)..].iter().all(blank) {
            0
        } else {
            3
        };
        differing(&row[at..tail.max(at)], &new[at..tail.max(at)]) + erase
    };
    let plain = cost(old);
    if plain <= SLIDE_COST {
        return None;
    }
    let mut best: Option<(usize, Slide)> = None;
    for shift in 1..width - at {
        let inserts = (2 * shift <= width - at).then_some(shift.cast_signed());
        for by in inserts.into_iter().chain([-shift.cast_signed()]) {
            let slide = Slide { at, by };
            let left = cost(&apply(old, slide)) + SLIDE_COST;
            if left < plain && best.is_none_or(|(fewest, _)| left < fewest) {
                best = Some((left, slide));
            }
        }
    }
    best.map(|(_, slide)| slide)
}

/// The row as the terminal shows it after the slide.
pub(crate) fn apply(row: &[Cell], slide: Slide) -> Vec<Cell> {
    let mut moved = row.to_vec();
    let tail = &mut moved[slide.at..];
    let shift = slide.by.unsigned_abs().min(tail.len());
    if slide.by > 0 {
        tail.rotate_right(shift);
        tail[..shift].fill(Cell::EMPTY);
    } else {
        tail.rotate_left(shift);
        let len = tail.len();
        tail[len - shift..].fill(Cell::EMPTY);
    }
    moved
}

/// The sequence: the cursor at the column, the default rendition (the
/// blanks take the current background), the insert or delete.
pub(crate) fn write(out: &mut Vec<u8>, slide: Slide, y: u16, pen: &mut Pen) {
    encode::move_to(out, u16::try_from(slide.at).unwrap_or(u16::MAX), y, pen);
    encode::set_look(out, Look::default(), pen);
    let count = slide.by.unsigned_abs();
    let op = if slide.by > 0 { '@' } else { 'P' };
    if count == 1 {
        let _ = write!(out, "\x1b[{op}");
    } else {
        let _ = write!(out, "\x1b[{count}{op}");
    }
}
