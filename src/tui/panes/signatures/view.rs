//! Drawing the Signatures pane: the form (secrets masked), a hint line,
//! then the checklist and the findings with their next steps. Reads
//! state only.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tui_input::Input;

use super::{Field, Report, SignaturesPane, verdict_line};
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::{fit, utc_clock, wrapped};
use earshot_core::signature::Severity;

/// Width of the label column.
const LABEL_W: u16 = 19;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &SignaturesPane, theme: &Theme) {
    let rows = u16::try_from(Field::ORDER.len()).unwrap_or(6);
    let [title, form, hint, result] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(rows),
        Constraint::Length(2),
        Constraint::Min(0),
    ])
    .areas(area);
    draw_title(frame, title, pane, theme);
    draw_form(frame, form.inner(Margin::new(2, 0)), pane, theme);
    draw_hint(frame, hint.inner(Margin::new(2, 0)), pane, theme);
    draw_report(frame, result, pane, theme);
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &SignaturesPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let what = if pane.refused.is_some() {
        "  a delivery refused with 401 · p asks its receiver (sends it duplicates)"
    } else {
        "  check an X-SVC-Signature by hand · nothing is sent"
    };
    let mut spans = vec![
        Span::styled(" Signatures", theme.style(Role::Accent)),
        Span::styled(what, muted),
    ];
    if pane.editing {
        spans.push(Span::styled(" · editing", theme.style(Role::Warn)));
    }
    if pane.read.loading() {
        spans.push(Span::styled(" · reading…", theme.style(Role::Warn)));
    }
    if pane.asking() {
        spans.push(Span::styled(
            " · asking the receiver…",
            theme.style(Role::Warn),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

/// What an empty field says when it does not have the keyboard
/// (`refused`: a delivery refused with 401 is in the form).
fn placeholder(field: Field, refused: bool) -> &'static str {
    match field {
        Field::Header if refused => {
            "unknown: earshot does not have the header the platform sent this receiver"
        }
        Field::Current if refused => "a secret to ask the receiver with (p)",
        Field::Previous if refused => "optional: a second secret to ask with",
        Field::Header => "t=<unix seconds>,v1=<64 hex>",
        Field::Body => "paste the raw body, or file:PATH",
        Field::Current => "the subscription's secret",
        Field::Previous => "optional: the one before a rotation",
        Field::Now => "empty: the current time",
        Field::Receiver => "optional: the hex digest your receiver computed",
    }
}

fn draw_form(frame: &mut Frame<'_>, area: Rect, pane: &SignaturesPane, theme: &Theme) {
    for (index, field_id) in Field::ORDER.into_iter().enumerate() {
        let Some([label_area, input_area]) = field::form_row(area, index, LABEL_W) else {
            break;
        };
        let focused = pane.focus == field_id;
        field::draw_label(frame, label_area, field_id.label(), focused, theme);
        let input = pane.input(field_id);
        let typing = pane.editing && focused;
        if input.value().is_empty() && !typing {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    placeholder(field_id, pane.refused.is_some()),
                    theme.style(Role::Muted),
                )),
                input_area,
            );
            continue;
        }
        let echo = if field_id.is_secret() {
            Echo::Masked
        } else {
            Echo::Plain
        };
        // Only what can show is copied: a few widths of a long value.
        let room = usize::from(input_area.width.saturating_sub(1));
        if typing {
            let near = field::near_cursor(input, room.max(1));
            let shown = Input::new(visible(near.value())).with_cursor(near.cursor());
            let style = theme.style(Role::Fg).patch(theme.selection());
            field::draw(frame, input_area, &shown, echo, style, true);
        } else {
            let value = input.value();
            let head = value
                .char_indices()
                .nth(room.saturating_mul(4).saturating_add(16))
                .map_or(value.len(), |(i, _)| i);
            let mut shown = match echo {
                Echo::Masked => "•".repeat(value[..head].chars().count()),
                Echo::Plain => visible(&value[..head]),
            };
            if head < value.len() {
                // Cut here: `fit` ends it with `…` as it would the whole.
                shown.push('…');
            }
            frame.render_widget(
                Paragraph::new(Span::styled(fit(&shown, room), theme.style(Role::Fg))),
                input_area,
            );
        }
    }
}

/// Line breaks and tabs drawn as one visible cell each, so the cursor
/// stays where the bytes are.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => '⏎',
            '\r' => '␍',
            '\t' => '⇥',
            other => other,
        })
        .collect()
}

