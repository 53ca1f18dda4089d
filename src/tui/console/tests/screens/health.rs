//! The Health pane: the board with a failing subscription and the
//! recover form that masks the secret.

use super::*;
use earshot_core::history::coverage::{Coverage, CoverageState};
use earshot_core::history::report::{EventTotals, FailureGroup, SubscriptionHealth};

fn row(id: &str, url: &str, delivered: i64, failed: i64, pending: i64) -> SubscriptionHealth {
    SubscriptionHealth {
        events: EventTotals {
            delivered,
            missed: failed,
            pending,
            ..EventTotals::default()
        },
        failing_since: (failed > 0).then(|| "2025-03-14T08:00:00Z".into()),
        last_success_at: (delivered > 0).then(|| "2025-03-14T07:59:00Z".into()),
        delivered,
        failed,
        pending,
        success_rate: (delivered + failed > 0)
            .then(|| delivered as f64 / (delivered + failed) as f64),
        last_failure_at: (failed > 0).then(|| "2025-03-14T09:26:53Z".into()),
        failures: Vec::new(),
        ..SubscriptionHealth::new(id.into(), url.into(), true)
    }
}

fn board() -> App {
    let mut app = app();
    let mut broken = row(
        "1a2b3c4d-0000-4000-8000-000000000001",
        "https://hooks.example.com/voice",
        120,
        37,
        0,
    );
    broken.failures = vec![
        FailureGroup {
            diagnosis: "401 invalid signature: the receiver re-serialises the body, drops \
                        the `<t>.` prefix, has another secret, or its clock is off by more \
                        than 300 s"
                .into(),
            http_status: Some(401),
            count: 31,
            missed: 31,
            recovered: 0,
            retrying: 0,
            last_at: "2025-03-14T09:26:53Z".into(),
            example_session_id: "call_4f2a9c1e7b".into(),
        },
        FailureGroup {
            diagnosis: "timeout: slower than 15 s; answer 2xx first, then work (retried)".into(),
            http_status: None,
            count: 6,
            missed: 6,
            recovered: 0,
            retrying: 0,
            last_at: "2025-03-14T09:20:00Z".into(),
            example_session_id: "ses_01JQ4D1C9E3B5F".into(),
        },
    ];
    broken.retries_due = 2;
    broken.next_retry_at = Some("2025-03-14T09:31:00Z".into());
    // The board drawn at 09:30:00: the next retry is a minute away.
    app.panes.health =
        crate::tui::panes::health::HealthPane::new().with_clock(|| 1_741_944_600_000);
    broken.missed_by_type = [
        ("call.ended".to_owned(), 25),
        ("call.connected".to_owned(), 12),
    ]
    .into_iter()
    .collect();
    let mut paused = row(
        "3c4d5e6f-0000-4000-8000-000000000003",
        "https://legacy.example.net/hook",
        0,
        0,
        0,
    );
    paused.enabled = false;
    app.panes.health.set_rows(vec![
        broken,
        row(
            "2b3c4d5e-0000-4000-8000-000000000002",
            "https://ops.example.com/alerts/failed-calls",
            88,
            0,
            3,
        ),
        paused,
    ]);
    keys(&mut app, "1");
    app
}

#[test]
fn health_board_with_a_failing_subscription() {
    snapshot("health_board", &board());
}

/// With no observer event in the window, the title says missed events
/// cannot be known.
#[test]
fn health_board_without_an_observer_says_it_cannot_know() {
    let mut app = board();
    app.panes.health.coverage = Some(Coverage {
        state: CoverageState::None,
        last_event_at: None,
        events_in_window: 0,
        silent_since: None,
        evidence: None,
        newest_unobserved_ms: None,
        last_event_ms: None,
        silent_since_ms: None,
    });
    let terminal = render(&app, (120, 40));
    let screen = format!("{:?}", terminal.backend());
    assert!(screen.contains("cannot be known"), "{screen}");
}

/// A silent observer leads the title, whole, at 80 columns.
#[test]
fn health_title_leads_with_the_observers_silence_at_80_columns() {
    let mut app = board();
    let since = 1_796_479_509_900; // 14:05:09 UTC
    app.panes.health.coverage = Some(Coverage {
        state: CoverageState::Silent,
        last_event_at: None,
        events_in_window: 505,
        silent_since: Some("2026-12-05T14:05:09Z".into()),
        evidence: Some("no event filed for 4 min".into()),
        newest_unobserved_ms: None,
        last_event_ms: Some(since),
        silent_since_ms: Some(since),
    });
    let terminal = render(&app, (80, 24));
    let screen = format!("{:?}", terminal.backend());
    assert!(
        screen.contains("Health · observer silent since 14:05"),
        "{screen}"
    );
    // The selected subscription says its counts stop at the silence.
    let terminal = render(&app, (120, 40));
    let screen = format!("{:?}", terminal.backend());
    assert!(
        screen.contains("unknown since 14:05: the observer is silent"),
        "{screen}"
    );
}

