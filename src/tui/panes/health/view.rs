//! Drawing the Health pane: the title with the window, the last sweep and
//! the observer's coverage, the per-subscription board in events (only the
//! rows on screen are built) with the
//! selected row's failure groups under it, a subscription's failing
//! sessions, and the recover form; each table's `/` filter (in the title
//! or its heading) and its prompt line. Reads state, changes nothing but
//! the remembered scroll offsets.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Wrap};

use super::tables::{failing_clock, largest_group, session_types};
use super::{Field, HealthPane, Mode, RecoverForm};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::table;
use crate::tui::widgets::table_view::prompt_line;
use crate::tui::widgets::{fit, fit_line, fit_url, utc_clock, width};
use earshot_core::duration_text;
use earshot_core::history::coverage::CoverageState;
use earshot_core::history::report::{LatestChange, SubscriptionHealth};
use earshot_core::history::sparkline::{self, Glyphs, Mark};
use earshot_core::store::deliveries::FailingSession;
use earshot_core::store::timeline::Timeline;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    let [title, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let (body, prompt) = prompt_line(body, pane.prompting());
    match pane.mode {
        Mode::Board => pane.table.draw_prompt(frame, prompt, theme),
        Mode::Sessions => pane.sessions_table.draw_prompt(frame, prompt, theme),
        Mode::Incidents => pane.incidents.table.draw_prompt(frame, prompt, theme),
        Mode::Recover => {}
    }
    draw_title(frame, title, pane, theme);
    match pane.mode {
        Mode::Board => draw_board(frame, body, pane, theme),
        Mode::Sessions => draw_sessions(frame, body, pane, theme),
        Mode::Incidents => super::incidents_view::draw(frame, body, pane, theme),
        Mode::Recover => match &pane.recover {
            Some(form) => draw_recover(frame, body, form, theme),
            None => draw_board(frame, body, pane, theme),
        },
    }
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let failing = pane.rows().iter().filter(|row| row.is_failing()).count();
    let mut spans = vec![Span::styled(" Health", theme.style(Role::Accent))];
    // The observer's silence comes first: the title is cut at the right,
    // so it is never what a narrow terminal drops.
    let silence = pane.coverage.as_ref().and_then(|c| c.silent_since_ms);
    if let Some(since) = silence {
        let since = earshot_core::clock_text::utc_minute(since);
        spans.push(Span::styled(
            format!(" · observer silent since {since}"),
            theme.style(Role::Error),
        ));
    }
    // Then what is wrong, and the board's age: a title is cut at the
    // right, so the context (window, counts, the sweep) comes last.
    match &pane.coverage {
        Some(_) if silence.is_some() => {}
        Some(coverage) if !coverage.is_known() => spans.push(Span::styled(
            match coverage.state {
                CoverageState::None => " · observer: no events in the window, missed events \
                                       cannot be known"
                    .to_owned(),
                _ => " · observer SILENT: missed events cannot be known".to_owned(),
            },
            theme.style(Role::Error),
        )),
        _ => {}
    }
    if failing > 0 {
        spans.push(Span::styled(
            format!(" · {failing} failing"),
            theme.style(Role::Error),
        ));
    }
    let open = pane.incidents.open_count();
    if open > 0 {
        spans.push(Span::styled(
            format!(
                " · {open} open incident{} (i)",
                if open == 1 { "" } else { "s" }
            ),
            theme.style(Role::Error),
        ));
    }
    spans.extend(crate::tui::widgets::age::spans(
        &pane.board,
        pane.ticked,
        super::RELOAD_EVERY,
        theme,
    ));
    // The filter the operator typed, before the context.
    if pane.mode == Mode::Board {
        spans.extend(pane.table.title_spans(theme));
    }
    spans.extend([
        Span::styled(
            format!(" · last {}", pane.window.label()),
            theme.style(Role::Fg),
        ),
        Span::styled(format!(" · {} subscriptions", pane.rows().len()), muted),
    ]);
    match &pane.last_sweep {
        _ if pane.sweeping => spans.push(Span::styled(" · sweeping…", theme.style(Role::Warn))),
        Some(Ok(report)) => {
            // A sweep runs every few seconds; its age is said only once
            // sweeps stall, so the figures never read as current when
            // they are not.
            let stalled = pane
                .swept_at
                .map(|at| pane.ticked.saturating_duration_since(at))
                .filter(|age| *age > 2 * super::SWEEP_EVERY);
            spans.push(Span::styled(
                format!(
                    " · swept {} sessions{} ({} requests{})",
                    report.sessions_swept,
                    stalled
                        .map(|age| format!(" {}", duration_text::ago(age.as_secs() as i64)))
                        .unwrap_or_default(),
                    report.requests,
                    if report.left_for_later > 0 {
                        format!(", {} still due", report.left_for_later)
                    } else {
                        String::new()
                    }
                ),
                if stalled.is_some() {
                    theme.style(Role::Warn)
                } else {
                    muted
                },
            ));
        }
        Some(Err(_)) => spans.push(Span::styled(" · sweep failed", theme.style(Role::Error))),
        None => {}
    }
    if let Some(coverage) = pane.coverage.as_ref().filter(|c| c.is_known()) {
        spans.push(Span::styled(
            format!(" · observer {} events", coverage.events_in_window),
            muted,
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

/// A retry time from the report (RFC 3339) said relative to `now_ms`:
/// "in 2 min", "overdue 4 s" (a time that passed is not shown as if to
/// come).
fn retry_due(next: &str, now_ms: i64) -> String {
    match chrono::DateTime::parse_from_rfc3339(next) {
        Ok(at) => earshot_core::duration_text::due((at.timestamp_millis() - now_ms) / 1000),
        Err(_) => next.to_owned(),
    }
}

pub(super) const SUB_W: u16 = 9;
pub(super) const COUNT_W: u16 = 6;
pub(super) const TIME_W: u16 = 8;
/// Enough for `…0.0.1:38915`: which receiver it is.
const URL_MIN_W: u16 = 14;

fn draw_board(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    if pane.rows().is_empty() {
        return draw_empty(frame, area, pane, theme);
    }
    if pane.table.is_empty() {
        return pane.table.draw_no_match(frame, area, theme);
    }
    // The board, then the selected subscription's failures right under it.
    let details = pane.selected().map_or(0, |row| {
        row.failures.len().min(4) as u16
            + 2
            + u16::from(!row.missed_by_type.is_empty())
            + u16::from(row.latest_change.is_some())
    });
    let wanted = u16::try_from(pane.table.len() + 1).unwrap_or(u16::MAX);
    let board_height = wanted.min(area.height.saturating_sub(details)).max(2);
    let [board, below, _] = Layout::vertical([
        Constraint::Length(board_height),
        Constraint::Length(details),
        Constraint::Min(0),
    ])
    .areas(area);
    let trend_w = trend_width(board.width);
    let url_w = url_width(board.width, trend_w, pane.rows());
    let fixed = [
        SUB_W, url_w, COUNT_W, COUNT_W, COUNT_W, COUNT_W, TIME_W, trend_w,
    ];
    let url_cells = usize::from(url_w);
    let trend = pane
        .trend
        .as_ref()
        .map(|timeline| (timeline, usize::from(trend_w)));
    pane.table.draw(
        frame,
        board,
        pane.rows(),
        &fixed,
        theme,
        |row, selected, failure_w| board_row(row, selected, url_cells, failure_w, trend, theme),
    );
    if let Some(row) = pane.selected() {
        draw_failures(frame, below, pane, row, theme);
    }
}

/// The TREND column: 6 cells at 80 columns, growing with the width to 12
/// (each cell then two hours of a 24-hour window); the diagnosis keeps
/// the rest.
fn trend_width(board_width: u16) -> u16 {
    (board_width.saturating_sub(72) / 2).clamp(6, 12)
}

/// The URL column: as wide as the longest URL when the diagnosis keeps
/// three fifths of the free width, else two fifths of it, and never
/// under [`URL_MIN_W`] (the host's end and the port).
fn url_width(board_width: u16, trend_w: u16, rows: &[SubscriptionHealth]) -> u16 {
    let fixed = SUB_W + 4 * COUNT_W + TIME_W + trend_w + 9;
    let free = board_width.saturating_sub(fixed);
    let longest = rows
        .iter()
        .map(|row| u16::try_from(width(&row.url)).unwrap_or(u16::MAX))
        .max()
        .unwrap_or(URL_MIN_W);
    longest.min(free * 2 / 5).max(URL_MIN_W)
}

fn board_row(
    row: &SubscriptionHealth,
    selected: bool,
    url_w: usize,
    failure_w: usize,
    trend: Option<(&Timeline, usize)>,
    theme: &Theme,
) -> Row<'static> {
    // Since when the current run of failures goes on (UTC clock time).
    let failing = failing_clock(row);
    let why = largest_group(row);
    let events = &row.events;
    let mut name = short_id(&row.id).to_owned();
    if !row.enabled {
        name.push('⏸');
    }
    let cells = vec![
        Line::from(name),
        Line::from(fit_url(&row.url, url_w)),
        Line::from(events.delivered.to_string()),
        Line::from(events.missed.to_string()),
        Line::from(events.recovered.to_string()),
        Line::from((events.pending + events.unknown).to_string()),
        Line::from(failing),
        trend.map_or_else(Line::default, |(timeline, cells)| {
            trend_cell(timeline, row, cells, selected, theme)
        }),
        Line::from(fit(&why, failure_w)),
    ];
    let mut style = if row.is_failing() {
        theme.style(Role::Error)
    } else if events.pending + events.unknown > 0 {
        theme.style(Role::Warn)
    } else {
        theme.style(Role::Fg)
    };
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(cells).style(style)
}

/// The newest change earshot made to the subscription, in the error
/// colour when its failures started after it.
fn change_line(row: &SubscriptionHealth, change: &LatestChange, theme: &Theme) -> Line<'static> {
    let failing_after = row.failing_since_ms().is_some_and(|at| at >= change.at_ms);
    let mut text = format!(
        "   last change: {} {} by {}",
        change.action,
        utc_clock(change.at_ms),
        change.operator
    );
    if !change.detail.is_empty() {
        text.push_str(&format!(" ({})", change.detail));
    }
    if failing_after {
        text.push_str(": failing since after it");
    }
    let role = if failing_after {
        Role::Error
    } else {
        Role::Muted
    };
    Line::from(Span::styled(text, theme.style(role)))
}

/// A board row's events over the whole window in `cells` characters
/// (buckets merged, `sparkline::merged`), coloured by state and told apart
/// by glyph without colour; the cell the current failures began in is
/// reversed against its row.
fn trend_cell(
    timeline: &Timeline,
    row: &SubscriptionHealth,
    cells: usize,
    selected: bool,
    theme: &Theme,
) -> Line<'static> {
    let (merged, per_cell) = sparkline::merged(&timeline.buckets_of(&row.id), cells);
    let failing_cell = row
        .failing_since_ms()
        .and_then(|at| timeline.column_of(at))
        .map(|column| column / per_cell);
    let spans: Vec<Span<'static>> = sparkline::marks(&merged, 8)
        .into_iter()
        .enumerate()
        .map(|(cell, mark)| {
            let mut style = theme.style(mark_role(mark));
            if Some(cell) == failing_cell {
                // Reversed against the row, so it stands out with or
                // without colour, selected (itself reversed) or not.
                let row_reversed =
                    selected && theme.selection().add_modifier.contains(Modifier::REVERSED);
                style = if row_reversed {
                    style.remove_modifier(Modifier::REVERSED)
                } else {
                    style.add_modifier(Modifier::REVERSED)
                };
            }
            Span::styled(Glyphs::Unicode.of(mark).to_string(), style)
        })
        .collect();
    Line::from(spans)
}

/// The colour of a sparkline mark.
fn mark_role(mark: Mark) -> Role {
    match mark {
        Mark::Delivered(_) => Role::Ok,
        Mark::Missed => Role::Error,
        Mark::Recovered => Role::Accent,
        Mark::Pending => Role::Warn,
        Mark::Unknown | Mark::Empty => Role::Muted,
    }
}

/// The subscription's events over the window, one character per bucket,
/// with the time its current failures began marked under its bucket.
fn trend_lines(timeline: &Timeline, row: &SubscriptionHealth, theme: &Theme) -> Vec<Line<'static>> {
    let failing = row
        .failing_since_ms()
        .map(|at| (at, format!("failing since {}", utc_clock(at))));
    trend_with_marks(timeline, &row.id, "   ", failing, Role::Error, theme)
}

