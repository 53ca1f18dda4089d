//! `update` tests of the Deliveries pane, driven through the [`App`] with
//! the keys an operator would press, and the retry rules.

use crate::tui::kernel::Handover;
use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use std::time::{Duration, Instant};

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use ratatui::crossterm::event::KeyCode;
use serde_json::Map;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Failure;
use crate::tui::kernel::Pane;
use crate::tui::panes::PaneId;
use crate::tui::panes::deliveries::DeliveriesResult;
use crate::tui::panes::deliveries::verdict::{Verdict, countdown, likely_causes, verdict};
use crate::tui::panes::deliveries::{DeliveriesPane, DlvCommand, Mode, RECENT_MAX, View};
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};

const SESSION: &str = "sess_4f2a9c1e7b";

fn fixed_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 14, 9, 30, 0).unwrap()
}

fn at(seconds_after_now: i64) -> DateTime<FixedOffset> {
    (fixed_now() + chrono::Duration::seconds(seconds_after_now)).fixed_offset()
}

pub(crate) fn record(
    id: &str,
    status: DeliveryStatus,
    attempt: u32,
    http: Option<u16>,
    error: Option<&str>,
) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        subscription_id: "2b3c4d5e-6f70-4b1c-9d2e-3f4a5b6c7d8e".into(),
        session_id: SESSION.into(),
        delivered_at: (status == DeliveryStatus::Delivered).then(|| at(-55)),
        status,
        attempt_count: attempt,
        http_status_code: http,
        error: error.map(str::to_owned),
        next_retry_at: None,
        created_at: at(-60),
        extra: Map::new(),
    }
}

fn failed_401() -> DeliveryRecord {
    record(
        "a1000000-0000-4000-8000-000000000001",
        DeliveryStatus::Failed,
        1,
        Some(401),
        Some("HTTP 401: invalid signature"),
    )
}

fn pending_503() -> DeliveryRecord {
    let mut row = record(
        "a2000000-0000-4000-8000-000000000002",
        DeliveryStatus::Pending,
        2,
        Some(503),
        Some("HTTP 503: Service Unavailable"),
    );
    row.next_retry_at = Some(at(12));
    row
}

fn delivered() -> DeliveryRecord {
    record(
        "a3000000-0000-4000-8000-000000000003",
        DeliveryStatus::Delivered,
        1,
        Some(200),
        None,
    )
}

fn app() -> App {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.deliveries = DeliveriesPane::new().with_clock(fixed_now);
    app.update(key('3'));
    assert_eq!(app.pane, PaneId::Deliveries);
    app
}

fn load_seq(effects: &[Effect], want_id: &str, want_latest: bool) -> u64 {
    let loads: Vec<&DeliveriesEffect> = effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Deliveries(load @ DeliveriesEffect::Load { .. }) => Some(load),
            _ => None,
        })
        .collect();
    match loads.as_slice() {
        [DeliveriesEffect::Load { seq, id, latest }] if id == want_id && *latest == want_latest => {
            *seq
        }
        other => panic!("expected one load of {want_id} (latest {want_latest}), got {other:?}"),
    }
}

fn loaded(app: &mut App, seq: u64, rows: Vec<DeliveryRecord>) {
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Ok(rows),
    }));
}

/// An app showing the three fixture attempts of `SESSION`.
fn app_loaded(rows: Vec<DeliveryRecord>) -> App {
    let mut app = app();
    app.update(key('i'));
    type_text(&mut app, SESSION);
    let seq = load_seq(&app.update(press(KeyCode::Enter)), SESSION, false);
    loaded(&mut app, seq, rows);
    app
}

#[test]
fn entering_an_id_loads_all_attempts_and_remembers_it() {
    let mut app = app();
    assert!(
        matches!(
            app.update(key('i')).as_slice(),
            [Effect::Deliveries(DeliveriesEffect::LoadKnownSessions)]
        ),
        "opening the prompt reads the known sessions"
    );
    assert_eq!(app.panes.deliveries.mode(), Mode::Prompt);
    let typed = type_text(&mut app, "q1 sess_x");
    assert!(typed.is_empty(), "q and digits are typed, not run");
    assert!(!app.quit);
    assert_eq!(app.pane, PaneId::Deliveries);
    let effects = app.update(press(KeyCode::Enter));
    let seq = load_seq(&effects, "q1 sess_x", false);
    assert_eq!(app.panes.deliveries.mode(), Mode::Table);
    assert!(app.panes.deliveries.list.loading());
    assert!(
        app.panes.deliveries.recent().is_empty(),
        "remembered once it loads"
    );
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Ok(vec![delivered()]),
    }));
    assert_eq!(app.panes.deliveries.recent(), ["q1 sess_x"]);
}

