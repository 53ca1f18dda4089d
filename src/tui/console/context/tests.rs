//! `update` tests of switching accounts: what a switch clears, that an
//! answer of the old account is dropped, read-only profiles, the question
//! before typed input is lost, the picker, completion and the demo.

use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;
use tui_input::Input;

use super::{Account, CtxCommand, Stamped};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::{App, Overlay};
use crate::tui::console::command::Command;
use crate::tui::console::test_keys::{key, press, type_text};
use crate::tui::console::tests::panes::jobs;
use crate::tui::console::tests::panes::subscriptions::{fixtures, subscription};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::PaneId;
use crate::tui::panes::health::tasks::HealthEffect;
use crate::tui::panes::health::{Field, RecoverForm};
use crate::tui::panes::jobs::JobsResult;
use crate::tui::panes::subscriptions::SubsResult;
use crate::tui::panes::subscriptions::tasks::SubsEffect;
use crate::tui::theme::Theme;
use earshot_core::api::Region;
use earshot_core::api::types::prerecorded::TranscriptStatus;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::config::ProfileSummary;
use earshot_core::poll::schedule::Spent;
use earshot_core::poll::watcher::WatchEvent;

fn profile(name: &str, read_only: bool) -> ProfileSummary {
    ProfileSummary {
        name: name.into(),
        region: Region::default(),
        read_only,
        agents: Some(format!("https://agents.{name}.example")),
    }
}

/// A console on profile `prod` (of `prod`, `staging`, `audit` — the last
/// read-only) with account A's subscriptions and a watched job on screen.
fn app_on_prod(read_only_flag: bool) -> App {
    let mut app = App::new(ConsoleConfig {
        read_only: read_only_flag,
        profile_label: "prod".into(),
        ..ConsoleConfig::default()
    });
    app.set_profiles(
        vec![
            profile("audit", true),
            profile("prod", false),
            profile("staging", false),
        ],
        Some("prod".into()),
    );
    app.pane = PaneId::Subscriptions;
    let seq = subs_load_seq(&app.init());
    app.update(Action::Subs(SubsResult::Loaded {
        seq,
        result: Ok(fixtures()),
    }));
    app.update(Action::Jobs(JobsResult::Discovered(vec![
        "job_of_account_a".into(),
    ])));
    app.update(Action::Jobs(JobsResult::Watch(job_changed(
        "job_of_account_a",
    ))));
    assert_eq!(app.panes.jobs.rows().len(), 1, "account A's job is watched");
    app
}

fn account(profile: &str, read_only: bool) -> Account {
    Account {
        profile: profile.into(),
        region: "eu".into(),
        read_only,
        url_policy: UrlPolicy::PublicHttps,
    }
}

fn job_changed(id: &str) -> WatchEvent {
    WatchEvent::Changed {
        view: jobs::view(id, Some(TranscriptStatus::Processing)),
        transcript: Some(Box::new(jobs::transcript(
            id,
            TranscriptStatus::Processing,
            None,
        ))),
    }
}

