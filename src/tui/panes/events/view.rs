//! Drawing the Events pane: the title (filter, follow state, count), the
//! list (only the rows on screen are built, so a long list costs what a
//! screen costs; the sorted column marked), one event in full as a
//! scrolled page, the filter prompt on the last line and the re-send
//! form. Reads state, changes nothing but the remembered scroll offsets.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Wrap};

use super::{EventsPane, Field, FormTarget, LIST_LIMIT, Mode, ResendForm};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::table;
use crate::tui::widgets::table_view::{draw_prompt, filter_title, prompt_line};
use crate::tui::widgets::{fit, fit_line, utc_clock, width as text_width, wrap_words};
use earshot_core::history::body_view;
use earshot_core::history::event_list::{AttemptLine, EventDetail, EventRow, SubscriptionTimeline};
use earshot_core::store::outcomes::EventState;

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &EventsPane, theme: &Theme) {
    let [title, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    draw_title(frame, title, pane, theme);
    let (body, prompt) = prompt_line(body, pane.mode == Mode::Filter);
    if pane.mode == Mode::Filter {
        draw_prompt(
            frame,
            prompt,
            &pane.filter_input,
            pane.filter_error.as_deref(),
            theme,
        );
    }
    match (pane.mode, &pane.detail, &pane.resend) {
        (Mode::Resend, Some(detail), Some(form)) => draw_resend(frame, body, detail, form, theme),
        (Mode::Detail | Mode::Resend, Some(detail), _) => {
            draw_detail(frame, body, pane, detail, theme);
        }
        (Mode::Detail | Mode::Resend, None, _) => match pane.list.error() {
            Some(why) => {
                table::draw_load_error(frame, body, "could not read the event:", why, theme)
            }
            None => table::draw_note(frame, body, "reading the event…", theme),
        },
        _ => draw_list(frame, body, pane, theme),
    }
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &EventsPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let count = pane.rows().len();
    let mut spans = vec![Span::styled(" Events", theme.style(Role::Accent))];
    if pane.filter.is_empty() {
        spans.push(Span::styled(format!(" · {count}"), muted));
    } else {
        // The store filters: how many it holds in all is not read.
        spans.extend(filter_title(&pane.filter, count, None, theme));
    }
    if count >= LIST_LIMIT {
        spans.push(Span::styled(" (the newest: narrow with /)", muted));
    }
    if matches!(pane.mode, Mode::List | Mode::Filter) {
        spans.push(if pane.following() {
            Span::styled(" · following the newest", muted)
        } else if pane.new_above > 0 {
            Span::styled(
                format!(" · PAUSED, {} new above (g follows)", pane.new_above),
                theme.style(Role::Warn),
            )
        } else {
            Span::styled(" · PAUSED (g follows)", theme.style(Role::Warn))
        });
    }
    if let Some(row) = &pane.detail.as_ref().map(|detail| &detail.row) {
        spans.push(Span::styled(
            format!(" · {} {}", row.event, row.event_id),
            theme.style(Role::Fg),
        ));
    }
    spans.extend(crate::tui::widgets::age::spans(
        &pane.list,
        pane.ticked,
        super::RELOAD_EVERY,
        theme,
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

const TIME_W: u16 = 8;
const TYPE_W: u16 = 18;
const SESSION_W: u16 = 22;

fn draw_list(frame: &mut Frame<'_>, area: Rect, pane: &EventsPane, theme: &Theme) {
    if pane.rows().is_empty() {
        return draw_empty(frame, area, pane, theme);
    }
    let fixed = [TIME_W, TYPE_W, SESSION_W];
    pane.table.draw(
        frame,
        area,
        pane.rows(),
        &fixed,
        theme,
        |row, selected, rest_w| list_row(row, selected, rest_w, theme),
    );
}

fn draw_empty(frame: &mut Frame<'_>, area: Rect, pane: &EventsPane, theme: &Theme) {
    if let Some(error) = pane.list.error() {
        let what = "could not read the incident-history store (r tries again):";
        table::draw_load_error(frame, area, what, error, theme);
        return;
    }
    let note = if !pane.list.loaded() {
        "reading the store…"
    } else if !pane.filter.is_empty() {
        "no event matches the filter (esc clears it)"
    } else {
        "no events stored in the last 7 days. The observer stores every event it receives: \
         point a subscription at `earshot listen --store` (the demo runs one)."
    };
    table::draw_note(frame, area, note, theme);
}

fn list_row(row: &EventRow, selected: bool, outcome_w: usize, theme: &Theme) -> Row<'static> {
    let mut style = row
        .worst()
        .map_or(theme.style(Role::Muted), |state| state_style(state, theme));
    let mut outcomes: Vec<Span<'static>> = outcome_cell(row, outcome_w)
        .into_iter()
        .map(|(text, state)| {
            let mut span_style =
                state.map_or(theme.style(Role::Muted), |state| state_style(state, theme));
            if selected {
                span_style = span_style.patch(theme.selection());
            }
            Span::styled(text, span_style)
        })
        .collect();
    if outcomes.is_empty() {
        outcomes.push(Span::raw(if row.outcomes_known {
            "no subscription listens"
        } else {
            "unknown: not swept since it came"
        }));
    }
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(vec![
        Line::from(utc_clock(row.occurred_ms)),
        Line::from(fit(&row.event, usize::from(TYPE_W))),
        Line::from(fit(&row.session_id, usize::from(SESSION_W))),
        fit_line(Line::from(outcomes), outcome_w),
    ])
    .style(style)
}

/// The PER SUBSCRIPTION cell in `width` columns, as pieces and the state
/// each is coloured by: the outcomes in the list's order (the one a
/// `sub:` filter names first, always shown), the customers' that do not
/// fit counted, `+3 more` (no state), never cut mid-id; the observer's own
/// (`obs ✓`) last when there is room: every event listed is one the
/// observer stored, so its mark is what gives way first.
pub(crate) fn outcome_cell(row: &EventRow, width: usize) -> Vec<(String, Option<EventState>)> {
    let with_observer = cell_pieces(row, width, true);
    let used: usize = with_observer.iter().map(|(text, _)| text_width(text)).sum();
    if used <= width {
        with_observer
    } else {
        cell_pieces(row, width, false)
    }
}

/// [`outcome_cell`]'s pieces, with or without the observer's mark (when it
/// is not the first).
fn cell_pieces(row: &EventRow, width: usize, observer: bool) -> Vec<(String, Option<EventState>)> {
    const SEP: &str = " · ";
    let all = &row.subscriptions;
    let texts: Vec<String> = all.iter().map(|outcome| outcome.short_text()).collect();
    let observers_from = |start: usize| -> usize {
        if !observer {
            return 0;
        }
        (start..all.len())
            .filter(|&i| all[i].observer)
            .map(|i| text_width(SEP) + text_width(&texts[i]))
            .sum()
    };
    let customers_from =
        |start: usize| -> usize { all[start..].iter().filter(|o| !o.observer).count() };
    let more = |count: usize| format!("+{count} more");
    let mut pieces = Vec::new();
    let mut used = 0;
    for (index, outcome) in all.iter().enumerate() {
        let sep = if pieces.is_empty() { "" } else { SEP };
        let piece = format!("{sep}{}", texts[index]);
        if index > 0 && outcome.observer && !observer {
            continue;
        }
        if index > 0 && !outcome.observer {
            let after = customers_from(index + 1);
            let counted = if after > 0 {
                text_width(SEP) + text_width(&more(after))
            } else {
                0
            };
            if used + text_width(&piece) + counted + observers_from(index + 1) > width {
                pieces.push((format!("{sep}{}", more(customers_from(index))), None));
                if observer {
                    for (rest, text) in all.iter().zip(&texts).skip(index + 1) {
                        if rest.observer {
                            pieces.push((format!("{SEP}{text}"), Some(rest.state)));
                        }
                    }
                }
                break;
            }
        }
        used += text_width(&piece);
        pieces.push((piece, Some(outcome.state)));
    }
    pieces
}

fn state_style(state: EventState, theme: &Theme) -> Style {
    theme.style(match state {
        EventState::Missed => Role::Error,
        EventState::Pending | EventState::Unknown => Role::Warn,
        EventState::Recovered => Role::Ok,
        EventState::Delivered => Role::Fg,
    })
}

/// The event's page: summary, per subscription its attempts, headers,
/// body.
fn draw_detail(
    frame: &mut Frame<'_>,
    area: Rect,
    pane: &EventsPane,
    detail: &EventDetail,
    theme: &Theme,
) {
    let now_ms = pane.now_ms();
    let lines = detail_lines(detail, pane.marked, pane.reveal, now_ms, area.width, theme);
    let height = usize::from(area.height);
    let last_start = lines.len().saturating_sub(height);
    let start = pane.detail_scroll.get().min(last_start);
    pane.detail_scroll.set(start);
    let shown: Vec<Line<'static>> = lines.into_iter().skip(start).take(height).collect();
    frame.render_widget(Paragraph::new(shown).style(theme.base()), area);
}

/// Every line of the event's page (the view scrolls through them).
pub(crate) fn detail_lines(
    detail: &EventDetail,
    marked: usize,
    reveal: bool,
    now_ms: i64,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let heading = |text: String| Line::from(Span::styled(text, theme.style(Role::Accent)));
    let width = usize::from(width).saturating_sub(4).max(16);
    let row = &detail.row;
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!(" {} ", row.event), theme.style(Role::Accent)),
            Span::styled(format!("{}  session {}", row.event_id, row.session_id), fg),
        ]),
        Line::from(Span::styled(
            format!(" occurred {}", row.occurred_at),
            muted,
        )),
        Line::default(),
        heading(match detail.outcomes_unknown {
            Some(_) => " per subscription (unknown; u sends to a URL)".to_owned(),
            None => format!(
                " per subscription ({}; m marks one for R re-send and s signature)",
                subscriptions_count(detail)
            ),
        }),
    ];
    if let Some(why) = &detail.outcomes_unknown {
        for (index, chunk) in wrap_words(&format!("unknown: {why}"), width)
            .into_iter()
            .enumerate()
        {
            let indent = if index == 0 { "   " } else { "     " };
            lines.push(Line::from(Span::styled(
                format!("{indent}{chunk}"),
                theme.style(Role::Warn),
            )));
        }
    } else if detail.subscriptions.is_empty() {
        lines.push(Line::from(Span::styled(
            "   no subscription listens to this event type",
            muted,
        )));
    }
    for (index, timeline) in detail.subscriptions.iter().enumerate() {
        let observer = is_observer(detail, &timeline.outcome.subscription_id);
        lines.extend(timeline_lines(
            timeline,
            index == marked,
            observer,
            (now_ms, &detail.give_up),
            width,
            theme,
        ));
    }
    lines.push(Line::default());
    lines.push(heading(" headers (as the observer stored them)".to_owned()));
    for (name, value) in &detail.headers {
        for (index, chunk) in wrap_words(&format!("{name}: {value}"), width)
            .into_iter()
            .enumerate()
        {
            let indent = if index == 0 { "   " } else { "     " };
            lines.push(Line::from(Span::styled(format!("{indent}{chunk}"), fg)));
        }
    }
    lines.push(Line::default());
    lines.push(heading(format!(
        " body ({} bytes, {})",
        detail.body.len(),
        if reveal {
            "personal data shown: n masks it"
        } else {
            "personal data masked: n shows it"
        }
    )));
    for line in body_view::lines(&detail.body, reveal) {
        lines.push(Line::from(Span::styled(format!("   {line}"), fg)));
    }
    lines
}