/// Typing narrows the list, and `enter` loads the match
/// it highlights, not the fragment typed; a fragment that matches nothing
/// is loaded as typed, and its 404 is not remembered.
#[test]
fn enter_loads_the_highlighted_match_and_a_404_is_not_remembered() {
    let mut app = app();
    app.seed(Handover::RecentSessions(vec!["call_0b7e11".into()]));
    app.update(key('i'));
    app.update(Action::Deliveries(DeliveriesResult::Known(vec![
        "ses_77aa01".into(),
        "call_cf06d2e4".into(),
        "call_cf06".into(),
    ])));
    type_text(&mut app, "CF06D");
    assert_eq!(app.panes.deliveries.choices(), ["call_cf06d2e4"]);
    assert_eq!(app.panes.deliveries.highlighted(), Some(0));
    let seq = load_seq(&app.update(press(KeyCode::Enter)), "call_cf06d2e4", false);
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Ok(vec![delivered()]),
    }));
    assert_eq!(
        app.panes.deliveries.recent(),
        ["call_cf06d2e4", "call_0b7e11"]
    );

    // Typed exactly, a known id is highlighted even when others contain it.
    app.update(key('i'));
    type_text(&mut app, "call_cf06");
    assert_eq!(
        app.panes.deliveries.choices(),
        ["call_cf06d2e4", "call_cf06"]
    );
    assert_eq!(app.panes.deliveries.highlighted(), Some(1));
    // ↓ moves on from the highlighted one (and stays on the last).
    app.update(press(KeyCode::Down));
    assert_eq!(app.panes.deliveries.highlighted(), Some(1));
    app.update(press(KeyCode::Up));
    assert_eq!(app.panes.deliveries.prompt.value(), "call_cf06d2e4");
    app.update(press(KeyCode::Esc));

    // Nothing matches: what was typed is loaded; its 404 is not kept.
    app.update(key('i'));
    type_text(&mut app, "call_dead");
    assert!(app.panes.deliveries.choices().is_empty());
    assert_eq!(app.panes.deliveries.highlighted(), None);
    let seq = load_seq(&app.update(press(KeyCode::Enter)), "call_dead", false);
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Err(Failure::new("deliveries failed: HTTP 404: not found")),
    }));
    assert!(app.panes.deliveries.list.error().is_some());
    assert_eq!(
        app.panes.deliveries.recent(),
        ["call_cf06d2e4", "call_0b7e11"],
        "a 404 is not offered again"
    );
}

#[test]
fn an_empty_prompt_loads_nothing() {
    let mut app = app();
    app.update(key('i'));
    assert!(app.update(press(KeyCode::Enter)).is_empty());
    assert_eq!(app.panes.deliveries.mode(), Mode::Prompt);
    assert!(app.toast.is_some());
}

#[test]
fn the_result_fills_the_table_and_a_stale_one_is_dropped() {
    let mut app = app();
    app.update(key('i'));
    type_text(&mut app, SESSION);
    let first = load_seq(&app.update(press(KeyCode::Enter)), SESSION, false);
    let second = load_seq(&app.update(key('r')), SESSION, false);
    assert!(second > first, "r supersedes the load in flight");
    loaded(&mut app, first, vec![delivered()]);
    assert!(
        app.panes.deliveries.rows().is_empty(),
        "a superseded answer is dropped"
    );
    loaded(
        &mut app,
        second,
        vec![failed_401(), pending_503(), delivered()],
    );
    assert_eq!(app.panes.deliveries.rows().len(), 3);
    assert!(!app.panes.deliveries.list.loading());
    assert_eq!(app.panes.deliveries.selected_index(), Some(0));
}

#[test]
fn a_failed_load_reaches_the_pane_and_the_status_bar() {
    let mut app = app();
    app.update(key('i'));
    type_text(&mut app, "nope");
    let seq = load_seq(&app.update(press(KeyCode::Enter)), "nope", false);
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Err(Failure::new(
            "latest deliveries failed: HTTP 404: not found",
        )),
    }));
    assert!(app.panes.deliveries.list.error().is_some());
    assert!(app.status.last_error.is_some());
}

