//! Drawing the Pulse pane: a title with the read's age, then one small
//! chart per figure, each a header (what it counts, its span and bucket)
//! and labelled rows of bars (`widgets::bar_rows`) ending in the current
//! value and its unit. Narrower than the buckets, runs of minutes merge
//! (summed, `history::sparkline::merged`) and sampled series keep their
//! newest; a bucket not sampled reads `?`, none `·`. Blank lines between
//! the charts only where the height allows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::data::{HOURS, MINUTES, PulseData};
use super::{EVERY, PulsePane};
use crate::tui::kernel::store::CONSOLE_SWEEP_BUDGET;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::bar_rows::{LABEL_W, bar, bars, row};
use crate::tui::widgets::{age, utc_clock};
use earshot_core::duration_text;
use earshot_core::history::sparkline::{self, Glyphs, Mark};
use earshot_core::store::outcomes::EventTotals;

/// Width kept for a row's figures after its bars.
const VALUE_W: usize = 36;
/// Cells a row may have: a whole number of minutes each, so every row of
/// the pane has the same width.
const CELLS: [usize; 8] = [60, 30, 20, 15, 12, 10, 6, 5];
/// Lines of the charts without blank lines between them.
const LINES: u16 = 13;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &PulsePane, theme: &Theme) {
    let room = usize::from(area.width).saturating_sub(LABEL_W + VALUE_W);
    let cells = CELLS
        .into_iter()
        .find(|cells| *cells <= room)
        .unwrap_or(CELLS[CELLS.len() - 1]);
    let spaced = area.height > LINES + 4;
    let mut lines = vec![title(pane, theme)];
    let charts = [
        events(pane, cells, theme),
        in_flight(pane, cells, theme),
        filed(pane, cells, theme),
        sweep(pane, cells, theme),
    ];
    for chart in charts {
        if spaced {
            lines.push(Line::default());
        }
        lines.extend(chart);
    }
    lines.push(Line::from(Span::styled(
        " ▁…█ against the row's most · · none · ? not sampled (before the pane opened)",
        theme.style(Role::Muted),
    )));
    frame.render_widget(Paragraph::new(lines).style(theme.base()), area);
}

fn title(pane: &PulsePane, theme: &Theme) -> Line<'static> {
    let mut spans = vec![
        Span::styled(" Pulse", theme.style(Role::Accent)),
        Span::styled(
            "  the whole account, from the store",
            theme.style(Role::Muted),
        ),
    ];
    spans.extend(age::spans(&pane.data, pane.now, EVERY, theme));
    if !pane.data.loaded() && pane.data.error().is_none() {
        spans.push(Span::styled(" · reading…", theme.style(Role::Muted)));
    }
    Line::from(spans)
}

fn header(text: String, theme: &Theme) -> Line<'static> {
    Line::from(Span::styled(format!(" {text}"), theme.style(Role::Accent)))
}

/// The loaded read, if any.
fn loaded(pane: &PulsePane) -> Option<&PulseData> {
    pane.data.loaded().then(|| pane.data.value())
}

fn count(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// One outcome's count in a bucket.
type Count = fn(&EventTotals) -> i64;

/// Events per minute of the last hour, a row per outcome.
fn events(pane: &PulsePane, cells: usize, theme: &Theme) -> Vec<Line<'static>> {
    let (merged, per_cell) = match loaded(pane) {
        Some(data) => sparkline::merged(&data.minutes, cells),
        None => (Vec::new(), 1),
    };
    let mut lines = vec![header(
        format!(
            "events per minute, by outcome now · last {} min, one per {}",
            MINUTES,
            duration_text::of_secs(60 * per_cell as u64)
        ),
        theme,
    )];
    let outcomes: [(&str, Count, Role); 4] = [
        ("delivered", |b| b.delivered, Role::Ok),
        ("missed", |b| b.missed, Role::Error),
        ("recovered", |b| b.recovered, Role::Accent),
        ("pending", |b| b.pending, Role::Warn),
    ];
    for (label, of, role) in outcomes {
        let Some(data) = loaded(pane) else {
            lines.push(row(
                label,
                Vec::new(),
                "unknown: not read yet".into(),
                theme,
            ));
            continue;
        };
        let values: Vec<u32> = merged.iter().map(|bucket| count(of(bucket))).collect();
        let most = values.iter().copied().max().unwrap_or(0);
        // The newest minute, under way, is the chart's last bar: its
        // figure is the same minute's count so far.
        let now = data.minutes.last().map_or(0, of);
        let hour: i64 = data.minutes.iter().map(of).sum();
        lines.push(row(
            label,
            bars(&values, most, role, theme),
            format!("{now} this minute · {hour} in 60 min"),
            theme,
        ));
    }
    lines
}

