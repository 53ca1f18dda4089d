//! Drawing the Subscriptions pane's dialogs: the create form, delete and
//! rotate confirmations, and the secret shown once. Each field's error is
//! drawn under it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::edit::{EditField, EditForm};
use super::form::{CreateForm, Field};
use super::modals::{DeleteConfirm, SecretOnce};
use super::rotation::{RotateForm, Stage};
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::{fit, popup};
use earshot_core::api::types::agents::EventKind;

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

/// The five event toggles from row `y` (`focused`: the one under the
/// cursor); the row after them.
fn event_toggles(
    frame: &mut Frame<'_>,
    inner: Rect,
    mut y: u16,
    events: &[bool; 5],
    focused: Option<usize>,
    theme: &Theme,
) -> u16 {
    for (index, kind) in EventKind::ALL.iter().enumerate() {
        let Some((label_area, rest)) = form_line(inner, y) else {
            break;
        };
        if index == 0 {
            frame.render_widget(
                Paragraph::new(label_span("Events", focused.is_some(), theme)),
                label_area,
            );
        }
        let marker = if events[index] { "[x] " } else { "[ ] " };
        let style = if focused == Some(index) {
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
    y
}

/// The edit dialog: URL, events, the diff and the typed short id.
pub(super) fn draw_edit(frame: &mut Frame<'_>, area: Rect, form: &EditForm, theme: &Theme) {
    let title = format!("Edit subscription {}", form.short);
    let inner = popup::open(frame, area, 86, 20, &title, theme);
    text_field(
        frame,
        inner,
        0,
        "URL",
        &form.url,
        Echo::Plain,
        "https://hooks.example.com/earshot",
        form.focus == EditField::Url,
        theme,
    );
    let focused = match form.focus {
        EditField::Event(index) => Some(index),
        _ => None,
    };
    let mut y = event_toggles(frame, inner, 2, &form.events, focused, theme) + 1;
    let diff = form.diff();
    let mut lines: Vec<Line<'static>> = if diff.is_empty() {
        vec![Line::from(Span::styled(
            "nothing changes yet · the id, secret and delivery history are kept",
            theme.style(Role::Muted),
        ))]
    } else {
        diff.into_iter()
            .map(|line| Line::from(Span::styled(line, theme.style(Role::Warn))))
            .collect()
    };
    if let Some((answers, passed)) = &form.check {
        let role = if *passed { Role::Ok } else { Role::Error };
        lines.extend(
            answers
                .iter()
                .map(|answer| Line::from(Span::styled(answer.clone(), theme.style(role)))),
        );
    }
    // The change (and the new URL's check), wrapped in up to four rows.
    let height = 4;
    if inner.height > y + height {
        let area = Rect {
            x: inner.x + 1,
            y: inner.y + y,
            width: inner.width.saturating_sub(1),
            height,
        };
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
    }
    y += height + 1;
    text_field(
        frame,
        inner,
        y,
        "Secret",
        &form.secret,
        Echo::Masked,
        "optional: its secret, to check a new URL first (used once)",
        form.focus == EditField::Secret,
        theme,
    );
    y += 2;
    text_field(
        frame,
        inner,
        y,
        "Type id",
        &form.confirm,
        Echo::Plain,
        &format!("type {} to update", form.short),
        form.focus == EditField::Confirm,
        theme,
    );
    let status = if form.checking {
        Span::styled("checking the new URL…", theme.style(Role::Warn))
    } else if form.submitting {
        Span::styled("updating…", theme.style(Role::Warn))
    } else if let Some(error) = &form.error {
        Span::styled(error.clone(), theme.style(Role::Error))
    } else {
        Span::styled(
            "tab moves · space toggles an event · enter updates",
            theme.style(Role::Muted),
        )
    };
    draw_status_row(frame, inner, y + 2, status);
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
    let focused = match form.focus {
        Field::Event(index) => Some(index),
        _ => None,
    };
    y = event_toggles(frame, inner, y, &form.events, focused, theme);
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
    let title = format!(
        "Rotate secret · step {} of 4: prepare → check → apply → watch",
        dialog.stage.number()
    );
    let inner = popup::open(frame, area, 86, 18, &title, theme).inner(Margin::new(1, 0));
    let width = usize::from(inner.width);
    let muted = theme.style(Role::Muted);
    let plain = theme.style(Role::Fg);
    let mut lines = vec![
        Line::from(vec![
            Span::styled("Subscription ", plain),
            Span::styled(dialog.short.clone(), theme.style(Role::Accent)),
            Span::styled(
                format!(", on secret version {}", dialog.current_version),
                plain,
            ),
        ]),
        Line::from(Span::styled(fit(&dialog.url, width), muted)),
        Line::default(),
    ];
    let said: Vec<Line<'static>> = match dialog.stage {
        Stage::Prepare => vec![Line::from(Span::styled(
            "The platform keeps no overlap: from the PATCH, deliveries carry only the new \
             secret and a 401 is never retried. Prepare the secret first (empty: generate), \
             add it to the receiver next to the current one, then check.",
            plain,
        ))],
        Stage::Check => check_lines(dialog, theme),
        Stage::Apply => apply_lines(dialog, theme),
        Stage::Watch => watch_lines(dialog, theme),
    };
    lines.extend(said);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    let field_row = inner.height.saturating_sub(3);
    match dialog.stage {
        Stage::Prepare => text_field(
            frame,
            inner,
            field_row,
            "Secret",
            &dialog.secret,
            Echo::Masked,
            "empty = generate one · or paste one",
            true,
            theme,
        ),
        Stage::Check => text_field(
            frame,
            inner,
            field_row,
            "Current",
            &dialog.current,
            Echo::Masked,
            "tab: type the current secret (optional, used once)",
            dialog.editing_current,
            theme,
        ),
        Stage::Apply => text_field(
            frame,
            inner,
            field_row,
            "Type id",
            &dialog.confirm,
            Echo::Plain,
            &format!("type {} to rotate now", dialog.short),
            !dialog.submitting,
            theme,
        ),
        Stage::Watch => {}
    }
    let status = if dialog.submitting {
        Span::styled("rotating…", theme.style(Role::Warn))
    } else if dialog.checking {
        Span::styled("checking the receiver…", theme.style(Role::Warn))
    } else if let Some(error) = &dialog.error {
        Span::styled(error.clone(), theme.style(Role::Error))
    } else {
        Span::raw("")
    };
    draw_status_row(frame, inner, inner.height.saturating_sub(1), status);
}

