//! Drawing the Probe pane: the title, the form (file, instruction), the
//! region checkboxes, then the latest run's results: one column per
//! region when each gets [`MIN_COLUMN`] cells, else the regions stacked
//! (scrolled together either way). Text wraps; a word longer than a line
//! is cut. Reads state only.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::{Call, Field, ProbePane, RegionRun, Run};
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::{fit, wrapped};
use earshot_core::api::Region;
use earshot_core::api::types::dictation::{Dictation, SyncTranscript};
use earshot_core::duration_text;

/// Width of the form's label column.
const LABEL_W: u16 = 14;
/// The narrowest column regions are drawn side by side in.
pub(crate) const MIN_COLUMN: u16 = 34;
/// Indent of a result's value under its label (`  llm_error `).
const VALUE_INDENT: usize = 12;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    let [title, form, regions, results] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(area);
    draw_title(frame, title, pane, theme);
    draw_form(frame, form, pane, theme);
    draw_regions(frame, regions, pane, theme);
    draw_results(frame, results, pane, theme);
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    let mut spans = vec![Span::styled(" Probe", theme.style(Role::Accent))];
    if pane.editing {
        spans.push(Span::styled(" · editing", theme.style(Role::Warn)));
    }
    if let Some(run) = pane.run.as_ref().filter(|run| run.running()) {
        let (done, all) = run.progress();
        spans.push(Span::styled(
            format!(" · running, {done} of {all} answered"),
            theme.style(Role::Warn),
        ));
    }
    // A probe is run by hand: its results carry the time they were taken.
    if let Some(at) = pane.run.as_ref().and_then(|run| run.finished_ms) {
        spans.push(Span::styled(
            format!(
                " · results of {} UTC",
                earshot_core::clock_text::utc_clock(at)
            ),
            theme.style(Role::Fg),
        ));
    }
    spans.push(Span::styled(
        "  dictation and sync in each region, side by side · changes nothing",
        theme.style(Role::Muted),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

/// What an empty field says when it does not have the keyboard.
fn placeholder(field: Field) -> &'static str {
    match field {
        Field::File => "a WAV file of at most 2 min (press e to type its path; ~/ works)",
        Field::Instruction => "optional llm_instruction: replaces the rewrite's cleanup task",
    }
}

fn draw_form(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    for (index, field_id) in Field::ORDER.into_iter().enumerate() {
        let Some([label_area, input_area]) = field::form_row(area, index, LABEL_W) else {
            break;
        };
        let typing = pane.editing && pane.focus == field_id;
        field::draw_label(frame, label_area, field_id.label(), typing, theme);
        let input = pane.input(field_id);
        if typing {
            let style = theme.style(Role::Fg).patch(theme.selection());
            field::draw(frame, input_area, input, Echo::Plain, style, true);
        } else {
            let (shown, style) = if input.value().is_empty() {
                (placeholder(field_id), theme.style(Role::Muted))
            } else {
                (input.value(), theme.style(Role::Fg))
            };
            let room = usize::from(input_area.width.saturating_sub(1));
            frame.render_widget(
                Paragraph::new(Span::styled(fit(shown, room), style)),
                input_area,
            );
        }
    }
}

fn draw_regions(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let mut spans = vec![Span::styled(
        format!("  {:<width$}", "regions", width = usize::from(LABEL_W) - 2),
        muted,
    )];
    for (index, choice) in pane.regions.iter().enumerate() {
        let mark = if choice.checked { "[x]" } else { "[ ]" };
        let mut style = if choice.checked {
            theme.style(Role::Fg)
        } else {
            muted
        };
        if index == pane.region_cursor && !pane.editing {
            style = style.patch(theme.selection());
        }
        spans.push(Span::styled(format!("{mark} {}", choice.region), style));
        spans.push(Span::raw("  "));
    }
    spans.push(Span::styled("←→ pick · space check", muted));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

fn draw_results(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    let mut block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(" results ", theme.style(Role::Accent)));
    let inner = block.inner(area);
    let Some(run) = &pane.run else {
        frame.render_widget(block.style(theme.base()), area);
        draw_waiting(frame, inner, pane, theme);
        return;
    };
    let columns = layout_results(inner, run, theme);
    let total = columns
        .iter()
        .map(|(_, lines)| lines.len())
        .max()
        .unwrap_or(0);
    let height = usize::from(inner.height);
    let scroll = usize::from(pane.scroll).min(total.saturating_sub(height));
    if total > height {
        let last = (scroll + height).min(total);
        block = block.title_top(
            Line::from(Span::styled(
                format!(" lines {}–{last} of {total} · ↑↓ scroll ", scroll + 1),
                theme.style(Role::Muted),
            ))
            .right_aligned(),
        );
    }
    frame.render_widget(block.style(theme.base()), area);
    let scroll = u16::try_from(scroll).unwrap_or(u16::MAX);
    for (column, lines) in columns {
        frame.render_widget(
            Paragraph::new(lines)
                .style(theme.base())
                .scroll((scroll, 0)),
            column,
        );
    }
}

fn draw_waiting(frame: &mut Frame<'_>, area: Rect, pane: &ProbePane, theme: &Theme) {
    let regions: Vec<&str> = pane
        .checked_regions()
        .into_iter()
        .map(Region::as_str)
        .collect();
    let text = if pane.file.value().trim().is_empty() {
        "type a WAV file's path (e), then press enter: dictation and sync run in every checked \
         region at once"
            .to_owned()
    } else {
        format!(
            "press enter to send the file to dictation and sync in {} at once: the text, the \
             rewrite, the server's timings and the round trip measured here, side by side",
            regions.join(", ")
        )
    };
    let lines = wrapped(
        "  ",
        "  ",
        &text,
        usize::from(area.width),
        theme.style(Role::Muted),
    );
    frame.render_widget(Paragraph::new(lines).style(theme.base()), area);
}

/// Where each region's lines go: one column per region, a one-cell gap
/// between them, when each gets [`MIN_COLUMN`] cells; else one column
/// with the regions one under the other, a blank line between them.
fn layout_results(area: Rect, run: &Run, theme: &Theme) -> Vec<(Rect, Vec<Line<'static>>)> {
    if area.width == 0 || area.height == 0 {
        return Vec::new();
    }
    let count = u16::try_from(run.regions.len().max(1)).unwrap_or(1);
    if count == 1 || area.width / count >= MIN_COLUMN {
        let columns = Layout::horizontal(
            run.regions
                .iter()
                .map(|_| Constraint::Ratio(1, u32::from(count)))
                .collect::<Vec<_>>(),
        )
        .spacing(1)
        .split(area);
        return run
            .regions
            .iter()
            .zip(columns.iter())
            .map(|(region, column)| {
                (
                    *column,
                    region_lines(region, usize::from(column.width), theme),
                )
            })
            .collect();
    }
    let mut lines = Vec::new();
    for (index, region) in run.regions.iter().enumerate() {
        if index > 0 {
            lines.push(Line::default());
        }
        lines.extend(region_lines(region, usize::from(area.width), theme));
    }
    vec![(area, lines)]
}

/// A region's results in `room` columns.
pub(crate) fn region_lines(run: &RegionRun, room: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        fit(run.region.as_str(), room),
        theme.style(Role::Accent).add_modifier(Modifier::BOLD),
    ))];
    lines.extend(call_lines(
        "dictation",
        &run.dictation,
        room,
        theme,
        |answer, room, theme| dictation_lines(answer, room, theme),
    ));
    lines.extend(call_lines("sync", &run.sync, room, theme, sync_lines));
    lines
}