#[test]
fn health_recover_form_masks_the_secret() {
    let mut app = board();
    keys(&mut app, "R");
    keys(&mut app, "whsec_visible_nowhere_0123456789abcdef");
    let terminal = render(&app, (120, 40));
    let screen = format!("{:?}", terminal.backend());
    assert!(!screen.contains("visible_nowhere"), "the secret is masked");
    snapshot("health_recover", &app);
}

/// Free width goes to the URL and the diagnosis; a wide
/// terminal shows the whole URL and more of the diagnosis than a narrow
/// one, and every cut ends in `…`.
#[test]
fn a_wide_terminal_gives_the_url_and_the_diagnosis_the_room() {
    let app = board();
    let broken_row = |size| {
        render(&app, size)
            .backend()
            .to_string()
            .lines()
            .find(|line| line.contains("1a2b3c4d"))
            .expect("the broken row")
            .to_owned()
    };
    // Wide enough for the whole diagnosis beside the 12-cell trend.
    let wide_row = broken_row((215, 20));
    assert!(
        wide_row.contains("https://hooks.example.com/voice "),
        "the whole URL: {wide_row}"
    );
    assert!(wide_row.contains("has another secret"), "{wide_row}");
    let narrow_row = broken_row((80, 24));
    assert!(
        narrow_row.trim_end_matches('"').trim_end().ends_with('…'),
        "a cut says so: {narrow_row}"
    );
    assert!(!narrow_row.contains("has another secret"), "{narrow_row}");
}

/// `/url:example.com` keeps two of the three rows (the
/// title says so), `S` five times sorts by OK ascending (the header marks
/// it, and the row with fewer delivered events comes first), and the
/// selected row stays selected through both, on its new position.
#[test]
fn health_board_filtered_and_sorted() {
    let mut app = board();
    let selected = |app: &App| app.panes.health.selected().map(|row| row.id.clone());
    let broken = Some("1a2b3c4d-0000-4000-8000-000000000001".to_owned());
    assert_eq!(selected(&app), broken);
    keys(&mut app, "/url:example.com");
    app.update(key(KeyCode::Enter));
    keys(&mut app, "SSSSS");
    assert_eq!(selected(&app), broken, "the selection follows its row");
    assert_eq!(app.panes.health.selected_index(), Some(1));
    snapshot("health_board_filtered_sorted", &app);
    let terminal = render(&app, (120, 40));
    let screen = screen_text(&terminal);
    assert!(
        screen.contains("filter: url:example.com · 2 of 3"),
        "{screen}"
    );
    assert!(screen.contains("OK ▲"), "{screen}");
    assert!(!screen.contains("legacy.example.net"), "{screen}");
    let (_, ops) = find(&terminal, "2b3c4d5e");
    let (_, broken_row) = find(&terminal, "1a2b3c4d");
    assert!(ops < broken_row, "88 delivered before 120:\n{screen}");
}

/// A filter that matches nothing says so, and how to clear it; a term
/// that is not this table's names the fields it has.
#[test]
fn health_board_filter_errors_and_no_match() {
    let mut app = board();
    keys(&mut app, "/colour:red");
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(
        screen.contains("unknown field `colour`: try status, sub, url, since"),
        "{screen}"
    );
    app.update(key(KeyCode::Esc));
    keys(&mut app, "/nothing-like-this");
    app.update(key(KeyCode::Enter));
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(
        screen.contains("no row matches the filter `nothing-like-this` (esc clears it)"),
        "{screen}"
    );
    app.update(key(KeyCode::Esc));
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("legacy.example.net"), "{screen}");
    assert!(!screen.contains("filter:"), "{screen}");
}

