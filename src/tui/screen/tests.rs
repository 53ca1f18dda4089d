//! The screen backend against a model terminal ([`super::vt`]): after every
//! frame the terminal shows exactly that frame, whatever the frames were;
//! and a table that took a row at its top costs a scroll and a row, not a
//! table.

use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect, Size};
use ratatui::style::{Color, Modifier, Style};

use super::vt::{Sink, Vt};
use super::{Flusher, ScreenBackend};

/// A console-like screen: a tab line, a title, a table of `rows` (the
/// first at the top), a status line.
fn console(width: u16, height: u16, rows: &[String], status: &str) -> Buffer {
    let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
    let accent = Style::new()
        .fg(Color::Indexed(75))
        .add_modifier(Modifier::BOLD);
    let text = Style::new().fg(Color::Indexed(252));
    let ok = Style::new().fg(Color::Rgb(95, 215, 135));
    buffer.set_string(1, 0, "1 Health │ 7 Inbox │ 8 Events", accent);
    buffer.set_string(1, 1, format!("Inbox · {} in", rows.len()), text);
    for (y, row) in (2..height - 1).zip(rows) {
        buffer.set_stringn(0, y, row, usize::from(width) - 3, text);
        buffer.set_string(width - 2, y, "ok", ok);
    }
    buffer.set_string(1, height - 1, status, text);
    buffer
}

fn row(n: usize) -> String {
    const EVENTS: [&str; 4] = [
        "session.started  ",
        "call.connected   ",
        "session.completed",
        "call.failed      ",
    ];
    let id = n.wrapping_mul(0x9e37_79b9) & 0xffff_ffff;
    format!(
        "10:{:02}:{:02} agents {} {id:08x} 200 signed with the current secret",
        n / 60 % 60,
        n % 60,
        EVENTS[n % 4]
    )
}

/// Draws `frame` through a ratatui `Terminal` on the backend; the bytes.
fn draw(terminal: &mut Terminal<ScreenBackend<Sink>>, sink: &Sink, frame: &Buffer) -> Vec<u8> {
    terminal
        .draw(|f| f.buffer_mut().clone_from(frame))
        .expect("drawn");
    sink.take()
}

fn screen(width: u16, height: u16, flusher: Flusher) -> (Terminal<ScreenBackend<Sink>>, Sink) {
    let sink = Sink::default();
    let backend = ScreenBackend::with_size(sink.clone(), flusher, Size { width, height });
    (Terminal::new(backend).expect("a terminal"), sink)
}

/// A new row at the top of a table: the terminal scrolls the rows it
/// shows (a region, an insert), and the frame costs about one row; ratatui's
/// own diff writes the whole table again. Either way the terminal ends up
/// showing the frame.
#[test]
fn a_row_added_at_the_top_of_a_table_is_a_scroll_and_one_row() {
    let (width, height) = (120, 40);
    let mut rows: Vec<String> = (0..30).rev().map(row).collect();
    let mut bytes = Vec::new();
    for flusher in [Flusher::Scroll, Flusher::Ratatui] {
        let (mut terminal, sink) = screen(width, height, flusher);
        let mut vt = Vt::new(width, height);
        let first = console(width, height, &rows, "budget 62/2000");
        vt.feed(&draw(&mut terminal, &sink, &first));
        assert_eq!(vt.mismatch(&first), None);
        rows.insert(0, row(30));
        let next = console(width, height, &rows, "budget 63/2000");
        let written = draw(&mut terminal, &sink, &next);
        vt.feed(&written);
        assert_eq!(vt.mismatch(&next), None, "{flusher:?}");
        rows.remove(0);
        bytes.push(written);
    }
    let (scrolled, ratatui) = (&bytes[0], &bytes[1]);
    let text = String::from_utf8_lossy(scrolled);
    assert!(text.contains("\x1b[3;39r\x1b[3H\x1b[L\x1b[r"), "{text:?}");
    assert!(scrolled.len() < 250, "{} bytes: {text:?}", scrolled.len());
    assert!(
        ratatui.len() > 5 * scrolled.len(),
        "ratatui: {}, scrolled: {text:?}",
        ratatui.len()
    );
}

/// A frame that changes nothing writes nothing, and one that changes a
/// digit writes about that digit.
#[test]
fn only_what_changed_is_written() {
    let (mut terminal, sink) = screen(80, 24, Flusher::Scroll);
    let rows: Vec<String> = (0..10).map(row).collect();
    let frame = console(80, 24, &rows, "budget 62/2000");
    let mut vt = Vt::new(80, 24);
    vt.feed(&draw(&mut terminal, &sink, &frame));
    assert!(draw(&mut terminal, &sink, &frame).is_empty());
    let next = console(80, 24, &rows, "budget 63/2000");
    let written = draw(&mut terminal, &sink, &next);
    vt.feed(&written);
    assert_eq!(vt.mismatch(&next), None);
    // A move, a colour, "3", the reset.
    assert!(
        written.len() <= 24,
        "{:?}",
        String::from_utf8_lossy(&written)
    );
}

