//! The Events pane: the live list (following, then paused with new events
//! above) and one event in full, with its body's personal data masked.

use super::*;
use crate::tui::panes::events::Mode;
use earshot_core::api::types::agents::{DeliveryRecord, DeliveryStatus};
use earshot_core::history::event_list::{
    AttemptLine, EventDetail, EventRow, SubscriptionOutcome, SubscriptionTimeline,
};
use earshot_core::store::outcomes::{EventState, Outcome};

const BROKEN: &str = "1a2b3c4d-0000-4000-8000-000000000001";
const FINE: &str = "2b3c4d5e-0000-4000-8000-000000000002";
/// 2025-03-14T09:26:53Z.
const AT_MS: i64 = 1_741_944_413_000;

fn outcome(id: &str, state: EventState, attempts: i64) -> SubscriptionOutcome {
    SubscriptionOutcome {
        id: id.into(),
        state,
        attempts,
        observer: false,
    }
}

fn event(n: i64, event: &str, broken: EventState) -> EventRow {
    EventRow {
        event_id: format!("9c1e7b{n:02}-5d3a-4c8e-9f10-2b4c6d8e0a1f"),
        event: event.into(),
        session_id: format!("call_4f2a9c1e7b{n:02}"),
        occurred_at: String::new(),
        occurred_ms: AT_MS - n * 61_000,
        received_ms: 0,
        subscriptions: vec![
            outcome(
                BROKEN,
                broken,
                if broken == EventState::Missed { 6 } else { 1 },
            ),
            outcome(FINE, EventState::Delivered, 1),
        ],
        outcomes_known: true,
    }
}

fn rows() -> Vec<EventRow> {
    vec![
        event(1, "call.ended", EventState::Missed),
        event(2, "call.connected", EventState::Pending),
        event(3, "call.ended", EventState::Recovered),
        event(4, "session.completed", EventState::Delivered),
        event(5, "call.failed", EventState::Unknown),
    ]
}

fn on_events() -> App {
    let mut app = bare_app(ConsoleConfig::default());
    app.status.connection = Connection::Ok;
    keys(&mut app, "8");
    app.panes.events.set_rows(rows());
    app
}

#[test]
fn events_list_following_the_newest() {
    let app = on_events();
    snapshot("events_list", &app);
    let terminal = render(&app, (120, 40));
    // Each subscription's outcome in its state's colour.
    let missed = find(&terminal, "1a2b3c4d missed ×6");
    assert_eq!(
        fg_at(&terminal, (missed.0 + 9, missed.1)),
        colour(Role::Error)
    );
    let screen = screen_text(&terminal);
    assert!(screen.contains("following the newest"), "{screen}");
}

#[test]
fn events_list_paused_says_how_many_arrived_above() {
    let mut app = on_events();
    keys(&mut app, "jj");
    let mut fresh = vec![
        event(-1, "call.ended", EventState::Missed),
        event(0, "call.connected", EventState::Missed),
    ];
    fresh.extend(rows());
    app.panes.events.set_rows(fresh);
    let terminal = render(&app, (120, 40));
    let screen = screen_text(&terminal);
    assert!(screen.contains("PAUSED, 2 new above"), "{screen}");
    assert_eq!(
        app.panes.events.selected().map(|row| row.event.as_str()),
        Some("call.ended"),
        "still on the third event of before"
    );
    assert_eq!(
        app.panes.events.selected().map(|row| row.occurred_ms),
        Some(AT_MS - 3 * 61_000)
    );
}

fn attempt(n: u32, status: u16, retry: bool) -> AttemptLine {
    let at = chrono::DateTime::parse_from_rfc3339("2025-03-14T09:20:00Z").expect("a time");
    AttemptLine {
        record: DeliveryRecord {
            id: format!("dlv_{n}"),
            subscription_id: BROKEN.into(),
            session_id: "call_4f2a9c1e7b01".into(),
            status: if retry {
                DeliveryStatus::Pending
            } else {
                DeliveryStatus::Failed
            },
            attempt_count: n,
            http_status_code: Some(status),
            error: Some(format!("HTTP {status}: invalid signature")),
            delivered_at: None,
            next_retry_at: None,
            created_at: at + chrono::Duration::minutes(i64::from(n)),
            extra: Map::new(),
        },
        diagnosis: Some("401 invalid signature: the receiver has another secret".into()),
        will_retry: retry,
    }
}