/// `subscription_id`'s events over the timeline after a label saying its
/// span (`history::sparkline`): bars in the ok colour, missed in the error
/// colour, the other states in theirs, the symbols saying the same without
/// colour. Under it, a line per mark `(time, text)` inside the timeline,
/// its `^` under the time's bucket, in `marks_role`.
pub(super) fn trend_with_marks(
    timeline: &Timeline,
    subscription_id: &str,
    indent: &str,
    marks: impl IntoIterator<Item = (i64, String)>,
    marks_role: Role,
    theme: &Theme,
) -> Vec<Line<'static>> {
    // The span the buckets cover, not the window's name: at most
    // `TREND_COLUMNS` buckets, so it can be shorter than the window.
    let span_ms = timeline.bucket_ms as f64 * timeline.columns as f64;
    let label = format!(
        "{indent}last {}, one per {}: ",
        duration_text::of_millis(span_ms),
        duration_text::of_millis(timeline.bucket_ms as f64)
    );
    let under = " ".repeat(width(&label));
    let mut spans = vec![Span::styled(label, theme.style(Role::Muted))];
    for mark in sparkline::marks(&timeline.buckets_of(subscription_id), 8) {
        spans.push(Span::styled(
            Glyphs::Unicode.of(mark).to_string(),
            theme.style(mark_role(mark)),
        ));
    }
    let mut lines = vec![Line::from(spans)];
    for (at, text) in marks {
        if let Some(mark) = sparkline::mark_under(timeline, at, &text) {
            lines.push(Line::from(Span::styled(
                format!("{under}{mark}"),
                theme.style(marks_role),
            )));
        }
    }
    lines
}

