//! Tests of the Signatures pane: the checklist for the shared vectors
//! (`/work/shared/vectors/signatures.json`, values copied here), the keys
//! an operator presses through the [`App`], and secrets kept out of
//! `Debug`.

use crate::tui::kernel::Handover;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;
use crate::tui::console::test_keys::press;
use crate::tui::console::view;
use crate::tui::kernel::ConsoleConfig;
use crate::tui::kernel::Pane;
use crate::tui::kernel::RefusedDelivery;
use crate::tui::panes::PaneId;
use crate::tui::panes::signatures::Outcome;
use crate::tui::panes::signatures::SigsResult;
use crate::tui::panes::signatures::refused::Asked;
use crate::tui::panes::signatures::tasks::SigsEffect;
use crate::tui::panes::signatures::{Field, Report, SignaturesPane, SigsCommand};
use crate::tui::theme::Theme;
use earshot_core::history::held_secret::{self, GIVEN, Known};
use earshot_core::history::receiver_probe::{ProbeAnswer, WRONG};
use earshot_core::history::refused_delivery::Checked;
use earshot_core::signature::{
    Finding, HeaderError, InvalidReason, MAX_HEADER_LEN, Mistake, Severity, Verdict, sign,
};

/// Vector `valid-4`: a CRLF body and a secret full of punctuation.
const V4_SECRET: &str = "~!@#$%^&*()_+{}|:<>?`-=[]\\;',./0123456789AB";
const V4_T: i64 = 1_795_300_004;
const V4_BODY: &str = "{\"a\":1}\r\n";
const V4_HEADER: &str =
    "t=1795300004,v1=9a928240ac8edcb8b8409e2ed771db207345e5dd606f1fed3cc53b42048f8b64";

/// Vector `no-prefix-digest`: its v1 is HMAC over the body alone.
const NP_SECRET: &str = "whsec-test-0123456789abcdefghijklmnopqrstuv";
const NP_T: i64 = 1_795_300_000;
const NP_BODY: &str = "{\"event_id\":\"0b7f3f5e-9c1a-4c8e-8a52-3f1d2e4b5a69\",\"event\":\"session.started\",\"timestamp\":\"2026-11-21T10:00:00+00:00\",\"session\":{\"session_id\":\"s_1\",\"account_id\":7,\"agent_id\":\"6f1c1a52-6a1c-4c59-b1f3-0f9e5f2d8a11\",\"status\":\"created\",\"duration_seconds\":null,\"public_close_reason\":null,\"s3_prefix\":\"acct/7/s_1/\",\"created_at\":\"2026-11-21T10:00:00+00:00\",\"ended_at\":null}}";
const NP_DIGEST: &str = "4c741df39051cf281778ecb4b10e93b07193ba101d98ad9746e00a35edabcf00";

fn clock() -> i64 {
    V4_T + 5
}

fn pane() -> SignaturesPane {
    SignaturesPane::new().with_clock(clock)
}

fn valid_pane() -> SignaturesPane {
    let mut pane = pane();
    pane.set(Field::Header, V4_HEADER);
    pane.set(Field::Body, V4_BODY);
    pane.set(Field::Current, V4_SECRET);
    pane
}

fn checked(
    pane: &SignaturesPane,
) -> (
    &[earshot_core::signature::Check],
    &earshot_core::signature::Diagnosis,
) {
    match &pane.report {
        Report::Checked { checks, diagnosis } => (checks, diagnosis),
        Report::Waiting(why) => panic!("not checked: {why}"),
    }
}

fn finding<'a>(pane: &'a SignaturesPane, code: &str) -> &'a Finding {
    let (_, diagnosis) = checked(pane);
    diagnosis
        .findings
        .iter()
        .find(|f| f.code() == code)
        .unwrap_or_else(|| panic!("no {code} in {:?}", diagnosis.findings))
}

#[test]
fn an_empty_form_waits_for_a_header() {
    assert!(matches!(pane().report, Report::Waiting(_)));
}