/// The observer's one attempt, answered 200.
fn delivered_attempt() -> AttemptLine {
    let mut line = attempt(1, 200, false);
    line.record.subscription_id = FINE.into();
    line.record.status = DeliveryStatus::Delivered;
    line.record.error = None;
    line.record.delivered_at = Some(line.record.created_at);
    line.diagnosis = None;
    line
}

fn detail() -> EventDetail {
    let mut row = event(1, "call.ended", EventState::Missed);
    // FINE is the observer's own subscription.
    row.subscriptions[1].observer = true;
    let outcome = Outcome {
        subscription_id: BROKEN.into(),
        event_key: row.event_id.clone(),
        event_id: Some(row.event_id.clone()),
        event: Some(row.event.clone()),
        session_id: row.session_id.clone(),
        occurred_ms: row.occurred_ms,
        state: EventState::Missed,
        attempts: 2,
        http_status_code: 401,
        error_class: String::new(),
        first_failure_ms: Some(row.occurred_ms),
        last_failure_ms: Some(row.occurred_ms),
        settled_ms: None,
    };
    let body = json!({
        "event": "call.ended",
        "call": {
            "call_id": "call_4f2a9c1e7b01",
            "from_number": "+15555550189",
            "recording_url": "https://files.example/rec/abcdef.wav?X-Amz-Signature=deadbeef"
        }
    });
    EventDetail {
        row,
        headers: vec![
            ("x-svc-signature".into(), "t=1741944413,v1=6a0c…".into()),
            ("x-svc-event".into(), "call.ended".into()),
        ],
        body: body.to_string().into_bytes(),
        subscriptions: vec![
            SubscriptionTimeline {
                outcome: outcome.clone(),
                url: Some("https://hooks.example.com/voice".into()),
                attempts: vec![attempt(1, 401, true), attempt(2, 401, false)],
            },
            SubscriptionTimeline {
                outcome: Outcome {
                    subscription_id: FINE.into(),
                    state: EventState::Delivered,
                    attempts: 1,
                    http_status_code: 200,
                    first_failure_ms: None,
                    last_failure_ms: None,
                    ..outcome
                },
                url: Some("https://observer.example.com/inbox".into()),
                attempts: vec![delivered_attempt()],
            },
        ],
        outcomes_unknown: None,
        give_up: "on this account the platform gave up after 8 attempts (seen 14 times)".into(),
    }
}

#[test]
fn events_detail_with_attempts_and_the_body_masked() {
    let mut app = on_events();
    let detail = detail();
    app.panes.events.detail_of = Some(detail.row.event_id.clone());
    app.panes.events.detail = Some(Box::new(detail));
    app.panes.events.mode = Mode::Detail;
    snapshot("events_detail", &app);
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(!screen.contains("5555550189"), "{screen}");
    assert!(!screen.contains("deadbeef"), "{screen}");
    assert!(screen.contains("+1 •••• ••89"), "{screen}");
    assert!(
        screen.contains("per subscription (1 customer and the observer;"),
        "{screen}"
    );
    let observer = screen
        .lines()
        .find(|line| line.contains("2b3c4d5e DELIVERED"))
        .unwrap_or_else(|| panic!("the observer's timeline: {screen}"));
    assert!(observer.contains("(the observer's own)"), "{observer}");
    keys(&mut app, "n");
    let screen = screen_text(&render(&app, (120, 40)));
    assert!(screen.contains("+15555550189"), "n shows it: {screen}");
}

