//! What text from outside (the store, the platform, the network, argv)
//! may reach an operator's terminal: the one rule the command line's
//! output and the console's screen share.
//!
//! Unsafe are control characters other than newline and tab (ESC starts
//! the sequences that move the cursor, set the clipboard with OSC 52 or
//! hide a link with OSC 8; C1 controls do the same in one byte) and the
//! invisible format characters that reorder or hide what is shown: the
//! bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069),
//! the directional marks, zero-width characters and the byte order mark.
//! A right-to-left override (U+202E) inside a stored id shows the rest of
//! the line reversed.

use std::borrow::Cow;

/// Whether `c` must not reach the terminal as itself.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `text` with every unsafe character written as an escape (`\x{1b}`,
/// `\x{202e}`), so it is seen, not obeyed.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return text.into();
    }
    let mut clean = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            clean.push_str(&format!("\\x{{{:x}}}", u32::from(c)));
        } else {
            clean.push(c);
        }
    }
    clean.into()
}

/// `text` without its unsafe characters (a screen cell, where an escape
/// would not fit).
pub fn stripped(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_unsafe) {
        text.chars()
            .filter(|c| !is_unsafe(*c))
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_reordering_characters_are_escaped() {
        assert_eq!(escaped("call_abc\u{202E}fed"), "call_abc\\x{202e}fed");
        assert_eq!(escaped("a\u{1b}]52;c;x\u{7}b"), "a\\x{1b}]52;c;x\\x{7}b");
        assert_eq!(escaped("\u{9b}31m"), "\\x{9b}31m");
        assert_eq!(escaped("x\u{2066}y\u{2069}"), "x\\x{2066}y\\x{2069}");
        assert_eq!(escaped("x\u{200F}y\u{FEFF}"), "x\\x{200f}y\\x{feff}");
        assert_eq!(stripped("ab\u{202E}c\u{1b}"), "abc");
    }

    #[test]
    fn ordinary_text_is_kept_as_it_is() {
        for text in [
            "ses_ÉTÉ 2026",
            "line\nnext\tcol",
            "通話 📞",
            "שלום",
            "e\u{301}",
        ] {
            assert_eq!(escaped(text), text);
            assert!(matches!(escaped(text), Cow::Borrowed(_)));
        }
    }
}