#[test]
fn a_valid_vector_is_all_ticks() {
    let pane = valid_pane();
    let (checks, diagnosis) = checked(&pane);
    assert!(diagnosis.is_valid());
    assert_eq!(checks.len(), 3);
    assert!(checks.iter().all(|check| check.passed == Some(true)));
    assert!(checks[1].text.contains("signed 5 s ago"), "{checks:?}");
    assert!(checks[2].text.contains("the current one"), "{checks:?}");
    assert_eq!(diagnosis.problems().count(), 0);
}

#[test]
fn a_tampered_body_fails_with_the_finding() {
    let mut pane = valid_pane();
    pane.set(Field::Body, "{\"a\":2}\r\n");
    let (checks, diagnosis) = checked(&pane);
    assert!(!diagnosis.is_valid());
    assert_eq!(checks[0].passed, Some(true));
    assert_eq!(checks[1].passed, Some(true));
    assert_eq!(checks[2].passed, Some(false));
    assert!(checks[2].text.contains("none does (tried current)"));
    assert_eq!(finding(&pane, "body_changed").severity(), Severity::Problem);
}

#[test]
fn a_signature_301_seconds_old_names_the_skew() {
    let mut pane = valid_pane();
    pane.set(Field::Now, &(V4_T + 301).to_string());
    let (checks, diagnosis) = checked(&pane);
    assert!(!diagnosis.is_valid());
    assert_eq!(checks[1].passed, Some(false));
    assert!(
        checks[1].text.contains("signed 5 min 1 s ago"),
        "{checks:?}"
    );
    // The digest still matched: the delivery was genuine, only late.
    assert_eq!(checks[2].passed, Some(true));
    let skew = finding(&pane, "timestamp_outside_tolerance");
    assert!(skew.what().contains("1 s beyond"), "{}", skew.what());
}

#[test]
fn the_previous_secret_matching_warns_of_a_rotation() {
    let mut pane = valid_pane();
    pane.set(Field::Current, "whsec-the-new-one");
    pane.set(Field::Previous, V4_SECRET);
    let (checks, diagnosis) = checked(&pane);
    assert!(diagnosis.is_valid());
    assert!(checks[2].text.contains("the previous one"), "{checks:?}");
    assert_eq!(
        finding(&pane, "matched_previous_secret").severity(),
        Severity::Warning
    );
}

#[test]
fn a_receiver_digest_without_the_prefix_names_the_mistake() {
    let mut pane = pane();
    pane.set(
        Field::Header,
        &sign(NP_SECRET.as_bytes(), NP_T, NP_BODY.as_bytes()),
    );
    pane.set(Field::Body, NP_BODY);
    pane.set(Field::Current, NP_SECRET);
    pane.set(Field::Now, &NP_T.to_string());
    pane.set(Field::Receiver, NP_DIGEST);
    let mistake = finding(&pane, "receiver_mistake");
    assert_eq!(mistake.mistake(), Some(Mistake::PrefixOmitted));
    assert!(mistake.what().contains("prefix"), "{}", mistake.what());
}

#[test]
fn a_now_that_is_not_a_number_is_named() {
    let mut pane = valid_pane();
    pane.set(Field::Now, "yesterday");
    assert!(matches!(&pane.report, Report::Waiting(why) if why.contains("unix seconds")));
}

#[test]
fn secrets_are_masked_in_debug() {
    let mut pane = valid_pane();
    pane.set(Field::Previous, "whsec-previous-very-secret");
    let shown = format!("{pane:?}");
    assert!(!shown.contains(V4_SECRET), "{shown}");
    assert!(!shown.contains("whsec-previous-very-secret"), "{shown}");
    assert!(shown.contains("<redacted>"));
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = valid_pane();
    assert!(!format!("{app:?}").contains(V4_SECRET));
}

