//! Text fields: feeding keys and pastes to a `tui_input::Input`, and
//! drawing one on a line (plain or masked, with the cursor placed).
//!
//! tui-input finds the cursor's byte by walking the value on every
//! request, so a long value made typing and pasting quadratic. Past
//! [`SHORT_VALUE`] bytes, inserted text goes through [`insert`] (one pass
//! over the value whatever the length of the text) and drawing through
//! [`near_cursor`] (a few screen widths of the value, not all of it).

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::crossterm::event::{Event, KeyEvent};
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use tui_input::backend::crossterm::to_input_request;
use tui_input::{Input, InputRequest};

use crate::tui::theme::{Role, Theme};

/// Values up to this many bytes are edited and drawn by tui-input as is
/// (it also keeps its yank buffer, ctrl-y, across typed characters).
pub(crate) const SHORT_VALUE: usize = 4 * 1024;

/// Types a key into the field; whether the value or cursor changed.
pub(crate) fn type_key(input: &mut Input, key: &KeyEvent) -> bool {
    match to_input_request(&Event::Key(*key)) {
        Some(InputRequest::InsertChar(c)) => insert(input, c.encode_utf8(&mut [0; 4])),
        Some(request) => input.handle(request).is_some(),
        None => false,
    }
}

/// Inserts pasted text at the cursor; line breaks and tabs are dropped
/// (every field is one line, and a secret copied with a newline must still
/// validate).
pub(crate) fn paste(input: &mut Input, text: &str) -> bool {
    let breaks = |c: char| matches!(c, '\n' | '\r' | '\t');
    if text.contains(breaks) {
        insert(input, &text.replace(breaks, ""))
    } else {
        insert(input, text)
    }
}

/// Inserts `text` at the cursor, as is, and puts the cursor after it;
/// whether anything changed. A long value is rebuilt in one pass (its
/// yank buffer is then dropped), so inserting n characters into a value
/// of m bytes costs O(n + m), not O(n × m).
pub(crate) fn insert(input: &mut Input, text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    if input.value().len().saturating_add(text.len()) <= SHORT_VALUE {
        let mut changed = false;
        for c in text.chars() {
            changed |= input.handle(InputRequest::InsertChar(c)).is_some();
        }
        return changed;
    }
    let cursor = input.cursor();
    // `GoToEnd` answers `None` when the cursor is already there: typing at
    // the end (the usual case) needs no walk to find the byte.
    let at_end = input.handle(InputRequest::GoToEnd).is_none();
    let mut value = String::from(std::mem::take(input));
    let byte = if at_end {
        value.len()
    } else {
        byte_index(&value, cursor)
    };
    value.insert_str(byte, text);
    let cursor = cursor.saturating_add(text.chars().count());
    *input = Input::new(value).with_cursor(cursor);
    true
}

/// The byte where character `n` of `s` starts (`s.len()` past the end).
/// Counts character starts 64 bytes at a time, which the compiler
/// vectorises, then walks at most one chunk.
pub(crate) fn byte_index(s: &str, n: usize) -> usize {
    const CHUNK: usize = 64;
    let starts = |bytes: &[u8]| bytes.iter().filter(|b| *b & 0xC0 != 0x80).count();
    let mut left = n;
    let mut start = 0;
    for chunk in s.as_bytes().chunks(CHUNK) {
        let count = starts(chunk);
        if count > left {
            break;
        }
        left -= count;
        start += chunk.len();
    }
    // A chunk may end inside a character already counted: skip its rest.
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..]
        .char_indices()
        .nth(left)
        .map_or(s.len(), |(i, _)| start + i)
}

/// What drawing `input` on `width` columns needs: `input` itself when it
/// is short, else a copy of the characters within four widths of the
/// cursor on either side, the cursor at the same place among them. The
/// visible line is the same; the cost is the width's, not the value's.
pub(crate) fn near_cursor(input: &Input, width: usize) -> Cow<'_, Input> {
    let value = input.value();
    if value.len() <= SHORT_VALUE {
        return Cow::Borrowed(input);
    }
    let reach = width.saturating_mul(4).saturating_add(16);
    let at = byte_index(value, input.cursor());
    let start = value[..at]
        .char_indices()
        .rev()
        .take(reach)
        .last()
        .map_or(at, |(i, _)| i);
    let end = value[at..]
        .char_indices()
        .nth(reach)
        .map_or(value.len(), |(i, _)| at + i);
    let before = value[start..at].chars().count();
    Cow::Owned(Input::new(value[start..end].to_owned()).with_cursor(before))
}