fn draw_hint(frame: &mut Frame<'_>, area: Rect, pane: &SignaturesPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let mut lines = vec![Line::from(Span::styled(
        "pasted bodies are kept byte for byte (⏎ is a line break), but terminals may turn \
         CRLF into LF: for exact bytes use file:PATH or capture:PATH[#LINE] (earshot listen)",
        muted,
    ))];
    match &pane.secret_hint {
        Some(hint) => lines.push(Line::from(Span::styled(
            format!("secret: {hint} (secrets are masked and stay in this pane)"),
            muted,
        ))),
        None => lines.push(Line::from(Span::styled(
            "secrets are masked, never logged, and stay in this pane",
            muted,
        ))),
    }
    frame.render_widget(
        Paragraph::new(lines)
            .style(theme.base())
            .wrap(Wrap { trim: false }),
        area,
    );
}

/// The receiver's answers and verdict, beside the event they are for.
fn receiver_lines(pane: &SignaturesPane, room: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let Some(asked) = pane.shown_verdict() else {
        return lines;
    };
    let muted = theme.style(Role::Muted);
    match &asked.result {
        Ok(checked) => {
            lines.extend(wrapped(
                "  ",
                "    ",
                &format!(
                    "the receiver at {} answered (at {} UTC, about event {}):",
                    checked.url,
                    utc_clock(asked.at_ms),
                    asked.event_id
                ),
                room,
                muted,
            ));
            for answer in &checked.answers {
                lines.extend(wrapped(
                    "    ",
                    "      ",
                    &format!(
                        "signed with {}: {}",
                        answer.signed_with,
                        answer.answer_text()
                    ),
                    room,
                    theme.style(Role::Fg),
                ));
            }
            let (style, mark) = if checked.accepts_given() {
                (theme.style(Role::Ok), "✓")
            } else {
                (theme.style(Role::Error), "✗")
            };
            lines.extend(wrapped(
                &format!("  {mark} "),
                "    ",
                &checked.verdict,
                room,
                style,
            ));
            if let Some(next) = &checked.next {
                lines.extend(wrapped(
                    "    → ",
                    "      ",
                    next,
                    room,
                    theme.style(Role::Fg),
                ));
            }
        }
        Err(error) => lines.extend(wrapped(
            "  ✗ ",
            "    ",
            &format!("the receiver could not be asked: {error}"),
            room,
            theme.style(Role::Error),
        )),
    }
    lines
}

fn severity_style(severity: Severity, theme: &Theme) -> Style {
    match severity {
        Severity::Problem => theme.style(Role::Error),
        Severity::Warning => theme.style(Role::Warn),
        Severity::Ok => theme.style(Role::Ok),
    }
}

fn draw_report(frame: &mut Frame<'_>, area: Rect, pane: &SignaturesPane, theme: &Theme) {
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(" check ", theme.style(Role::Accent)));
    let room = usize::from(area.width);
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let mut lines: Vec<Line<'static>> = receiver_lines(pane, room, theme);
    match &pane.report {
        Report::Waiting(why) => {
            lines.extend(wrapped("  ", "  ", why, room, muted));
        }
        Report::Checked { checks, diagnosis } => {
            let (verdict_style, verdict_mark) = if diagnosis.is_valid() {
                (theme.style(Role::Ok), "✓")
            } else {
                (theme.style(Role::Error), "✗")
            };
            lines.extend(wrapped(
                &format!("  {verdict_mark} "),
                "    ",
                &verdict_line(&diagnosis.verdict),
                room,
                verdict_style,
            ));
            for check in checks {
                let style = match check.passed {
                    Some(true) => theme.style(Role::Ok),
                    Some(false) => theme.style(Role::Error),
                    None => muted,
                };
                lines.extend(wrapped(
                    &format!("    {} ", check.mark()),
                    "      ",
                    &check.text,
                    room,
                    style,
                ));
            }
            if !diagnosis.findings.is_empty() {
                lines.push(Line::from(Span::styled("  findings", muted)));
            }
            for finding in &diagnosis.findings {
                let style = severity_style(finding.severity(), theme);
                lines.extend(wrapped(
                    &format!("    {} ", finding.severity().mark()),
                    "      ",
                    &finding.what(),
                    room,
                    style,
                ));
                if let Some(step) = finding.next_step() {
                    // The CLI's flag is this pane's field.
                    let step = step.replace("(`--now`)", "(the now field)");
                    lines.extend(wrapped("      → ", "        ", &step, room, fg));
                }
            }
        }
    }
    let last = u16::try_from(lines.len().saturating_sub(1)).unwrap_or(u16::MAX);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .style(theme.base())
            .scroll((pane.scroll.min(last), 0)),
        area,
    );
}