#[test]
fn a_file_body_is_read_by_the_worker_then_checked() {
    let mut pane = valid_pane();
    pane.set(Field::Body, "file:/tmp/body.json");
    assert!(matches!(&pane.report, Report::Waiting(why) if why.contains("press enter")));
    let mut out = Outcome::default();
    pane.run(SigsCommand::Check, &mut out);
    let seq = match out.effects.as_slice() {
        [SigsEffect::ReadBodyFile { seq, path }] => {
            assert_eq!(path, "/tmp/body.json");
            *seq
        }
        other => panic!("{other:?}"),
    };
    assert!(pane.busy());
    pane.on_result(
        SigsResult::BodyLoaded {
            seq,
            path: "/tmp/body.json".into(),
            result: Ok(V4_BODY.as_bytes().to_vec()),
        },
        &mut Outcome::default(),
    );
    assert!(!pane.busy());
    assert!(checked(&pane).1.is_valid());
}

#[test]
fn the_operator_edits_the_form_and_a_paste_keeps_the_body_bytes() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(press(KeyCode::Char('5')));
    assert_eq!(app.pane, PaneId::Signatures);
    app.update(press(KeyCode::Enter));
    assert!(app.panes.sigs.editing);
    for c in V4_HEADER.chars() {
        app.update(press(KeyCode::Char(c)));
    }
    app.update(press(KeyCode::Tab));
    assert_eq!(app.panes.sigs.focus, Field::Body);
    app.update(Action::Input(Event::Paste(V4_BODY.into())));
    assert_eq!(app.panes.sigs.body.value(), V4_BODY);
    app.update(press(KeyCode::Down));
    app.update(Action::Input(Event::Paste(format!("{V4_SECRET}\n"))));
    assert_eq!(app.panes.sigs.current.value(), V4_SECRET);
    assert!(checked(&app.panes.sigs).1.is_valid());
    // `q` is typed, not quit, while editing; esc gives the keys back.
    app.update(press(KeyCode::Char('q')));
    assert!(!app.quit);
    app.update(press(KeyCode::Esc));
    assert!(!app.panes.sigs.editing);
    app.update(press(KeyCode::Tab));
    assert_eq!(app.pane, PaneId::Probe);
}

/// A huge paste then thousands of keys into the header field: every
/// character kept, and the check says "too long" without parsing it (the
/// time is measured by `benches/signature_typing.rs`, not asserted).
#[test]
fn a_huge_header_is_kept_and_reported_too_long() {
    const PASTED: usize = 200_000;
    const TYPED: usize = 20_000;
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(press(KeyCode::Char('5')));
    app.update(press(KeyCode::Enter));
    assert_eq!(app.panes.sigs.focus, Field::Header);
    // The signature, then a blob pasted after it (line breaks dropped).
    app.update(Action::Input(Event::Paste(V4_HEADER.into())));
    let blob = format!("{}\n", "a".repeat(PASTED));
    app.update(Action::Input(Event::Paste(blob)));
    for _ in 0..TYPED {
        app.update(press(KeyCode::Char('b')));
    }
    let value = app.panes.sigs.header.value();
    let len = V4_HEADER.len() + PASTED + TYPED;
    assert_eq!(value.len(), len);
    assert_eq!(app.panes.sigs.header.cursor(), len);
    assert!(value.starts_with(&format!("{V4_HEADER}aaa")));
    assert!(value.ends_with(&format!("a{}", "b".repeat(TYPED))));
    let (checks, diagnosis) = checked(&app.panes.sigs);
    let too_long = HeaderError::TooLong {
        len,
        max: MAX_HEADER_LEN,
    };
    assert_eq!(
        diagnosis.verdict,
        Verdict::Invalid(InvalidReason::MalformedHeader(too_long.clone()))
    );
    assert_eq!(checks[0].passed, Some(false));
    assert!(
        checks[0].text.contains(&format!("{len} bytes long")),
        "{checks:?}"
    );
    // The report names the length, not the blob.
    assert!(
        checks.iter().all(|check| check.text.len() < 500),
        "{checks:?}"
    );

    // Back to a header: ctrl-u empties the field, and a valid one checks.
    app.update(Action::Input(Event::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    ))));
    assert!(app.panes.sigs.header.value().is_empty());
    app.update(Action::Input(Event::Paste(V4_HEADER.into())));
    app.panes.sigs.set(Field::Body, V4_BODY);
    app.panes.sigs.set(Field::Current, V4_SECRET);
    assert!(checked(&app.panes.sigs).1.is_valid());
}