/// Step 2: the new secret (shown until the dialog closes) and the check.
fn check_lines(dialog: &RotateForm, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::styled("New secret: ", theme.style(Role::Fg)),
        Span::styled(
            dialog
                .new_secret
                .as_ref()
                .map(|secret| secret.expose().to_owned())
                .unwrap_or_default(),
            theme.style(Role::Accent),
        ),
        Span::styled(
            if dialog.copied {
                "  copied ✓"
            } else {
                "  c copies it"
            },
            theme.style(Role::Muted),
        ),
    ])];
    lines.push(Line::from(Span::styled(
        "Add it to the receiver next to the current one; enter sends it an event it already \
         has (a duplicate) signed with the new, the current and a wrong secret.",
        theme.style(Role::Muted),
    )));
    match &dialog.check {
        Some(Ok(report)) => {
            for answer in &report.answers {
                let role = if answer.ok { Role::Ok } else { Role::Error };
                lines.push(Line::from(Span::styled(
                    format!(
                        "{} {}: {}",
                        if answer.ok { "✓" } else { "✗" },
                        answer.signed_with,
                        answer.verdict
                    ),
                    theme.style(role),
                )));
            }
            if !report.passed {
                lines.push(Line::from(Span::styled(
                    "The check failed: fix the receiver and press enter again (S skips it, \
                     and events may be lost).",
                    theme.style(Role::Error),
                )));
            }
        }
        Some(Err(why)) => lines.push(Line::from(Span::styled(
            format!("{why} (S skips the check, knowing the risk)"),
            theme.style(Role::Error),
        ))),
        None => {}
    }
    lines
}

/// Step 3: the PATCH, red when the check was skipped.
fn apply_lines(dialog: &RotateForm, theme: &Theme) -> Vec<Line<'static>> {
    if dialog.skipped {
        return vec![Line::from(Span::styled(
            "THE CHECK DID NOT PASS. Rotating now: every event until the receiver holds the \
             new secret gets a 401 and is never retried. Type the short id only if that is \
             what you want.",
            theme.style(Role::Error),
        ))];
    }
    vec![Line::from(Span::styled(
        "✓ The receiver accepts the new secret (and refuses a wrong one). Type the short id: \
         the PATCH goes now, and the dialog then watches the deliveries.",
        theme.style(Role::Ok),
    ))]
}

/// Step 4: what was delivered since, any 401, and when the old secret
/// can go.
fn watch_lines(dialog: &RotateForm, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "Rotated to secret version {}. Watching its deliveries ({}; esc stops).",
            dialog.version_after.unwrap_or_default(),
            earshot_core::duration_text::of(super::tasks::ROTATION_WATCH)
        ),
        theme.style(Role::Fg),
    ))];
    let Some(watch) = &dialog.watch else {
        lines.push(Line::from(Span::styled(
            "sweeping…",
            theme.style(Role::Muted),
        )));
        return lines;
    };
    lines.push(Line::from(Span::styled(
        format!("{} delivered since the rotation", watch.delivered_since),
        theme.style(Role::Ok),
    )));
    if !watch.refused_sessions.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                "401 since the rotation in {} sessions (e.g. {}): the receiver refuses the new \
                 secret; stop and act",
                watch.refused_sessions.len(),
                watch.refused_sessions[0]
            ),
            theme.style(Role::Error),
        )));
    }
    lines.push(if watch.safe_to_drop_old_secret() {
        Line::from(Span::styled(
            "safe to remove the old secret from the receiver: nothing signed with it is pending",
            theme.style(Role::Ok),
        ))
    } else {
        Line::from(Span::styled(
            format!(
                "keep the old secret: {} events from before the rotation may still be retried",
                watch.old_pending
            ),
            theme.style(Role::Warn),
        ))
    });
    lines
}

pub(super) fn draw_secret(frame: &mut Frame<'_>, area: Rect, shown: &SecretOnce, theme: &Theme) {
    let inner =
        popup::open(frame, area, 74, 11, "New secret — shown once", theme).inner(Margin::new(1, 0));
    let plain = theme.style(Role::Fg);
    let heading = format!("Subscription {} was created with this secret:", shown.short);
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