/// The console sweeps every few seconds: the sweep's figures carry no age
/// while fresh, and say it (amber) once sweeps stall.
#[test]
fn a_stalled_sweep_says_its_age_in_the_title() {
    let mut app = board();
    app.panes.health.last_sweep = Some(Ok(earshot_core::history::sweep::SweepReport {
        sessions_swept: 49,
        requests: 50,
        left_for_later: 57,
        ..Default::default()
    }));
    app.panes.health.swept_at = Some(app.panes.health.ticked);
    let title = |app: &App| {
        render(app, (200, 24))
            .backend()
            .to_string()
            .lines()
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        title(&app).contains("swept 49 sessions (50 requests, 57 still due)"),
        "{}",
        title(&app)
    );
    app.panes.health.swept_at = app
        .panes
        .health
        .ticked
        .checked_sub(std::time::Duration::from_secs(130));
    assert!(
        title(&app).contains("swept 49 sessions 2 min 10 s ago (50 requests"),
        "{}",
        title(&app)
    );
}

/// The selected subscription's trend over the window: fine, failing for
/// 20 minutes from 08:00 (the mark under that bucket), then delivered
/// again; bars in the ok colour, missed in the error colour, and the
/// symbols telling them apart without colour.
#[test]
fn health_trend_shows_when_failures_started_and_stopped() {
    let app = trend_board();
    snapshot("health_trend", &app);

    let terminal = render(&app, (120, 40));
    let text = screen_text(&terminal);
    assert!(
        text.contains("last 2 h, one per 5 min: █████✗✗✗✗▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄"),
        "{text}"
    );
    let (x, y) = find(&terminal, "✗✗✗✗");
    assert_eq!(fg_at(&terminal, (x, y)), colour(Role::Error));
    assert_eq!(fg_at(&terminal, (x - 1, y)), colour(Role::Ok));
    // Under the first failing bucket (08:00 is the sixth).
    let (mark_x, _) = find(&terminal, "^ failing since 08:00:00");
    assert_eq!(mark_x, x, "the mark under the bucket it began in");
    // The board's row: the same 24 buckets two to a cell, the cell the
    // failures began in (buckets 4 and 5) reversed against its row, the glyphs telling
    // the states apart without colour.
    let (row_x, row_y) = find(&terminal, "██✗✗✗▄▄▄▄▄▄▄");
    let reversed = |x: u16| {
        terminal.backend().buffer()[(x, row_y)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED)
    };
    // In colour the selection is a background: the failing-since cell
    // alone is reversed.
    assert!(reversed(row_x + 2), "the failing-since cell");
    assert!(!reversed(row_x + 1) && !reversed(row_x + 3));
    assert_eq!(fg_at(&terminal, (row_x + 2, row_y)), colour(Role::Error));
    assert_eq!(fg_at(&terminal, (row_x, row_y)), colour(Role::Ok));
    // At 80 columns the same window in six cells.
    let narrow = render(&app, (80, 24));
    find(&narrow, "█✗✗▄▄▄");
}

/// The retries due say when the platform gave up on this account before
/// (read from the store with the board): the spec does not say.
#[test]
fn the_retries_due_say_when_this_accounts_platform_gives_up() {
    let mut app = board();
    app.panes.health.give_up =
        "on this account the platform gave up after 8 attempts (seen 14 times)".into();
    let text = screen_text(&render(&app, (200, 40)));
    assert!(
        text.contains(
            "· 2 retries due, next in 1 min · on this account the platform gave up after 8 \
             attempts (seen 14 times)"
        ),
        "{text}"
    );
}

