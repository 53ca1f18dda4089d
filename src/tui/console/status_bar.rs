//! The status bar: profile, region, connection state, request budget used
//! and the last error, on the bottom line.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::console::app::{App, Connection};
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::{fit, width};

pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let status = theme.status();
    let label = |text: &'static str| Span::styled(text, theme.style(Role::Muted).patch(status));
    let value = |text: String| Span::styled(text, theme.style(Role::Fg).patch(status));
    let sep = || Span::styled(" │ ", theme.style(Role::Border));
    let (state, state_role) = if app.busy() {
        ("● loading", Role::Warn)
    } else {
        match app.status.connection {
            Connection::Unknown => ("○ connecting", Role::Muted),
            Connection::Ok => ("● ok", Role::Ok),
            Connection::Error => ("● error", Role::Error),
        }
    };
    let mut spans = vec![
        Span::raw(" "),
        label("profile "),
        value(app.config.profile_label.clone()),
        sep(),
        label("region "),
        value(app.config.region.clone()),
        sep(),
        Span::styled(state, theme.style(state_role).patch(status)),
        sep(),
        label("budget "),
        value(app.status.budget.clone().unwrap_or_else(|| "-".into())),
    ];
    // Seconds on screen are the platform's: say when they are not real.
    if (app.config.time_scale - 1.0).abs() > f64::EPSILON {
        spans.push(sep());
        spans.push(Span::styled(
            format!("time ×{}", app.config.time_scale),
            theme.style(Role::Warn).patch(status),
        ));
    }
    if let Some(error) = &app.status.last_error {
        spans.push(sep());
        let used: usize = spans.iter().map(|span| span.width()).sum();
        // UTC, as every pane's clock.
        let text = format!(
            "{} {}",
            crate::tui::widgets::utc_clock(error.at.timestamp_millis()),
            error.message
        );
        let room = usize::from(area.width).saturating_sub(used);
        let shown = fit(&text, room);
        if width(&shown) > 0 {
            spans.push(Span::styled(shown, theme.style(Role::Error).patch(status)));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}
