//! The bytes that turn one screen into another, cell by cell: cursor
//! moves (the shortest of `CSI row;col H`, `CSI n C` and CR LF), one
//! `SGR` per change of style (only what changed, or a reset when that is
//! shorter), and an erase to the end of the line (`CSI K`) for a row that
//! ends blank; cells that moved along their row slide there first
//! ([`super::slide`]). Knows nothing of scrolling ([`super::shift`] does) nor of
//! ratatui's `Terminal` (the backend in `mod.rs` does).
//!
//! The [`Pen`] is what the terminal's cursor and graphic rendition are
//! believed to be; `None` where they are not known, so the next move is
//! absolute. A row with a symbol wider or narrower than one column, before
//! or after, is written whole from its first column: a half-overwritten
//! wide character is not left to the terminal's judgement.

use std::io::Write;

use ratatui::buffer::{Buffer, Cell, CellWidth};
use ratatui::style::{Color, Modifier};

use super::slide;

/// A cell's look: what an `SGR` sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Look {
    pub(crate) fg: Color,
    pub(crate) bg: Color,
    pub(crate) underline: Color,
    pub(crate) modifier: Modifier,
}

impl Look {
    pub(crate) fn of(cell: &Cell) -> Look {
        Look {
            fg: cell.fg,
            bg: cell.bg,
            underline: cell.underline_color,
            modifier: cell.modifier,
        }
    }
}

/// Where the cursor is and how the terminal draws, as far as known.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pen {
    /// `(x, y)`; `None`: unknown (after a scroll, a wrap at the right
    /// edge, the start of a frame).
    pub(crate) at: Option<(u16, u16)>,
    /// `None`: unknown.
    pub(crate) look: Option<Look>,
}

/// Modifiers that show on a blank cell.
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::CROSSED_OUT)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK);

/// Two cells look the same on a terminal: equal, or both a blank on the
/// same background (a space shows no foreground).
pub(crate) fn alike(a: (&str, Look), b: (&str, Look)) -> bool {
    let plain_blank =
        |(symbol, look): (&str, Look)| symbol == " " && !look.modifier.intersects(VISIBLE_ON_BLANK);
    a == b || (plain_blank(a) && plain_blank(b) && a.1.bg == b.1.bg)
}

pub(crate) fn same(a: &Cell, b: &Cell) -> bool {
    a == b || alike((a.symbol(), Look::of(a)), (b.symbol(), Look::of(b)))
}

/// How many cells of two rows do not look alike.
pub(crate) fn differing(a: &[Cell], b: &[Cell]) -> usize {
    a.iter().zip(b).filter(|(a, b)| !same(a, b)).count()
}

/// A blank on the default background: what an erase leaves.
pub(crate) fn blank(cell: &Cell) -> bool {
    alike((cell.symbol(), Look::of(cell)), (" ", Look::default()))
}

/// Every symbol in the row is one column wide.
fn narrow(row: &[Cell]) -> bool {
    row.iter().all(|cell| {
        let symbol = cell.symbol();
        symbol.len() == 1 || symbol.cell_width() == 1
    })
}

/// Writes what turns the rows of `shown` into those of `next` (same
/// area), leaving the pen where it stopped.
pub(crate) fn rows(out: &mut Vec<u8>, shown: &Buffer, next: &Buffer, pen: &mut Pen) {
    let width = usize::from(next.area.width);
    if width == 0 {
        return;
    }
    for (y, (old, new)) in shown
        .content
        .chunks(width)
        .zip(next.content.chunks(width))
        .enumerate()
    {
        let y = u16::try_from(y).unwrap_or(u16::MAX);
        if old.iter().zip(new).all(|(a, b)| same(a, b)) {
            continue;
        }
        if narrow(old) && narrow(new) {
            match slide::plan(old, new) {
                Some(slide) => {
                    slide::write(out, slide, y, pen);
                    changed_spans(out, &slide::apply(old, slide), new, y, pen);
                }
                None => changed_spans(out, old, new, y, pen),
            }
        } else {
            write_row(out, new, y, pen);
        }
    }
}

/// Differing cells closer than this are written as one span: reprinting
/// a few equal cells is cheaper than a move.
const MERGE_GAP: usize = 4;

/// Writes each span of differing cells of a row of one-column symbols.
fn changed_spans(out: &mut Vec<u8>, old: &[Cell], new: &[Cell], y: u16, pen: &mut Pen) {
    let width = new.len();
    let mut x = 0;
    while x < width {
        if same(&old[x], &new[x]) {
            x += 1;
            continue;
        }
        // The span: up to the last differing cell with no gap wider than
        // MERGE_GAP.
        let start = x;
        let mut end = x;
        let mut probe = x + 1;
        while probe < width && probe - end <= MERGE_GAP {
            if !same(&old[probe], &new[probe]) {
                end = probe;
            }
            probe += 1;
        }
        if new[start..].iter().all(blank) {
            erase_from(out, start, y, pen);
            return;
        }
        put_cells(out, new, start, end + 1, y, pen);
        x = end + 1;
    }
}

/// Writes a whole row (its blank tail erased).
fn write_row(out: &mut Vec<u8>, row: &[Cell], y: u16, pen: &mut Pen) {
    // The column after the last one a symbol covers.
    let mut tail = 0;
    let mut x = 0;
    while x < row.len() {
        let columns = usize::from(row[x].symbol().cell_width()).max(1);
        if !blank(&row[x]) {
            tail = (x + columns).min(row.len());
        }
        x += columns;
    }
    if tail > 0 {
        put_cells(out, row, 0, tail, y, pen);
    }
    if tail < row.len() {
        erase_from(out, tail, y, pen);
    }
}

