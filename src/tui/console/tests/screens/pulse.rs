//! The Pulse pane from a fixture store: an hour of one subscription's
//! events (delivered, then 20 minutes failing, a few pending now) and a
//! day of the observer's filing, read by the pane's own read
//! (`panes::pulse::data::read`), with two sweeps; in colour and without
//! (`NO_COLOR`), at both sizes. And `:pulse` opens it.

use std::path::Path;
use std::time::Instant;

use chrono::{TimeZone, Utc};

use super::{
    SIZES, app, colour, fg_at, find, key, keys, mono, pane_area, render, render_with, screen_text,
};
use crate::tui::console::app::App;
use crate::tui::kernel::Pane;
use crate::tui::panes::PaneId;
use crate::tui::panes::pulse::PulseResult;
use crate::tui::panes::pulse::data::{self, PulseData};
use crate::tui::theme::Role;
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::history::sweep::SweepReport;
use earshot_core::store::events::ObservedEvent;
use earshot_core::store::writer::Writer;
use earshot_core::store::{Store, deliveries};

/// 2025-03-14 09:30:00 UTC: the store is read then.
const NOW_MS: i64 = 1_741_944_600_000;
const MINUTE_MS: i64 = 60_000;

fn record(n: usize, status: DeliveryStatus, code: Option<u16>, created_ms: i64) -> DeliveryRecord {
    let at = Utc
        .timestamp_millis_opt(created_ms)
        .single()
        .unwrap_or_default()
        .fixed_offset();
    DeliveryRecord {
        id: format!("dlv_{n}"),
        subscription_id: "sub_voice".into(),
        session_id: format!("ses_{n}"),
        error: code
            .filter(|c| *c >= 300)
            .map(|c| format!("HTTP {c}: nope")),
        status,
        attempt_count: 1,
        http_status_code: code,
        delivered_at: None,
        next_retry_at: None,
        created_at: at,
        extra: Default::default(),
    }
}

/// A `session.started` event with `id`, received at `at_ms`.
fn event(id: &str, at_ms: i64) -> ObservedEvent {
    let at = Utc
        .timestamp_millis_opt(at_ms)
        .single()
        .unwrap_or_default()
        .to_rfc3339();
    let body = format!(
        r#"{{"event_id":"{id}","event":"session.started","timestamp":"{at}","session":{{"session_id":"ses_{id}"}}}}"#
    );
    ObservedEvent::from_delivery(body.as_bytes(), vec![], None, at_ms).expect("a filable event")
}

/// The fixture store at `db`: per minute of the last hour two events
/// delivered (and one so far in the minute under way), but from 50 to 30
/// minutes ago one missed (HTTP 500) in their place, and the last three
/// minutes one pending each; the observer filed
/// an event every 20 minutes of the day and one a minute in the last ten.
async fn fixture(db: &Path) {
    let mut store = Store::open(db).expect("the store");
    let mut records = Vec::new();
    for minute in 0..60 {
        let at = NOW_MS - (60 - minute) * MINUTE_MS + 1_000;
        let failing = (10..30).contains(&minute);
        for k in 0..2 {
            let n = records.len();
            let (status, code) = if failing && k == 0 {
                (DeliveryStatus::Failed, Some(500))
            } else {
                (DeliveryStatus::Delivered, Some(200))
            };
            records.push(record(n, status, code, at + k * 1_000));
        }
        if minute >= 57 {
            let n = records.len();
            records.push(record(n, DeliveryStatus::Pending, None, at + 5_000));
        }
    }
    // The minute under way (it begins at NOW_MS): one so far.
    let n = records.len();
    records.push(record(n, DeliveryStatus::Delivered, Some(200), NOW_MS));
    let swept: Vec<(String, Vec<DeliveryRecord>)> = records
        .into_iter()
        .map(|record| (record.session_id.clone(), vec![record]))
        .collect();
    let swept: Vec<(&str, &[DeliveryRecord])> = swept
        .iter()
        .map(|(session, records)| (session.as_str(), records.as_slice()))
        .collect();
    deliveries::record_sweeps(&mut store, &swept, NOW_MS).expect("the sweep's records");
    let (writer, thread) = Writer::start(store).expect("the writer");
    let mut filed = (0..72)
        .map(|n| NOW_MS - 24 * 60 * MINUTE_MS + n * 20 * MINUTE_MS + 7_000)
        .collect::<Vec<_>>();
    filed.extend((1..=10).map(|n| NOW_MS - n * MINUTE_MS + 3_000));
    for (n, at) in filed.into_iter().enumerate() {
        writer
            .write(event(&format!("evt_{n}"), at))
            .await
            .expect("filed");
    }
    drop(writer);
    thread.join().expect("the writer ends");
}