/// How a field shows its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Echo {
    Plain,
    /// One `•` per character: for secrets.
    Masked,
}

/// Draws `input` in `area` (one line), scrolled so the cursor shows; sets
/// the terminal cursor there when `focused`.
pub(crate) fn draw(
    frame: &mut Frame<'_>,
    area: Rect,
    input: &Input,
    echo: Echo,
    style: Style,
    focused: bool,
) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let width = usize::from(area.width.saturating_sub(1)).max(1);
    let near = near_cursor(input, width);
    let input = near.as_ref();
    // `scroll` is in columns: plain text is scrolled by the paragraph (by
    // whole characters, wide ones counting two); a mask has one column per
    // character.
    let scroll = input.visual_scroll(width);
    let (text, columns) = match echo {
        Echo::Plain => (input.value().to_owned(), scroll),
        Echo::Masked => (
            "•".repeat(input.value().chars().count().saturating_sub(scroll)),
            0,
        ),
    };
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(text, style)))
            .scroll((0, u16::try_from(columns).unwrap_or(u16::MAX))),
        Rect { height: 1, ..area },
    );
    if focused {
        let offset = input.visual_cursor().saturating_sub(scroll);
        let x = area
            .x
            .saturating_add(u16::try_from(offset).unwrap_or(u16::MAX))
            .min(area.right().saturating_sub(1));
        frame.set_cursor_position(Position::new(x, area.y));
    }
}