#[test]
fn another_pane_can_hand_a_delivery_over() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(Action::Handover(Handover::OpenInSignatures {
        header: Some(V4_HEADER.into()),
        body: Some(V4_BODY.as_bytes().to_vec()),
        secret_hint: Some("subscription 2b3c4d5e".into()),
        delivery_id: None,
        refused: None,
    }));
    assert_eq!(app.pane, PaneId::Signatures);
    assert!(app.panes.sigs.editing);
    assert_eq!(app.panes.sigs.focus, Field::Current);
    for c in V4_SECRET.chars() {
        app.update(press(KeyCode::Char(c)));
    }
    assert!(checked(&app.panes.sigs).1.is_valid());
}

#[test]
fn clear_empties_every_field() {
    let mut pane = valid_pane();
    let mut out = Outcome::default();
    pane.run(SigsCommand::Clear, &mut out);
    assert!(
        Field::ORDER
            .iter()
            .all(|f| pane.input(*f).value().is_empty())
    );
    assert!(matches!(pane.report, Report::Waiting(_)));
}

#[test]
fn the_check_scrolls_and_an_edit_scrolls_it_back() {
    let mut pane = valid_pane();
    let mut out = Outcome::default();
    pane.run(SigsCommand::ScrollDown, &mut out);
    assert!(pane.scroll > 0);
    pane.run(SigsCommand::ScrollUp, &mut out);
    assert_eq!(pane.scroll, 0);
    pane.run(SigsCommand::ScrollDown, &mut out);
    pane.set(Field::Now, "1");
    assert_eq!(pane.scroll, 0);
}

#[test]
fn a_capture_line_is_replayed_with_its_header_body_and_receive_time() {
    let mut pane = SignaturesPane::new().with_clock(|| V4_T + 86_400);
    pane.set(Field::Current, V4_SECRET);
    pane.set(Field::Body, "capture:/tmp/inbox.jsonl#3");
    let mut out = Outcome::default();
    pane.run(SigsCommand::Check, &mut out);
    let seq = match out.effects.as_slice() {
        [SigsEffect::ReadCapture { seq, path, line }] => {
            assert_eq!((path.as_str(), *line), ("/tmp/inbox.jsonl", Some(3)));
            *seq
        }
        other => panic!("{other:?}"),
    };
    pane.on_result(
        SigsResult::CaptureLoaded {
            seq,
            result: Ok(earshot_core::receiver::capture::Replay {
                line: 3,
                header: V4_HEADER.into(),
                body: V4_BODY.as_bytes().to_vec(),
                received_unix: V4_T + 2,
            }),
        },
        &mut Outcome::default(),
    );
    assert_eq!(pane.header.value(), V4_HEADER);
    // Checked at the receive time, not a day later when it would be stale.
    assert_eq!(pane.now.value(), (V4_T + 2).to_string());
    assert!(checked(&pane).1.is_valid());
}

#[test]
fn a_capture_without_a_line_asks_for_the_last_signed_request() {
    let mut pane = valid_pane();
    pane.set(Field::Body, "capture:inbox.jsonl");
    assert!(matches!(&pane.report, Report::Waiting(why) if why.contains("replay")));
    let mut out = Outcome::default();
    pane.run(SigsCommand::Check, &mut out);
    assert!(matches!(
        out.effects.as_slice(),
        [SigsEffect::ReadCapture { path, line: None, .. }] if path == "inbox.jsonl"
    ));
}

const SUB: &str = "2b3c4d5e-6f70-4b1c-9d2e-3f4a5b6c7d8e";

/// A delivery refused with 401 as the Events pane hands it over: the
/// observer's bytes of `event_id`, no header.
fn refused_event(event_id: &str) -> Action {
    Action::Handover(Handover::OpenInSignatures {
        header: None,
        body: Some(V4_BODY.as_bytes().to_vec()),
        secret_hint: Some("subscription 2b3c4d5e's receiver refused it with 401".into()),
        delivery_id: None,
        refused: Some(RefusedDelivery {
            subscription_id: SUB.into(),
            session_id: "ses_1".into(),
            event_id: Some(event_id.into()),
            delivery_id: None,
        }),
    })
}