/// Erases from column `x` to the end of row `y` with the default
/// rendition.
fn erase_from(out: &mut Vec<u8>, x: usize, y: u16, pen: &mut Pen) {
    move_to(out, to_u16(x), y, pen);
    set_look(out, Look::default(), pen);
    out.extend_from_slice(b"\x1b[K");
}

/// Prints cells `from..to` of row `y`; a wide symbol covers the cells
/// after it, which are not printed.
fn put_cells(out: &mut Vec<u8>, row: &[Cell], from: usize, to: usize, y: u16, pen: &mut Pen) {
    let width = row.len();
    let mut x = from;
    while x < to {
        let cell = &row[x];
        let symbol = cell.symbol();
        let columns = usize::from(symbol.cell_width());
        move_to(out, to_u16(x), y, pen);
        set_look(out, Look::of(cell), pen);
        out.extend_from_slice(symbol.as_bytes());
        let after = x + columns;
        pen.at = (columns > 0 && after < width).then(|| (to_u16(after), y));
        x += columns.max(1);
    }
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Moves the cursor to `(x, y)` by the shortest sequence.
pub(crate) fn move_to(out: &mut Vec<u8>, x: u16, y: u16, pen: &mut Pen) {
    match pen.at {
        Some((cx, cy)) if (cx, cy) == (x, y) => {}
        Some((cx, cy)) if cy == y && x > cx => {
            let n = x - cx;
            if n == 1 {
                out.extend_from_slice(b"\x1b[C");
            } else {
                let _ = write!(out, "\x1b[{n}C");
            }
        }
        Some((_, cy)) if x == 0 && y == cy.wrapping_add(1) => out.extend_from_slice(b"\r\n"),
        _ if x == 0 => {
            let _ = write!(out, "\x1b[{}H", y + 1);
        }
        _ => {
            let _ = write!(out, "\x1b[{};{}H", y + 1, x + 1);
        }
    }
    pen.at = Some((x, y));
}

/// Sets the graphic rendition to `look`: only what changed, or a reset
/// and what `look` needs, whichever is shorter.
pub(crate) fn set_look(out: &mut Vec<u8>, look: Look, pen: &mut Pen) {
    if pen.look == Some(look) {
        return;
    }
    let mut from_reset = vec![String::from("0")];
    params_from(&mut from_reset, Look::default(), look);
    let params = match pen.look {
        Some(current) => {
            let mut changed = Vec::new();
            params_from(&mut changed, current, look);
            let length = |params: &[String]| params.iter().map(|p| p.len() + 1).sum::<usize>();
            if length(&changed) < length(&from_reset) {
                changed
            } else {
                from_reset
            }
        }
        None => from_reset,
    };
    out.extend_from_slice(b"\x1b[");
    out.extend_from_slice(params.join(";").as_bytes());
    out.push(b'm');
    pen.look = Some(look);
}

/// The `SGR` parameters that take `from` to `to`.
fn params_from(out: &mut Vec<String>, from: Look, to: Look) {
    let removed = from.modifier - to.modifier;
    let mut kept = from.modifier & to.modifier;
    // Bold and dim share their "off" (22); the blinks share 25.
    for (off, group) in [
        ("22", Modifier::BOLD | Modifier::DIM),
        ("23", Modifier::ITALIC),
        ("24", Modifier::UNDERLINED),
        ("25", Modifier::SLOW_BLINK | Modifier::RAPID_BLINK),
        ("27", Modifier::REVERSED),
        ("28", Modifier::HIDDEN),
        ("29", Modifier::CROSSED_OUT),
    ] {
        if removed.intersects(group) {
            out.push(off.to_owned());
            kept -= group;
        }
    }
    for (on, bit) in [
        ("1", Modifier::BOLD),
        ("2", Modifier::DIM),
        ("3", Modifier::ITALIC),
        ("4", Modifier::UNDERLINED),
        ("5", Modifier::SLOW_BLINK),
        ("6", Modifier::RAPID_BLINK),
        ("7", Modifier::REVERSED),
        ("8", Modifier::HIDDEN),
        ("9", Modifier::CROSSED_OUT),
    ] {
        if to.modifier.contains(bit) && !kept.contains(bit) {
            out.push(on.to_owned());
        }
    }
    if from.fg != to.fg {
        out.push(colour(to.fg, Layer::Fg));
    }
    if from.bg != to.bg {
        out.push(colour(to.bg, Layer::Bg));
    }
    if from.underline != to.underline {
        out.push(colour(to.underline, Layer::Underline));
    }
}

#[derive(Clone, Copy)]
enum Layer {
    Fg,
    Bg,
    Underline,
}

/// The index of a named colour in the 16-colour palette.
fn palette_index(color: Color) -> Option<u8> {
    Some(match color {
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
        _ => return None,
    })
}

fn colour(color: Color, layer: Layer) -> String {
    let (base, extended, reset) = match layer {
        Layer::Fg => (30, 38, 39),
        Layer::Bg => (40, 48, 49),
        Layer::Underline => (0, 58, 59),
    };
    match (color, palette_index(color), layer) {
        (Color::Reset, _, _) => reset.to_string(),
        // The underline colour has no short form.
        (_, Some(index), Layer::Underline) => format!("{extended};5;{index}"),
        (_, Some(index), _) if index < 8 => (base + index).to_string(),
        (_, Some(index), _) => (base + 60 + index - 8).to_string(),
        (Color::Indexed(index), _, _) => format!("{extended};5;{index}"),
        (Color::Rgb(r, g, b), _, _) => format!("{extended};2;{r};{g};{b}"),
        // Every named colour has a palette index.
        _ => reset.to_string(),
    }
}