/// Whether `id` is the observer's own subscription (as the list marks it).
fn is_observer(detail: &EventDetail, id: &str) -> bool {
    detail
        .row
        .subscriptions
        .iter()
        .any(|outcome| outcome.observer && outcome.id == id)
}

/// `3 customers and the observer`, `1 customer`: the observer's own
/// subscription is never counted as a customer.
fn subscriptions_count(detail: &EventDetail) -> String {
    let observer = detail
        .subscriptions
        .iter()
        .any(|timeline| is_observer(detail, &timeline.outcome.subscription_id));
    let customers = detail.subscriptions.len() - usize::from(observer);
    let plural = if customers == 1 { "" } else { "s" };
    let and = if observer { " and the observer" } else { "" };
    format!("{customers} customer{plural}{and}")
}

fn timeline_lines(
    timeline: &SubscriptionTimeline,
    marked: bool,
    observer: bool,
    (now_ms, give_up): (i64, &str),
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let outcome = &timeline.outcome;
    let marker = if marked { " ▶ " } else { "   " };
    let mut head = vec![
        Span::styled(marker.to_owned(), theme.style(Role::Accent)),
        Span::styled(
            format!("{} ", short_id(&outcome.subscription_id)),
            theme.style(Role::Fg),
        ),
        Span::styled(
            outcome.state.as_str().to_uppercase(),
            state_style(outcome.state, theme),
        ),
        Span::styled(
            format!(
                "  {} attempt{}  {}",
                outcome.attempts,
                if outcome.attempts == 1 { "" } else { "s" },
                timeline.url.as_deref().unwrap_or("(no longer listed)")
            ),
            theme.style(Role::Muted),
        ),
    ];
    if observer {
        head.push(Span::styled(
            "  (the observer's own)",
            theme.style(Role::Muted),
        ));
    }
    if marked {
        head[1] = head[1].clone().patch_style(theme.selection());
    }
    let mut lines = vec![Line::from(head)];
    if timeline.attempts.is_empty() {
        lines.push(Line::from(Span::styled(
            "       no attempt swept yet",
            theme.style(Role::Muted),
        )));
    }
    for (index, attempt) in timeline.attempts.iter().enumerate() {
        let after = match timeline.attempts.get(index + 1) {
            Some(next) => After::RetriedAt(next.record.created_at.timestamp_millis()),
            None => After::Last { now_ms, give_up },
        };
        lines.push(attempt_line(attempt, after, width, theme));
    }
    lines
}

