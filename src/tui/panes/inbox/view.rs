//! Drawing the Inbox pane: the receiver's state and counts, the start
//! form, the requests table (only the rows on screen are built; its
//! filter in the title, its `/` prompt on the last line) and the detail
//! of one request. Reads state, changes nothing but the remembered scroll
//! offset.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Wrap};

use super::{Field, InboxPane, InboxRow, ListenForm, Listening, View};
use crate::tui::panes::subscriptions::short_id;
use crate::tui::theme::{Role, Theme};
use crate::tui::widgets::fit;
use crate::tui::widgets::input::{self as field, Echo};
use crate::tui::widgets::table;
use crate::tui::widgets::wrap_words;
use earshot_core::history::body_view;
use earshot_core::receiver::capture::{Kind, VerdictCode};
use earshot_core::receiver::listen::{Forwarded, Received};

/// Draws the pane in `area`.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, pane: &InboxPane, theme: &Theme) {
    let form_height = if pane.form.is_some() { 6 } else { 0 };
    let [title, form, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(form_height),
        Constraint::Min(0),
    ])
    .areas(area);
    draw_title(frame, title, pane, theme);
    let (body, filter) = pane.table.split_prompt(body);
    pane.table.draw_prompt(frame, filter, theme);
    if let Some(listen) = &pane.form {
        draw_form(frame, form, listen, theme);
    }
    match (pane.view, pane.selected()) {
        (View::Detail, Some(row)) => draw_detail(frame, body, row, pane.reveal, theme),
        _ => draw_table(frame, body, pane, theme),
    }
}