/// `samples`' newest `cells`, `?` before the first; as bars in `role`.
fn sampled(
    samples: &[u32],
    full: u32,
    cells: usize,
    role: Role,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let kept = &samples[samples.len().saturating_sub(cells)..];
    let unknown = Span::styled(
        Glyphs::Unicode.of(Mark::Unknown).to_string(),
        theme.style(Role::Muted),
    );
    let mut spans = vec![unknown; cells - kept.len()];
    spans.extend(bars(kept, full, role, theme));
    spans
}

/// Deliveries in flight, one sample a read.
fn in_flight(pane: &PulsePane, cells: usize, theme: &Theme) -> Vec<Line<'static>> {
    let samples: Vec<u32> = pane.in_flight.iter().map(|&n| count(n)).collect();
    let most = samples.iter().copied().max().unwrap_or(0);
    let value = match samples.last() {
        Some(now) => format!("{now} now · most {most} · events pending"),
        None => "unknown: not read yet".into(),
    };
    vec![
        header(
            format!(
                "deliveries in flight (an attempt or a retry to come) · one sample every {}",
                duration_text::of(EVERY)
            ),
            theme,
        ),
        row(
            "in flight",
            sampled(&samples, most, cells, Role::Warn, theme),
            value,
            theme,
        ),
    ]
}

/// The observer's filing per hour of the last day.
fn filed(pane: &PulsePane, cells: usize, theme: &Theme) -> Vec<Line<'static>> {
    let header = header(
        format!("observer filing per hour · last {HOURS} h, one per 1 h"),
        theme,
    );
    let Some(data) = loaded(pane) else {
        return vec![
            header,
            row("filed", Vec::new(), "unknown: not read yet".into(), theme),
        ];
    };
    let values: Vec<u32> = data.filed.iter().map(|&n| count(n)).collect();
    let kept = &values[values.len().saturating_sub(cells)..];
    let most = kept.iter().copied().max().unwrap_or(0);
    // Right-aligned with the rows above: blank before the day charted.
    let mut spans = vec![Span::raw(" "); cells.saturating_sub(kept.len())];
    spans.extend(bars(kept, most, Role::Accent, theme));
    let now = values.last().copied().unwrap_or(0);
    let newest = match data.newest_filed_ms {
        Some(at) => format!("newest {}", utc_clock(at)),
        None => "none filed yet".into(),
    };
    vec![
        header,
        row(
            "filed",
            spans,
            format!("{now}/h this hour · {newest}"),
            theme,
        ),
    ]
}

/// Each sweep's requests against its budget.
fn sweep(pane: &PulsePane, cells: usize, theme: &Theme) -> Vec<Line<'static>> {
    let budget = u32::try_from(CONSOLE_SWEEP_BUDGET).unwrap_or(u32::MAX);
    let used: Vec<u32> = pane
        .sweeps
        .iter()
        .map(|&(requests, _)| u32::try_from(requests).unwrap_or(u32::MAX))
        .collect();
    let kept = &used[used.len().saturating_sub(cells)..];
    let mut spans = vec![
        Span::styled(
            Glyphs::Unicode.of(Mark::Unknown).to_string(),
            theme.style(Role::Muted)
        );
        cells - kept.len()
    ];
    spans.extend(kept.iter().map(|&requests| {
        let ratio = f64::from(requests) / f64::from(budget.max(1));
        let role = if ratio >= 0.9 {
            Role::Error
        } else if ratio >= 0.7 {
            Role::Warn
        } else {
            Role::Ok
        };
        Span::styled(
            Glyphs::Unicode
                .of(bar(u64::from(requests), u64::from(budget)))
                .to_string(),
            theme.style(role),
        )
    }));
    let value = match (pane.sweeps.back(), pane.swept_at, &pane.sweep_error) {
        (_, Some(at), Some(why)) => format!("failed {}: {why}", age::ago(at, pane.now)),
        (Some((requests, left)), Some(at), None) => format!(
            "{requests}/{budget} a sweep · {left} left · {}",
            age::ago(at, pane.now)
        ),
        _ => "unknown: no sweep yet".into(),
    };
    vec![
        header(
            format!(
                "sweep requests against its budget · {budget} a sweep (█), one every {}",
                duration_text::of(EVERY)
            ),
            theme,
        ),
        row("requests", spans, value, theme),
    ]
}
