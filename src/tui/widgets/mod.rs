//! Drawing pieces shared by the panes: text fields, tables, dialogs, the
//! help overlay and the footer. They draw what they are
//! given and hold no state of their own, but for a table's selection and
//! scroll ([`table::TableState`]) and its filter, sort and order
//! ([`table_view::TableView`]), which the panes own.

pub(crate) mod age;
pub(crate) mod bar_rows;
pub(crate) mod footer;
pub(crate) mod help;
pub(crate) mod input;
pub(crate) mod popup;

pub(crate) mod table;
pub(crate) mod table_view;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display columns of `text` (wide characters count two).
pub(crate) fn width(text: &str) -> usize {
    Span::raw(text).width()
}

fn char_width(c: char) -> usize {
    let mut buffer = [0u8; 4];
    width(c.encode_utf8(&mut buffer))
}

/// A time in Unix milliseconds as `HH:MM:SS` UTC (the clock the store's
/// and the platform's times are shown in), `—` when out of range.
pub(crate) fn utc_clock(ms: i64) -> String {
    earshot_core::clock_text::utc_clock(ms)
}

/// `text` cut to `width` display columns, ending in `…` when cut.
pub(crate) fn fit(text: &str, width: usize) -> String {
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

/// A line of styled spans cut to `width` columns, the last kept span
/// ending in `…` when anything was cut (styles kept).
pub(crate) fn fit_line(line: Line<'static>, width: usize) -> Line<'static> {
    let total: usize = line
        .spans
        .iter()
        .map(|span| self::width(&span.content))
        .sum();
    if total <= width {
        return line;
    }
    let mut room = width;
    let mut spans = Vec::new();
    for span in line.spans {
        let span_width = self::width(&span.content);
        if span_width < room {
            room -= span_width;
            spans.push(span);
            continue;
        }
        // This span reaches the edge, and more follows it (the line is
        // wider than `width`): it ends in the mark.
        let cut = if span_width > room {
            fit(&span.content, room)
        } else {
            fit(&format!("{}…", span.content), room)
        };
        spans.push(Span::styled(cut, span.style));
        break;
    }
    Line::from(spans).style(line.style)
}

/// A URL cut to `width` columns the way that keeps receivers apart: the
/// origin (scheme, host, port) whole as long as it fits, then the end of
/// the path, with `…` where the middle was cut (`http://127.0.0.1:40591/…
/// hooks`); narrower, the host without the scheme, then the host alone
/// with its port kept (`…0.0.1:40591`). Not a URL: [`fit`].
pub(crate) fn fit_url(url: &str, width: usize) -> String {
    if self::width(url) <= width {
        return url.to_owned();
    }
    let Some(scheme_end) = url.find("://") else {
        return fit(url, width);
    };
    let host_start = scheme_end + 3;
    let origin_end = url[host_start..]
        .find('/')
        .map_or(url.len(), |slash| host_start + slash);
    let path = &url[origin_end..];
    // The origin (else the host alone), `/…`, and a few columns of the
    // path's end; then the host alone; then the host cut at the front when
    // it has a port (what tells local receivers apart), else at the end.
    for origin in [&url[..origin_end], &url[host_start..origin_end]] {
        let origin_w = self::width(origin);
        if origin_w + self::width(path) <= width {
            return format!("{origin}{path}");
        }
        if !path.is_empty() && origin_w + 2 + 4 <= width {
            let end = keep_end(path, width - origin_w - 1);
            return format!("{origin}/{end}");
        }
    }
    let host = &url[host_start..origin_end];
    if self::width(host) + 2 <= width {
        return format!("{host}/…");
    }
    if host.contains(':') {
        keep_end(host, width)
    } else {
        fit(host, width)
    }
}

/// `text` whole if it fits, else `…` and as much of its end as fits.
fn keep_end(text: &str, width: usize) -> String {
    if self::width(text) <= width {
        return text.to_owned();
    }
    let mut end = String::new();
    let mut used = 1;
    for c in text.chars().rev() {
        let w = char_width(c);
        if used + w > width {
            break;
        }
        used += w;
        end.insert(0, c);
    }
    format!("…{end}")
}

/// How a column of ids in 8 characters names each so that no two look
/// alike: the first eight characters, or, when two distinct ids share
/// those (agents numbered at the end, say), `…` and the last seven.
pub(crate) fn distinct_short<'a>(ids: impl Iterator<Item = &'a str>) -> impl Fn(&str) -> String {
    use std::collections::BTreeSet;
    let distinct: BTreeSet<&str> = ids.collect();
    let prefixes: BTreeSet<&str> = distinct
        .iter()
        .map(|id| earshot_core::api::short_id(id))
        .collect();
    let by_tail = prefixes.len() < distinct.len();
    move |id: &str| {
        let chars = id.chars().count();
        if by_tail && chars > 8 {
            let tail: String = id.chars().skip(chars - 7).collect();
            format!("…{tail}")
        } else {
            earshot_core::api::short_id(id).to_owned()
        }
    }
}

/// `text` cut into lines of at most `width` display columns at spaces (a
/// word longer than a line is cut where it must be; wide characters count
/// two). Always at least one line.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<String> {
    wrap_with(textwrap::Options::new(width.max(1)), text)
}