/// A call's status line, then its answer's lines (by `answer`) or its
/// error.
fn call_lines<T>(
    service: &str,
    call: &Call<T>,
    room: usize,
    theme: &Theme,
    answer: impl Fn(&T, usize, &Theme) -> Vec<Line<'static>>,
) -> Vec<Line<'static>> {
    let label = format!("{service:<10}");
    match call {
        Call::Running => vec![line(&label, "running…", room, theme.style(Role::Muted))],
        Call::Done {
            latency_ms,
            result: Ok(value),
        } => {
            let mut lines = vec![line(
                &label,
                &format!(
                    "200 ok · {} round trip",
                    duration_text::of_millis(*latency_ms)
                ),
                room,
                theme.style(Role::Ok),
            )];
            lines.extend(answer(value, room, theme));
            lines
        }
        Call::Done {
            latency_ms,
            result: Err(failure),
        } => {
            let status = match failure.status {
                Some(status) => format!("HTTP {status}"),
                None => "failed".to_owned(),
            };
            let error = theme.style(Role::Error);
            let mut lines = vec![line(
                &label,
                &format!(
                    "{status} · {} round trip",
                    duration_text::of_millis(*latency_ms)
                ),
                room,
                error,
            )];
            lines.extend(labelled("error", &failure.message, room, error, error));
            lines
        }
    }
}