/// The answers of a receiver that holds the secret given.
fn accepted(event_id: &str) -> Checked {
    let answers = vec![
        ProbeAnswer {
            signed_with: GIVEN,
            http_status: Some(200),
            error: None,
        },
        ProbeAnswer {
            signed_with: WRONG,
            http_status: Some(401),
            error: Some("HTTP 401".into()),
        },
    ];
    let known = Known {
        short_id: "2b3c4d5e".into(),
        secret_version: Some(2),
        record_from: "the platform's record, read now".into(),
        rotation: None,
    };
    let verdict = held_secret::verdict(&answers, &known, 0, crate::tui::widgets::utc_clock);
    Checked {
        event_id: event_id.into(),
        subscription_id: SUB.into(),
        url: "https://hooks.example/b".into(),
        answers,
        held: verdict.held,
        verdict: verdict.text,
        next: verdict.next,
        secret_version: Some(2),
        rotation: None,
    }
}

fn screen(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal
        .draw(|frame| view::draw(frame, app, &Theme::fallback()))
        .unwrap();
    terminal.backend().to_string()
}

/// `enter` in the form of a refused delivery (the secret typed first,
/// while the form has the keys) or `p` asks its receiver: the seq.
fn ask(app: &mut App, event_id: &str) -> u64 {
    let effects = if app.panes.sigs.editing {
        for c in V4_SECRET.chars() {
            app.update(press(KeyCode::Char(c)));
        }
        app.update(press(KeyCode::Enter))
    } else {
        app.update(press(KeyCode::Char('p')))
    };
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Sigs(SigsEffect::AskReceiver {
                seq,
                event_id: asked,
                subscription_id,
                ..
            }) if asked == event_id && subscription_id == SUB => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the receiver is asked about {event_id}: {effects:?}"))
}

#[test]
fn a_second_delivery_replaces_the_form_and_the_first_verdict() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(Action::Handover(Handover::OpenInSignatures {
        header: Some(V4_HEADER.into()),
        body: Some(V4_BODY.as_bytes().to_vec()),
        secret_hint: None,
        delivery_id: None,
        refused: None,
    }));
    for c in V4_SECRET.chars() {
        app.update(press(KeyCode::Char(c)));
    }
    assert!(checked(&app.panes.sigs).1.is_valid());
    assert!(screen(&app).contains("valid: signed with the current secret"));

    // A 401 row of Deliveries: no header, no bytes yet (read from the store).
    let effects = app.update(Action::Handover(Handover::OpenInSignatures {
        header: None,
        body: None,
        secret_hint: None,
        delivery_id: Some("a1000000-0000-4000-8000-000000000001".into()),
        refused: Some(RefusedDelivery {
            subscription_id: SUB.into(),
            session_id: "ses_1".into(),
            event_id: None,
            delivery_id: Some("a1000000-0000-4000-8000-000000000001".into()),
        }),
    }));
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Sigs(SigsEffect::LoadRefused { target, .. })
                if target.delivery_id.as_deref() == Some("a1000000-0000-4000-8000-000000000001")
        )),
        "{effects:?}"
    );
    for field in Field::ORDER.into_iter().filter(|f| *f != Field::Body) {
        assert!(
            app.panes.sigs.input(field).value().is_empty(),
            "{field:?} emptied"
        );
    }
    let Report::Waiting(why) = &app.panes.sigs.report else {
        panic!("no verdict without a header: {:?}", app.panes.sigs.report);
    };
    assert!(why.contains("refused this delivery with 401"), "{why}");
    let shown = screen(&app);
    assert!(!shown.contains("valid: signed with"), "{shown}");
    assert!(shown.contains("p asks its receiver"), "{shown}");
}