/// The cursor shows at a text field only when the frame asks for it, and
/// is said again only when it changes.
#[test]
fn the_cursor_is_set_after_the_cells_and_only_when_it_changes() {
    let (mut terminal, sink) = screen(40, 10, Flusher::Scroll);
    let mut vt = Vt::new(40, 10);
    let frame = console(40, 10, &[row(1)], "/status:failed");
    let cursor = Position { x: 15, y: 9 };
    let with_cursor = |terminal: &mut Terminal<ScreenBackend<Sink>>| {
        terminal
            .draw(|f| {
                f.buffer_mut().clone_from(&frame);
                f.set_cursor_position(cursor);
            })
            .expect("drawn");
        sink.take()
    };
    vt.feed(&with_cursor(&mut terminal));
    assert_eq!(vt.mismatch(&frame), None);
    assert!(vt.cursor_visible);
    assert_eq!(vt.cursor(), (cursor.x, cursor.y));
    assert!(with_cursor(&mut terminal).is_empty(), "nothing changed");
    vt.feed(&draw(&mut terminal, &sink, &frame));
    assert!(!vt.cursor_visible);
    assert!(draw(&mut terminal, &sink, &frame).is_empty());
}

/// A resize clears, and the next frame is drawn whole on the new size.
#[test]
fn a_resize_draws_the_whole_frame_again() {
    let (mut terminal, sink) = screen(60, 20, Flusher::Scroll);
    let rows: Vec<String> = (0..10).map(row).collect();
    let mut vt = Vt::new(60, 20);
    let frame = console(60, 20, &rows, "status");
    vt.feed(&draw(&mut terminal, &sink, &frame));
    terminal.backend_mut().fixed_size = Some(Size {
        width: 50,
        height: 15,
    });
    let smaller = console(50, 15, &rows, "status");
    let mut vt = Vt::new(50, 15);
    vt.feed(&draw(&mut terminal, &sink, &smaller));
    assert_eq!(vt.mismatch(&smaller), None);
}

/// One frame of the property test: rows of a few symbols (a wide one
/// among them), each in a style of a small palette.
#[derive(Clone, Debug)]
struct Line {
    text: String,
    style: u8,
}

fn style(n: u8) -> Style {
    let palette = [
        Style::new(),
        Style::new().fg(Color::Indexed(252)),
        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        Style::new().fg(Color::LightGreen).bg(Color::Indexed(236)),
        Style::new()
            .bg(Color::Rgb(47, 61, 85))
            .add_modifier(Modifier::REVERSED),
        Style::new()
            .fg(Color::Indexed(244))
            .add_modifier(Modifier::DIM | Modifier::UNDERLINED)
            .underline_color(Color::Indexed(100)),
        Style::new().add_modifier(Modifier::ITALIC | Modifier::CROSSED_OUT),
    ];
    palette[usize::from(n) % palette.len()]
}

fn line() -> impl Strategy<Value = Line> {
    (
        proptest::collection::vec(
            prop_oneof![
                Just('a'),
                Just('b'),
                Just(' '),
                Just('│'),
                Just('…'),
                Just('界'),
                Just('é'),
            ],
            0..30,
        ),
        0u8..7,
    )
        .prop_map(|(chars, style)| Line {
            text: chars.into_iter().collect(),
            style,
        })
}

/// What happens between two frames.
#[derive(Clone, Debug)]
enum Change {
    /// `count` new lines at `at`, the band to `bottom` moving down.
    Insert {
        at: u8,
        bottom: u8,
        lines: Vec<Line>,
    },
    /// `count` lines from `at` go, the band to `bottom` moving up.
    Remove { at: u8, bottom: u8, count: u8 },
    /// One line replaced.
    Edit { at: u8, line: Line },
    /// Symbols cut from a line at `pos`, others put in their place (the
    /// rest of the line moving along).
    Splice {
        at: u8,
        pos: u8,
        cut: u8,
        put: String,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (
            any::<u8>(),
            any::<u8>(),
            proptest::collection::vec(line(), 1..6)
        )
            .prop_map(|(at, bottom, lines)| Change::Insert { at, bottom, lines }),
        (any::<u8>(), any::<u8>(), 1u8..6).prop_map(|(at, bottom, count)| Change::Remove {
            at,
            bottom,
            count
        }),
        (any::<u8>(), line()).prop_map(|(at, line)| Change::Edit { at, line }),
        (any::<u8>(), any::<u8>(), 0u8..8, "[ab │界]{0,8}")
            .prop_map(|(at, pos, cut, put)| Change::Splice { at, pos, cut, put }),
    ]
}

