//! Drawing the Subscriptions pane's dialogs: the create form, delete and
//! rotate confirmations, and the secret shown once. Each field's error is
//! drawn under it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::form::{CreateForm, Field};
use super::modals::{DeleteConfirm, RotateField, RotateForm, SecretOnce};
use crate::api::types::agents::EventKind;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::{fit, popup};

const LABEL_W: u16 = 10;

/// A label column and a field column for one form line.
fn form_line(area: Rect, y: u16) -> Option<(Rect, Rect)> {
    if y >= area.height {
        return None;
    }
    let line = Rect {
        y: area.y + y,
        height: 1,
        ..area
    };
    let [label, rest] =
        Layout::horizontal([Constraint::Length(LABEL_W), Constraint::Min(1)]).areas(line);
    Some((label, rest))
}

fn label_span(text: &str, focused: bool, theme: &Theme) -> Span<'static> {
    let marker = if focused { "›" } else { " " };
    let style = if focused {
        theme.style(Role::Accent)
    } else {
        theme.style(Role::Fg)
    };
    Span::styled(format!("{marker}{text}"), style)
}

/// The error under a field, or a muted hint when there is none.
fn note(frame: &mut Frame<'_>, area: Rect, error: Option<&str>, hint: &str, theme: &Theme) {
    let line = match error {
        Some(error) => Span::styled(
            fit(error, usize::from(area.width)),
            theme.style(Role::Error),
        ),
        None => Span::styled(fit(hint, usize::from(area.width)), theme.style(Role::Muted)),
    };
    frame.render_widget(Paragraph::new(line), area);
}

#[allow(clippy::too_many_arguments)]
fn text_field(
    frame: &mut Frame<'_>,
    inner: Rect,
    y: u16,
    label: &str,
    input: &tui_input::Input,
    echo: Echo,
    placeholder: &str,
    focused: bool,
    theme: &Theme,
) {
    let Some((label_area, field_area)) = form_line(inner, y) else {
        return;
    };
    frame.render_widget(
        Paragraph::new(label_span(label, focused, theme)),
        label_area,
    );
    let style = theme.style(Role::Fg).add_modifier(Modifier::UNDERLINED);
    if input.value().is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(
                fit(placeholder, usize::from(field_area.width)),
                theme.style(Role::Muted),
            )),
            field_area,
        );
        if focused {
            frame.set_cursor_position((field_area.x, field_area.y));
        }
    } else {
        field::draw(frame, field_area, input, echo, style, focused);
    }
}

fn note_line(
    frame: &mut Frame<'_>,
    inner: Rect,
    y: u16,
    error: Option<&str>,
    hint: &str,
    theme: &Theme,
) {
    if let Some((_, rest)) = form_line(inner, y) {
        note(frame, rest, error, hint, theme);
    }
}

pub(super) fn draw_create(frame: &mut Frame<'_>, area: Rect, form: &CreateForm, theme: &Theme) {
    let inner = popup::open(frame, area, 78, 17, "New subscription", theme);
    let mut y = 0;
    text_field(
        frame,
        inner,
        y,
        "URL",
        &form.url,
        Echo::Plain,
        "https://hooks.example.com/earshot",
        form.focus == Field::Url,
        theme,
    );
    note_line(
        frame,
        inner,
        y + 1,
        form.errors.url.as_deref(),
        "where deliveries are POSTed",
        theme,
    );
    y += 2;
    for (index, kind) in EventKind::ALL.iter().enumerate() {
        let focused = form.focus == Field::Event(index);
        let Some((label_area, rest)) = form_line(inner, y) else {
            break;
        };
        if index == 0 {
            frame.render_widget(
                Paragraph::new(label_span(
                    "Events",
                    matches!(form.focus, Field::Event(_)),
                    theme,
                )),
                label_area,
            );
        }
        let on = form.events.get(index).copied().unwrap_or(false);
        let marker = if on { "[x] " } else { "[ ] " };
        let style = if focused {
            theme.style(Role::Accent).patch(theme.selection())
        } else {
            theme.style(Role::Fg)
        };
        frame.render_widget(
            Paragraph::new(Span::styled(format!("{marker}{kind}"), style)),
            rest,
        );
        y += 1;
    }
    note_line(
        frame,
        inner,
        y,
        form.errors.events.as_deref(),
        "space toggles the event under the cursor",
        theme,
    );
    y += 1;
    text_field(
        frame,
        inner,
        y,
        "Agent",
        &form.agent,
        Echo::Plain,
        "optional: an agent UUID (empty = every agent)",
        form.focus == Field::Agent,
        theme,
    );
    note_line(frame, inner, y + 1, form.errors.agent.as_deref(), "", theme);
    y += 2;
    text_field(
        frame,
        inner,
        y,
        "Secret",
        &form.secret,
        Echo::Masked,
        "empty = generate one (shown once after creating)",
        form.focus == Field::Secret,
        theme,
    );
    note_line(
        frame,
        inner,
        y + 1,
        form.errors.secret.as_deref(),
        "or paste one: 32 to 256 printable characters",
        theme,
    );
    y += 3;
    let status = if form.confirm_discard {
        Span::styled(
            "discard this form? y: discard · n: keep editing",
            theme.style(Role::Warn),
        )
    } else if form.submitting {
        Span::styled("creating…", theme.style(Role::Warn))
    } else if let Some(error) = &form.server_error {
        Span::styled(format!("refused: {error}"), theme.style(Role::Error))
    } else {
        Span::styled("enter: create · esc: cancel", theme.style(Role::Muted))
    };
    if y < inner.height {
        let line = Rect {
            x: inner.x + 1,
            y: inner.y + y,
            width: inner.width.saturating_sub(1),
            height: inner.height - y,
        };
        frame.render_widget(
            Paragraph::new(Line::from(status)).wrap(Wrap { trim: true }),
            line,
        );
    }
}

