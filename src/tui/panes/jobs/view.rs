//! Drawing the Jobs pane: the title, the request budget gauge, the
//! "polling paused" banner, the prompt and the jobs table (only the rows
//! on screen are built), the queue chart under it (`chart.rs`) and a
//! job's record with its timeline (`timeline.rs`). Reads state, changes
//! nothing but the remembered scroll offset and page height.

use std::time::Duration;

use earshot_core::api::delivery_verdict::job_webhook_line;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row};

use super::{JobRow, JobsPane, Prompt, chart, timeline};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input as field;
use crate::tui::widgets::table;
use crate::tui::widgets::{fit, width};
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::duration_text;
use earshot_core::poll::Tick;
use earshot_core::poll::schedule::JobProblem;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    let banner = u16::from(pane.paused_until.is_some());
    let prompt = u16::from(pane.prompting.is_some());
    let breakdown = u16::from(pane.breakdown);
    let [title, gauge, breakdown_area, banner_area, prompt_area, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(breakdown),
        Constraint::Length(banner),
        Constraint::Length(prompt),
        Constraint::Min(0),
    ])
    .areas(area);
    draw_title(frame, title, pane, theme);
    draw_gauge(frame, gauge, pane, theme);
    if pane.breakdown {
        draw_breakdown(frame, breakdown_area, pane, theme);
    }
    let (body, filter) = pane.table.split_prompt(body);
    pane.table.draw_prompt(frame, filter, theme);
    if let Some(resume_in) = pane.paused_for() {
        draw_banner(frame, banner_area, resume_in, theme);
    }
    if let Some(kind) = pane.prompting {
        draw_prompt(frame, prompt_area, pane, kind, theme);
    }
    match pane.selected() {
        Some(row) if pane.detail => draw_detail(frame, body, pane, row, theme),
        _ if pane.rows().is_empty() => draw_table(frame, body, pane, theme),
        _ => {
            let chart_h = chart::height_in(body.height);
            let [table, chart_area] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(chart_h)]).areas(body);
            draw_table(frame, table, pane, theme);
            chart::draw(frame, chart_area, pane, theme);
        }
    }
}

/// One job's record: what the watcher saw and what the platform said.
fn draw_detail(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, row: &JobRow, theme: &Theme) {
    let now = pane.now_tick();
    let muted = theme.style(Role::Muted);
    let fg = theme.style(Role::Fg);
    let line = |label: &str, value: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("  {label:<21}"), muted),
            Span::styled(value, style),
        ])
    };
    let status = row.status();
    let view = row.view.as_ref();
    let transcript = row.transcript.as_ref();
    let mut lines = vec![
        Line::default(),
        line("job", row.id.clone(), theme.style(Role::Accent)),
        line(
            "status",
            status
                .map_or("not seen yet", TranscriptStatus::as_str)
                .to_owned(),
            status_style(status, theme),
        ),
        line(
            "watched for",
            span(view.map(|v| v.added_at), None, now, full),
            fg,
        ),
        line(
            "queued / processing",
            format!(
                "{} / {}",
                span(
                    view.and_then(|v| v.queued_since),
                    view.and_then(|v| v.processing_since),
                    now,
                    full
                ),
                span(
                    view.and_then(|v| v.processing_since),
                    view.and_then(|v| v.finished_at),
                    now,
                    full
                )
            ),
            fg,
        ),
        line(
            "polls it cost",
            view.map_or("—".into(), |v| v.polls.to_string()),
            fg,
        ),
        line(
            "webhook answer",
            match (
                transcript.and_then(|t| t.webhook_status_code),
                row.hook_received(),
            ) {
                (Some(code), _) => code.to_string(),
                (None, Some(code)) => format!("{code} (answered by the Inbox)"),
                (None, None) => "—".into(),
            },
            fg,
        ),
    ];
    if let Some(attempts) = job_webhook_line(&row.hook_attempts) {
        lines.push(line("webhook attempts", attempts, fg));
    }
    let error = error_text(row);
    if !error.is_empty() {
        lines.push(line("error", error, theme.style(Role::Error)));
    }
    let text = transcript.and_then(|t| t.text.as_deref()).unwrap_or("");
    lines.push(line(
        "text",
        if text.is_empty() {
            "—".to_owned()
        } else {
            fit(text, usize::from(area.width).saturating_sub(25).max(8) * 3)
        },
        fg,
    ));
    lines.extend(timeline::lines(row, theme));
    frame.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
        area,
    );
}