/// An accented `label` and, after it, `input` focused and plain in the
/// selection style (the panes' one-line prompts).
pub(crate) fn draw_prompt(
    frame: &mut Frame<'_>,
    area: Rect,
    label: &str,
    input: &Input,
    theme: &Theme,
) {
    let [label_area, input_area] = Layout::horizontal([
        Constraint::Length(u16::try_from(label.len()).unwrap_or(u16::MAX)),
        Constraint::Min(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(Span::styled(label, theme.style(Role::Accent))),
        label_area,
    );
    draw(
        frame,
        input_area,
        input,
        Echo::Plain,
        theme.style(Role::Fg).patch(theme.selection()),
        true,
    );
}

/// Row `index` of a form drawn one field per line in `area`: the cells
/// of its label and of its field, or `None` below the bottom.
pub(crate) fn form_row(area: Rect, index: usize, label_width: u16) -> Option<[Rect; 2]> {
    let y = area.y.saturating_add(u16::try_from(index).ok()?);
    if y >= area.bottom() {
        return None;
    }
    let line = Rect {
        y,
        height: 1,
        ..area
    };
    Some(Layout::horizontal([Constraint::Length(label_width), Constraint::Min(1)]).areas(line))
}

/// A form field's label: marked `›` and accented while `active`, muted
/// otherwise.
pub(crate) fn draw_label(
    frame: &mut Frame<'_>,
    area: Rect,
    label: &str,
    active: bool,
    theme: &Theme,
) {
    let (marker, role) = if active {
        ("›", Role::Accent)
    } else {
        (" ", Role::Muted)
    };
    frame.render_widget(
        Paragraph::new(Span::styled(format!("{marker} {label}"), theme.style(role))),
        area,
    );
}

/// The field after `current` in `order` (before it unless `forward`),
/// wrapping round; counted from the first when `current` is not there.
pub(crate) fn cycle<T: Copy + PartialEq>(order: &[T], current: T, forward: bool) -> T {
    let position = order.iter().position(|item| *item == current).unwrap_or(0);
    let step = if forward { 1 } else { order.len() - 1 };
    order[(position + step) % order.len()]
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyModifiers};

    use super::*;

    /// What tui-input makes of `text` typed character by character.
    fn typed_one_by_one(mut input: Input, text: &str) -> Input {
        for c in text.chars() {
            input.handle(InputRequest::InsertChar(c));
        }
        input
    }

    fn long_mixed() -> String {
        "aé€😀\u{301}b".repeat(SHORT_VALUE / 4)
    }

    #[test]
    fn byte_index_finds_every_character_of_mixed_text() {
        let text = long_mixed();
        let chars = text.chars().count();
        for n in (0..chars).step_by(7).chain([chars, chars + 5]) {
            let expected = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            assert_eq!(byte_index(&text, n), expected, "character {n}");
        }
        assert_eq!(byte_index("", 3), 0);
    }

    proptest::proptest! {
        #[test]
        fn byte_index_agrees_with_char_indices(text in "\\PC{0,300}", n in 0usize..320) {
            let expected = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            proptest::prop_assert_eq!(byte_index(&text, n), expected);
        }
    }

    #[test]
    fn a_long_insertion_ends_as_typing_it_would() {
        let base = long_mixed();
        let pasted = "xé😀y".repeat(1000);
        // At the end, in the middle and at the start of a long value.
        for cursor in [usize::MAX, 1234, 0] {
            let start = Input::new(base.clone()).with_cursor(cursor);
            let mut fast = start.clone();
            assert!(insert(&mut fast, &pasted));
            let slow = typed_one_by_one(start, &pasted);
            assert_eq!(fast.value(), slow.value(), "cursor {cursor}");
            assert_eq!(fast.cursor(), slow.cursor(), "cursor {cursor}");
        }
        let mut empty = Input::new(base.clone());
        assert!(!insert(&mut empty, ""));
        assert_eq!(empty.value(), base);
    }

    #[test]
    fn a_typed_key_and_a_paste_go_where_the_cursor_is() {
        let mut input = Input::new("b".repeat(SHORT_VALUE * 2)).with_cursor(3);
        let key = KeyEvent::new(KeyCode::Char('é'), KeyModifiers::NONE);
        assert!(type_key(&mut input, &key));
        assert!(paste(&mut input, "x\r\ny\tz"));
        assert_eq!(&input.value()[..10], "bbbéxyzbb");
        assert_eq!(input.cursor(), 7);
        assert_eq!(input.value().chars().count(), SHORT_VALUE * 2 + 4);
    }

    /// The line `paint` draws on 30 columns, and where it puts the cursor.
    fn drawn(paint: impl Fn(&mut Frame<'_>, Rect)) -> (Vec<String>, Position) {
        let mut terminal = Terminal::new(TestBackend::new(30, 1)).expect("a test terminal");
        terminal
            .draw(|frame| paint(frame, frame.area()))
            .expect("drawn");
        let cells = terminal.backend().buffer().content();
        let line = cells.iter().map(|cell| cell.symbol().to_owned()).collect();
        (line, terminal.get_cursor_position().expect("a cursor"))
    }

    /// [`draw`] without [`near_cursor`]: the whole value scrolled.
    fn draw_whole(frame: &mut Frame<'_>, area: Rect, input: &Input, echo: Echo) {
        let width = usize::from(area.width.saturating_sub(1)).max(1);
        let scroll = input.visual_scroll(width);
        let (text, columns) = match echo {
            Echo::Plain => (input.value().to_owned(), scroll),
            Echo::Masked => (
                "•".repeat(input.value().chars().count().saturating_sub(scroll)),
                0,
            ),
        };
        let columns = u16::try_from(columns).expect("a test value under 65,536 columns");
        frame.render_widget(Paragraph::new(Line::from(text)).scroll((0, columns)), area);
        let offset = input.visual_cursor().saturating_sub(scroll);
        let x = u16::try_from(offset)
            .unwrap_or(u16::MAX)
            .min(area.right() - 1);
        frame.set_cursor_position(Position::new(x, area.y));
    }

    #[test]
    fn wide_characters_scroll_by_their_columns() {
        // 80 columns of 40 characters: the end shows, the cursor after it
        // (skipping 51 characters for 51 columns showed nothing).
        let input = Input::new("漢".repeat(40));
        let (line, cursor) =
            drawn(|frame, area| draw(frame, area, &input, Echo::Plain, Style::new(), true));
        assert_eq!(line.iter().filter(|cell| *cell == "漢").count(), 14);
        assert_eq!(cursor, Position::new(28, 0));
    }

    #[test]
    fn a_long_value_draws_as_the_whole_value_would() {
        let text = format!("{}{}", "0123456789".repeat(SHORT_VALUE), long_mixed());
        let chars = text.chars().count();
        for cursor in [
            chars,
            0,
            5,
            60,
            SHORT_VALUE * 5,
            SHORT_VALUE * 10 + 3,
            chars - 2,
        ] {
            let input = Input::new(text.clone()).with_cursor(cursor);
            let near = near_cursor(&input, 29);
            assert!(matches!(near, Cow::Owned(_)));
            assert!(near.value().chars().count() <= 2 * (29 * 4 + 16));
            for echo in [Echo::Plain, Echo::Masked] {
                assert_eq!(
                    drawn(|frame, area| draw(frame, area, &input, echo, Style::new(), true)),
                    drawn(|frame, area| draw_whole(frame, area, &input, echo)),
                    "cursor {cursor}, {echo:?}"
                );
            }
        }
        let short = Input::new("short".into());
        assert!(matches!(near_cursor(&short, 10), Cow::Borrowed(_)));
    }
}
