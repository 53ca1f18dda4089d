//! The Jobs chart under the table: a queue of 24 jobs draining at a
//! concurrency of 4, in colour and without (`NO_COLOR`), at both sizes.

use crate::tui::kernel::Handover;
use std::time::Duration;

use crate::tui::console::app::App;
use crate::tui::theme::Role;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::poll::schedule::Spent;
use earshot_core::poll::watcher::WatchEvent;

use super::jobs::{changed, fix_clock, secs, view, watch};
use super::{
    SIZES, app, colour, fg_at, find, keys, mono, pane_area, render, render_with, screen_text,
};

/// 24 jobs of 10 s each at a concurrency of 4, drawn 45 s in: four ran
/// from the start, the rest were seen queued at 1 s and started four at
/// a time as four finished; the tenth failed (at 30 s).
fn draining_app() -> App {
    let mut app = app();
    let ids: Vec<String> = (0..24).map(|i| format!("{i:02}c0ffee-job")).collect();
    app.seed(Handover::JobIds(ids.clone()));
    let now = 45;
    for (i, id) in (0u64..).zip(&ids) {
        let start = i / 4 * 10;
        let end = start + 10;
        let status = match () {
            _ if end <= now && i == 9 => TranscriptStatus::Error,
            _ if end <= now => TranscriptStatus::Completed,
            _ if start <= now => TranscriptStatus::Processing,
            _ => TranscriptStatus::Queued,
        };
        let mut job = view(id, status);
        // Polled as a well-served watch is: last seen queued half a
        // second before it started, seen processing as it started and
        // until 300 ms before it finished, seen finished as it did.
        let at = |secs: u64, less_ms: u64| {
            Some(Duration::from_secs(secs).saturating_sub(Duration::from_millis(less_ms)))
        };
        job.queued_since = if i < 4 { None } else { secs(1) };
        job.queued_until = match i {
            0..4 => None,
            _ if start <= now => at(start, 500),
            _ => secs(now),
        };
        job.processing_since = if start <= now { secs(start) } else { None };
        job.processing_until = match () {
            _ if end <= now => at(end, 300),
            _ if start <= now => secs(now),
            _ => None,
        };
        job.finished_at = if end <= now { secs(end) } else { None };
        changed(&mut app, job, None);
    }
    watch(
        &mut app,
        WatchEvent::Budget {
            used: 300,
            budget: 2_000,
            spent: Spent::default(),
        },
    );
    app.panes.jobs.now = app.panes.jobs.epoch + Duration::from_secs(now);
    app.panes.jobs.reported_at = Some(app.panes.jobs.now - Duration::from_secs(1));
    fix_clock(&mut app);
    app.toast = None;
    keys(&mut app, "4");
    app
}

/// The chart says the queue drained at the limit: processing full (at the
/// most seen at once) throughout, queued falling, the failure in its
/// bucket, and at 80×24 it shrinks (two buckets a cell) with the table's
/// columns kept.
#[test]
fn the_jobs_chart_follows_a_queue_draining_at_the_limit() {
    let app = draining_app();
    for (width, height) in SIZES {
        let terminal = render(&app, (width, height));
        insta::assert_snapshot!(format!("jobs_queue_{width}x{height}"), pane_area(&terminal));
        let text = screen_text(&terminal);
        // 46 one-second buckets (0 s to now); at 80 columns two a cell.
        let (cells, per_cell) = if width >= 120 { (46, 1) } else { (23, 2) };
        assert!(
            text.contains("4 as last polled · most at once 4 (█)"),
            "{text}"
        );
        assert!(text.contains("15 of 24 watched · 0 unknown"), "{text}");
        assert!(
            text.contains(&format!("processing  {}  ", "█".repeat(cells))),
            "never more than the limit, and at it throughout: {text}"
        );
        assert!(text.contains("4 now · peak 20"), "{text}");
        assert!(text.contains("15 of 24 watched"), "{text}");
        assert!(text.contains("1 in all"), "{text}");
        let (bars_x, _) = find(&terminal, &"█".repeat(cells));
        let (fail_x, fail_y) = find(&terminal, "✗");
        assert_eq!(fail_x, bars_x + 30 / per_cell, "the failure at 30 s");
        assert_eq!(fg_at(&terminal, (fail_x, fail_y)), colour(Role::Error));
        assert_eq!(fg_at(&terminal, (bars_x, fail_y - 2)), colour(Role::Accent));
        // The table keeps its columns: the chart shrinks, not the table.
        assert!(text.contains("ERROR"), "{text}");
        assert!(text.contains("budget/min"), "{text}");
    }
}

/// Without colour the chart reads the same: its rows are labelled and
/// its glyphs say what the colours say.
#[test]
fn the_jobs_chart_reads_without_colour() {
    let app = draining_app();
    let mono = mono();
    for size in SIZES {
        let terminal = render_with(&app, size, &mono);
        insta::assert_snapshot!(
            format!("jobs_queue_mono_{}x{}", size.0, size.1),
            pane_area(&terminal)
        );
        let coloured = screen_text(&render(&app, size));
        assert_eq!(screen_text(&terminal), coloured, "the same text");
    }
}

/// A job's own timeline in its record: the steps at their UTC times, how
/// long each took, and what was not seen.
#[test]
fn a_jobs_record_has_its_timeline() {
    let mut app = draining_app();
    // The tenth job (it failed), and the fifth (seen queued, then through).
    keys(&mut app, "jjjjjjjjj");
    app.update(super::key(ratatui::crossterm::event::KeyCode::Enter));
    let text = screen_text(&render(&app, (120, 40)));
    // Added 09:25:18 UTC (the fixture's clock); queued 1 s later.
    assert!(text.contains("09c0ffee-job"), "{text}");
    for line in [
        "submitted          unknown (submitted elsewhere; watched from 09:25:18)",
        "queued             09:25:19",
        "processing         09:25:38  after 19 s queued",
        "error              09:25:48  after 10 s processing",
        "webhook answered   unknown (no answer seen)",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
}

/// Shorter than 24 rows (the console needs 20) the chart folds its error
/// and budget rows into its title, and the table keeps ten rows.
#[test]
fn on_a_short_screen_the_chart_shrinks_before_the_table() {
    let app = draining_app();
    let text = screen_text(&render(&app, (80, 20)));
    assert!(text.contains("· error 1 · budget 300/2000"), "{text}");
    assert!(text.contains("processing  "), "{text}");
    assert!(!text.contains("budget/min"), "{text}");
    assert!(
        text.contains("09c0ffee"),
        "the table keeps ten rows: {text}"
    );
}