#[test]
fn l_toggles_between_all_attempts_and_the_latest_per_subscription() {
    let mut app = app_loaded(vec![failed_401(), delivered()]);
    load_seq(&app.update(key('l')), SESSION, true);
    assert!(app.panes.deliveries.latest);
    load_seq(&app.update(key('r')), SESSION, true);
    load_seq(&app.update(key('l')), SESSION, false);
    assert!(!app.panes.deliveries.latest);
}

#[test]
fn recent_ids_are_picked_with_the_arrows_most_recent_first() {
    let mut app = app();
    app.seed(Handover::RecentSessions(vec![
        "call_new".into(),
        "sess_old".into(),
    ]));
    assert_eq!(
        app.panes.deliveries.id.as_deref(),
        Some("call_new"),
        "the newest is on screen"
    );
    app.update(key('i'));
    app.update(press(KeyCode::Down));
    app.update(press(KeyCode::Down));
    assert_eq!(app.panes.deliveries.prompt.value(), "sess_old");
    app.update(press(KeyCode::Up));
    assert_eq!(app.panes.deliveries.prompt.value(), "call_new");
    app.update(press(KeyCode::Down));
    let seq = load_seq(&app.update(press(KeyCode::Enter)), "sess_old", false);
    app.update(Action::Deliveries(DeliveriesResult::Loaded {
        seq,
        result: Ok(vec![delivered()]),
    }));
    assert_eq!(app.panes.deliveries.recent(), ["sess_old", "call_new"]);
}

#[test]
fn at_most_twenty_recent_ids_are_kept() {
    let mut pane = DeliveriesPane::new();
    pane.seed_recent((0..30).map(|n| format!("id{n}")).collect());
    assert_eq!(pane.recent().len(), RECENT_MAX);
    assert_eq!(pane.recent()[0], "id0");
}

#[test]
fn a_seeded_id_is_loaded_by_init() {
    let mut app = App::new(ConsoleConfig::default());
    app.seed(Handover::RecentSessions(vec!["call_1".into()]));
    let effects = app.init();
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Deliveries(DeliveriesEffect::Load { id, latest: false, .. }) if id == "call_1"))
    );
}

#[test]
fn the_detail_shows_a_countdown_from_the_fixed_now() {
    let mut app = app_loaded(vec![failed_401(), pending_503(), delivered()]);
    app.update(press(KeyCode::Down));
    app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.deliveries.view, View::Detail);
    let row = app.panes.deliveries.selected().unwrap();
    assert_eq!(
        verdict(row).describe(app.panes.deliveries.now),
        "will retry: retry in 12 s"
    );
    assert_eq!(
        countdown(fixed_now() + chrono::Duration::seconds(125), fixed_now()),
        "retry in 2 min 5 s"
    );
    assert_eq!(countdown(fixed_now(), fixed_now()), "retry due now");
    assert_eq!(
        countdown(fixed_now() - chrono::Duration::seconds(4), fixed_now()),
        "retry overdue 4 s",
        "a retry time that passed is said as passed"
    );
    app.update(press(KeyCode::Esc));
    assert_eq!(app.panes.deliveries.view, View::Table);
}

#[test]
fn the_retry_verdict_follows_rules_5_and_6() {
    assert_eq!(
        verdict(&failed_401()),
        Verdict::FailedForGood("a 4xx other than 408, 425 and 429 is a rejection")
    );
    assert!(matches!(verdict(&pending_503()), Verdict::RetryAt(_)));
    let mut over = pending_503();
    over.next_retry_at = None;
    over.status = DeliveryStatus::Failed;
    assert_eq!(verdict(&over), Verdict::RetriesOver);

    let timeout = record(
        "t",
        DeliveryStatus::Failed,
        5,
        None,
        Some("timeout: no answer within 15 s"),
    );
    assert_eq!(verdict(&timeout), Verdict::RetriesOver);
    let mut timeout_pending = timeout.clone();
    timeout_pending.next_retry_at = Some(at(3));
    assert!(matches!(verdict(&timeout_pending), Verdict::RetryAt(_)));
    assert!(likely_causes(&timeout)[0].contains("15 s limit"));

    let redirect = record(
        "r",
        DeliveryStatus::Failed,
        1,
        Some(301),
        Some("HTTP 301: redirect to https://x.example/ not followed"),
    );
    assert!(matches!(verdict(&redirect), Verdict::FailedForGood(why) if why.contains("redirect")));
    assert!(likely_causes(&redirect)[0].contains("redirects are not followed"));

    assert_eq!(verdict(&delivered()), Verdict::Delivered);
    assert!(likely_causes(&delivered()).is_empty());

    let causes = likely_causes(&failed_401());
    assert!(causes.iter().any(|cause| cause.contains("re-serialised")));
    assert!(causes.iter().any(|cause| cause.contains("<t>.")));
    assert!(
        causes
            .iter()
            .any(|cause| cause.contains("different secret"))
    );
    assert!(causes.iter().any(|cause| cause.contains("5 min")));

    let refused = record(
        "c",
        DeliveryStatus::Failed,
        3,
        None,
        Some("connection error: refused"),
    );
    assert_eq!(verdict(&refused), Verdict::RetriesOver);
    assert!(likely_causes(&refused)[0].contains("down"));
    // A status only in the error text still counts.
    let no_code = record(
        "x",
        DeliveryStatus::Failed,
        1,
        None,
        Some("HTTP 429: slow down"),
    );
    assert_eq!(verdict(&no_code), Verdict::RetriesOver);
}