/// The pane after three reads of the fixture and two sweeps.
async fn pulse_app() -> App {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("store.db");
    fixture(&db).await;
    let read: PulseData = data::read(Ok(db.clone().into()), NOW_MS)
        .await
        .expect("the read");
    let mut app = app();
    keys(&mut app, ":pulse");
    app.update(key(ratatui::crossterm::event::KeyCode::Enter));
    let mut out = crate::tui::panes::pulse::Outcome::default();
    let pane = &mut app.panes.pulse;
    for _ in 0..3 {
        let seq = pane.data.start();
        pane.on_result(
            PulseResult::Loaded {
                seq,
                result: Ok(read.clone()),
            },
            &mut out,
        );
    }
    for (requests, left) in [(9, 4), (14, 1)] {
        pane.on_result(
            PulseResult::Swept(Ok(SweepReport {
                requests,
                left_for_later: left,
                ..SweepReport::default()
            })),
            &mut out,
        );
    }
    pane.now = Instant::now();
    app.toast = None;
    app
}

/// `:pulse` opens the pane, and on screen it asks for a read and a sweep.
#[tokio::test]
async fn pulse_opens_from_the_command_line() {
    let mut app = app();
    assert_ne!(app.pane, PaneId::Pulse);
    keys(&mut app, ":pulse");
    app.update(key(ratatui::crossterm::event::KeyCode::Enter));
    assert_eq!(app.pane, PaneId::Pulse);
    assert!(app.panes.pulse.data.loading(), "a read asked for on screen");
    let text = screen_text(&render(&app, (120, 40)));
    assert!(text.contains("Pulse  the whole account"), "{text}");
    assert!(text.contains("unknown: not read yet"), "{text}");
    assert!(text.contains("unknown: no sweep yet"), "{text}");
}

/// Each figure a small chart with its value and unit, the failing
/// minutes where they were, the in-flight count sampled per read (`?`
/// before), the sweeps against their budget; at 80×24 the minutes merge
/// two a cell and every chart still shows.
#[tokio::test]
async fn the_pulse_charts_the_account_from_the_store() {
    let app = pulse_app().await;
    for (width, height) in SIZES {
        let terminal = render(&app, (width, height));
        insta::assert_snapshot!(format!("pulse_{width}x{height}"), pane_area(&terminal));
        let text = screen_text(&terminal);
        for figure in [
            "1 this minute · 99 in 60 min",
            "0 this minute · 20 in 60 min",
            "0 this minute · 3 in 60 min",
            "3 now · most 3 · events pending",
            "11/h this hour · newest 09:29:03",
            "14/50 a sweep · 1 left · just now",
        ] {
            assert!(text.contains(figure), "{figure:?} in\n{text}");
        }
        let per_cell = if width >= 120 { 1 } else { 2 };
        assert!(
            text.contains(&format!(
                "one per {}",
                earshot_core::duration_text::of_secs(60 * per_cell)
            )),
            "{text}"
        );
        // The first failing minute (08:40, the chart's tenth from 08:31)
        // in the error colour, the one before it none.
        let (missed_x, missed_y) = find(&terminal, " missed");
        let bars_x = missed_x + 13;
        let failing = bars_x + 9 / per_cell as u16;
        assert_eq!(fg_at(&terminal, (failing, missed_y)), colour(Role::Error));
        assert_eq!(
            fg_at(&terminal, (failing - 1, missed_y)),
            colour(Role::Muted)
        );
    }
}

/// Without colour the pane reads the same: rows labelled, bars and `?`
/// and `·` say what the colours say.
#[tokio::test]
async fn the_pulse_reads_without_colour() {
    let app = pulse_app().await;
    let mono = mono();
    for size in SIZES {
        let terminal = render_with(&app, size, &mono);
        insta::assert_snapshot!(
            format!("pulse_mono_{}x{}", size.0, size.1),
            pane_area(&terminal)
        );
        let coloured = screen_text(&render(&app, size));
        assert_eq!(screen_text(&terminal), coloured, "the same text");
    }
}

/// On screen the pane reads and sweeps every 5 s, and the clock alone
/// redraws it only when the age words move (they hold still within the
/// period): the charts change with a read, not with the tick.
#[tokio::test]
async fn the_pulse_reads_every_five_seconds_and_redraws_only_for_news() {
    use crate::tui::panes::pulse::tasks::PulseEffect;
    use std::time::Duration;
    let mut app = pulse_app().await;
    let pane = &mut app.panes.pulse;
    let start = pane.now;
    let mut out = crate::tui::panes::pulse::Outcome::default();
    assert!(
        !pane.on_tick(start + Duration::from_secs(1), &mut out),
        "nothing moved"
    );
    assert!(out.effects.is_empty(), "{:?}", out.effects);
    pane.on_tick(start + Duration::from_secs(6), &mut out);
    let asked: Vec<&PulseEffect> = out.effects.iter().collect();
    assert!(
        asked
            .iter()
            .any(|effect| matches!(effect, PulseEffect::Load { .. })),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .any(|effect| matches!(effect, PulseEffect::Sweep)),
        "{asked:?}"
    );
}