fn dictation_lines(answer: &Dictation, room: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let warn = theme.style(Role::Warn);
    let mut lines = labelled("text", &answer.text, room, muted, fg);
    match (&answer.llm_response, &answer.llm_error) {
        (_, Some(error)) => {
            lines.extend(labelled(
                "rewrite",
                "none: use the text above",
                room,
                muted,
                warn,
            ));
            lines.extend(labelled("llm_error", error, room, warn, warn));
        }
        (Some(rewrite), None) => lines.extend(labelled("rewrite", rewrite, room, muted, fg)),
        (None, None) => lines.extend(labelled(
            "rewrite",
            "none (no llm_response, no llm_error)",
            room,
            muted,
            warn,
        )),
    }
    lines.extend(labelled(
        "server",
        &timings(
            answer.request_time_ms,
            answer.auth_time_ms,
            answer.sync_time_ms,
        ),
        room,
        muted,
        fg,
    ));
    lines
}

fn sync_lines(answer: &SyncTranscript, room: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let mut lines = labelled("text", &answer.text, room, muted, fg);
    lines.extend(labelled(
        "server",
        &timings(
            answer.number("request_time_ms"),
            answer.number("auth_time_ms"),
            answer.number("sync_time_ms"),
        ),
        room,
        muted,
        fg,
    ));
    lines
}

/// The server's own timings (given in ms): total, then its parts.
pub(crate) fn timings(request: Option<f64>, auth: Option<f64>, transcribe: Option<f64>) -> String {
    let Some(request) = request else {
        return "no timings in the answer".to_owned();
    };
    let mut parts = Vec::new();
    if let Some(auth) = auth {
        parts.push(format!("auth {}", duration_text::of_millis(auth)));
    }
    if let Some(transcribe) = transcribe {
        parts.push(format!(
            "transcribe {}",
            duration_text::of_millis(transcribe)
        ));
    }
    let request = duration_text::of_millis(request);
    if parts.is_empty() {
        request
    } else {
        format!("{request} ({})", parts.join(", "))
    }
}

/// A status line: `label` then `value`, cut to `room`.
fn line(label: &str, value: &str, room: usize, style: Style) -> Line<'static> {
    let text = fit(&format!("{label}{value}"), room);
    Line::from(Span::styled(text, style))
}

/// `  label     value…` with the value wrapped under itself (each of its
/// own line breaks kept).
fn labelled(
    label: &str,
    value: &str,
    room: usize,
    label_style: Style,
    style: Style,
) -> Vec<Line<'static>> {
    let first = format!("  {label:<width$} ", width = VALUE_INDENT - 3);
    let rest = " ".repeat(VALUE_INDENT);
    let mut lines = Vec::new();
    for (index, paragraph) in value.split('\n').enumerate() {
        let indent = if index == 0 { first.as_str() } else { &rest };
        let mut part = wrapped(indent, &rest, paragraph, room, style);
        if index == 0
            && let Some(head) = part.first_mut()
            && let Some(span) = head.spans.first_mut()
        {
            span.style = label_style;
        }
        lines.append(&mut part);
    }
    lines
}
