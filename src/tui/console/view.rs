//! The frame: tabs, the pane on screen, footer, status bar and overlays,
//! or "terminal too small". Views only draw; they read the [`App`].

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::app::{App, Overlay};
use super::context;
use super::status_bar as status;
use crate::tui::panes::PaneId;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::{footer, help, popup, width};

/// The smallest terminal the console lays out in.
pub(crate) const MIN_WIDTH: u16 = 60;
pub(crate) const MIN_HEIGHT: u16 = 20;

/// Draws one frame.
pub(crate) fn draw(frame: &mut Frame<'_>, app: &App, theme: &Theme) {
    let area = frame.area();
    frame.render_widget(Paragraph::new("").style(theme.base()), area);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        draw_too_small(frame, area, theme);
        return;
    }
    let [tabs, body, foot, bar] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_tabs(frame, tabs, app, theme);
    app.pane_ref(app.pane)
        .draw(frame, body, theme, app.config.read_only);
    match &app.overlay {
        Some(Overlay::CommandLine(input)) => draw_prompt(frame, foot, input, theme),
        _ => footer::draw(
            frame,
            foot,
            &app.commands(),
            app.toast.as_ref().map(|toast| toast.text.as_str()),
            theme,
        ),
    }
    status::draw(frame, bar, app, theme);
    match &app.overlay {
        Some(Overlay::Help { scroll }) => help::draw(
            frame,
            body,
            &app.help_sections(),
            *scroll,
            app.config.read_only,
            theme,
        ),
        Some(Overlay::ConfirmQuit) => draw_confirm_quit(frame, body, theme),
        Some(Overlay::Profiles { selected }) => {
            context::view::draw_picker(frame, body, app, *selected, theme);
        }
        Some(Overlay::ConfirmSwitch { to, losing }) => {
            context::view::draw_confirm_switch(frame, body, to, losing, theme);
        }
        _ => {}
    }
}

fn draw_too_small(frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
    let text = format!(
        "terminal too small: {}×{} (earshot needs {MIN_WIDTH}×{MIN_HEIGHT}); enlarge it or press q",
        area.width, area.height
    );
    frame.render_widget(
        Paragraph::new(text)
            .style(theme.style(Role::Warn))
            .wrap(Wrap { trim: true }),
        area,
    );
}

fn draw_tabs(frame: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let mut markers = Vec::new();
    if app.config.read_only {
        markers.push(Span::styled(" READ-ONLY ", theme.style(Role::Warn)));
    }
    if app.config.demo {
        markers.push(Span::styled(
            " DEMO ",
            theme
                .style(Role::Warn)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
    }
    let marker_width: usize = markers.iter().map(Span::width).sum();
    // Full titles, else short ones, else only the pane on screen titled.
    let tabs = |level: u8| -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        for (index, pane) in PaneId::ALL.iter().enumerate() {
            if index > 0 {
                spans.push(Span::styled("│", theme.style(Role::Border)));
            }
            let title = match level {
                0 => pane.title(),
                1 => pane.short_title(),
                _ if *pane == app.pane => pane.short_title(),
                _ => "",
            };
            let style = if *pane == app.pane {
                theme.style(Role::Accent).patch(theme.selection())
            } else {
                theme.style(Role::Muted)
            };
            let label = if title.is_empty() {
                format!(" {} ", index + 1)
            } else {
                format!(" {} {title} ", index + 1)
            };
            spans.push(Span::styled(label, style));
        }
        spans
    };
    let room = usize::from(area.width);
    let width = |spans: &[Span<'_>]| spans.iter().map(Span::width).sum::<usize>();
    let mut spans = tabs(0);
    for level in 1..=2 {
        if width(&spans) + marker_width <= room {
            break;
        }
        spans = tabs(level);
    }
    let used = width(&spans);
    spans.push(Span::raw(
        " ".repeat(room.saturating_sub(used + marker_width)),
    ));
    spans.extend(markers);
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

fn draw_prompt(frame: &mut Frame<'_>, area: Rect, input: &tui_input::Input, theme: &Theme) {
    frame.render_widget(
        Paragraph::new(Span::styled(":", theme.style(Role::Accent))).style(theme.base()),
        area,
    );
    let rest = Rect {
        x: area.x + 1,
        width: area.width.saturating_sub(1),
        ..area
    };
    field::draw(frame, rest, input, Echo::Plain, theme.style(Role::Fg), true);
}

fn draw_confirm_quit(frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
    let message = "A form or a secret on screen would be lost. Quit anyway?";
    let inner = popup::open(
        frame,
        area,
        u16::try_from(width(message) + 4).unwrap_or(64),
        5,
        "Quit",
        theme,
    );
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(Span::styled(format!(" {message}"), theme.style(Role::Fg))),
            Line::default(),
            Line::from(vec![
                Span::styled(" y", theme.style(Role::Accent)),
                Span::styled(" quit · ", theme.style(Role::Muted)),
                Span::styled("n", theme.style(Role::Accent)),
                Span::styled(" stay", theme.style(Role::Muted)),
            ]),
        ])
        .wrap(Wrap { trim: false }),
        inner,
    );
}