#[test]
fn the_tick_reloads_only_while_something_is_pending() {
    let later = || Instant::now() + Duration::from_secs(3);
    let mut app = app_loaded(vec![failed_401(), pending_503(), delivered()]);
    assert!(app.wants_tick(), "a retry to come keeps the tick running");
    let soon = app.update(Action::Tick(Instant::now()));
    assert!(soon.is_empty(), "not before two seconds have passed");
    let seq = load_seq(&app.update(Action::Tick(later())), SESSION, false);

    loaded(&mut app, seq, vec![failed_401(), delivered()]);
    assert!(
        app.wants_tick(),
        "nothing pending: the tick moves the age only"
    );
    assert!(
        app.update(Action::Tick(later())).is_empty(),
        "and reloads nothing"
    );

    // On another pane (one that does not tick) the tick does not reload
    // either.
    let mut app = app_loaded(vec![pending_503()]);
    app.update(key('5'));
    assert!(!app.wants_tick());
    assert!(app.update(Action::Tick(later())).is_empty());
}

#[test]
fn the_pane_changes_nothing_so_read_only_keeps_every_command() {
    let app = app_loaded(vec![failed_401()]);
    let all = app.panes.deliveries.commands();
    assert!(all.iter().all(|command| !command.mutating));
    for section in DeliveriesPane::help_sections() {
        assert!(section.commands.iter().all(|command| !command.mutating));
    }
}

#[test]
fn s_hands_a_401_failure_to_the_signatures_pane_with_whose_secret() {
    let mut app = app_loaded(vec![failed_401(), delivered()]);
    app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.deliveries.mode(), Mode::Detail);
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Signatures);
    let hint = app.panes.sigs.secret_hint.clone().unwrap_or_default();
    assert!(hint.contains("2b3c4d5e"), "{hint}");
    assert!(hint.contains("401"), "{hint}");
}

#[test]
fn s_is_offered_only_on_a_401_failure() {
    let mut app = app_loaded(vec![delivered(), failed_401()]);
    let has_s = |app: &App| {
        app.commands()
            .iter()
            .any(|c| c.command == Command::Deliveries(DlvCommand::CheckSignature))
    };
    assert_eq!(
        app.panes.deliveries.selected().map(|r| r.attempt_count),
        Some(1)
    );
    assert!(
        app.panes
            .deliveries
            .selected()
            .is_some_and(|r| r.http_status_code == Some(200))
    );
    assert!(!has_s(&app), "the delivered row is selected");
    app.update(key('s'));
    assert_eq!(app.pane, PaneId::Deliveries);
    app.update(press(KeyCode::Down));
    assert!(
        app.panes
            .deliveries
            .selected()
            .is_some_and(|r| r.http_status_code == Some(401))
    );
    assert!(has_s(&app), "the 401 row is selected");
}

#[test]
fn the_prompt_offers_known_sessions_after_recent_ones_narrowed_by_typing() {
    let mut app = app();
    app.seed(Handover::RecentSessions(vec!["call_recent_1".into()]));
    app.update(key('i'));
    app.update(Action::Deliveries(DeliveriesResult::Known(vec![
        "ses_aaa111".into(),
        "call_recent_1".into(),
        "call_bbb222".into(),
    ])));
    assert_eq!(
        app.panes.deliveries.choices(),
        ["call_recent_1", "ses_aaa111", "call_bbb222"],
        "recent first, each id once"
    );
    type_text(&mut app, "BBB");
    assert_eq!(
        app.panes.deliveries.choices(),
        ["call_bbb222"],
        "case-insensitive search"
    );
    app.update(press(KeyCode::Down));
    assert_eq!(app.panes.deliveries.prompt.value(), "call_bbb222");
    assert_eq!(
        app.panes.deliveries.choices(),
        ["call_bbb222"],
        "picking keeps the search"
    );
    let effects = app.update(press(KeyCode::Enter));
    load_seq(&effects, "call_bbb222", false);
}