/// The selected subscription's trend, failure groups and retries.
fn draw_failures(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &HealthPane,
    row: &SubscriptionHealth,
    theme: &Theme,
) {
    if area.height == 0 {
        return;
    }
    let silent_since_ms = pane.coverage.as_ref().and_then(|c| c.silent_since_ms);
    let trend = pane
        .trend
        .as_ref()
        .map(|timeline| trend_lines(timeline, row, theme))
        .unwrap_or_default();
    let give_up = pane.give_up.as_str();
    let now_ms = (pane.clock)();
    let muted = theme.style(Role::Muted);
    let mut lines = vec![
        Line::default(),
        Line::from(vec![
            Span::styled(
                format!(" {} ", short_id(&row.id)),
                theme.style(Role::Accent),
            ),
            Span::styled(row.url.clone(), theme.style(Role::Fg)),
            Span::styled(
                match (&row.next_retry_at, row.retries_due) {
                    (Some(next), count) if give_up.is_empty() => {
                        format!("  · {count} retries due, next {}", retry_due(next, now_ms))
                    }
                    (Some(next), count) => format!(
                        "  · {count} retries due, next {} · {give_up}",
                        retry_due(next, now_ms)
                    ),
                    _ => String::new(),
                },
                theme.style(Role::Warn),
            ),
        ]),
    ];
    lines.extend(trend);
    if let Some(since) = silent_since_ms.filter(|_| row.enabled) {
        lines.push(Line::from(Span::styled(
            format!(
                "   unknown since {}: the observer is silent, so what this subscription's \
                 events became after that is not known (the counts stop there)",
                earshot_core::clock_text::utc_minute(since)
            ),
            theme.style(Role::Error),
        )));
    }
    if let Some(change) = &row.latest_change {
        lines.push(change_line(row, change, theme));
    }
    if !row.missed_by_type.is_empty() {
        let by_type = row.missed_by_type_words();
        lines.push(Line::from(vec![
            Span::styled("   missed: ", theme.style(Role::Error)),
            Span::styled(by_type.join(" · "), theme.style(Role::Fg)),
            Span::styled(
                row.last_success_at
                    .as_deref()
                    .map(|at| format!("  (last success {at})"))
                    .unwrap_or_else(|| "  (no success on record)".to_owned()),
                muted,
            ),
        ]));
    }
    for group in row.failures.iter().take(4) {
        lines.push(Line::from(vec![
            Span::styled(format!("   ×{:<5} ", group.count), theme.style(Role::Error)),
            Span::styled(group.diagnosis.clone(), theme.style(Role::Fg)),
            Span::styled(
                format!(
                    "  ({} missed, {} recovered, {} retrying; last {}, e.g. {})",
                    group.missed,
                    group.recovered,
                    group.retrying,
                    group.last_at,
                    group.example_session_id
                ),
                muted,
            ),
        ]));
    }
    let lines: Vec<Line<'static>> = lines
        .into_iter()
        .map(|line| fit_line(line, usize::from(area.width)))
        .collect();
    frame.render_widget(Paragraph::new(lines).style(theme.base()), area);
}

