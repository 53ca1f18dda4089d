//! The Subscriptions pane: the table, detail, create, delete and rotate
//! dialogs, a failed load, the selection and paused-row styles, and drawing
//! only the rows on screen (and a terminal too small to draw at all).

use crate::tui::console::action::{Action, Effect};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::panes::PaneId;
use crate::tui::panes::health::tasks::HealthEffect;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::SubscriptionsPane;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use crate::tui::theme::{Role, Theme};
use earshot_core::api::types::agents::Subscription;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::history::rotation::{CheckAnswer, CheckReport, WatchReport};
use ratatui::crossterm::event::KeyCode;

use super::{
    app, app_with, bare_app, cells, colour, fg_at, fixed_local_time, fixtures, key, keys,
    pane_area, render, screen_text, snapshot, subscription,
};

#[test]
fn table_with_fixture_rows() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    snapshot("subs_table", &app);
}

#[test]
fn demo_marker_and_read_only_marker_show_in_the_tab_bar() {
    let app = app_with(ConsoleConfig {
        demo: true,
        read_only: true,
        ..ConsoleConfig::default()
    });
    snapshot("subs_table_demo_read_only", &app);
}

#[test]
fn detail_view() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Enter));
    snapshot("subs_detail", &app);
}

#[test]
fn create_form_with_errors() {
    let mut app = app();
    keys(&mut app, "n");
    keys(&mut app, "http://hooks.example.com/x");
    app.update(key(KeyCode::Enter));
    snapshot("subs_create_errors", &app);
}

#[test]
fn delete_confirmation() {
    let mut app = app();
    keys(&mut app, "D");
    keys(&mut app, "1a2b");
    snapshot("subs_delete_confirm", &app);
}

fn fixed_secret() -> Result<String, String> {
    Ok("whsec_Zm9yIHNuYXBzaG90cyBvbmx5LCBuZXZlciB1c2VkIGFueXdoZXJl".into())
}

#[test]
fn rotate_dialog_walks_prepare_check_apply_watch() {
    let mut app = app();
    app.panes.subs = SubscriptionsPane::new(UrlPolicy::PublicHttps).with_generator(fixed_secret);
    app.panes.subs.set_rows(fixtures());
    keys(&mut app, "R");
    snapshot("subs_rotate_prepare", &app);

    app.update(key(KeyCode::Enter));
    let effects = app.update(key(KeyCode::Enter));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Subs(SubsEffect::CheckRotation { .. })]
    ));
    let answer = |signed_with, should_accept, status: u16, ok, verdict: &str| CheckAnswer {
        signed_with,
        should_accept,
        http_status: Some(status),
        error: None,
        ok,
        verdict: verdict.into(),
    };
    app.update(Action::Subs(SubsResult::Checked {
        id: fixtures()[0].id.clone(),
        result: Ok(CheckReport {
            event_id: "9c1e7b01-5d3a-4c8e-9f10-2b4c6d8e0a1f".into(),
            synthetic: false,
            answers: vec![
                answer(
                    "the new secret",
                    true,
                    401,
                    false,
                    "refused: the receiver does not accept the new secret yet; add it next to \
                     the one it has (both must verify until the rotation drains)",
                ),
                answer(
                    "a wrong secret",
                    false,
                    401,
                    true,
                    "refused, as it should be",
                ),
            ],
            passed: false,
        }),
    }));
    snapshot("subs_rotate_check_failed", &app);
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(
        screen.contains("whsec_Zm9y"),
        "the prepared secret shows: {screen}"
    );

    keys(&mut app, "S");
    snapshot("subs_rotate_apply_skipped", &app);
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("THE CHECK DID NOT PASS"), "{screen}");

    keys(&mut app, "1a2b3c4d");
    let effects = app.update(key(KeyCode::Enter));
    assert!(matches!(
        effects.as_slice(),
        [Effect::Subs(SubsEffect::Rotate { .. })]
    ));
    let mut rotated = fixtures()[0].clone();
    rotated.secret_version = 4;
    app.update(Action::Subs(SubsResult::Rotated {
        id: rotated.id.clone(),
        result: Ok(rotated),
    }));
    app.update(Action::Subs(SubsResult::Watched {
        id: fixtures()[0].id.clone(),
        report: WatchReport {
            delivered_since: 12,
            refused_sessions: Vec::new(),
            old_pending: 3,
            completed: false,
        },
    }));
    snapshot("subs_rotate_watch", &app);
}

#[test]
fn filtered_table_with_the_filter_line_open() {
    let mut app = app();
    keys(&mut app, "/call");
    snapshot("subs_filter", &app);
}