fn draw_title(frame: &mut Frame<'_>, area: Rect, pane: &InboxPane, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let mut spans = vec![Span::styled(" Inbox", theme.style(Role::Accent))];
    match &pane.listening {
        Listening::Off => spans.push(Span::styled("  no receiver: l starts one", muted)),
        Listening::Starting(addr) => {
            spans.push(Span::styled(
                format!("  starting on {addr}…"),
                theme.style(Role::Warn),
            ));
        }
        Listening::On { url } => {
            spans.push(Span::styled("  receiving at ", muted));
            spans.push(Span::styled(url.clone(), theme.style(Role::Ok)));
        }
        Listening::Failed(why) => {
            spans.push(Span::styled(
                format!("  not receiving: {why}"),
                theme.style(Role::Error),
            ));
        }
    }
    let counts = pane.counts;
    if counts.received > 0 {
        spans.push(Span::styled(
            format!(
                " · {} in: {} ok, {} dup, {} rejected",
                counts.received, counts.accepted, counts.duplicates, counts.rejected
            ),
            muted,
        ));
    }
    if counts.received > 0 && pane.view == View::Table {
        spans.push(match pane.new_above {
            _ if pane.following() => Span::styled(" · following the newest", muted),
            0 => Span::styled(" · PAUSED (g follows)", theme.style(Role::Warn)),
            n => Span::styled(
                format!(" · PAUSED, {n} new above (g follows)"),
                theme.style(Role::Warn),
            ),
        });
    }
    spans.extend(pane.table.title_spans(theme));
    // The age of what arrived last comes last: the title is cut at the
    // right, and the counts and the following state say more.
    if let Some(last) = pane.last_in {
        spans.push(Span::styled(
            format!(
                " · last in {}",
                crate::tui::widgets::age::ago(last, pane.ticked)
            ),
            muted,
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.base()), area);
}

fn draw_form(frame: &mut Frame<'_>, area: Rect, form: &ListenForm, theme: &Theme) {
    let rows = Layout::vertical([Constraint::Length(1); 6]).split(area);
    let fields = [
        (
            Field::Address,
            " listen on       ",
            &form.address,
            Echo::Plain,
        ),
        (
            Field::Current,
            " current secret  ",
            &form.current,
            Echo::Masked,
        ),
        (
            Field::Previous,
            " previous secret ",
            &form.previous,
            Echo::Masked,
        ),
        (
            Field::ForwardTo,
            " forward to      ",
            &form.forward_to,
            Echo::Plain,
        ),
    ];
    for (row, (name, label, input, echo)) in rows.iter().zip(fields) {
        let [label_area, input_area] =
            Layout::horizontal([Constraint::Length(17), Constraint::Min(1)]).areas(*row);
        let focused = form.focus == name;
        frame.render_widget(
            Paragraph::new(Span::styled(label, theme.style(Role::Accent))),
            label_area,
        );
        let style = if focused {
            theme.style(Role::Fg).patch(theme.selection())
        } else {
            theme.style(Role::Fg)
        };
        field::draw(frame, input_area, input, echo, style, focused);
    }
    let note = match &form.error {
        Some(error) => Span::styled(format!(" {error}"), theme.style(Role::Error)),
        None => Span::styled(
            " POST any path · optional: previous secret (a rotation), forward to (your app)",
            theme.style(Role::Muted),
        ),
    };
    frame.render_widget(Paragraph::new(note), rows[4]);
}

const TIME_W: u16 = 8;
const KIND_W: u16 = 11;
const WHAT_W: u16 = 17;
const ID_W: u16 = 8;
const STATUS_W: u16 = 3;

fn draw_table(frame: &mut Frame<'_>, area: Rect, pane: &InboxPane, theme: &Theme) {
    if area.height < 2 {
        return;
    }
    if pane.rows().is_empty() {
        let note = match pane.listening {
            Listening::On { .. } => {
                "nothing received yet: point a subscription or a job's webhook_url at the address above"
            }
            _ => {
                "l starts a local receiver that verifies signatures, deduplicates and captures what it gets"
            }
        };
        table::draw_note(frame, area, note, theme);
        return;
    }
    if pane.table.is_empty() {
        pane.table.draw_no_match(frame, area, theme);
        return;
    }
    let fixed = [TIME_W, KIND_W, WHAT_W, ID_W, STATUS_W];
    pane.table.draw(
        frame,
        area,
        pane.rows(),
        &fixed,
        theme,
        |row, selected, verdict_w| table_row(row, selected, verdict_w, theme),
    );
}

/// `14:03:07` (UTC) from the receive time, as every pane's clock.
pub(crate) fn clock(received_unix: i64) -> String {
    crate::tui::widgets::utc_clock(received_unix.saturating_mul(1000))
}

/// The event type, or the transcript's status.
pub(crate) fn what(row: &Received) -> String {
    let entry = &row.entry;
    match entry.kind {
        Kind::Agents => entry.event.clone().unwrap_or_else(|| "?".into()),
        Kind::Prerecorded => format!("job {}", entry.transcript_status.as_deref().unwrap_or("?")),
        Kind::Other => format!("{} {}", entry.method, entry.path),
    }
}

fn id_of(row: &Received) -> String {
    let entry = &row.entry;
    entry
        .event_id
        .as_deref()
        .or(entry.transcript_id.as_deref())
        .map_or("—".to_owned(), |id| short_id(id).to_owned())
}

/// The verdict as an operator reads it.
pub(crate) fn verdict_text(row: &Received) -> String {
    let entry = &row.entry;
    let mut text = match entry.verdict {
        VerdictCode::Ok => match &entry.matched {
            Some(label) => format!("ok: signed with the {label} secret"),
            None => "ok".to_owned(),
        },
        VerdictCode::Duplicate => "duplicate: already processed, answered 200".to_owned(),
        VerdictCode::InvalidSignature => "invalid signature".to_owned(),
        VerdictCode::AuthFailed => "auth header missing or wrong".to_owned(),
        VerdictCode::MalformedPayload => "signed, but not an event payload".to_owned(),
        VerdictCode::MethodNotAllowed => "not a POST".to_owned(),
        VerdictCode::Unrecognized => "neither a signed event nor a transcript webhook".to_owned(),
        VerdictCode::TooLarge => "body too large".to_owned(),
        VerdictCode::StoreFailed => "not stored: the store failed (503, retried)".to_owned(),
    };
    if let Some(reason) = &entry.reason {
        text.push_str(&format!(" ({})", reason.replace('_', " ")));
    }
    if entry.untrusted_source {
        text.push_str(" · source outside the platform's addresses");
    }
    if let Some(forwarded) = &entry.forwarded {
        text.push_str(&format!(" · app: {}", forwarded.answered()));
    }
    text
}

/// The app's answer to a forwarded event, whole: status, time and the
/// start of its body, or why it gave none.
fn app_answer(forwarded: &Forwarded) -> String {
    let took = forwarded.took();
    let answer = forwarded.answer.trim();
    if answer.is_empty() || forwarded.status.is_none() {
        format!("{} in {took}", forwarded.answered())
    } else {
        format!("{} in {took}: {answer}", forwarded.answered())
    }
}

fn verdict_style(row: &Received, theme: &Theme) -> Style {
    match row.verdict() {
        VerdictCode::Ok if row.entry.untrusted_source => theme.style(Role::Warn),
        VerdictCode::Ok => theme.style(Role::Fg),
        VerdictCode::Duplicate => theme.style(Role::Muted),
        _ => theme.style(Role::Error),
    }
}

fn table_row(row: &Received, selected: bool, verdict_w: usize, theme: &Theme) -> Row<'static> {
    let cells = vec![
        Line::from(clock(row.entry.received_unix)),
        Line::from(row.entry.kind.code().to_owned()),
        Line::from(fit(&what(row), usize::from(WHAT_W))),
        Line::from(id_of(row)),
        Line::from(row.status().to_string()),
        Line::from(fit(&verdict_text(row), verdict_w)),
    ];
    let mut style = verdict_style(row, theme);
    if selected {
        style = style.patch(theme.selection());
    }
    Row::new(cells).style(style)
}

