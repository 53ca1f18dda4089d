//! Drawing the Deliveries pane: the id prompt with the recent and known
//! ids (the one `enter` loads highlighted), the attempts table (only the
//! rows on screen are built; its filter in the title and its `/` prompt
//! on the last line) and the detail view. Reads state, changes nothing
//! but the remembered scroll offset.

use chrono::{DateTime, FixedOffset, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row};

use super::verdict::{countdown, likely_causes, retry_line, verdict};
use super::{DeliveriesPane, Mode};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input as field;
use crate::tui::widgets::table::{self, scroll_offset};
use crate::tui::widgets::{fit, wrap_words};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::redact::mask_phone;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &DeliveriesPane, theme: &Theme) {
    let [title, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    draw_title(frame, title, pane, theme);
    let (body, filter) = pane.table.split_prompt(body);
    pane.table.draw_prompt(frame, filter, theme);
    match pane.mode() {
        Mode::Prompt => draw_prompt(frame, body, pane, theme),
        Mode::Detail => match pane.selected() {
            Some(row) => draw_detail(frame, body, row, pane, theme),
            None => draw_table(frame, body, pane, theme),
        },
        Mode::Table | Mode::Filter => {
            let lines = session_lines(pane, theme);
            if lines.is_empty() || body.height < 8 {
                draw_table(frame, body, pane, theme);
            } else {
                let height = u16::try_from(lines.len() + 1).unwrap_or(u16::MAX);
                let [block, table] =
                    Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(body);
                let block = block.inner(Margin::new(1, 0));
                frame.render_widget(Paragraph::new(lines).style(theme.base()), block);
                draw_table(frame, table, pane, theme);
            }
        }
    }
}

/// Links shown at most in the session block.
const LINKS_SHOWN: usize = 4;

/// The session block above the attempts: kind and status with the
/// caller's number (masked unless revealed), event times, the artifacts or
/// why there are none, and each link with its expiry. Empty before the
/// record has loaded.
pub(crate) fn session_lines(pane: &DeliveriesPane, theme: &Theme) -> Vec<Line<'static>> {
    let muted = theme.style(Role::Muted);
    let fg = theme.style(Role::Fg);
    let Some(view) = pane.session() else {
        return match &pane.session_error {
            Some(error) => vec![Line::from(vec![
                Span::styled("session record ", muted),
                Span::styled(
                    format!("could not be loaded: {error}"),
                    theme.style(Role::Warn),
                ),
            ])],
            None => Vec::new(),
        };
    };
    let mut lines = Vec::new();
    let mut head = vec![
        Span::styled(view.kind.clone().unwrap_or_else(|| "session".into()), muted),
        Span::styled(" ", muted),
        Span::styled(
            view.status.clone().unwrap_or_else(|| "—".into()),
            theme.style(Role::Accent),
        ),
    ];
    if let Some(number) = &view.from_number {
        head.push(Span::styled(" · from ", muted));
        if pane.reveal_number {
            head.push(Span::styled(number.clone(), theme.style(Role::Warn)));
            head.push(Span::styled(" (n masks)", muted));
        } else {
            head.push(Span::styled(mask_phone(number), muted));
            head.push(Span::styled(" (n shows)", muted));
        }
    }
    lines.push(Line::from(head));
    let mut events = vec![Span::styled("events     ", muted)];
    if let Some(why) = &view.events_unknown {
        events.push(Span::styled(
            format!("unknown: not read from the store ({why})"),
            theme.style(Role::Warn),
        ));
    } else if view.events.is_empty() {
        events.push(Span::styled("none stored (the observer saw none)", muted));
    }
    for (index, event) in view.events.iter().enumerate() {
        if index > 0 {
            events.push(Span::styled(" · ", muted));
        }
        events.push(Span::styled(
            format!("{} ", clock(&event.at.fixed_offset())),
            muted,
        ));
        events.push(Span::styled(event.event.clone(), fg));
    }
    lines.push(Line::from(events));
    let artifacts = match &view.artifacts_note {
        Some(note) => Span::styled(format!("none yet: {note}"), theme.style(Role::Warn)),
        None => Span::styled(format!("{} listed", view.artifacts.len()), fg),
    };
    lines.push(Line::from(vec![
        Span::styled("artifacts  ", muted),
        artifacts,
    ]));
    for link in view.links.iter().take(LINKS_SHOWN) {
        let expiry_style = if link.expired(pane.now) {
            theme.style(Role::Error)
        } else {
            theme.style(Role::Ok)
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{:<11}", link.kind), muted),
            Span::styled(link.expiry(pane.now), expiry_style),
            Span::styled(format!("  {}", link.shown()), muted),
        ]));
    }
    lines
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &DeliveriesPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let mut spans = vec![Span::styled(" Deliveries", theme.style(Role::Accent))];
    match &pane.id {
        Some(id) => {
            spans.push(Span::styled(format!("  {id}"), theme.style(Role::Fg)));
            spans.push(Span::styled(
                if pane.latest {
                    format!(" · latest per subscription ({})", pane.rows().len())
                } else {
                    format!(" · all attempts ({})", pane.rows().len())
                },
                muted,
            ));
        }
        None => spans.push(Span::styled("  no id yet", muted)),
    }
    if let Some(position) = pane.selected_index() {
        spans.push(Span::styled(
            format!(" · row {}/{}", position + 1, pane.table.len()),
            muted,
        ));
    }
    spans.extend(pane.table.title_spans(theme));
    if pane.list.loading() {
        spans.push(Span::styled(" · loading…", theme.style(Role::Warn)));
    } else if pane.live() {
        spans.push(Span::styled(" · auto-refresh", theme.style(Role::Warn)));
    }
    spans.extend(crate::tui::widgets::age::spans(
        &pane.list,
        pane.ticked,
        pane.age_period(),
        theme,
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

fn draw_prompt(frame: &mut Frame<'_>, area: Rect, pane: &DeliveriesPane, theme: &Theme) {
    if area.height < 3 {
        return;
    }
    let inner = area.inner(Margin::new(2, 0));
    let [_, line, _, list] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(inner);
    let label = "session or call id ";
    field::draw_prompt(frame, line, label, &pane.prompt, theme);
    let mut lines = Vec::new();
    let choices = pane.choices();
    if choices.is_empty() {
        lines.push(Line::from(Span::styled(
            "no recent or known ids match: type one, enter loads it",
            theme.style(Role::Muted),
        )));
    } else {
        lines.push(Line::from(Span::styled(
            "recent, then known ids: typing narrows, ↑↓ picks, enter loads the › one",
            theme.style(Role::Muted),
        )));
        let room = usize::from(list.height.saturating_sub(1));
        let selected = pane.highlighted();
        let offset = scroll_offset(0, selected.unwrap_or(0), room, choices.len());
        for (index, id) in choices.iter().enumerate().skip(offset).take(room) {
            let current = pane.id.as_deref() == Some(*id);
            let mut style = theme.style(Role::Fg);
            if selected == Some(index) {
                style = style.patch(theme.selection());
            }
            let marker = if selected == Some(index) {
                "› "
            } else {
                "  "
            };
            let suffix = if current { "  (on screen)" } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{marker}{id}"), style),
                Span::styled(suffix, theme.style(Role::Muted)),
            ]));
        }
    }
    frame.render_widget(Paragraph::new(lines).style(theme.base()), list);
}