fn draw_empty(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    if let Some(error) = pane.board.error() {
        let what = "could not read the incident-history store (r tries again):";
        table::draw_load_error(frame, area, what, error, theme);
        return;
    }
    let note = if !pane.board.loaded() || pane.sweeping {
        "reading the store and sweeping the known sessions…"
    } else {
        "no subscriptions in the store yet. Point one subscription to all five events at \
         `earshot listen --store` (the observer) so every session is known; the sweep lists \
         subscriptions and fetches each session's delivery attempts."
    };
    table::draw_note(frame, area, note, theme);
}

const SESSION_W: u16 = 38;
const TYPES_W: u16 = 18;
const HTTP_W: u16 = 4;

fn draw_sessions(frame: &mut Frame<'_>, area: Rect, pane: &HealthPane, theme: &Theme) {
    let [head, list] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let of = pane.sessions_of.as_deref().map(short_id).unwrap_or("");
    let heading = format!(
        " failing sessions of {of} · {} (enter opens one in Deliveries)",
        pane.sessions().len()
    );
    let mut spans = vec![Span::styled(heading, theme.style(Role::Muted))];
    spans.extend(pane.sessions_table.title_spans(theme));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), head);
    if pane.sessions().is_empty() {
        // A read that failed says why, not that it is still loading.
        let note = pane
            .sessions_error
            .as_deref()
            .unwrap_or("loading the failing sessions…");
        table::draw_note(frame, list, note, theme);
        return;
    }
    if pane.sessions_table.is_empty() {
        return pane.sessions_table.draw_no_match(frame, list, theme);
    }
    let fixed = [SESSION_W, TYPES_W, COUNT_W, COUNT_W, TIME_W, HTTP_W];
    let draw_row = |session: &FailingSession, selected: bool, error_w: usize| {
        let last = utc_clock(session.last_failure_ms);
        let types = session_types(session);
        let cells = vec![
            Line::from(fit(&session.session_id, usize::from(SESSION_W))),
            Line::from(fit(&types, usize::from(TYPES_W))),
            Line::from(session.missed.to_string()),
            Line::from(session.failed_attempts.to_string()),
            Line::from(last),
            Line::from(
                session
                    .http_status_code
                    .map_or("—".into(), |code| code.to_string()),
            ),
            Line::from(fit(session.error.as_deref().unwrap_or(""), error_w)),
        ];
        // Nothing missed left: recovered, or delivered by a retry.
        let mut style = theme.style(if session.missed > 0 {
            Role::Error
        } else {
            Role::Muted
        });
        if selected {
            style = style.patch(theme.selection());
        }
        Row::new(cells).style(style)
    };
    pane.sessions_table
        .draw(frame, list, pane.sessions(), &fixed, theme, draw_row);
}

