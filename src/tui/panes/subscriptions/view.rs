//! Drawing the Subscriptions pane: the table (only the rows on screen are
//! built) and the detail view; the dialogs are in `dialogs.rs`. Reads state, changes nothing
//! but the remembered scroll offset.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row};
use serde_json::Value;

use super::dialogs::{draw_create, draw_delete, draw_edit, draw_rotate, draw_secret};
use super::{Modal, SubscriptionsPane, View, short_id};
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::{age, table};
use crate::tui::widgets::{distinct_short, fit, fit_url};
use earshot_core::api::types::agents::{EventKind, Subscription};

/// Draws the pane in `area`.
pub(crate) fn draw(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &SubscriptionsPane,
    theme: &Theme,
    read_only: bool,
) {
    let [title, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let (body, filter) = pane.table.split_prompt(body);
    draw_title(frame, title, pane, theme);
    match pane.view {
        View::Detail => match pane.selected() {
            Some(row) => draw_detail(frame, body, row, pane, theme),
            None => draw_table(frame, body, pane, theme, read_only),
        },
        View::Table => draw_table(frame, body, pane, theme, read_only),
    }
    pane.table.draw_prompt(frame, filter, theme);
    match &pane.modal {
        Some(Modal::Create(form)) => draw_create(frame, area, form, theme),
        Some(Modal::Delete(dialog)) => draw_delete(frame, area, dialog, theme),
        Some(Modal::Rotate(dialog)) => draw_rotate(frame, area, dialog, theme),
        Some(Modal::Secret(shown)) => draw_secret(frame, area, shown, theme),
        Some(Modal::Edit(form)) => draw_edit(frame, area, form, theme),
        None => {}
    }
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &SubscriptionsPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let mut spans = vec![
        Span::styled(" Subscriptions", theme.style(Role::Accent)),
        Span::styled(
            format!("  {} of {}", pane.visible_len(), pane.rows().len()),
            theme.style(Role::Fg),
        ),
        Span::styled(
            if pane.include_disabled {
                " · paused shown"
            } else {
                " · paused hidden"
            },
            muted,
        ),
    ];
    if let Some(position) = pane.selected_index() {
        spans.push(Span::styled(
            format!(" · row {}/{}", position + 1, pane.visible_len()),
            muted,
        ));
    }
    // The counts lead the title already: the filter alone here.
    if pane.table.filtering() {
        spans.push(Span::styled(" · filter: ", muted));
        spans.push(Span::styled(
            pane.table.filter_text().to_owned(),
            theme.style(Role::Warn),
        ));
    }
    if pane.list.loading() {
        spans.push(Span::styled(" · loading…", theme.style(Role::Warn)));
    }
    spans.extend(age::spans(
        &pane.list,
        pane.clock,
        super::freshness::LIST_EVERY,
        theme,
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

/// The fixed columns and the share of the rest the URL gets.
const ID_W: u16 = 8;
const AGENT_W: u16 = 8;
const STATE_W: u16 = 8;
const SECRET_W: u16 = 6;

fn draw_table(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &SubscriptionsPane,
    theme: &Theme,
    read_only: bool,
) {
    if area.height < 2 {
        return;
    }
    if pane.visible_len() == 0 {
        draw_empty(frame, area, pane, theme, read_only);
        return;
    }
    let selected = pane.selected_index();
    let window = pane.table.state.window(area, pane.visible_len());

    let header = pane.table.schema().headers();
    let rest = table::rest_width(
        area.width,
        &[ID_W, AGENT_W, STATE_W, SECRET_W],
        header.len(),
    );
    let url_w = rest * 11 / 20;
    let events_w = rest - url_w;

    // Agents whose ids share a beginning are told apart by their end.
    let agent_name = distinct_short(pane.rows().iter().filter_map(|row| row.agent_id.as_deref()));
    let rows = window.filter_map(|position| {
        let row = pane.visible_row(position)?;
        Some(table_row(
            row,
            pane.is_pending(&row.id),
            selected == Some(position),
            (usize::from(url_w), usize::from(events_w)),
            &agent_name,
            theme,
        ))
    });
    let widths = [
        Constraint::Length(ID_W),
        Constraint::Length(url_w),
        Constraint::Length(events_w),
        Constraint::Length(AGENT_W),
        Constraint::Length(STATE_W),
        Constraint::Length(SECRET_W),
    ];
    table::draw(
        frame,
        area,
        &header,
        pane.table.sorted(),
        rows,
        widths,
        theme,
    );
}

/// Width of the detail view's label column.
const LABEL_COLUMN: u16 = 18;

/// A label and a value cut into lines of `width` columns, continuation
/// lines indented under the value (URLs have no spaces to wrap at).
fn labelled(
    name: &str,
    text: &str,
    style: Style,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let chars: Vec<char> = text.chars().collect();
    let chunks: Vec<String> = if chars.is_empty() {
        vec![String::new()]
    } else {
        chars
            .chunks(width)
            .map(|chunk| chunk.iter().collect())
            .collect()
    };
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, chunk)| {
            let label = if index == 0 { name } else { "" };
            Line::from(vec![
                Span::styled(format!("  {label:<16}"), theme.style(Role::Muted)),
                Span::styled(chunk, style),
            ])
        })
        .collect()
}

fn table_row(
    row: &Subscription,
    pending: bool,
    selected: bool,
    (url_w, events_w): (usize, usize),
    agent_name: &dyn Fn(&str) -> String,
    theme: &Theme,
) -> Row<'static> {
    let state = if pending {
        "…"
    } else if row.enabled {
        "enabled"
    } else {
        "paused"
    };
    let agent = row.agent_id.as_deref().map_or("any".to_owned(), agent_name);
    let state_style = if !row.enabled {
        theme.style(Role::Warn)
    } else {
        theme.style(Role::Ok)
    };
    let mut cells = vec![
        Line::from(short_id(&row.id).to_owned()),
        Line::from(fit_url(&row.url, url_w)),
        Line::from(fit(&row.events.join(","), events_w)),
        Line::from(agent),
        Line::from(Span::styled(state, state_style)),
        Line::from(format!("v{}", row.secret_version)),
    ];
    let mut style = if row.enabled {
        theme.style(Role::Fg)
    } else {
        theme.style(Role::Muted)
    };
    if !row.enabled {
        // A paused row is muted end to end, state included.
        cells[4] = Line::from(Span::styled(state, theme.style(Role::Muted)));
    }
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(cells).style(style)
}

fn draw_empty(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &SubscriptionsPane,
    theme: &Theme,
    read_only: bool,
) {
    if let (false, Some(error)) = (pane.list.loaded(), pane.list.error()) {
        let what = "could not load the subscriptions (r tries again):";
        table::draw_load_error(frame, area, what, error, theme);
        return;
    }
    let text = if !pane.list.loaded() {
        "  loading subscriptions…".to_owned()
    } else if pane.table.filtering() {
        format!(
            "  no subscription matches the filter `{}` (esc clears it)",
            pane.table.filter_text()
        )
    } else if read_only {
        "  no subscriptions".to_owned()
    } else {
        "  no subscriptions yet: press n to create one".to_owned()
    };
    frame.render_widget(
        Paragraph::new(vec![Line::default(), Line::from(text)]).style(theme.style(Role::Muted)),
        area,
    );
}

fn draw_detail(
    frame: &mut Frame<'_>,
    area: Rect,
    row: &Subscription,
    pane: &SubscriptionsPane,
    theme: &Theme,
) {
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            format!(" subscription {} ", short_id(&row.id)),
            theme.style(Role::Accent),
        ));
    let value_width = usize::from(area.width.saturating_sub(LABEL_COLUMN)).max(1);
    let mut lines = Vec::new();
    let mut field = |name: &str, text: &str, style: Style| {
        lines.extend(labelled(name, text, style, value_width, theme));
    };
    let fg = theme.style(Role::Fg);
    field("id", &row.id, fg);
    field("url", &row.url, fg);
    let (state, state_style) = if pane.is_pending(&row.id) {
        ("updating…", theme.style(Role::Warn))
    } else if row.enabled {
        ("enabled: deliveries are sent", theme.style(Role::Ok))
    } else {
        ("paused: no deliveries are sent", theme.style(Role::Warn))
    };
    field("state", state, state_style);
    for (index, event) in row.events.iter().enumerate() {
        let name = if index == 0 { "events" } else { "" };
        // An event this build doesn't know still shows, flagged.
        let style = if EventKind::parse(event).is_some() {
            fg
        } else {
            theme.style(Role::Warn)
        };
        field(name, event, style);
    }
    field(
        "agent",
        row.agent_id.as_deref().unwrap_or("any agent (no filter)"),
        fg,
    );
    field("secret version", &row.secret_version.to_string(), fg);
    if let Some(change) = pane.latest_change(&row.id) {
        let mut text = format!(
            "{} {} by {}",
            change.action,
            change.at.replace('T', " ").trim_end_matches('Z'),
            change.operator
        );
        if !change.detail.is_empty() {
            text.push_str(&format!(" ({})", change.detail));
        }
        field("last change", &text, theme.style(Role::Warn));
    }
    for (key, extra) in &row.extra {
        let shown = match extra {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        field(key, &shown, fg);
    }
    frame.render_widget(Paragraph::new(lines).block(block).style(theme.base()), area);
}

#[cfg(test)]
mod tests {
    use crate::tui::widgets::table::scroll_offset;

    #[test]
    fn the_window_follows_the_selection() {
        assert_eq!(scroll_offset(0, 0, 10, 100), 0);
        assert_eq!(scroll_offset(0, 9, 10, 100), 0);
        assert_eq!(scroll_offset(0, 10, 10, 100), 1);
        assert_eq!(scroll_offset(50, 40, 10, 100), 40);
        assert_eq!(scroll_offset(95, 99, 10, 100), 90);
        assert_eq!(scroll_offset(30, 3, 10, 5), 0);
    }
}