/// The sequence number of the one subscriptions load in `effects`.
fn subs_load_seq(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .find_map(|effect| match effect {
            Effect::Subs(SubsEffect::Load { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no subscriptions load in {effects:?}"))
}

/// The screen the app draws, as text.
fn screen(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
    terminal
        .draw(|frame| crate::tui::console::view::draw(frame, app, &Theme::fallback()))
        .unwrap();
    terminal.backend().to_string()
}

fn status_message(app: &App) -> String {
    app.status
        .last_error
        .as_ref()
        .map(|failure| failure.message.clone())
        .unwrap_or_default()
}

fn typed_line(app: &mut App, line: &str) -> Vec<Effect> {
    app.update(key(':'));
    type_text(app, line);
    app.update(press(KeyCode::Enter))
}

#[test]
fn a_switch_empties_every_pane_and_the_status_bar_names_the_new_profile() {
    let mut app = app_on_prod(false);
    app.update(Action::Jobs(JobsResult::Watch(WatchEvent::Budget {
        used: 7,
        budget: 2000,
        spent: Spent::default(),
    })));
    let before = screen(&app);
    assert!(before.contains("1a2b3c4d"), "account A's rows:\n{before}");
    assert!(before.contains("profile prod"), "{before}");
    assert!(before.contains("budget 7/2000"), "{before}");

    let effects = typed_line(&mut app, "ctx staging");
    assert!(
        matches!(effects.as_slice(), [Effect::SwitchProfile { name }] if name == "staging"),
        "{effects:?}"
    );
    // Nothing changes until the event loop could open the profile.
    assert_eq!(app.panes.subs.rows().len(), fixtures().len());

    let effects = app.switched(account("staging", false), None);
    assert!(app.panes.subs.rows().is_empty());
    assert!(app.panes.jobs.rows().is_empty());
    assert!(app.panes.health.rows().is_empty());
    assert_eq!(app.status.budget, None, "account A's budget is gone");
    assert_eq!(app.ctx.current.as_deref(), Some("staging"));
    assert_eq!(app.pane, PaneId::Subscriptions, "the pane stays");
    // The new account's first loads start.
    subs_load_seq(&effects);
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, Effect::Health(HealthEffect::Load { .. }))),
        "{effects:?}"
    );
    assert!(
        effects.iter().any(|effect| matches!(
            effect,
            Effect::Deliveries(DeliveriesEffect::LoadKnownSessions)
        )),
        "{effects:?}"
    );

    let after = screen(&app);
    for row in fixtures() {
        assert!(
            !after.contains(&row.id[..8]),
            "{} of account A is still on screen:\n{after}",
            &row.id[..8]
        );
    }
    assert!(after.contains("profile staging"), "{after}");
    assert!(after.contains("region eu"), "{after}");
    assert!(!after.contains("7/2000"), "{after}");
    assert!(after.contains("switched to profile staging"), "{after}");
    app.update(key('4'));
    let jobs = screen(&app);
    assert!(!jobs.contains("job_of_"), "{jobs}");
}

#[test]
fn an_answer_of_the_old_account_arriving_after_the_switch_is_dropped() {
    let mut app = App::new(ConsoleConfig {
        profile_label: "prod".into(),
        ..ConsoleConfig::default()
    });
    app.set_profiles(
        vec![profile("prod", false), profile("staging", false)],
        Some("prod".into()),
    );
    app.pane = PaneId::Subscriptions;
    let old_generation = app.ctx.generation;
    let old_seq = subs_load_seq(&app.init());
    let new_seq = subs_load_seq(&app.switched(account("staging", false), None));
    // The fresh pane counts its loads from the start again: the sequence
    // number alone could not tell the two accounts' answers apart.
    assert_eq!(old_seq, new_seq);

    let late = Stamped {
        generation: old_generation,
        action: Action::Subs(SubsResult::Loaded {
            seq: old_seq,
            result: Ok(fixtures()),
        }),
    };
    assert!(app.update_stamped(late).is_empty());
    assert!(
        app.panes.subs.rows().is_empty(),
        "account A's rows were shown"
    );
    // A job of the old account (a feed of the account the console started
    // on, the old watcher's forwarder) would become a row.
    let late_job = Stamped {
        generation: old_generation,
        action: Action::Jobs(JobsResult::Discovered(vec!["job_of_account_a".into()])),
    };
    app.update_stamped(late_job);
    assert!(
        app.panes.jobs.rows().is_empty(),
        "account A's job was shown"
    );

    let staging_row = subscription(
        "5e5e5e5e-0000-4000-8000-000000000005",
        "https://hooks.staging.example/in",
        &["call.ended"],
        true,
    );
    app.update_stamped(Stamped {
        generation: app.ctx.generation,
        action: Action::Subs(SubsResult::Loaded {
            seq: new_seq,
            result: Ok(vec![staging_row.clone()]),
        }),
    });
    assert_eq!(app.panes.subs.rows(), [staging_row]);
}

#[test]
fn a_read_only_profile_hides_mutating_keys_and_says_which_profile() {
    let mut app = app_on_prod(false);
    assert!(app.commands().iter().any(|command| command.keys == "n"));
    app.switched(account("audit", true), None);
    app.panes.subs.set_rows(fixtures());
    assert!(app.config.read_only);
    for c in ['n', 'p', 'D'] {
        assert!(app.update(key(c)).is_empty(), "{c} does nothing");
        assert!(app.panes.subs.modal.is_none(), "{c} opens nothing");
        let said = status_message(&app);
        assert!(
            said.starts_with("read-only: ") && said.contains("profile audit is read-only"),
            "{c}: {said}"
        );
    }
    assert!(!app.commands().iter().any(|command| command.mutating));
    assert!(screen(&app).contains("READ-ONLY"));

    // The next profile is not read-only: the keys are back.
    app.switched(account("staging", false), None);
    app.panes.subs.set_rows(fixtures());
    assert!(!app.config.read_only);
    assert!(app.commands().iter().any(|command| command.keys == "n"));
    assert!(!screen(&app).contains("READ-ONLY"));
}

#[test]
fn read_only_from_the_command_line_stays_on_for_every_profile() {
    let mut app = app_on_prod(true);
    app.switched(account("staging", false), None);
    app.panes.subs.set_rows(fixtures());
    assert!(app.config.read_only);
    app.update(key('D'));
    let said = status_message(&app);
    assert!(said.contains("started with --read-only"), "{said}");
    assert!(app.panes.subs.modal.is_none());
}

#[test]
fn switching_with_typed_input_asks_first_and_no_keeps_it() {
    let mut app = app_on_prod(false);
    app.panes.sigs.current = Input::new("whsec_typed_by_the_operator".into());
    let effects = typed_line(&mut app, "ctx staging");
    assert!(effects.is_empty(), "{effects:?}");
    match &app.overlay {
        Some(Overlay::ConfirmSwitch { to, losing }) => {
            assert_eq!(to, "staging");
            assert_eq!(losing, &["what is typed in Signatures".to_owned()]);
        }
        other => panic!("no question: {other:?}"),
    }
    let question = screen(&app);
    assert!(
        question.contains("Switch to profile staging?"),
        "{question}"
    );
    assert!(
        question.contains("what is typed in Signatures"),
        "{question}"
    );

    assert!(app.update(key('n')).is_empty());
    assert!(app.overlay.is_none());
    assert_eq!(
        app.panes.sigs.current.value(),
        "whsec_typed_by_the_operator"
    );
    assert_eq!(app.ctx.current.as_deref(), Some("prod"));

    typed_line(&mut app, "ctx staging");
    let effects = app.update(key('y'));
    assert!(
        matches!(effects.as_slice(), [Effect::SwitchProfile { name }] if name == "staging"),
        "{effects:?}"
    );
    app.switched(account("staging", false), None);
    assert!(app.panes.sigs.current.value().is_empty());
}

#[test]
fn a_dirty_form_or_a_running_recover_is_named_in_the_question() {
    let mut app = app_on_prod(false);
    app.update(key('n'));
    app.update(key('h'));
    assert!(app.request_switch("staging").is_empty());
    assert!(matches!(
        &app.overlay,
        Some(Overlay::ConfirmSwitch { losing, .. }) if losing[0].starts_with("the subscription form")
    ));

    let mut app = app_on_prod(false);
    app.panes.health.recover = Some(RecoverForm {
        subscription_id: "1a2b3c4d-0000-4000-8000-000000000001".into(),
        url: "https://hooks.example.com/a".into(),
        secret: Input::default(),
        confirm: Input::default(),
        field: Field::Secret,
        preview: None,
        progress: Some((3, 10)),
        sent: Vec::new(),
        cancelling: false,
        stop: Default::default(),
        result: None,
    });
    app.request_switch("staging");
    let Some(Overlay::ConfirmSwitch { losing, .. }) = &app.overlay else {
        panic!("no question: {:?}", app.overlay);
    };
    assert!(losing[0].contains("recover in progress"), "{losing:?}");
    // ctrl-c still quits from the question.
    app.update(Action::Run(Command::Interrupt));
    assert!(app.quit);
}

#[test]
fn ctx_alone_opens_the_picker_on_the_profile_in_use() {
    let mut app = app_on_prod(false);
    assert!(typed_line(&mut app, "ctx").is_empty());
    assert!(matches!(
        app.overlay,
        Some(Overlay::Profiles { selected: 1 })
    ));
    let picker = screen(&app);
    assert!(picker.contains("● prod"), "{picker}");
    assert!(
        picker.contains("https://agents.staging.example"),
        "{picker}"
    );
    assert!(picker.contains("read-only"), "{picker}");

    app.update(key('k'));
    app.update(key('k'));
    assert!(matches!(
        app.overlay,
        Some(Overlay::Profiles { selected: 0 })
    ));
    app.update(key('j'));
    app.update(key('j'));
    app.update(key('j'));
    assert!(matches!(
        app.overlay,
        Some(Overlay::Profiles { selected: 2 })
    ));
    let effects = app.update(press(KeyCode::Enter));
    assert!(
        matches!(effects.as_slice(), [Effect::SwitchProfile { name }] if name == "staging"),
        "{effects:?}"
    );

    // Enter on the profile in use switches nothing; esc closes.
    typed_line(&mut app, "ctx");
    assert!(app.on_picker(CtxCommand::Choose).is_empty());
    assert!(
        app.toast
            .as_ref()
            .is_some_and(|t| t.text.contains("already on profile prod"))
    );
    typed_line(&mut app, "ctx");
    app.update(press(KeyCode::Esc));
    assert!(app.overlay.is_none());
}

#[test]
fn an_unknown_profile_is_refused_with_the_known_ones() {
    let mut app = app_on_prod(false);
    assert!(typed_line(&mut app, "ctx prdo").is_empty());
    let said = status_message(&app);
    assert!(said.contains("no profile \"prdo\""), "{said}");
    assert!(said.contains("audit, prod, staging"), "{said}");
    assert_eq!(
        app.panes.subs.rows().len(),
        fixtures().len(),
        "nothing cleared"
    );
}

#[test]
fn a_profile_that_cannot_be_opened_changes_nothing() {
    let mut app = app_on_prod(false);
    typed_line(&mut app, "ctx staging");
    app.switch_failed(
        "staging",
        "profile `staging` reads its API key from FOO, which is not set",
    );
    let said = status_message(&app);
    assert!(said.contains("cannot switch to profile staging"), "{said}");
    assert!(said.contains("stays on profile prod"), "{said}");
    assert_eq!(app.panes.subs.rows().len(), fixtures().len());
    assert_eq!(app.config.profile_label, "prod");
}

#[test]
fn tab_completes_ctx_and_the_profile_names() {
    let mut app = app_on_prod(false);
    app.update(key(':'));
    type_text(&mut app, "ct");
    app.update(press(KeyCode::Tab));
    type_text(&mut app, "st");
    app.update(press(KeyCode::Tab));
    match &app.overlay {
        Some(Overlay::CommandLine(input)) => assert_eq!(input.value(), "ctx staging"),
        other => panic!("the prompt closed: {other:?}"),
    }
    let effects = app.update(press(KeyCode::Enter));
    assert!(matches!(effects.as_slice(), [Effect::SwitchProfile { name }] if name == "staging"));
}

#[test]
fn the_demo_says_it_has_only_its_own_account() {
    let mut app = App::new(ConsoleConfig {
        demo: true,
        profile_label: "demo".into(),
        ..ConsoleConfig::default()
    });
    for line in ["ctx", "ctx prod"] {
        assert!(typed_line(&mut app, line).is_empty(), "{line}");
        let said = status_message(&app);
        assert!(
            said.contains("one built-in account (demo)"),
            "{line}: {said}"
        );
        assert!(app.overlay.is_none());
    }
}