const LABEL_W: usize = 14;

/// A header whose value may be a credential: the capture's list, and any
/// name saying token, secret, auth or key (the signature is not one: it
/// proves, and is needed to check, nothing more).
fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower != earshot_core::signature::HEADER_NAME.to_ascii_lowercase()
        && (earshot_core::receiver::capture::is_secret_header(name, None)
            || ["token", "secret", "auth", "key"]
                .iter()
                .any(|word| lower.contains(word)))
}

fn draw_detail(frame: &mut Frame<'_>, area: Rect, row: &InboxRow, reveal: bool, theme: &Theme) {
    let entry = &row.entry;
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            format!(" {} {} ", entry.method, entry.path),
            theme.style(Role::Accent),
        ));
    let fg = theme.style(Role::Fg);
    let muted = theme.style(Role::Muted);
    let width = usize::from(area.width).saturating_sub(LABEL_W + 3).max(8);
    let field = |name: &str, text: &str, style: Style| -> Vec<Line<'static>> {
        wrap_words(text, width)
            .into_iter()
            .enumerate()
            .map(|(index, chunk)| {
                let label = if index == 0 { name } else { "" };
                Line::from(vec![
                    Span::styled(format!("  {label:<LABEL_W$} "), muted),
                    Span::styled(chunk, style),
                ])
            })
            .collect()
    };
    let mut lines = [
        field("received", &entry.received_at, fg),
        field("from", &entry.source, fg),
        field("answered", &entry.status.to_string(), fg),
        field("verdict", &verdict_text(row), verdict_style(row, theme)),
        field("kind", &what(row), fg),
    ]
    .concat();
    if let Some(forwarded) = &entry.forwarded {
        lines.extend(field("your app", &app_answer(forwarded), fg));
    }
    if let Some(id) = entry.event_id.as_deref().or(entry.transcript_id.as_deref()) {
        lines.extend(field("id", id, fg));
    }
    lines.push(Line::from(Span::styled(
        if reveal {
            "  headers (secret values shown: n masks them)"
        } else {
            "  headers (secret values as fingerprints: n shows them)"
        },
        muted,
    )));
    for (name, value) in &entry.headers {
        let value = if reveal || !looks_secret(name) {
            value.clone()
        } else {
            earshot_core::redact::mask(value)
        };
        lines.extend(field("", &format!("{name}: {value}"), fg));
    }
    let kept = if row.body_whole() {
        format!("  body ({} bytes, exact bytes kept)", row.body_len)
    } else {
        format!(
            "  body ({} bytes; only the first {} kept: too large to keep)",
            row.body_len,
            row.body.len()
        )
    };
    lines.push(Line::from(Span::styled(kept, muted)));
    let body = if row.body_whole() {
        body_view::lines(&row.body, reveal)
    } else if reveal {
        // A cut preview is not JSON: shown as text, only when asked.
        String::from_utf8_lossy(&row.body)
            .lines()
            .map(str::to_owned)
            .collect()
    } else {
        vec!["(a cut preview may hold personal data: n shows it)".to_owned()]
    };
    for line in body {
        lines.push(Line::from(Span::styled(format!("  {line}"), fg)));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .style(theme.base())
            .wrap(Wrap { trim: false }),
        area,
    );
}