/// What follows an attempt in its subscription's list.
#[derive(Clone, Copy)]
enum After<'a> {
    /// The retry it was, at this time (Unix ms).
    RetriedAt(i64),
    /// Nothing yet: a retry to come is said relative to now, with when the
    /// platform gave up on this account before.
    Last { now_ms: i64, give_up: &'a str },
}

fn attempt_line(
    attempt: &AttemptLine,
    after: After<'_>,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let record = &attempt.record;
    let status = record
        .http_status_code
        .map_or("—".to_owned(), |code| code.to_string());
    let mut text = format!(
        "#{} {}  {}",
        record.attempt_count,
        utc_clock(record.created_at.timestamp_millis()),
        status
    );
    if let Some(diagnosis) = &attempt.diagnosis {
        text.push_str(&format!("  {diagnosis}"));
    }
    match after {
        After::RetriedAt(at_ms) if attempt.will_retry => {
            text.push_str(&format!("  · retried {}", utc_clock(at_ms)));
        }
        After::RetriedAt(_) => {}
        After::Last { now_ms, give_up } => {
            let now = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
            match earshot_core::api::delivery_verdict::retry_line(record, now, give_up) {
                Some(line) => text.push_str(&format!("  · {line}")),
                None if attempt.will_retry => text.push_str("  · will retry"),
                None => {}
            }
        }
    }
    let style = if record
        .http_status_code
        .is_some_and(|code| (200..300).contains(&code))
    {
        theme.style(Role::Ok)
    } else if attempt.will_retry || record.http_status_code.is_none() {
        theme.style(Role::Warn)
    } else {
        theme.style(Role::Error)
    };
    Line::from(Span::styled(
        format!("       {}", fit(&text, width.saturating_sub(4))),
        style,
    ))
}