pub(super) fn draw_delete(
    frame: &mut Frame<'_>,
    area: Rect,
    dialog: &DeleteConfirm,
    theme: &Theme,
) {
    let inner = popup::open(frame, area, 70, 9, "Delete subscription", theme);
    let width = usize::from(inner.width);
    let lines = vec![
        Line::from(vec![
            Span::styled(" This deletes ", theme.style(Role::Fg)),
            Span::styled(dialog.short.clone(), theme.style(Role::Accent)),
            Span::styled(" and its delivery history:", theme.style(Role::Fg)),
        ]),
        Line::from(Span::styled(
            fit(&format!(" {}", dialog.url), width),
            theme.style(Role::Muted),
        )),
        Line::default(),
    ];
    frame.render_widget(Paragraph::new(lines), inner);
    text_field(
        frame,
        inner,
        3,
        "Type id",
        &dialog.input,
        Echo::Plain,
        &format!("type {} to confirm", dialog.short),
        true,
        theme,
    );
    let (hint, style) = if dialog.confirmed() {
        (
            "enter: delete for good · esc: cancel",
            theme.style(Role::Error),
        )
    } else {
        (
            "enter is disabled until the id matches · esc: cancel",
            theme.style(Role::Muted),
        )
    };
    let status = if dialog.submitting {
        Span::styled("deleting…", theme.style(Role::Warn))
    } else if let Some(error) = &dialog.error {
        Span::styled(fit(error, width), theme.style(Role::Error))
    } else {
        Span::styled(hint, style)
    };
    draw_status_row(frame, inner, 5, status);
}

pub(super) fn draw_rotate(frame: &mut Frame<'_>, area: Rect, dialog: &RotateForm, theme: &Theme) {
    let inner = popup::open(frame, area, 74, 11, "Rotate secret", theme);
    let width = usize::from(inner.width);
    let lines = vec![
        Line::from(vec![
            Span::styled(" Subscription ", theme.style(Role::Fg)),
            Span::styled(dialog.short.clone(), theme.style(Role::Accent)),
            Span::styled(
                format!(", now on secret version {}.", dialog.current_version),
                theme.style(Role::Fg),
            ),
        ]),
        Line::from(Span::styled(
            fit(&format!(" {}", dialog.url), width),
            theme.style(Role::Muted),
        )),
    ];
    frame.render_widget(Paragraph::new(lines), inner);
    text_field(
        frame,
        inner,
        3,
        "Secret",
        &dialog.secret,
        Echo::Masked,
        "empty = generate one · or paste one",
        dialog.focus == RotateField::Secret,
        theme,
    );
    text_field(
        frame,
        inner,
        5,
        "Type id",
        &dialog.confirm,
        Echo::Plain,
        &format!("type {} to confirm", dialog.short),
        dialog.focus == RotateField::Confirm,
        theme,
    );
    let status = if dialog.submitting {
        Span::styled("rotating…", theme.style(Role::Warn))
    } else if let Some(error) = &dialog.error {
        Span::styled(error.clone(), theme.style(Role::Error))
    } else if dialog.confirmed() {
        Span::styled("enter: rotate now · esc: cancel", theme.style(Role::Error))
    } else {
        Span::styled(
            "the new secret is shown once · enter is disabled until the id matches",
            theme.style(Role::Muted),
        )
    };
    draw_status_row(frame, inner, 7, status);
}

pub(super) fn draw_secret(frame: &mut Frame<'_>, area: Rect, shown: &SecretOnce, theme: &Theme) {
    let inner = popup::open(
        frame,
        area,
        74,
        if shown.rotated { 14 } else { 11 },
        "New secret — shown once",
        theme,
    )
    .inner(Margin::new(1, 0));
    let plain = theme.style(Role::Fg);
    let heading = if shown.rotated {
        format!(
            "Subscription {} now signs with secret version {}:",
            shown.short, shown.version
        )
    } else {
        format!("Subscription {} was created with this secret:", shown.short)
    };
    let mut lines = vec![
        Line::from(Span::styled(heading, plain)),
        Line::default(),
        Line::from(Span::styled(
            format!("  {}", shown.secret.expose()),
            theme.style(Role::Accent),
        )),
        Line::default(),
        Line::from(Span::styled(
            "It is not stored or logged anywhere and won't be shown again: copy it now.",
            plain,
        )),
    ];
    if shown.rotated {
        lines.push(Line::from(Span::styled(
            "Deliveries already in flight were signed with the old secret: your receiver \
             must accept both the old and the new secret until they have drained.",
            theme.style(Role::Warn),
        )));
    }
    lines.push(Line::default());
    let copied = if shown.copied {
        Span::styled("copied ✓ · ", theme.style(Role::Ok))
    } else {
        Span::raw("")
    };
    lines.push(Line::from(vec![
        copied,
        Span::styled(
            "c: copy to clipboard (OSC 52) · esc: close",
            theme.style(Role::Muted),
        ),
    ]));
    frame.render_widget(
        Paragraph::new(lines)
            .style(Style::new())
            .wrap(Wrap { trim: false }),
        inner,
    );
}

/// A dialog's status line from `row` down, wrapped; nothing if the popup
/// is too short to have that row.
fn draw_status_row(frame: &mut Frame<'_>, inner: Rect, row: u16, status: Span<'_>) {
    if inner.height > row {
        let line = Rect {
            x: inner.x + 1,
            y: inner.y + row,
            width: inner.width.saturating_sub(1),
            height: inner.height - row,
        };
        frame.render_widget(Paragraph::new(status).wrap(Wrap { trim: true }), line);
    }
}