/// A clock the test moves: seconds after [`fixed_now`].
static MOVED_BY: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn moving_now() -> DateTime<Utc> {
    fixed_now() + chrono::Duration::seconds(MOVED_BY.load(std::sync::atomic::Ordering::SeqCst))
}

#[test]
fn a_link_countdown_redraws_when_its_words_change_not_every_tick() {
    use earshot_core::history::session_view;
    use earshot_core::store::events::StoredEvent;
    let body = serde_json::json!({
        "event_id": "ev_1", "event": "call.ended", "timestamp": at(-19 * 60 + 30).to_rfc3339(),
        "call": {"status": "ended", "recording_url": "https://files.example/rec.wav?sig=1"},
    });
    let ended = StoredEvent {
        event_id: "ev_1".into(),
        event: "call.ended".into(),
        session_id: SESSION.into(),
        occurred_ms: at(-19 * 60 + 30).timestamp_millis(),
        body: serde_json::to_vec(&body).unwrap(),
    };
    let view = session_view::build(SESSION, None, &[ended], &[], fixed_now());
    let mut pane = DeliveriesPane::new().with_clock(moving_now);
    pane.set_rows(SESSION, vec![delivered()]);
    pane.set_session(view);
    assert!(pane.wants_tick(), "a link counts down");
    assert!(!pane.live(), "nothing to reload");
    let mut out = crate::tui::panes::deliveries::Outcome::default();
    MOVED_BY.store(10, std::sync::atomic::Ordering::SeqCst);
    assert!(
        !pane.on_tick(Instant::now(), &mut out),
        "41 min 30 s, then 41 min 20 s: no redraw"
    );
    MOVED_BY.store(70, std::sync::atomic::Ordering::SeqCst);
    assert!(pane.on_tick(Instant::now(), &mut out), "40 min now: redraw");
    assert!(out.effects.is_empty(), "no reload for a countdown");
    MOVED_BY.store(3_600, std::sync::atomic::Ordering::SeqCst);
    assert!(pane.on_tick(Instant::now(), &mut out), "expired: redraw");
    out.effects.clear();
    assert!(
        !pane.on_tick(Instant::now(), &mut out) && out.effects.is_empty(),
        "an expired link neither redraws nor reloads"
    );
}

// ---- liveness kept with the rows --------------------------------------

/// The scan `live()` did on every call before it kept a summary: the
/// reference the summary must always equal.
fn scan_live(rows: &[DeliveryRecord], now: DateTime<Utc>) -> bool {
    let grace = chrono::Duration::seconds(10);
    rows.iter().any(|row| {
        row.status == DeliveryStatus::Pending
            || row
                .next_retry_at
                .is_some_and(|at| at.with_timezone(&Utc) + grace > now)
    })
}

/// One change to the rows on screen.
#[derive(Clone, Debug)]
enum RowChange {
    /// Fixture rows (as `set_rows`).
    Set(Vec<DeliveryRecord>),
    /// A load answered (as the worker does).
    Load(Vec<DeliveryRecord>),
    /// A load answered, then superseded by a newer one: ignored.
    StaleLoad(Vec<DeliveryRecord>),
    /// Another id opened: the rows are cleared until its load.
    OpenOther,
}

fn arb_row() -> impl proptest::strategy::Strategy<Value = DeliveryRecord> {
    use proptest::prelude::*;
    (0u8..3, proptest::option::of(-40i64..40), any::<u32>()).prop_map(|(status, retry, n)| {
        let status = match status {
            0 => DeliveryStatus::Pending,
            1 => DeliveryStatus::Failed,
            _ => DeliveryStatus::Delivered,
        };
        let mut row = record(&format!("{n:08x}"), status, 1, Some(200), None);
        row.next_retry_at = retry.map(at);
        row
    })
}

fn arb_change() -> impl proptest::strategy::Strategy<Value = RowChange> {
    use proptest::prelude::*;
    let rows = || proptest::collection::vec(arb_row(), 0..12);
    prop_oneof![
        rows().prop_map(RowChange::Set),
        rows().prop_map(RowChange::Load),
        rows().prop_map(RowChange::StaleLoad),
        Just(RowChange::OpenOther),
    ]
}