fn draw_resend(
    frame: &mut Frame<'_>,
    area: Rect,
    detail: &EventDetail,
    form: &ResendForm,
    theme: &Theme,
) {
    let inner = area.inner(Margin::new(2, 1));
    let [intro, first, second, _, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(inner);
    let event = format!("{} {}", detail.row.event, detail.row.event_id);
    let intro_text = match &form.target {
        FormTarget::Subscription { id, url } => format!(
            "Re-send {event} to subscription {} at {}: the observer's exact bytes, signed now \
             with its secret (kept only for this send). A 2xx marks it recovered if it was missed.",
            short_id(id),
            url.as_deref().unwrap_or("its URL")
        ),
        FormTarget::AnyUrl => format!(
            "Send {event} to any URL (a receiver under development): the observer's exact \
             bytes, signed now with the secret you give. Nothing is recorded."
        ),
    };
    frame.render_widget(
        Paragraph::new(intro_text)
            .style(theme.style(Role::Fg))
            .wrap(Wrap { trim: true }),
        intro,
    );
    let label_w = 24;
    let fields = form.fields();
    for (area, which) in [(first, fields[0]), (second, fields[1])] {
        let (label, input, echo) = match which {
            Field::Url => ("URL", &form.url, Echo::Plain),
            Field::Secret => ("signing secret", &form.secret, Echo::Masked),
            Field::Confirm => ("type the short id", &form.confirm, Echo::Plain),
        };
        let [label_area, value] =
            Layout::horizontal([Constraint::Length(label_w), Constraint::Min(1)]).areas(area);
        let active = form.field == which && !form.sending;
        field::draw_label(frame, label_area, label, active, theme);
        field::draw(frame, value, input, echo, theme.style(Role::Fg), active);
    }
    let line = match &form.result {
        _ if form.sending => Span::styled("sending…", theme.style(Role::Warn)),
        Some(Ok(sent)) => Span::styled(
            sent.summary.clone(),
            theme.style(if sent.delivered {
                Role::Ok
            } else {
                Role::Error
            }),
        ),
        Some(Err(why)) => Span::styled(why.clone(), theme.style(Role::Error)),
        None => Span::styled(
            match &form.target {
                FormTarget::Subscription { id, .. } => {
                    format!("enter sends · type {} to confirm", short_id(id))
                }
                FormTarget::AnyUrl => "enter sends".to_owned(),
            },
            theme.style(Role::Muted),
        ),
    };
    frame.render_widget(
        Paragraph::new(Line::from(line)).wrap(Wrap { trim: true }),
        status,
    );
}
