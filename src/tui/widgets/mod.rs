//! Drawing pieces shared by the panes: text fields, tables, dialogs, the
//! help overlay, the footer and the status bar. They draw what they are
//! given and hold no state of their own, but for a table's selection and
//! scroll ([`table::TableState`], which the panes own).

pub mod footer;
pub mod help;
pub mod input;
pub mod popup;
pub mod status;
pub mod table;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display columns of `text` (wide characters count two).
pub fn width(text: &str) -> usize {
    Span::raw(text).width()
}

fn char_width(c: char) -> usize {
    let mut buffer = [0u8; 4];
    width(c.encode_utf8(&mut buffer))
}

/// `text` cut to `width` display columns, ending in `…` when cut.
pub fn fit(text: &str, width: usize) -> String {
    if self::width(text) <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w > width - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `text` word-wrapped to `room` columns: the first line after `first`,
/// the others after `rest` (a word longer than a line is cut). Always at
/// least one line.
pub fn wrapped(
    first: &str,
    rest: &str,
    text: &str,
    room: usize,
    style: Style,
) -> Vec<Line<'static>> {
    if text.trim().is_empty() {
        return vec![Line::from(Span::styled(format!("{first}{text}"), style))];
    }
    let mut lines = Vec::new();
    let mut indent = first.to_owned();
    let mut line = String::new();
    let mut push = |indent: &mut String, line: &mut String| {
        lines.push(Line::from(vec![
            Span::styled(std::mem::replace(indent, rest.to_owned()), style),
            Span::styled(std::mem::take(line), style),
        ]));
    };
    for word in text.split(' ') {
        let mut word = word.to_owned();
        loop {
            let avail = room.saturating_sub(width(&indent)).max(8);
            let needed = if line.is_empty() {
                width(&word)
            } else {
                width(&line) + 1 + width(&word)
            };
            if needed <= avail {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&word);
                break;
            }
            if !line.is_empty() {
                push(&mut indent, &mut line);
                continue;
            }
            let head: String = word.chars().take(avail).collect();
            word = word.chars().skip(avail).collect();
            line = head;
            push(&mut indent, &mut line);
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() {
        push(&mut indent, &mut line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn fit_cuts_with_an_ellipsis_only_when_needed() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcdef", 1), "…");
        assert_eq!(fit("abcdef", 0), "");
    }
}