fn answer(pane: &mut DeliveriesPane, seq: u64, rows: Vec<DeliveryRecord>) {
    let mut out = crate::tui::panes::deliveries::Outcome::default();
    pane.on_result(
        DeliveriesResult::Loaded {
            seq,
            result: Ok(rows),
        },
        &mut out,
    );
}

fn issued_seq(out: &crate::tui::panes::deliveries::Outcome) -> u64 {
    out.effects
        .iter()
        .find_map(|effect| match effect {
            DeliveriesEffect::Load { seq, .. } => Some(*seq),
            _ => None,
        })
        .expect("a load was issued")
}

proptest::proptest! {
    #[test]
    fn the_kept_liveness_equals_a_full_scan_after_any_changes(
        changes in proptest::collection::vec(arb_change(), 1..16),
        nows in proptest::collection::vec(-60i64..60, 1..6),
    ) {
        let mut pane = DeliveriesPane::new().with_clock(fixed_now);
        pane.id = Some(SESSION.into());
        for change in changes {
            match change {
                RowChange::Set(rows) => pane.set_rows(SESSION, rows),
                RowChange::Load(rows) => {
                    let mut out = crate::tui::panes::deliveries::Outcome::default();
                    pane.refresh(&mut out);
                    let seq = issued_seq(&out);
                    answer(&mut pane, seq, rows);
                }
                RowChange::StaleLoad(rows) => {
                    let mut out = crate::tui::panes::deliveries::Outcome::default();
                    pane.refresh(&mut out);
                    let stale = issued_seq(&out);
                    pane.refresh(&mut out);
                    answer(&mut pane, stale, rows);
                }
                RowChange::OpenOther => {
                    let other = format!("{}-other", pane.id.clone().unwrap_or_default());
                    pane.open(other, &mut crate::tui::panes::deliveries::Outcome::default());
                }
            }
            for offset in &nows {
                pane.now = fixed_now() + chrono::Duration::seconds(*offset);
                proptest::prop_assert_eq!(pane.live(), scan_live(pane.rows(), pane.now));
            }
        }
    }
}

/// A pane that refreshes itself goes stale past twice its period; one that
/// stopped because nothing more is to come says when it was read, in the
/// muted role, never "stale".
#[test]
fn only_a_refreshing_pane_goes_stale() {
    use crate::tui::theme::Role;
    use crate::tui::widgets::age;
    let later = Instant::now() + Duration::from_secs(90);
    let app = app_loaded(vec![pending_503()]);
    let pane = &app.panes.deliveries;
    let (words, role) = age::words(&pane.list, later, pane.age_period()).expect("loaded");
    assert!(words.starts_with("stale: as of 1 min"), "{words}");
    assert_eq!(role, Role::Warn);

    let app = app_loaded(vec![failed_401(), delivered()]);
    let pane = &app.panes.deliveries;
    let (words, role) = age::words(&pane.list, later, pane.age_period()).expect("loaded");
    assert!(words.starts_with("as of 1 min"), "{words}");
    assert_eq!(role, Role::Muted);
}

/// An id joins the incident history's known sessions once when it is
/// loaded again and again, and again when another id came between.
#[test]
fn a_loaded_id_is_remembered_once_in_a_row() {
    let remembered = |out: &crate::tui::panes::deliveries::Outcome| -> Vec<String> {
        out.effects
            .iter()
            .filter_map(|effect| match effect {
                DeliveriesEffect::Remember { id } => Some(id.clone()),
                _ => None,
            })
            .collect()
    };
    let mut pane = DeliveriesPane::new().with_clock(fixed_now);
    let mut out = crate::tui::panes::deliveries::Outcome::default();
    pane.open("call_1".into(), &mut out);
    assert_eq!(remembered(&out), ["call_1"]);
    let mut out = crate::tui::panes::deliveries::Outcome::default();
    pane.refresh(&mut out);
    assert!(remembered(&out).is_empty(), "{:?}", out.effects);
    assert_ne!(issued_seq(&out), 0, "the refresh still loads");
    let mut out = crate::tui::panes::deliveries::Outcome::default();
    pane.open("call_2".into(), &mut out);
    pane.open("call_1".into(), &mut out);
    assert_eq!(remembered(&out), ["call_2", "call_1"]);
}
