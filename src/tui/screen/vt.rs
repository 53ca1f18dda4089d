//! A terminal for the tests: the screen a VT100-style terminal (xterm,
//! tmux) shows after a byte stream, for exactly the sequences the screen
//! backend may write — printing (wide symbols take two columns), CR LF,
//! `CUP`, `CUF`, `EL`, `ED 2`, `IL`, `DL`, `ICH`, `DCH`, `DECSTBM`, `SGR`,
//! `DECTCEM`.
//! Anything else panics, and so does printing past the right edge (the
//! backend never relies on the terminal wrapping). Erases and inserted
//! lines take the current background, as terminals with
//! back-colour-erase do.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use ratatui::buffer::{Buffer, CellWidth};
use ratatui::style::{Color, Modifier};

use super::encode::{Look, alike};

/// What the backend wrote, shared with the test that feeds it to a [`Vt`].
#[derive(Clone, Default)]
pub(crate) struct Sink(Rc<RefCell<Vec<u8>>>);

impl Sink {
    pub(crate) fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
struct VtCell {
    symbol: String,
    look: Look,
    /// The right half of a wide symbol.
    continuation: bool,
}

impl VtCell {
    fn blank(bg: Color) -> VtCell {
        VtCell {
            symbol: " ".into(),
            look: Look {
                bg,
                ..Look::default()
            },
            continuation: false,
        }
    }
}

pub(crate) struct Vt {
    width: usize,
    height: usize,
    cells: Vec<VtCell>,
    x: usize,
    y: usize,
    wrap_pending: bool,
    top: usize,
    bottom: usize,
    look: Look,
    pub(crate) cursor_visible: bool,
}

impl Vt {
    pub(crate) fn new(width: u16, height: u16) -> Vt {
        let (width, height) = (usize::from(width), usize::from(height));
        Vt {
            width,
            height,
            cells: vec![VtCell::blank(Color::Reset); width * height],
            x: 0,
            y: 0,
            wrap_pending: false,
            top: 0,
            bottom: height - 1,
            look: Look::default(),
            cursor_visible: true,
        }
    }