/// The fixed columns; the error takes the rest.
const ID_W: u16 = 8;
const SUB_W: u16 = 8;
const NUM_W: u16 = 2;
const STATUS_W: u16 = 9;
const HTTP_W: u16 = 4;
const TIME_W: u16 = 8;
/// "in " and a countdown, or a clock time.
const NEXT_W: u16 = 3 + earshot_core::duration_text::COLUMN_WIDTH;

fn draw_table(frame: &mut Frame<'_>, area: Rect, pane: &DeliveriesPane, theme: &Theme) {
    if area.height < 2 {
        return;
    }
    if pane.rows().is_empty() {
        draw_empty(frame, area, pane, theme);
        return;
    }
    if pane.table.is_empty() {
        pane.table.draw_no_match(frame, area, theme);
        return;
    }
    let fixed = [ID_W, SUB_W, NUM_W, STATUS_W, HTTP_W, TIME_W, NEXT_W];
    pane.table.draw(
        frame,
        area,
        pane.rows(),
        &fixed,
        theme,
        |row, selected, error_w| table_row(row, selected, error_w, pane.now, theme),
    );
}

/// The style a status stands out in: failed in the error role, pending in
/// warn, delivered in ok.
fn status_style(status: &DeliveryStatus, theme: &Theme) -> Style {
    match status {
        DeliveryStatus::Failed => theme.style(Role::Error),
        DeliveryStatus::Pending => theme.style(Role::Warn),
        DeliveryStatus::Delivered => theme.style(Role::Ok),
        DeliveryStatus::Other(_) => theme.style(Role::Muted),
    }
}

/// A platform time as every pane's clock: `HH:MM:SS`, UTC.
fn clock(time: &DateTime<FixedOffset>) -> String {
    crate::tui::widgets::utc_clock(time.timestamp_millis())
}

/// A platform time in full, as the command line says it (`… Z`, UTC).
fn full_time(time: &DateTime<FixedOffset>) -> String {
    earshot_core::clock_text::utc_datetime(time.timestamp_millis())
}

/// The table's "next retry / delivered" cell.
fn next_or_done(row: &DeliveryRecord, now: DateTime<Utc>) -> String {
    if let Some(at) = row.next_retry_at {
        let text = countdown(at.with_timezone(&Utc), now);
        return text.replace("retry ", "");
    }
    match row.delivered_at {
        Some(at) => clock(&at),
        None => "—".into(),
    }
}