fn render(lines: &[Line], width: u16, x: u16) -> Buffer {
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
    for (y, line) in (0..height).zip(lines) {
        buffer.set_stringn(x, y, &line.text, usize::from(width - x), style(line.style));
    }
    buffer
}

fn apply(lines: &mut [Line], change: &Change) {
    let height = lines.len();
    let blank = Line {
        text: String::new(),
        style: 0,
    };
    match change {
        Change::Insert {
            at,
            bottom,
            lines: new,
        } => {
            let at = usize::from(*at) % height;
            let bottom = (at + usize::from(*bottom) % (height - at)).max(at);
            let band = &mut lines[at..=bottom];
            let shift = new.len().min(band.len());
            band.rotate_right(shift);
            band[..shift].clone_from_slice(&new[..shift]);
        }
        Change::Remove { at, bottom, count } => {
            let at = usize::from(*at) % height;
            let bottom = (at + usize::from(*bottom) % (height - at)).max(at);
            let band = &mut lines[at..=bottom];
            let shift = usize::from(*count).min(band.len());
            band.rotate_left(shift);
            let len = band.len();
            band[len - shift..].fill(blank);
        }
        Change::Edit { at, line } => lines[usize::from(*at) % height] = line.clone(),
        Change::Splice { at, pos, cut, put } => {
            let line = &mut lines[usize::from(*at) % height];
            let chars: Vec<char> = line.text.chars().collect();
            let pos = usize::from(*pos) % (chars.len() + 1);
            let cut = usize::from(*cut).min(chars.len() - pos);
            line.text = chars[..pos]
                .iter()
                .chain(put.chars().collect::<Vec<_>>().iter())
                .chain(&chars[pos + cut..])
                .collect();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the frames — bands shifted either way, lines edited, wide
    /// symbols, styles — the terminal shows each frame exactly after it is
    /// flushed.
    #[test]
    fn the_terminal_shows_every_frame_exactly(
        first in proptest::collection::vec(line(), 12),
        changes in proptest::collection::vec(proptest::collection::vec(change(), 1..4), 1..12),
        x in 0u16..3,
    ) {
        let (width, height) = (24u16, 12u16);
        let (mut terminal, sink) = screen(width, height, Flusher::Scroll);
        let mut vt = Vt::new(width, height);
        let mut lines = first;
        let frame = render(&lines, width, x);
        vt.feed(&draw(&mut terminal, &sink, &frame));
        prop_assert_eq!(vt.mismatch(&frame), None);
        for step in changes {
            for change in &step {
                apply(&mut lines, change);
            }
            let frame = render(&lines, width, x);
            vt.feed(&draw(&mut terminal, &sink, &frame));
            prop_assert_eq!(vt.mismatch(&frame), None, "after {:?}", step);
        }
    }
}

/// Rows leaving from the middle of a table (a filter, a row gone): the
/// rows under them move up by a delete of lines.
#[test]
fn rows_removed_from_the_middle_are_a_scroll_up() {
    let (width, height) = (100, 30);
    let (mut terminal, sink) = screen(width, height, Flusher::Scroll);
    let mut vt = Vt::new(width, height);
    let mut rows: Vec<String> = (0..25).map(row).collect();
    let first = console(width, height, &rows, "status");
    vt.feed(&draw(&mut terminal, &sink, &first));
    rows.drain(5..8);
    let next = console(width, height, &rows, "status");
    let written = draw(&mut terminal, &sink, &next);
    vt.feed(&written);
    assert_eq!(vt.mismatch(&next), None);
    let text = String::from_utf8_lossy(&written);
    assert!(text.contains("\x1b[3M"), "{text:?}");
}

/// A footer that gains a key: the keys after it move right by an insert
/// of characters, and only the new key is written.
#[test]
fn a_footer_that_gains_a_key_slides_the_rest_along() {
    let (width, height) = (100, 5);
    let (mut terminal, sink) = screen(width, height, Flusher::Scroll);
    let mut vt = Vt::new(width, height);
    let key = Style::new()
        .fg(Color::Indexed(75))
        .add_modifier(Modifier::BOLD);
    let hint = Style::new().fg(Color::Indexed(245));
    let footer = |keys: &[(&str, &str)]| {
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
        let mut x = 1;
        for (k, what) in keys {
            buffer.set_string(x, 4, k, key);
            buffer.set_string(x + 2, 4, what, hint);
            x += 2 + u16::try_from(what.len()).unwrap_or(0) + 2;
        }
        buffer
    };
    let short = [
        ("l", "listen"),
        ("x", "clear"),
        ("/", "filter"),
        ("?", "help"),
        ("q", "quit"),
    ];
    let long = [
        ("s", "check signature"),
        ("l", "listen"),
        ("x", "clear"),
        ("/", "filter"),
        ("?", "help"),
        ("q", "quit"),
    ];
    vt.feed(&draw(&mut terminal, &sink, &footer(&short)));
    let written = draw(&mut terminal, &sink, &footer(&long));
    vt.feed(&written);
    assert_eq!(vt.mismatch(&footer(&long)), None);
    let text = String::from_utf8_lossy(&written);
    assert!(text.contains("\x1b[19@"), "{text:?}");
    assert!(written.len() < 60, "{} bytes: {text:?}", written.len());
    let written = draw(&mut terminal, &sink, &footer(&short));
    vt.feed(&written);
    assert_eq!(vt.mismatch(&footer(&short)), None);
    assert!(String::from_utf8_lossy(&written).contains("\x1b[19P"));
}

/// A delete of characters leaves blanks at the end of the row, even where
/// the new row ends with the very symbols deleted.
#[test]
fn a_delete_of_characters_blanks_the_end_of_the_row() {
    let (width, height) = (40, 2);
    let (mut terminal, sink) = screen(width, height, Flusher::Scroll);
    let mut vt = Vt::new(width, height);
    let text = Style::new().fg(Color::Indexed(252));
    let frame = |line: &str| {
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
        buffer.set_string(0, 1, line, text);
        buffer
    };
    let old = "id 0123 abcdefghijklmnopqrstuvwxyz ABCDE";
    let new = "id abcdefghijklmnopqrstuvwxyz ABCDE0123";
    vt.feed(&draw(&mut terminal, &sink, &frame(old)));
    let written = draw(&mut terminal, &sink, &frame(new));
    vt.feed(&written);
    assert!(String::from_utf8_lossy(&written).contains("\x1b[5P"));
    assert_eq!(vt.mismatch(&frame(new)), None);
}

/// One pane's header over another's (a pane switch): whatever slides the
/// backend plans, an insert never puts in more blanks than it moves cells
/// (tmux 3.3 blanks too few then: the model terminal refuses it), and the
/// terminal shows the new header.
#[test]
fn a_header_over_another_slides_only_as_tmux_can() {
    let (width, height) = (120, 3);
    let header = |text: &str| {
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
        buffer.set_string(0, 1, text, Style::new().fg(Color::Indexed(245)));
        buffer
    };
    let events = "TIME UTC TYPE               SESSION / CALL         PER SUBSCRIPTION";
    let subs = "ID       URL                                            EVENTS                                  AGENT    STATE    SECRET";
    for (from, to) in [
        (events, subs),
        (subs, events),
        ("TIME ", subs),
        (subs, "ID"),
    ] {
        let (mut terminal, sink) = screen(width, height, Flusher::Scroll);
        let mut vt = Vt::new(width, height);
        vt.feed(&draw(&mut terminal, &sink, &header(from)));
        vt.feed(&draw(&mut terminal, &sink, &header(to)));
        assert_eq!(vt.mismatch(&header(to)), None, "{from:?} → {to:?}");
    }
}

/// Text from outside drawn by any widget reaches the terminal without its
/// bidirectional overrides, through either flusher (ratatui itself drops
/// control characters, not these).
#[test]
fn reordering_and_control_characters_never_reach_the_terminal() {
    for flusher in [Flusher::Scroll, Flusher::Ratatui] {
        let (mut terminal, sink) = screen(40, 4, flusher);
        let mut frame = Buffer::empty(Rect::new(0, 0, 40, 4));
        frame.set_string(0, 1, "call_abc", Style::new());
        frame[(8, 1)].set_symbol("\u{202E}");
        frame[(9, 1)].set_symbol("d\u{2066}");
        let bytes = String::from_utf8(draw(&mut terminal, &sink, &frame)).expect("UTF-8");
        for unsafe_char in ['\u{202E}', '\u{2066}'] {
            assert!(!bytes.contains(unsafe_char), "{flusher:?}: {bytes:?}");
        }
        assert!(bytes.contains("call_abc"), "{flusher:?}: {bytes:?}");
        assert!(bytes.contains("call_abc d"), "{flusher:?}: {bytes:?}");
    }
}