fn draw_recover(frame: &mut Frame<'_>, area: Rect, form: &RecoverForm, theme: &Theme) {
    let inner = area.inner(Margin::new(2, 1));
    let [intro, preview, secret, confirm, _, status, sent] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(4),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Min(0),
    ])
    .areas(inner);
    let text = format!(
        "Recover {}: re-send every event it missed for good in this window to {}, signed now \
         with its secret (kept only for this run); the first goes alone, 3 failures in a row stop it.",
        short_id(&form.subscription_id),
        form.url
    );
    frame.render_widget(
        Paragraph::new(text)
            .style(theme.style(Role::Fg))
            .wrap(Wrap { trim: true }),
        intro,
    );
    draw_preview(frame, preview, form, theme);
    let running = form.running();
    let label_w = 24;
    for (area, label, input, echo, which) in [
        (
            secret,
            "signing secret",
            &form.secret,
            Echo::Masked,
            Field::Secret,
        ),
        (
            confirm,
            "type the short id",
            &form.confirm,
            Echo::Plain,
            Field::Confirm,
        ),
    ] {
        let [label_area, value] =
            Layout::horizontal([Constraint::Length(label_w), Constraint::Min(1)]).areas(area);
        let active = form.field == which && !running;
        field::draw_label(frame, label_area, label, active, theme);
        field::draw(frame, value, input, echo, theme.style(Role::Fg), active);
    }
    let line = match (&form.progress, &form.result) {
        (Some(_), _) if form.cancelling => Span::styled(
            "stopping after the event being sent…",
            theme.style(Role::Warn),
        ),
        (Some((done, total)), _) if *total > 0 => Span::styled(
            format!("sending… {done} of {total} (esc stops after this one)"),
            theme.style(Role::Warn),
        ),
        (Some(_), _) => Span::styled("sweeping and planning…", theme.style(Role::Warn)),
        (None, Some(Ok(summary))) => Span::styled(summary.clone(), theme.style(Role::Ok)),
        (None, Some(Err(why))) => Span::styled(why.clone(), theme.style(Role::Error)),
        (None, None) => Span::styled(
            format!(
                "enter sends · type {} to confirm",
                short_id(&form.subscription_id)
            ),
            theme.style(Role::Muted),
        ),
    };
    frame.render_widget(
        Paragraph::new(Line::from(line)).wrap(Wrap { trim: true }),
        status,
    );
    draw_sent(frame, sent, form, theme);
}