#[test]
fn a_receiver_verdict_shows_only_beside_the_event_it_was_computed_for() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(refused_event("evt-a"));
    assert!(
        app.panes.sigs.header.value().is_empty(),
        "not the observer's header"
    );
    let seq = ask(&mut app, "evt-a");
    let answer = |seq, event_id: &str| {
        Action::Sigs(SigsResult::Asked {
            seq,
            asked: Box::new(Asked {
                event_id: event_id.into(),
                subscription_id: SUB.into(),
                at_ms: 0,
                result: Ok(accepted(event_id)),
            }),
        })
    };
    app.update(answer(seq, "evt-a"));
    assert!(app.panes.sigs.shown_verdict().is_some());
    let shown = screen(&app);
    assert!(
        shown.contains("the secret you gave is the one it") && shown.contains("HTTP 401"),
        "{shown}"
    );

    // Another event: the verdict for evt-a is gone at once.
    app.update(refused_event("evt-b"));
    assert!(app.panes.sigs.shown_verdict().is_none());
    assert!(!screen(&app).contains("is the one it"));
    // The answer of the probe about evt-a, late: dropped.
    let seq_b = ask(&mut app, "evt-b");
    app.update(answer(seq, "evt-a"));
    assert!(app.panes.sigs.shown_verdict().is_none());
    // A verdict is shown beside its own event only.
    app.update(answer(seq_b, "evt-a"));
    assert!(
        app.panes.sigs.shown_verdict().is_none(),
        "computed for evt-a"
    );
    let seq_b = ask(&mut app, "evt-b");
    app.update(answer(seq_b, "evt-b"));
    assert!(
        app.panes
            .sigs
            .shown_verdict()
            .is_some_and(|asked| asked.event_id == "evt-b")
    );
}

/// After the receiver is asked the form keeps the keyboard, so the next
/// secret the operator tries is typed into the field, never run as the
/// pane's keys.
#[test]
fn the_form_keeps_the_keyboard_after_asking() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.update(refused_event("evt-a"));
    ask(&mut app, "evt-a");
    assert!(app.panes.sigs.editing, "still typing after asking");

    let asked_with = |effects: &[Effect]| {
        effects.iter().find_map(|effect| match effect {
            Effect::Sigs(SigsEffect::AskReceiver { given, .. }) => Some(given.expose().to_owned()),
            _ => None,
        })
    };
    app.update(Action::Input(Event::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    ))));
    for c in "s3cond-guess".chars() {
        app.update(press(KeyCode::Char(c)));
    }
    assert_eq!(app.pane, PaneId::Signatures, "no key ran as a pane key");
    let effects = app.update(press(KeyCode::Enter));
    assert_eq!(asked_with(&effects).as_deref(), Some("s3cond-guess"));
}

/// Nothing typed: the receiver is asked with `EARSHOT_WEBHOOK_SECRET` when
/// the console has it, and said so; without it, nothing is sent and the
/// form says what earshot needs and where the observer's secret is.
#[test]
fn with_no_secret_typed_the_environment_is_used_or_what_is_needed_is_said() {
    let mut app = App::new(ConsoleConfig::default());
    app.panes.sigs = SignaturesPane::new().with_clock(clock);
    app.panes.sigs.env_secret = || None;
    app.update(refused_event("evt-a"));
    app.update(press(KeyCode::Esc));
    let effects = app.update(press(KeyCode::Char('p')));
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::Sigs(SigsEffect::AskReceiver { .. }))),
        "{effects:?}"
    );
    let said = app
        .toast
        .as_ref()
        .map(|toast| toast.text.clone())
        .unwrap_or_default();
    assert!(
        said.contains("EARSHOT_WEBHOOK_SECRET") && said.contains("observer.secret"),
        "{said}"
    );

    app.panes.sigs.env_secret = || {
        Some(earshot_core::redact::SecretString::new(
            "from-the-environment",
        ))
    };
    let effects = app.update(press(KeyCode::Char('p')));
    let given = effects.iter().find_map(|effect| match effect {
        Effect::Sigs(SigsEffect::AskReceiver { given, .. }) => Some(given.expose().to_owned()),
        _ => None,
    });
    assert_eq!(given.as_deref(), Some("from-the-environment"));
}