/// Six customers and the observer, filtered to the fifth customer: it
/// comes first, the observer is marked `obs ✓` and never counted as a
/// customer, and what does not fit is `+N more`, never a cut id.
#[test]
fn events_list_outcomes_named_first_observer_marked_rest_counted() {
    use earshot_core::history::event_list::order_outcomes;
    let mut app = on_events();
    keys(&mut app, "/sub:5e6f");
    app.update(key(KeyCode::Enter));
    let mut subscriptions: Vec<SubscriptionOutcome> = [
        (
            "0b5e7e11-0000-4000-8000-000000000000",
            EventState::Delivered,
        ),
        ("1a2b3c4d-0000-4000-8000-000000000001", EventState::Missed),
        (
            "2b3c4d5e-0000-4000-8000-000000000002",
            EventState::Delivered,
        ),
        ("3c4d5e6f-0000-4000-8000-000000000003", EventState::Pending),
        (
            "4d5e6f7a-0000-4000-8000-000000000004",
            EventState::Delivered,
        ),
        (
            "5e6f7a8b-0000-4000-8000-000000000005",
            EventState::Recovered,
        ),
        (
            "6f7a8b9c-0000-4000-8000-000000000006",
            EventState::Delivered,
        ),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, (id, state))| SubscriptionOutcome {
        observer: n == 0,
        ..outcome(id, state, 1)
    })
    .collect();
    order_outcomes(&mut subscriptions, Some("5e6f"));
    let mut row = event(1, "call.ended", EventState::Missed);
    row.subscriptions = subscriptions;
    assert_eq!(row.customers(), 6);
    app.panes.events.set_rows(vec![row]);
    snapshot("events_list_outcomes", &app);
    for size in [(80, 24), (120, 40)] {
        let screen = screen_text(&render(&app, size));
        let line = screen
            .lines()
            .find(|line| line.contains("call_4f2a9c1e7b01"))
            .unwrap_or_else(|| panic!("the event's row: {screen}"));
        let cell = line
            .split_once("call_4f2a9c1e7b01")
            .map(|(_, cell)| cell.trim())
            .unwrap_or_default();
        assert!(cell.starts_with("5e6f7a8b recovered"), "{size:?}: {cell}");
        // The observer's mark gives way first when the room is short.
        let customers = match cell.strip_suffix(" · obs ✓") {
            Some(customers) => customers,
            None if size.0 == 80 => cell,
            None => panic!("{size:?}: the observer marked: {cell}"),
        };
        assert!(!cell.contains('…'), "{size:?}: no cut id: {cell}");
        // Every short id shown is whole, and the count adds up to six.
        let (listed, more) = customers
            .rsplit_once(" · +")
            .unwrap_or_else(|| panic!("{size:?}: a count: {cell}"));
        let shown = listed.split(" · ").count();
        let more: usize = more
            .strip_suffix(" more")
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("{size:?}: a count: {cell}"));
        assert_eq!(shown + more, 6, "{size:?}: {cell}");
    }
}

/// A subscription whose last attempt retries: the past attempt says when
/// it was retried, the last one its attempt number, the retry relative to
/// now (overdue once passed) and when this account's platform gave up.
#[test]
fn a_retrying_attempt_says_when_and_how_the_account_ends_its_retries() {
    use crate::tui::panes::events::view::detail_lines;
    let mut detail = detail();
    let mut first = attempt(1, 503, true);
    first.record.error = Some("HTTP 503: busy".into());
    let mut last = attempt(2, 503, true);
    last.record.error = Some("HTTP 503: busy".into());
    let retry_at = last.record.created_at + chrono::Duration::seconds(125);
    last.record.next_retry_at = Some(retry_at);
    detail.subscriptions[0].attempts = vec![first, last];
    let text = |now_ms: i64| {
        detail_lines(&detail, 0, false, now_ms, 200, &Theme::fallback())
            .iter()
            .map(|line| line.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let created = detail.subscriptions[0].attempts[1]
        .record
        .created_at
        .timestamp_millis();
    let shown = text(created);
    assert!(shown.contains("#1 09:21:00  503"), "{shown}");
    assert!(shown.contains("· retried 09:22:00"), "{shown}");
    assert!(
        shown.contains(
            "· attempt 2 · retry in 2 min 5 s (09:24:05) · on this account the platform gave up \
             after 8 attempts (seen 14 times)"
        ),
        "{shown}"
    );
    let later = text(retry_at.timestamp_millis() + 4_000);
    assert!(
        later.contains("· attempt 2 · retry overdue 4 s (09:24:05)"),
        "{later}"
    );
}