    pub(crate) fn cursor(&self) -> (u16, u16) {
        (
            u16::try_from(self.x).unwrap_or(u16::MAX),
            u16::try_from(self.y).unwrap_or(u16::MAX),
        )
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let text = std::str::from_utf8(bytes).expect("the backend writes UTF-8");
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    assert_eq!(chars.next(), Some('['), "only CSI sequences are written");
                    let mut params = String::new();
                    let final_byte = loop {
                        let next = chars.next().expect("a CSI sequence is complete");
                        if ('\x40'..='\x7e').contains(&next) {
                            break next;
                        }
                        params.push(next);
                    };
                    self.csi(&params, final_byte);
                }
                '\r' => {
                    self.x = 0;
                    self.wrap_pending = false;
                }
                '\n' => {
                    assert!(self.y < self.bottom, "a line feed would scroll");
                    self.y += 1;
                    self.wrap_pending = false;
                }
                c if c.is_control() => panic!("unexpected control character {c:?}"),
                c => self.print(c),
            }
        }
    }

    fn print(&mut self, c: char) {
        let mut utf8 = [0u8; 4];
        let columns = usize::from(c.encode_utf8(&mut utf8).cell_width());
        if columns == 0 {
            // Joins the symbol before it.
            let at = self.y * self.width + self.x.saturating_sub(1);
            self.cells[at].symbol.push(c);
            return;
        }
        assert!(!self.wrap_pending, "printed past the right edge");
        assert!(self.x + columns <= self.width, "a wide symbol would wrap");
        for x in self.x..self.x + columns {
            self.break_wide(x);
        }
        let row = self.y * self.width;
        self.cells[row + self.x] = VtCell {
            symbol: c.to_string(),
            look: self.look,
            continuation: false,
        };
        if columns == 2 {
            self.cells[row + self.x + 1] = VtCell {
                symbol: String::new(),
                look: self.look,
                continuation: true,
            };
        }
        self.x += columns;
        if self.x >= self.width {
            self.x = self.width - 1;
            self.wrap_pending = true;
        }
    }

    /// Overwriting either half of a wide symbol blanks the other half.
    fn break_wide(&mut self, x: usize) {
        let row = self.y * self.width;
        if self.cells[row + x].continuation && x > 0 {
            self.cells[row + x - 1] = VtCell::blank(Color::Reset);
        }
        if x + 1 < self.width && self.cells[row + x + 1].continuation {
            self.cells[row + x + 1] = VtCell::blank(Color::Reset);
        }
    }

    fn csi(&mut self, params: &str, final_byte: char) {
        let numbers = |default: usize| -> Vec<usize> {
            params
                .split(';')
                .map(|p| {
                    if p.is_empty() {
                        default
                    } else {
                        p.parse().expect("a number")
                    }
                })
                .collect()
        };
        let count = || numbers(1)[0].max(1);
        self.wrap_pending = false;
        match (params, final_byte) {
            ("?25", 'l') => self.cursor_visible = false,
            ("?25", 'h') => self.cursor_visible = true,
            (_, 'H') => {
                let n = numbers(1);
                self.y = (n[0].max(1) - 1).min(self.height - 1);
                self.x = (n.get(1).copied().unwrap_or(1).max(1) - 1).min(self.width - 1);
            }
            (_, 'C') => self.x = (self.x + count()).min(self.width - 1),
            ("" | "0", 'K') => {
                let row = self.y * self.width;
                let bg = self.look.bg;
                if self.x > 0 && self.cells[row + self.x].continuation {
                    self.cells[row + self.x - 1] = VtCell::blank(Color::Reset);
                }
                for x in self.x..self.width {
                    self.cells[row + x] = VtCell::blank(bg);
                }
            }
            (_, '@' | 'P') => {
                let row = self.y * self.width;
                assert!(
                    !self.cells[row..row + self.width]
                        .iter()
                        .any(|c| c.continuation),
                    "ICH/DCH on a row with a wide symbol"
                );
                let tail = &mut self.cells[row + self.x..row + self.width];
                let shift = count().min(tail.len());
                assert!(
                    final_byte == 'P' || 2 * shift <= tail.len(),
                    "an insert of {shift} moves fewer cells (tmux 3.3 would blank too few)"
                );
                let blank = VtCell::blank(self.look.bg);
                if final_byte == '@' {
                    tail.rotate_right(shift);
                    tail[..shift].fill(blank);
                } else {
                    tail.rotate_left(shift);
                    let len = tail.len();
                    tail[len - shift..].fill(blank);
                }
            }
            ("2", 'J') => self.cells.fill(VtCell::blank(self.look.bg)),
            (_, 'L' | 'M') => {
                assert!(
                    (self.top..=self.bottom).contains(&self.y),
                    "IL/DL outside the scroll region"
                );
                let band = self.y * self.width..(self.bottom + 1) * self.width;
                let shift = count().min(self.bottom + 1 - self.y) * self.width;
                let blank = VtCell::blank(self.look.bg);
                let rows = &mut self.cells[band];
                if final_byte == 'L' {
                    rows.rotate_right(shift);
                    rows[..shift].fill(blank);
                } else {
                    rows.rotate_left(shift);
                    let len = rows.len();
                    rows[len - shift..].fill(blank);
                }
                self.x = 0;
            }
            (_, 'r') => {
                let n = numbers(0);
                let top = n[0].max(1) - 1;
                let bottom = match n.get(1) {
                    Some(&b) if b > 0 => b - 1,
                    _ => self.height - 1,
                };
                assert!(
                    top < bottom && bottom < self.height,
                    "a bad region {params}"
                );
                (self.top, self.bottom) = (top, bottom);
                (self.x, self.y) = (0, 0);
            }
            (_, 'm') => self.sgr(&numbers(0)),
            _ => panic!("unexpected sequence CSI {params} {final_byte}"),
        }
    }

    fn sgr(&mut self, params: &[usize]) {
        let mut params = params.iter().copied();
        let look = &mut self.look;
        while let Some(p) = params.next() {
            match p {
                0 => *look = Look::default(),
                1..=9 => look.modifier |= modifier(p),
                22 => look.modifier -= Modifier::BOLD | Modifier::DIM,
                23 => look.modifier -= Modifier::ITALIC,
                24 => look.modifier -= Modifier::UNDERLINED,
                25 => look.modifier -= Modifier::SLOW_BLINK | Modifier::RAPID_BLINK,
                27 => look.modifier -= Modifier::REVERSED,
                28 => look.modifier -= Modifier::HIDDEN,
                29 => look.modifier -= Modifier::CROSSED_OUT,
                30..=37 => look.fg = named(p - 30),
                90..=97 => look.fg = named(p - 90 + 8),
                40..=47 => look.bg = named(p - 40),
                100..=107 => look.bg = named(p - 100 + 8),
                39 => look.fg = Color::Reset,
                49 => look.bg = Color::Reset,
                59 => look.underline = Color::Reset,
                38 | 48 | 58 => {
                    let color = match params.next() {
                        Some(5) => {
                            let index = params.next().expect("an index");
                            let index = u8::try_from(index).expect("an index under 256");
                            if p == 58 && index < 16 {
                                named(usize::from(index))
                            } else {
                                Color::Indexed(index)
                            }
                        }
                        Some(2) => {
                            let mut part =
                                || u8::try_from(params.next().expect("rgb")).expect("rgb");
                            Color::Rgb(part(), part(), part())
                        }
                        other => panic!("unexpected colour form {other:?}"),
                    };
                    match p {
                        38 => look.fg = color,
                        48 => look.bg = color,
                        _ => look.underline = color,
                    }
                }
                other => panic!("unexpected SGR {other}"),
            }
        }
    }

    /// Where the screen differs from `buffer` (the right half of a wide
    /// symbol, which the buffer keeps blank, aside); `None`: it shows it.
    pub(crate) fn mismatch(&self, buffer: &Buffer) -> Option<String> {
        assert_eq!(
            (
                usize::from(buffer.area.width),
                usize::from(buffer.area.height)
            ),
            (self.width, self.height)
        );
        for y in 0..self.height {
            let mut x = 0;
            while x < self.width {
                let shown = &self.cells[y * self.width + x];
                let wanted = &buffer.content[y * self.width + x];
                let wanted_look = Look::of(wanted);
                if shown.continuation
                    || !alike((&shown.symbol, shown.look), (wanted.symbol(), wanted_look))
                {
                    return Some(format!(
                        "at ({x}, {y}): the terminal shows {:?} {:?}, the frame has {:?} {:?}",
                        shown.symbol,
                        shown.look,
                        wanted.symbol(),
                        wanted_look
                    ));
                }
                x += usize::from(wanted.symbol().cell_width()).max(1);
            }
        }
        None
    }
}

fn modifier(p: usize) -> Modifier {
    [
        Modifier::BOLD,
        Modifier::DIM,
        Modifier::ITALIC,
        Modifier::UNDERLINED,
        Modifier::SLOW_BLINK,
        Modifier::RAPID_BLINK,
        Modifier::REVERSED,
        Modifier::HIDDEN,
        Modifier::CROSSED_OUT,
    ][p - 1]
}

fn named(index: usize) -> Color {
    [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ][index]
}