#[test]
fn a_failed_load_explains_itself_in_the_pane_and_the_status_bar() {
    let mut app = bare_app(ConsoleConfig::default());
    let seq = match app.init().as_slice() {
        [
            Effect::Health(HealthEffect::Load { .. }),
            Effect::Health(HealthEffect::LoadIncidents { .. }),
            Effect::Health(HealthEffect::Sweep),
            Effect::Subs(SubsEffect::Load { seq, .. }),
            Effect::Subs(SubsEffect::NewestChange),
        ] => *seq,
        other => panic!(
            "expected the board and incidents reads, the sweep, the first load and the change log's baseline, got {other:?}"
        ),
    };
    app.pane = PaneId::Subscriptions;
    let at = fixed_local_time();
    let message = "list subscriptions failed: HTTP 401: Unauthorized: invalid API key — \
                   check the API key (`earshot config show`)";
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Err(Failure {
            message: message.into(),
            status: Some(401),
            at,
        }),
    }));
    let terminal = render(&app, (80, 24));
    insta::assert_snapshot!("subs_load_failed_80x24", pane_area(&terminal));
}

#[test]
fn the_selected_row_has_the_selection_style() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    let terminal = render(&app, (80, 24));
    let buffer = terminal.backend().buffer();
    let theme = Theme::fallback();
    let selection = theme.selection().bg;
    // Row 0 tabs, 1 title, 2 header, 3 first row, 4 second (selected).
    for x in 0..80 {
        assert_eq!(
            buffer[(x, 4)].bg,
            selection.unwrap(),
            "selected cell ({x}, 4)"
        );
        assert_ne!(
            buffer[(x, 3)].bg,
            selection.unwrap(),
            "unselected cell ({x}, 3)"
        );
    }
}

#[test]
fn a_paused_row_is_muted() {
    let terminal = render(&app(), (80, 24));
    let muted = colour(Role::Muted);
    // The third fixture (row y = 5) is paused: id, URL and state are muted.
    let screen = screen_text(&terminal);
    let paused_row = screen.lines().nth(5).unwrap_or_default();
    assert!(paused_row.contains("paused"), "{paused_row}");
    for x in [0, 12, 70] {
        assert_eq!(fg_at(&terminal, (x, 5)), muted, "paused cell ({x}, 5)");
    }
    assert_ne!(
        fg_at(&terminal, (0, 3)),
        muted,
        "an enabled row is not muted"
    );
}

#[test]
fn a_tiny_terminal_says_so_and_does_not_panic() {
    let app = app();
    for size in [(20, 5), (1, 1), (59, 30), (200, 3)] {
        let text = cells(&render(&app, size));
        assert!(text.contains("too") || size == (1, 1), "{size:?}: {text}");
    }
    let terminal = render(&app, (20, 5));
    insta::assert_snapshot!("too_small_20x5", terminal.backend());
}

#[test]
fn only_the_rows_on_screen_are_drawn_and_the_selection_stays_visible() {
    let mut app = app();
    let many: Vec<Subscription> = (0..10_000)
        .map(|n| {
            subscription(
                &format!("{n:08x}-0000-4000-8000-000000000000"),
                &format!("https://hooks.example.com/{n}"),
                &["call.ended"],
                None,
                true,
                1,
            )
        })
        .collect();
    app.panes.subs.set_rows(many);
    app.update(key(KeyCode::End));
    let started = std::time::Instant::now();
    let terminal = render(&app, (120, 40));
    let elapsed = started.elapsed();
    let screen = terminal.backend().to_string();
    assert!(
        screen.contains("0000270f"),
        "the last row (9999) is on screen"
    );
    assert!(!screen.contains("00000000-"), "the first row scrolled away");
    assert!(elapsed.as_millis() < 500, "one frame took {elapsed:?}");
}

#[test]
fn edit_dialog_shows_the_change_before_the_short_id() {
    let mut app = app();
    keys(&mut app, "e");
    keys(&mut app, "/v2");
    app.update(key(KeyCode::Tab));
    app.update(key(KeyCode::Tab));
    app.update(key(KeyCode::Tab));
    keys(&mut app, " ");
    snapshot("subs_edit", &app);
    let screen = screen_text(&render(&app, (120, 40)));
    // The change, old → new, before anything is sent.
    assert!(
        screen.contains("url     https://hooks.example.com/earshot/sessions →"),
        "{screen}"
    );
    assert!(
        screen.contains("session.started,session.completed,call.connected"),
        "{screen}"
    );
}

/// A platform clock that is not real time says so (the demo's
/// emulator runs at 0.1: a "15 s" timeout comes 1.5 s apart).
#[test]
fn a_scaled_clock_is_named_in_the_status_bar() {
    let mut app = app_with(ConsoleConfig {
        time_scale: 0.1,
        ..ConsoleConfig::default()
    });
    app.toast = None;
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("time ×0.1"), "{screen}");
    let real = screen_text(&render(&super::app(), (120, 40)));
    assert!(!real.contains("time ×"), "{real}");
}