/// `text` word-wrapped to `room` columns: the first line after `first`,
/// the others after `rest` (a word longer than a line is cut; every line
/// leaves at least 8 columns for the text). Always at least one line.
pub(crate) fn wrapped(
    first: &str,
    rest: &str,
    text: &str,
    room: usize,
    style: Style,
) -> Vec<Line<'static>> {
    if text.trim().is_empty() {
        return vec![Line::from(Span::styled(format!("{first}{text}"), style))];
    }
    let room = room.max(width(first).max(width(rest)) + 8);
    let options = textwrap::Options::new(room)
        .initial_indent(first)
        .subsequent_indent(rest);
    wrap_with(options, text)
        .into_iter()
        .map(|line| Line::from(Span::styled(line, style)))
        .collect()
}

/// Greedy wrapping at ASCII spaces by display width, long words broken.
fn wrap_with(options: textwrap::Options<'_>, text: &str) -> Vec<String> {
    let options = options
        .break_words(true)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    let lines: Vec<String> = textwrap::wrap(text, options)
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::{Line, Span, Style, distinct_short, fit, fit_line, width, wrap_words, wrapped};

    #[test]
    fn a_line_of_spans_is_cut_with_a_mark_and_keeps_its_styles() {
        let bold = Style::new().bold();
        let line = || Line::from(vec![Span::raw("abc "), Span::styled("defgh", bold)]);
        let text = |line: &Line<'_>| {
            line.spans
                .iter()
                .map(|s| s.content.to_string())
                .collect::<String>()
        };
        assert_eq!(text(&fit_line(line(), 9)), "abc defgh", "fits: untouched");
        let cut = fit_line(line(), 7);
        assert_eq!(text(&cut), "abc de…");
        assert_eq!(cut.spans[1].style, bold);
        assert_eq!(text(&fit_line(line(), 4)), "abc…", "cut at a span's edge");
        assert_eq!(text(&fit_line(line(), 0)), "");
    }

    #[test]
    fn ids_sharing_their_first_eight_characters_are_named_by_their_end() {
        let agents = [
            "0000de30-0000-4000-8000-000000000001",
            "0000de30-0000-4000-8000-000000000002",
            "0000de30-0000-4000-8000-000000000002",
        ];
        let name = distinct_short(agents.iter().copied());
        assert_eq!(name(agents[0]), "…0000001");
        assert_eq!(name(agents[1]), "…0000002");
        let apart = ["5d0c7e1a-0000", "9f2e0b3c-0000"];
        let name = distinct_short(apart.iter().copied());
        assert_eq!(name(apart[0]), "5d0c7e1a");
        assert_eq!(width(&name(agents[0])), 8, "as wide as a short id");
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_are_cut() {
        assert_eq!(wrap_words("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap_words("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_words("", 4), [""]);
    }

    #[test]
    fn wrapping_counts_display_columns_not_characters() {
        // Each of these characters takes two columns.
        assert_eq!(wrap_words("漢字漢字", 4), ["漢字", "漢字"]);
        assert_eq!(wrap_words("日本 語です", 6), ["日本", "語です"]);
        let lines = wrapped("- ", "  ", "漢字漢字漢字漢字漢字漢字", 12, Style::default());
        for line in &lines {
            assert!(line.width() <= 12, "{line:?} is wider than 12");
        }
        let text: String = lines.iter().map(|line| line.to_string()).collect();
        assert_eq!(width(&text), 2 + 2 * (lines.len() - 1) + 24);
    }

    #[test]
    fn fit_cuts_with_an_ellipsis_only_when_needed() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcdef", 1), "…");
        assert_eq!(fit("abcdef", 0), "");
    }
}