/// What the run would send, as read when the form opened.
fn draw_preview(frame: &mut Frame<'_>, area: Rect, form: &RecoverForm, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let lines = match &form.preview {
        None => vec![Line::from(Span::styled(
            "reading what would be sent…",
            muted,
        ))],
        Some(Err(why)) => vec![Line::from(Span::styled(
            format!("cannot say what would be sent: {why}"),
            theme.style(Role::Error),
        ))],
        Some(Ok(preview)) if preview.to_send == 0 => vec![Line::from(Span::styled(
            format!(
                "nothing to send as of the last sweep{}",
                preview.left_out.replacen(';', ":", 1)
            ),
            muted,
        ))],
        Some(Ok(preview)) => {
            let types: Vec<String> = preview
                .by_type
                .iter()
                .map(|(name, count)| format!("{name} {count}"))
                .collect();
            let mut lines = vec![Line::from(Span::styled(
                format!(
                    "would send {} events ({}), from {} to {}",
                    preview.to_send,
                    types.join(", "),
                    preview.first_ms.map_or("—".into(), utc_clock),
                    preview.last_ms.map_or("—".into(), utc_clock),
                ),
                theme.style(Role::Fg),
            ))];
            if !preview.left_out.is_empty() {
                lines.push(Line::from(Span::styled(
                    preview
                        .left_out
                        .trim_start_matches("; ")
                        .replace("; ", " · "),
                    muted,
                )));
            }
            lines
        }
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), area);
}

/// Each event re-sent and its answer, the newest at the bottom.
fn draw_sent(frame: &mut Frame<'_>, area: Rect, form: &RecoverForm, theme: &Theme) {
    let height = usize::from(area.height);
    let start = form.sent.len().saturating_sub(height);
    let width = usize::from(area.width);
    let lines: Vec<Line<'static>> = form.sent[start..]
        .iter()
        .map(|sent| {
            let answer = match (&sent.error, sent.http_status) {
                (None, Some(code)) => format!("{code} delivered"),
                (Some(error), _) => error.clone(),
                (None, None) => "no answer".to_owned(),
            };
            let text = format!(
                "{} {:<18} {:<24} {answer} ({})",
                if sent.delivered { "✓" } else { "✗" },
                sent.event,
                fit(&sent.session_id, 24),
                earshot_core::duration_text::of_millis(sent.latency_ms as f64)
            );
            let role = if sent.delivered {
                Role::Ok
            } else {
                Role::Error
            };
            Line::from(Span::styled(fit(&text, width), theme.style(role)))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod tests {
    use super::retry_due;

    #[test]
    fn a_retry_time_that_passed_reads_overdue() {
        let next = "2025-03-14T09:30:00Z";
        let at_ms = 1_741_944_600_000; // 09:30:00
        assert_eq!(retry_due(next, at_ms + 90_000), "overdue 1 min 30 s");
        assert_eq!(retry_due(next, at_ms - 150_000), "in 2 min 30 s");
        assert_eq!(retry_due("not a time", at_ms), "not a time");
    }
}
