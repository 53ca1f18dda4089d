//! A labelled row of bars, one character per time bucket, as the Jobs
//! chart and the Pulse pane draw their series: each bar's height against
//! the row's full value (`▁…█`, rounded up so one is never an empty-looking
//! bar, `·` for none; `history::sparkline`'s glyphs), the row's label
//! before and its figures after, so the mono theme tells rows apart by
//! label and glyph.

use ratatui::text::{Line, Span};

use crate::tui::theme::{Role, Theme};
use earshot_core::history::sparkline::{Glyphs, Mark};

/// Width of a row's label.
pub(crate) const LABEL_W: usize = 13;
/// Bar heights of the glyph set.
const LEVELS: usize = 8;

/// A bar of `value` against `full`, rounded up (one is never an
/// empty-looking bar); over `full` it is full.
pub(crate) fn bar(value: u64, full: u64) -> Mark {
    if value == 0 {
        return Mark::Empty;
    }
    let full = full.max(value).max(1);
    let levels = LEVELS as u64;
    let level = (value * levels).div_ceil(full);
    Mark::Delivered(usize::try_from(level.max(1)).unwrap_or(1))
}

/// `values` as bars against `full` (a bar of full height) in `role`, `·`
/// (muted) for none.
pub(crate) fn bars(values: &[u32], full: u32, role: Role, theme: &Theme) -> Vec<Span<'static>> {
    values
        .iter()
        .map(|&value| {
            let glyph = Glyphs::Unicode.of(bar(u64::from(value), u64::from(full)));
            let role = if value == 0 { Role::Muted } else { role };
            Span::styled(glyph.to_string(), theme.style(role))
        })
        .collect()
}

/// A row: its label (muted), its bars, then its figures.
pub(crate) fn row(
    label: &str,
    bars: Vec<Span<'static>>,
    value: String,
    theme: &Theme,
) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!(" {label:<w$}", w = LABEL_W - 1),
        theme.style(Role::Muted),
    )];
    spans.extend(bars);
    spans.push(Span::styled(format!("  {value}"), theme.style(Role::Fg)));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_is_full_at_the_limit_and_never_empty_for_one() {
        assert_eq!(bar(20, 20), Mark::Delivered(8));
        assert_eq!(bar(1, 200), Mark::Delivered(1));
        assert_eq!(bar(0, 20), Mark::Empty);
        assert_eq!(bar(30, 20), Mark::Delivered(8), "over the limit: full");
    }
}