fn table_row(
    row: &DeliveryRecord,
    selected: bool,
    error_w: usize,
    now: DateTime<Utc>,
    theme: &Theme,
) -> Row<'static> {
    let http = row
        .http_status_code
        .map_or("—".to_owned(), |code| code.to_string());
    let cells = vec![
        Line::from(short_id(&row.id).to_owned()),
        Line::from(short_id(&row.subscription_id).to_owned()),
        Line::from(row.attempt_count.to_string()),
        Line::from(row.status.as_str().to_owned()),
        Line::from(http),
        Line::from(clock(&row.created_at)),
        Line::from(fit(&next_or_done(row, now), usize::from(NEXT_W))),
        Line::from(fit(row.error.as_deref().unwrap_or(""), error_w)),
    ];
    let mut style = match row.status {
        DeliveryStatus::Delivered => theme.style(Role::Fg),
        ref other => status_style(other, theme),
    };
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(cells).style(style)
}

fn draw_empty(frame: &mut Frame<'_>, area: Rect, pane: &DeliveriesPane, theme: &Theme) {
    if let Some(error) = pane.list.error() {
        let what = "could not load the deliveries (r tries again, i another id):";
        table::draw_load_error(frame, area, what, error, theme);
        return;
    }
    let text = match &pane.id {
        None => "no id yet: press i (or enter) to enter a session or call id".to_owned(),
        Some(_) if !pane.list.loaded() => "loading the delivery attempts…".to_owned(),
        Some(id) => format!("no delivery attempts for {id} (yet): r loads again"),
    };
    table::draw_note(frame, area, &text, theme);
}

fn draw_detail(
    frame: &mut Frame<'_>,
    area: Rect,
    row: &DeliveryRecord,
    pane: &DeliveriesPane,
    theme: &Theme,
) {
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            format!(" attempt {} ", short_id(&row.id)),
            theme.style(Role::Accent),
        ));
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let value_width = usize::from(area.width.saturating_sub(LABEL_COLUMN)).max(8);
    let field = |name: &str, text: String, style: Style| -> Vec<Line<'static>> {
        wrap_words(&text, value_width)
            .into_iter()
            .enumerate()
            .map(|(index, chunk)| {
                let label = if index == 0 { name } else { "" };
                Line::from(vec![
                    Span::styled(format!("  {label:<16}"), muted),
                    Span::styled(chunk, style),
                ])
            })
            .collect()
    };
    let mut lines: Vec<Line<'static>> = [
        field("attempt", row.id.clone(), fg),
        field("subscription", row.subscription_id.clone(), fg),
        field("session / call", row.session_id.clone(), fg),
        field(
            "status",
            row.status.as_str().to_owned(),
            status_style(&row.status, theme),
        ),
        field("attempt number", row.attempt_count.to_string(), fg),
        field(
            "HTTP status",
            row.http_status_code
                .map_or("— (no answer)".to_owned(), |code| code.to_string()),
            fg,
        ),
        field(
            "error",
            row.error.clone().unwrap_or_else(|| "—".into()),
            if row.error.is_some() {
                theme.style(Role::Error)
            } else {
                fg
            },
        ),
        field("created", full_time(&row.created_at), fg),
    ]
    .concat();
    if let Some(at) = row.delivered_at {
        lines.extend(field("delivered", full_time(&at), theme.style(Role::Ok)));
    }
    if let Some(at) = row.next_retry_at {
        lines.extend(field(
            "next retry",
            format!(
                "{} (at {})",
                countdown(at.with_timezone(&Utc), pane.now),
                full_time(&at)
            ),
            theme.style(Role::Warn),
        ));
    }
    let outcome = verdict(row);
    let verdict_style = if outcome.is_bad() {
        theme.style(Role::Error)
    } else if matches!(outcome, super::verdict::Verdict::Delivered) {
        theme.style(Role::Ok)
    } else {
        theme.style(Role::Warn)
    };
    lines.push(Line::default());
    lines.extend(field("retry?", outcome.describe(pane.now), verdict_style));
    if let Some(line) = retry_line(row, pane.now, &pane.give_up) {
        lines.extend(field("retries", line, verdict_style));
    }
    let causes = likely_causes(row);
    if !causes.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled("  likely causes", muted)));
        let cause_width = usize::from(area.width.saturating_sub(6)).max(8);
        for cause in causes {
            for (index, chunk) in wrap_words(cause, cause_width).into_iter().enumerate() {
                let bullet = if index == 0 { "    • " } else { "      " };
                lines.push(Line::from(Span::styled(format!("{bullet}{chunk}"), fg)));
            }
        }
    }
    frame.render_widget(Paragraph::new(lines).block(block).style(theme.base()), area);
}

/// Width of the detail view's label column.
const LABEL_COLUMN: u16 = 18;