/// How old the watcher's last report may be while a job runs before the
/// title calls it stale (its slowest poll is a minute apart).
const STALE_REPORT: std::time::Duration = std::time::Duration::from_secs(120);

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let rows = pane.rows();
    let done = rows.iter().filter(|row| row.is_terminal()).count();
    let mut spans = vec![
        Span::styled(" Jobs", theme.style(Role::Accent)),
        Span::styled(
            format!("  {} watched · {done} finished", rows.len()),
            theme.style(Role::Fg),
        ),
    ];
    if let Some(position) = pane.selected_index() {
        spans.push(Span::styled(
            format!(" · row {}/{}", position + 1, pane.table.len()),
            muted,
        ));
    }
    spans.extend(pane.table.title_spans(theme));
    if let Some(at) = pane.reported_at {
        // Past two minutes with a job still running, the watcher's word is
        // old: said in amber, as every pane's stale data.
        let running = pane.rows().iter().any(|row| !row.is_terminal());
        let stale = running && pane.now.saturating_duration_since(at) > STALE_REPORT;
        spans.push(Span::styled(
            format!(
                " · {}polled {}",
                if stale { "stale: " } else { "" },
                crate::tui::widgets::age::ago(at, pane.now)
            ),
            if stale {
                theme.style(Role::Warn)
            } else {
                muted
            },
        ));
    }
    if let Some(upload) = &pane.upload {
        let text = match (upload.sent * 100).checked_div(upload.total) {
            Some(percent) => format!(" · uploading {} {percent}%", upload.path),
            None => format!(" · uploading {}…", upload.path),
        };
        spans.push(Span::styled(text, theme.style(Role::Warn)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

/// Width of the gauge's bar.
const BAR_W: usize = 20;

fn draw_gauge(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let line = match pane.budget {
        None => Line::from(Span::styled(
            " budget  no requests yet (2,000 per 5 min is the console's share)",
            muted,
        )),
        Some((used, budget)) => {
            let ratio = if budget == 0 {
                1.0
            } else {
                (f64::from(used) / f64::from(budget)).min(1.0)
            };
            let filled = ((ratio * BAR_W as f64).round() as usize).min(BAR_W);
            let style = if ratio >= 0.9 {
                theme.style(Role::Error)
            } else if ratio >= 0.7 {
                theme.style(Role::Warn)
            } else {
                theme.style(Role::Ok)
            };
            Line::from(vec![
                Span::styled(" budget  ", muted),
                Span::styled("█".repeat(filled), style),
                Span::styled("░".repeat(BAR_W - filled), muted),
                Span::styled(
                    format!("  {used}/{budget} requests in the last 5 min"),
                    theme.style(Role::Fg),
                ),
            ])
        }
    };
    frame.render_widget(Paragraph::new(line).style(theme.base()), area);
}

/// What spent the share: only the job watcher and the pane's own
/// submissions draw from it; the sweep and the other panes call the agents
/// API, which this share does not cover.
fn draw_breakdown(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let fg = theme.style(Role::Fg);
    let spent = pane.spent;
    let mut spans = vec![
        Span::styled(" spent   ", muted),
        Span::styled(spent.on_screen.to_string(), fg),
        Span::styled(" polls on screen · ", muted),
        Span::styled(spent.off_screen.to_string(), fg),
        Span::styled(" off screen · ", muted),
        Span::styled(spent.other.to_string(), fg),
        Span::styled(" submissions, error records", muted),
    ];
    let note = " · sweep, panes: agents API (not counted)";
    let used: usize = spans.iter().map(|span| width(&span.content)).sum();
    if used + width(note) <= usize::from(area.width) {
        spans.push(Span::styled(note, muted));
    }
    let line = Line::from(spans);
    frame.render_widget(Paragraph::new(line).style(theme.base()), area);
}

fn draw_banner(frame: &mut Frame<'_>, area: Rect, resume_in: Duration, theme: &Theme) {
    let text = match resume_in.as_secs() {
        0 => " account request limit reached (403): polling resumes now".to_owned(),
        secs => {
            format!(
                " account request limit reached (403): polling paused, resumes in {}",
                duration_text::of_secs(secs)
            )
        }
    };
    frame.render_widget(
        Paragraph::new(Span::styled(
            text,
            theme
                .style(Role::Error)
                .add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ))
        .style(theme.base()),
        area,
    );
}

fn draw_prompt(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, kind: Prompt, theme: &Theme) {
    let label = match kind {
        Prompt::AddIds => " job ids ",
        Prompt::SubmitFile => " audio file ",
    };
    field::draw_prompt(frame, area, label, &pane.prompt, theme);
}

/// The fixed columns; the error takes the rest.
const ID_W: u16 = 8;
const STATUS_W: u16 = 16;
const TIME_W: u16 = duration_text::COMPACT_WIDTH;
const HOOK_W: u16 = 4;

fn draw_table(frame: &mut Frame<'_>, area: Rect, pane: &JobsPane, theme: &Theme) {
    if area.height < 2 {
        return;
    }
    if pane.rows().is_empty() {
        let note = "no jobs watched yet: a adds job ids, s submits a file";
        table::draw_note(frame, area, note, theme);
        return;
    }
    if pane.table.is_empty() {
        pane.table.draw_no_match(frame, area, theme);
        return;
    }
    // The headers are the table's (`table.rs`), in this order.
    let fixed = [ID_W, STATUS_W, TIME_W, TIME_W, TIME_W, HOOK_W];
    let now = pane.now_tick();
    pane.table.draw(
        frame,
        area,
        pane.rows(),
        &fixed,
        theme,
        |row, selected, error_w| table_row(row, selected, error_w, now, theme),
    );
}

/// Whole seconds for the detail: `12 s`, `3 min 4 s`, `1 h 2 min`.
fn full(duration: Duration) -> String {
    duration_text::of_secs(duration.as_secs())
}

/// Whole seconds for the table's columns: `12 s`, `3 min`, `1 h`.
pub(crate) fn short_duration(duration: Duration) -> String {
    duration_text::compact_secs(duration.as_secs())
}

/// From `start` to `end` (or now) as `text`, if it started.
fn span(start: Option<Tick>, end: Option<Tick>, now: Tick, text: fn(Duration) -> String) -> String {
    match start {
        Some(start) => text(end.unwrap_or(now).saturating_sub(start)),
        None => "—".into(),
    }
}

/// What a backing-off job is waiting for.
pub(crate) fn problem_text(problem: JobProblem) -> &'static str {
    match problem {
        JobProblem::RateLimited => "rate limited (429): waiting out Retry-After",
        JobProblem::NetworkError => "network error: backing off",
        JobProblem::NotFound => "not found (404): backing off",
        JobProblem::NoAnswer => "no answer: backing off",
        JobProblem::AccountLimited => "account limit (403): paused",
    }
}

/// The error cell: the job's own error, else why polling struggles.
pub(crate) fn error_text(row: &JobRow) -> String {
    if let Some(error) = row.transcript.as_ref().and_then(|t| t.error.clone()) {
        return error;
    }
    let problem = row.view.as_ref().and_then(|view| view.problem);
    match (problem, &row.poll_error) {
        (Some(problem), Some(message)) => format!("{}: {message}", problem_text(problem)),
        (Some(problem), None) => problem_text(problem).to_owned(),
        (None, Some(message)) => message.clone(),
        (None, None) => String::new(),
    }
}

fn status_style(status: Option<&TranscriptStatus>, theme: &Theme) -> Style {
    match status {
        Some(TranscriptStatus::Error) => theme.style(Role::Error),
        Some(TranscriptStatus::Completed) => theme.style(Role::Fg),
        Some(TranscriptStatus::Queued | TranscriptStatus::Processing) => theme.style(Role::Warn),
        _ => theme.style(Role::Muted),
    }
}

fn table_row(
    row: &JobRow,
    selected: bool,
    error_w: usize,
    now: Tick,
    theme: &Theme,
) -> Row<'static> {
    // Added, not polled yet (the budget decides when).
    let status = row
        .status()
        .map_or("awaiting poll", TranscriptStatus::as_str)
        .to_owned();
    let status = if row.stale() {
        format!("{status} stale")
    } else {
        status
    };
    let view = row.view.as_ref();
    let age = view.map_or("—".into(), |view| {
        short_duration(now.saturating_sub(view.added_at))
    });
    let queued = view.map_or("—".into(), |view| {
        span(
            view.queued_since,
            view.processing_since.or(view.finished_at),
            now,
            short_duration,
        )
    });
    let processing = view.map_or("—".into(), |view| {
        span(view.processing_since, view.finished_at, now, short_duration)
    });
    let hook = row.hook().map_or("—".to_owned(), |code| code.to_string());
    let cells = vec![
        Line::from(short_id(&row.id).to_owned()),
        Line::from(fit(&status, usize::from(STATUS_W))),
        Line::from(age),
        Line::from(queued),
        Line::from(processing),
        Line::from(hook),
        Line::from(fit(&error_text(row), error_w)),
    ];
    let mut style = if row.is_error() {
        theme.style(Role::Error)
    } else if row.stale() {
        theme.style(Role::Muted)
    } else {
        status_style(row.status(), theme)
    };
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(cells).style(style)
}
