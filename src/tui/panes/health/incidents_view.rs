//! Drawing the Health pane's incidents (`i`): the list of failure groups
//! with their state, and under it the selected one's diagnosis, who is on
//! it, and its subscription's events over the window with the incident's
//! first failure, the latest change recorded to the subscription and the
//! acknowledgement marked under the buckets they fall in.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Wrap};

use super::HealthPane;
use super::view::{COUNT_W, SUB_W, TIME_W, trend_with_marks};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input as field;
use crate::tui::widgets::table;
use crate::tui::widgets::{fit, utc_clock};
use earshot_core::history::incidents::{Incident, IncidentState};

const ID_W: u16 = 8;
const STATE_W: u16 = 12;

/// Draws the incidents view in `area`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    let incidents = &pane.incidents;
    let rows = incidents.rows();
    let [head, list, below] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(2),
        Constraint::Length(7),
    ])
    .areas(area);
    let heading = format!(
        " incidents of the last {} · {} listed{} · a acknowledges, v {} resolved{}",
        pane.window.label(),
        rows.len(),
        if incidents.all { " (resolved too)" } else { "" },
        if incidents.all { "hides" } else { "shows" },
        // Why the rows are not in last-seen order while the operator works.
        if incidents.held((pane.clock)()) {
            " · order held while you work (o re-sorts)"
        } else {
            ""
        }
    );
    let mut spans = vec![Span::styled(heading, theme.style(Role::Muted))];
    spans.extend(incidents.table.title_spans(theme));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), head);
    if rows.is_empty() {
        let note = if incidents.loaded() {
            "no incident in this window: every failure was delivered by a retry, or none happened"
        } else {
            "reading the incidents…"
        };
        table::draw_note(frame, list, note, theme);
        return;
    }
    if incidents.table.is_empty() {
        incidents.table.draw_no_match(frame, list, theme);
        return;
    }
    let fixed = [ID_W, SUB_W, STATE_W, COUNT_W, COUNT_W, TIME_W, TIME_W];
    let draw_row = |incident: &Incident, selected: bool, rest: usize| {
        let role = match incident.state {
            IncidentState::Open => Role::Error,
            IncidentState::Acknowledged => Role::Warn,
            IncidentState::Resolved => Role::Muted,
        };
        let mut style = theme.style(role);
        if selected {
            style = style.patch(theme.selection());
        }
        let cells = vec![
            Line::from(fit(&incident.id, usize::from(ID_W))),
            Line::from(short_id(&incident.subscription_id).to_owned()),
            Line::from(incident.state.as_str()),
            Line::from(incident.missed.to_string()),
            Line::from(incident.recovered.to_string()),
            Line::from(utc_clock(incident.first_seen_ms)),
            Line::from(utc_clock(incident.last_seen_ms)),
            Line::from(fit(&incident.diagnosis, rest)),
        ];
        Row::new(cells).style(style)
    };
    incidents
        .table
        .draw(frame, list, rows, &fixed, theme, draw_row);
    draw_incident_detail(frame, below, pane, theme);
}

/// Under the list: who is on the selected incident, or the note prompt.
fn draw_incident_detail(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    let Some(incident) = pane.incidents.selected() else {
        return;
    };
    let muted = theme.style(Role::Muted);
    let mut lines = vec![Line::default()];
    lines.push(Line::from(Span::styled(
        format!(
            " {} · first seen {} · last seen {}",
            incident.diagnosis, incident.first_seen_at, incident.last_seen_at
        ),
        theme.style(Role::Fg),
    )));
    match (&incident.acknowledged_by, incident.acknowledged_ms) {
        (Some(by), Some(at)) => lines.push(Line::from(Span::styled(
            format!(
                " acknowledged by {by} {}{}",
                utc_clock(at),
                incident
                    .note
                    .as_deref()
                    .map(|note| format!(": {note}"))
                    .unwrap_or_default()
            ),
            theme.style(Role::Warn),
        ))),
        _ => lines.push(Line::from(Span::styled(
            " nobody acknowledged it yet",
            muted,
        ))),
    }
    lines.extend(timeline_lines(pane, incident, theme));
    frame.render_widget(
        Paragraph::new(lines)
            .style(theme.base())
            .wrap(Wrap { trim: false }),
        area,
    );
    if let Some(note) = pane.incidents.note() {
        let prompt = Rect {
            y: area.bottom().saturating_sub(1),
            height: 1,
            ..area
        };
        // The incident `a` was pressed on, whatever the list does meanwhile.
        let label = format!(
            " note for {} (enter acknowledges): ",
            pane.incidents.acknowledging().unwrap_or("?")
        );
        field::draw_prompt(frame, prompt, &label, note, theme);
    }
}

/// The incident's subscription over the board's window, one character a
/// bucket, and under it a `^` at the incident's first failure, the latest
/// change recorded to the subscription and the acknowledgement, each when
/// it falls inside the window. Nothing while the timeline is not read.
fn timeline_lines(pane: &HealthPane, incident: &Incident, theme: &Theme) -> Vec<Line<'static>> {
    let Some(timeline) = &pane.trend else {
        return Vec::new();
    };
    let change = pane
        .rows()
        .iter()
        .find(|row| row.id == incident.subscription_id)
        .and_then(|row| row.latest_change.as_ref())
        .map(|change| {
            (
                change.at_ms,
                format!("{} by {}", change.action, change.operator),
            )
        });
    let acknowledged = incident
        .acknowledged_ms
        .zip(incident.acknowledged_by.as_ref())
        .map(|(at, by)| (at, format!("acknowledged by {by}")));
    let marks = [
        Some((incident.first_seen_ms, "first failure".to_owned())),
        change,
        acknowledged,
    ]
    .into_iter()
    .flatten()
    .map(|(at, what)| (at, format!("{} {what}", utc_clock(at))));
    trend_with_marks(
        timeline,
        &incident.subscription_id,
        " ",
        marks,
        Role::Muted,
        theme,
    )
}