/// The incidents view: the selected incident's subscription over the
/// window, with its first failure, the latest change recorded to the
/// subscription and the acknowledgement marked under their buckets.
#[test]
fn an_incident_shows_its_first_failure_a_rotation_and_its_acknowledgement_in_time() {
    use crate::tui::console::action::Effect;
    use crate::tui::panes::health::HealthResult;
    use crate::tui::panes::health::tasks::HealthEffect;
    use earshot_core::history::incidents::{Incident, IncidentState};
    use earshot_core::history::report::LatestChange;
    use earshot_core::store::timeline::Timeline;
    let mut app = board();
    let five_min = 300_000;
    let now = 1_741_944_600_000;
    let start = now - 24 * five_min;
    let at = |minutes_after_start: i64| start + minutes_after_start * 60_000;
    let mut rows = app.panes.health.rows().to_vec();
    let id = rows[0].id.clone();
    rows[0].latest_change = Some(LatestChange {
        action: "rotate".into(),
        at: String::new(),
        operator: "alice".into(),
        detail: "secret version 3".into(),
        at_ms: at(52),
    });
    app.panes.health.set_rows(rows);
    let missed = EventTotals {
        missed: 2,
        ..EventTotals::default()
    };
    let mut buckets = vec![EventTotals::default(); 6];
    buckets.extend(vec![missed; 18]);
    app.panes.health.trend = Some(Timeline {
        start_ms: start,
        bucket_ms: five_min,
        columns: 24,
        subscriptions: [(id.clone(), buckets)].into_iter().collect(),
    });
    let effects = app.update(key(KeyCode::Char('i')));
    let seq = effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Health(HealthEffect::LoadIncidents { seq, .. }) => Some(*seq),
            _ => None,
        })
        .expect("the incidents are read");
    app.update(Action::Health(HealthResult::Incidents {
        seq,
        result: Ok(vec![Incident {
            id: "0badcafe".into(),
            subscription_id: id,
            diagnosis: "401 invalid signature".into(),
            first_seen_at: String::new(),
            last_seen_at: String::new(),
            missed: 36,
            recovered: 0,
            retrying: 0,
            state: IncidentState::Acknowledged,
            acknowledged_by: Some("bob".into()),
            acknowledged_at: None,
            note: None,
            resolved_at: None,
            resolved_reason: None,
            first_seen_ms: at(31),
            last_seen_ms: at(119),
            acknowledged_ms: Some(at(75)),
        }]),
    }));
    let terminal = render(&app, (120, 40));
    let (line_x, _) = find(&terminal, "······✗✗✗");
    for (minutes, said) in [
        (31, "^ 08:01:00 first failure"),
        (52, "^ 08:22:00 rotate by alice"),
        (75, "^ 08:45:00 acknowledged by bob"),
    ] {
        let (x, _) = find(&terminal, said);
        let bucket = u16::try_from(minutes / 5).unwrap();
        assert_eq!(x, line_x + bucket, "{said} under its bucket");
    }
}

/// The board with the first row's trend: 24 buckets of 5 minutes, fine,
/// failing for 20 minutes from 08:00, then delivered again.
fn trend_board() -> App {
    use earshot_core::store::timeline::Timeline;
    let mut app = board();
    let five_min = 300_000;
    // 24 buckets of 5 minutes ending with the one that holds 09:30.
    let end = 1_741_944_600_000 - 1_741_944_600_000 % five_min + five_min;
    let delivered = |n| EventTotals {
        delivered: n,
        ..EventTotals::default()
    };
    let mut buckets = vec![delivered(4); 5];
    buckets.extend(vec![
        EventTotals {
            missed: 3,
            ..EventTotals::default()
        };
        4
    ]);
    buckets.extend(vec![delivered(2); 15]);
    let id = app.panes.health.rows()[0].id.clone();
    app.panes.health.trend = Some(Timeline {
        start_ms: end - 24 * five_min,
        bucket_ms: five_min,
        columns: 24,
        subscriptions: [(id, buckets)].into_iter().collect(),
    });
    app
}

/// Without colour (`NO_COLOR`, the mono theme) the trend reads the same:
/// bars, `✗` and the `^ failing since` line are symbols, so the screen's
/// text equals the colour one.
#[test]
fn health_trend_reads_without_colour() {
    let app = trend_board();
    let mono = mono();
    for (width, height) in SIZES {
        let terminal = render_with(&app, (width, height), &mono);
        insta::assert_snapshot!(
            format!("health_trend_mono_{width}x{height}"),
            pane_area(&terminal)
        );
        let text = screen_text(&terminal);
        assert!(text.contains("█████✗✗✗✗▄▄▄"), "{text}");
        let (mark_x, _) = find(&terminal, "^ failing since 08:00:00");
        let (x, _) = find(&terminal, "✗✗✗✗");
        assert_eq!(mark_x, x, "the mark under the bucket it began in");
        let cell = if width >= 120 {
            "██✗✗✗▄"
        } else {
            "█✗✗▄▄▄"
        };
        let (row_x, row_y) = find(&terminal, cell);
        let failing_cell = if width >= 120 { row_x + 2 } else { row_x + 1 };
        let reversed = |x: u16| {
            terminal.backend().buffer()[(x, row_y)]
                .modifier
                .contains(ratatui::style::Modifier::REVERSED)
        };
        // Without colour too, the cell the failures began in stands out
        // from its neighbours in the (selected, reversed) row.
        assert!(!reversed(failing_cell), "{text}");
        assert!(
            reversed(failing_cell - 1) && reversed(failing_cell + 1),
            "{text}"
        );
    }
}
