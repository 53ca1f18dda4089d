//! Drawing the profile picker (`:ctx`) and the question asked before a
//! switch would lose typed input or stop running work.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::tui::console::app::App;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::{fit, popup, width};

/// The picker: one line per profile, the one in use marked `●`, the
/// selection highlighted.
pub(crate) fn draw_picker(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    selected: usize,
    theme: &Theme,
) {
    let profiles = &app.ctx.profiles;
    let name_width = profiles
        .iter()
        .map(|profile| width(&profile.name))
        .max()
        .unwrap_or(0);
    let lines: Vec<String> = profiles
        .iter()
        .map(|profile| {
            let current = app.ctx.current.as_deref() == Some(profile.name.as_str());
            let mut line = format!(
                "{} {:<name_width$}  {:<6}",
                if current { "●" } else { " " },
                profile.name,
                profile.region.as_str()
            );
            if let Some(agents) = &profile.agents {
                line.push_str(&format!("  {agents}"));
            }
            if profile.read_only {
                line.push_str("  read-only");
            }
            if current {
                line.push_str("  (in use)");
            }
            line
        })
        .collect();
    const NOTE: &str = " every pane reloads for the profile chosen";
    let widest = lines.iter().map(|line| width(line)).max().unwrap_or(0);
    let box_width = u16::try_from(widest.max(width(NOTE)) + 6)
        .unwrap_or(u16::MAX)
        .max(36);
    let box_height = u16::try_from(lines.len() + 4).unwrap_or(u16::MAX);
    let inner = popup::open(frame, area, box_width, box_height, "Switch profile", theme);
    let room = usize::from(inner.width.saturating_sub(1));
    let mut shown = vec![Line::from(Span::styled(
        fit(NOTE, room + 1),
        theme.style(Role::Muted),
    ))];
    // Keep the selection on screen in a short box.
    let rows = usize::from(inner.height.saturating_sub(1)).max(1);
    let first = selected.saturating_sub(rows.saturating_sub(1));
    for (index, line) in lines.iter().enumerate().skip(first).take(rows) {
        let style = if index == selected {
            theme.style(Role::Accent).patch(theme.selection())
        } else {
            theme.style(Role::Fg)
        };
        shown.push(Line::from(Span::styled(
            format!(" {}", fit(line, room)),
            style,
        )));
    }
    frame.render_widget(Paragraph::new(shown), inner);
}

/// "Switching to NAME stops or loses …: switch anyway?"
pub(crate) fn draw_confirm_switch(
    frame: &mut Frame<'_>,
    area: Rect,
    to: &str,
    losing: &[String],
    theme: &Theme,
) {
    let question = format!("Switch to profile {to}? This loses or stops:");
    let widest = losing
        .iter()
        .map(|item| width(item) + 4)
        .chain([width(&question)])
        .max()
        .unwrap_or(0);
    let box_width = u16::try_from(widest + 4).unwrap_or(u16::MAX);
    let box_height = u16::try_from(losing.len() + 6).unwrap_or(u16::MAX);
    let inner = popup::open(frame, area, box_width, box_height, "Switch profile", theme);
    let mut lines = vec![
        Line::from(Span::styled(
            format!(" {question}"),
            theme.style(Role::Warn).add_modifier(Modifier::BOLD),
        )),
        Line::default(),
    ];
    for item in losing {
        lines.push(Line::from(Span::styled(
            format!("  - {item}"),
            theme.style(Role::Fg),
        )));
    }
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled(" y", theme.style(Role::Accent)),
        Span::styled(" switch · ", theme.style(Role::Muted)),
        Span::styled("n", theme.style(Role::Accent)),
        Span::styled(" stay", theme.style(Role::Muted)),
    ]));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
