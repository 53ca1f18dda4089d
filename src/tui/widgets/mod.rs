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

use ratatui::text::Span;

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
