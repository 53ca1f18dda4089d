//! The real event loop on `TestBackend`, with a scripted input stream,
//! against an emulator: keys pressed in the console change the platform.
//!
//! The backend publishes every frame it draws, so the script waits for
//! what is on screen (never for a fixed time) before pressing the next key.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::support::{self, Harness, Receiver, start};
use crate::tui::clipboard::{Clipboard, osc52};
use crate::tui::console::action::Action;
use crate::tui::console::app::App;
use crate::tui::console::context::{ConfigProfiles, ProfileSource};
use crate::tui::console::event_loop::{Services, run};
use crate::tui::kernel::ConsoleConfig;
use crate::tui::panes::jobs::JobsResult;
use crate::tui::theme::Theme;
use earshot_core::api::types::agents::EventKind;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Size};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

/// A `TestBackend` that copies the screen out after every frame.
struct SharedBackend {
    inner: TestBackend,
    screen: Arc<Mutex<String>>,
    frames: Arc<AtomicUsize>,
}

impl Backend for SharedBackend {
    type Error = <TestBackend as Backend>::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }
    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }
    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()?;
        if let Ok(mut screen) = self.screen.lock() {
            *screen = self.inner.to_string();
        }
        self.frames.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Records what would have gone to the terminal's clipboard.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Clipboard for Recorder {
    fn copy(&mut self, text: &str) -> std::io::Result<()> {
        self.0.lock().unwrap().push(osc52(text));
        Ok(())
    }
}

/// The console, driven by keys, watched through its screen.
struct Script {
    keys: UnboundedSender<Event>,
    screen: Arc<Mutex<String>>,
    frames: Arc<AtomicUsize>,
}

impl Script {
    fn press(&self, code: KeyCode) {
        self.keys
            .send(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
            .expect("the console is reading keys");
    }

    fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    /// Frames drawn so far.
    fn frames(&self) -> usize {
        self.frames.load(Ordering::SeqCst)
    }

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until no frame has been drawn for `calm`: loads the console
    /// started by itself (the board, the known sessions) draw frames of
    /// their own when they land.
    async fn wait_quiet(&self, calm: Duration) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut seen, mut since) = (self.frames(), Instant::now());
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = self.frames();
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() >= calm {
                return;
            }
            assert!(Instant::now() < deadline, "the console never went quiet");
        }
    }

    /// Waits until the screen no longer shows `what`.
    async fn wait_until_gone(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.screen().contains(what) {
            assert!(
                Instant::now() < deadline,
                "the screen kept showing {what:?}:\n{}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the screen shows `what`.
    async fn wait_for(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.screen().contains(what) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what:?}:\n{}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Runs the console on `harness` while `drive` presses keys; the loop must
/// end by itself (the script's `q`).
async fn with_console<F, Fut>(harness: &Harness, clipboard: Recorder, drive: F)
where
    F: FnOnce(Script) -> Fut,
    Fut: Future<Output = ()>,
{
    with_console_fed(harness, clipboard, Vec::new(), drive).await;
}

/// [`with_console`] with feeds of outside actions.
async fn with_console_fed<F, Fut>(
    harness: &Harness,
    clipboard: Recorder,
    feeds: Vec<BoxStream<'static, Action>>,
    drive: F,
) where
    F: FnOnce(Script) -> Fut,
    Fut: Future<Output = ()>,
{
    with_console_on(harness, clipboard, feeds, None, drive).await;
}

/// The profiles of a config file the console starts on (the first) and
/// switches between with `:ctx`.
struct OnProfiles {
    config: std::path::PathBuf,
    first: String,
    store: std::path::PathBuf,
}

/// [`with_console_fed`], on the first of a config file's profiles when
/// `profiles` is given (`harness` is then that profile's platform).
async fn with_console_on<F, Fut>(
    harness: &Harness,
    clipboard: Recorder,
    feeds: Vec<BoxStream<'static, Action>>,
    profiles: Option<OnProfiles>,
    drive: F,
) where
    F: FnOnce(Script) -> Fut,
    Fut: Future<Output = ()>,
{
    let screen = Arc::new(Mutex::new(String::new()));
    let frames = Arc::new(AtomicUsize::new(0));
    let backend = SharedBackend {
        inner: TestBackend::new(120, 40),
        screen: screen.clone(),
        frames: frames.clone(),
    };
    let mut terminal = Terminal::new(backend).expect("terminal");
    let mut app = App::new(ConsoleConfig {
        url_policy: earshot_core::api::validate::UrlPolicy::AnyHttp,
        profile_label: profiles
            .as_ref()
            .map_or_else(|| "test".to_owned(), |on| on.first.clone()),
        ..ConsoleConfig::default()
    });
    // These scripts drive the Subscriptions pane and its neighbours.
    app.pane = crate::tui::panes::PaneId::Subscriptions;
    // The Health pane sweeps this emulator into a store of the test's own.
    let store_dir = tempfile::tempdir().expect("a temp dir for the store");
    let mut store = store_dir.path().join("earshot.db");
    let mut source: Option<Box<dyn ProfileSource>> = None;
    if let Some(on) = profiles {
        let listed =
            earshot_core::config::profiles(Some(&on.config)).expect("the test config reads");
        app.set_profiles(listed, Some(on.first));
        source = Some(Box::new(ConfigProfiles::new(Some(on.config), None)));
        store = on.store;
    }
    let theme = Theme::fallback();
    let (keys, mut incoming) = unbounded_channel::<Event>();
    let events = Box::pin(futures_util::stream::poll_fn(move |cx| {
        incoming.poll_recv(cx)
    }));
    let console = run(
        &mut terminal,
        &mut app,
        &theme,
        events,
        std::future::pending(),
        Services {
            client: harness.client.clone(),
            clipboard: Box::new(clipboard),
            feeds,
            store: Ok(store.into()),
            profiles: source,
            pace: crate::tui::frame_pace::FramePace::immediate(),
            low_bandwidth: false,
        },
    );
    let script = drive(Script {
        keys,
        screen,
        frames,
    });
    let (result, ()) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(console, script)
    })
    .await
    .expect("the console ended within 30 s");
    result.expect("the loop ends cleanly");
    assert!(app.quit, "the console quit on the script's request");
}

fn short(id: &str) -> &str {
    &id[..8]
}

#[tokio::test]
async fn pressing_p_pauses_the_selected_subscription_on_the_platform() {
    let harness = start().await;
    let (receiver, keep) = harness.healthy_subscriber(&[EventKind::CallEnded]).await;
    let target = harness
        .subscribe(&receiver.url(), &[EventKind::SessionStarted])
        .await;

    let (keep_short, target_short) = (short(&keep.id).to_owned(), short(&target.id).to_owned());
    with_console(&harness, Recorder::default(), |script| async move {
        script.wait_for(&keep_short).await;
        script.wait_for(&target_short).await;
        // Narrow the table to the target, then pause it.
        script.press(KeyCode::Char('/'));
        script.type_text(&target_short);
        script.press(KeyCode::Enter);
        script.wait_for("1 of 2").await;
        script.press(KeyCode::Char('p'));
        // The toast, not the title's "paused shown".
        script.wait_for(&format!("paused {target_short}")).await;
        script.press(KeyCode::Char('q'));
    })
    .await;

    let paused = harness.client.get_subscription(&target.id).await.unwrap();
    assert!(!paused.enabled, "the platform's record is paused");
    let untouched = harness.client.get_subscription(&keep.id).await.unwrap();
    assert!(untouched.enabled, "the other subscription is untouched");
}

#[tokio::test]
async fn a_subscription_created_in_the_form_exists_and_its_secret_is_shown_once() {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    let clipboard = Recorder::default();
    let url = receiver.url();
    let drive_url = url.clone();

    with_console(&harness, clipboard.clone(), |script| async move {
        script.wait_for("no subscriptions yet").await;
        script.press(KeyCode::Char('n'));
        script.wait_for("New subscription").await;
        script.type_text(&drive_url);
        script.press(KeyCode::Tab);
        script.press(KeyCode::Tab);
        script.press(KeyCode::Tab);
        script.press(KeyCode::Tab);
        script.press(KeyCode::Char(' ')); // call.ended
        script.press(KeyCode::Enter);
        script.wait_for("shown once").await;
        script.wait_for("whsec_").await;
        script.press(KeyCode::Char('c'));
        script.wait_for("copied ✓").await;
        script.press(KeyCode::Esc);
        script.wait_until_gone("whsec_").await;
        script.wait_for("1 of 1").await;
        script.press(KeyCode::Char('q'));
    })
    .await;

    let all = harness.client.list_subscriptions(true).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].url, url);
    assert_eq!(all[0].events, ["call.ended"]);
    let copies = clipboard.0.lock().unwrap().clone();
    assert_eq!(copies.len(), 1, "one OSC 52 copy");
    assert!(copies[0].starts_with("\x1b]52;c;"), "{:?}", copies[0]);
}

#[tokio::test]
async fn delete_after_typing_the_short_id_removes_it_from_the_platform() {
    let harness = start().await;
    let (_receiver, doomed) = harness.healthy_subscriber(&[EventKind::CallFailed]).await;

    let doomed_short = short(&doomed.id).to_owned();
    with_console(&harness, Recorder::default(), |script| async move {
        script.wait_for(&doomed_short).await;
        script.press(KeyCode::Char('D'));
        script.wait_for("Delete subscription").await;
        script.type_text(&doomed_short);
        script.wait_for("enter: delete for good").await;
        script.press(KeyCode::Enter);
        script.wait_for("no subscriptions yet").await;
        script.press(KeyCode::Char('q'));
    })
    .await;

    let error = harness
        .client
        .get_subscription(&doomed.id)
        .await
        .expect_err("deleted");
    assert_eq!(error.status(), Some(404));
}

#[tokio::test]
async fn a_server_error_shows_in_the_status_bar_and_the_console_keeps_working() {
    let harness = start().await;
    let (_receiver, sub) = harness.healthy_subscriber(&[EventKind::CallEnded]).await;
    let sub_short = short(&sub.id).to_owned();
    let faults = harness.base.clone();
    let http = harness.http.clone();

    with_console(&harness, Recorder::default(), |script| async move {
        script.wait_for(&sub_short).await;
        script.wait_for("● ok").await;
        let answer = http
            .post(format!("{faults}/_emulator/faults"))
            .json(&json!({ "path_prefix": "/v1/webhook-subscriptions", "status": 500 }))
            .send()
            .await
            .expect("fault set");
        assert!(answer.status().is_success());
        script.press(KeyCode::Char('r'));
        script.wait_for("● error").await;
        script.wait_for("HTTP 500").await;
        assert!(script.screen().contains(&sub_short), "the rows stay");
        script.press(KeyCode::Char('r'));
        script.wait_for("● ok").await;
        script.press(KeyCode::Char('q'));
    })
    .await;
}

#[tokio::test]
async fn a_turn_that_changes_nothing_draws_nothing_and_a_burst_of_keys_costs_few_frames() {
    let harness = start().await;
    let receiver = Receiver::healthy().await;
    for _ in 0..30 {
        harness
            .subscribe(&receiver.url(), &[EventKind::CallEnded])
            .await;
    }

    // Outside actions: the loop takes one per turn (it drains only its own
    // results and the keys before drawing), so each is a turn of its own.
    let (feed, fed) = unbounded_channel::<Action>();
    let fed = futures_util::stream::unfold(fed, |mut fed| async move {
        fed.recv().await.map(|action| (action, fed))
    })
    .boxed();
    let key = |code| Action::Input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    with_console_fed(
        &harness,
        Recorder::default(),
        vec![fed],
        |script| async move {
            script.wait_for("30 of 30").await;
            script.wait_for("● ok").await;
            // Five turns that change nothing, then one that moves the
            // selection: only the last draws. (A loop that drew on every turn
            // would have drawn six frames by the time the next row shows.)
            // A refresh of the console's own may land inside a round and
            // draw a frame too, so a round may be tried again, up to three
            // times; a loop that drew on every turn fails all three.
            let mut rounds = Vec::new();
            for row in 2..=4 {
                script.wait_quiet(Duration::from_millis(300)).await;
                let settled = script.frames();
                for _ in 0..5 {
                    feed.send(Action::Input(Event::FocusGained)).unwrap();
                }
                feed.send(key(KeyCode::Char('j'))).unwrap();
                script.wait_for(&format!("row {row}/30")).await;
                rounds.push(script.frames() - settled);
                if rounds.last() == Some(&1) {
                    break;
                }
            }
            assert_eq!(
                rounds.last(),
                Some(&1),
                "no frame for a turn that changed nothing: frames per round {rounds:?}"
            );

            let row = 1 + rounds.len();
            let presses = 30 - row;
            let settled = script.frames();
            for _ in 0..presses {
                script.press(KeyCode::Char('j'));
            }
            script.wait_for("row 30/30").await;
            let burst = script.frames() - settled;
            assert!(burst < presses, "{presses} queued keys drew {burst} frames");
            script.press(KeyCode::Char('q'));
        },
    )
    .await;
}

/// A long paste without bracketed paste arrives as
/// thousands of key events at once; all of them are handled before the
/// next frame (not 256 per frame), and a key typed after them is not stuck
/// behind them.
#[tokio::test]
async fn five_thousand_queued_keys_land_in_one_or_two_frames() {
    let harness = start().await;

    with_console(&harness, Recorder::default(), |script| async move {
        script.wait_for("no subscriptions yet").await;
        script.wait_for("● ok").await;
        script.press(KeyCode::Char('n'));
        script.wait_for("New subscription").await;
        let settled = script.frames();
        let text: String = "0123456789".repeat(500);
        script.type_text(&text);
        script.type_text("ZEND");
        script.wait_for("9ZEND").await;
        let drawn = script.frames() - settled;
        assert!(drawn <= 3, "5,004 queued keys drew {drawn} frames");
        script.press(KeyCode::Esc);
        script.wait_for("discard this form?").await;
        script.press(KeyCode::Char('y'));
        script.wait_until_gone("New subscription").await;
        script.press(KeyCode::Char('q'));
    })
    .await;
}

#[tokio::test]
async fn jobs_from_a_feed_are_watched_to_the_end_in_the_jobs_pane() {
    let harness = start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audio = dir.path().join("one-second.wav");
    std::fs::write(&audio, support::wav(1.0, Some("fed from outside"))).expect("wav written");
    let upload = harness
        .client
        .upload_file(&audio, |_| {})
        .await
        .expect("upload");
    let job = harness
        .client
        .create_transcript(&earshot_core::api::types::prerecorded::NewTranscript {
            audio_url: upload.upload_url,
            ..Default::default()
        })
        .await
        .expect("job created");
    let feed =
        futures_util::stream::iter([Action::Jobs(JobsResult::Discovered(vec![job.id.clone()]))])
            .chain(futures_util::stream::pending())
            .boxed();

    let job_short = short(&job.id).to_owned();
    with_console_fed(
        &harness,
        Recorder::default(),
        vec![feed],
        |script| async move {
            script.press(KeyCode::Char('4'));
            script.wait_for(&job_short).await;
            script.wait_for("completed").await;
            script.press(KeyCode::Char('q'));
        },
    )
    .await;
}

#[tokio::test]
async fn the_inbox_started_from_the_form_receives_platform_deliveries_with_verdicts() {
    let harness = start().await;
    let call = std::sync::OnceLock::new();
    let (platform, started) = (&harness, &call);
    with_console(&harness, Recorder::default(), |script| async move {
        script.press(KeyCode::Char('7'));
        script.wait_for("no receiver").await;
        script.press(KeyCode::Char('l'));
        // Listen on any free port rather than the proposed one.
        script.press(KeyCode::End);
        for _ in 0.."8787".len() {
            script.press(KeyCode::Backspace);
        }
        script.type_text("0");
        script.press(KeyCode::Tab);
        script.type_text(support::SECRET);
        script.press(KeyCode::Enter);
        script.wait_for("receiving at http://127.0.0.1:").await;
        let screen = script.screen();
        let url = screen
            .split("receiving at ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the receiver's URL on screen")
            .to_owned();
        platform
            .subscribe_secret(
                &format!("{url}/good"),
                &[EventKind::CallConnected],
                support::SECRET,
            )
            .await;
        platform
            .subscribe_secret(
                &format!("{url}/rotated-elsewhere"),
                &[EventKind::CallConnected],
                "whsec_a_secret_the_receiver_does_not_know_0123",
            )
            .await;
        let _ = started.set(platform.start_call("connected").await);
        script.wait_for("ok: signed with the current secret").await;
        script.wait_for("invalid signature").await;
        script.wait_for("2 in: 1 ok, 0 dup, 1 rejected").await;
        script.press(KeyCode::Char('q'));
    })
    .await;

    // The platform saw the receiver's answers: one delivered, one 401 that
    // is final (no retry scheduled).
    let call = call.get().expect("a call was started");
    let records = harness.records(call).await;
    let statuses: Vec<(String, Option<u64>)> = records
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap_or("").to_owned(),
                r["http_status_code"].as_u64(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("delivered".to_owned(), Some(200))),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("failed".to_owned(), Some(401))),
        "{statuses:?}"
    );
    assert!(
        records
            .iter()
            .filter(|r| r["http_status_code"] == 401)
            .all(|r| r["next_retry_at"].is_null()),
        "a 401 is not retried: {records:?}"
    );
}

/// `:ctx other` moves the console to another profile of the
/// config file, here another emulator with a key of its own: only the
/// second platform's subscriptions are listed, the status bar names the
/// profile, and a change still in flight on the first platform when the
/// switch happens (a pause held back by the emulator) lands there but its
/// answer is never shown under the second profile.
#[tokio::test]
async fn ctx_switches_to_another_profile_and_drops_the_first_accounts_late_answer() {
    const OTHER_KEY: &str = "emu_other_account_key_9876543210";
    let one = start().await;
    let other = support::start_with(support::Options {
        api_key: OTHER_KEY,
        ..support::Options::default()
    })
    .await;
    let other_client = &other.client;
    let (_receiver_a, on_one) = one.healthy_subscriber(&[EventKind::CallEnded]).await;
    let receiver_b = Receiver::healthy().await;
    let on_other = other_client
        .create_subscription(&earshot_core::api::types::agents::NewSubscription {
            url: format!("{}/b", receiver_b.url()),
            events: vec![EventKind::SessionStarted],
            secret: earshot_core::redact::SecretString::new(support::SECRET),
            agent_id: None,
            enabled: None,
        })
        .await
        .expect("a subscription on the second emulator");

    // Two profiles, each with its own key file (0600) and store.
    let dir = tempfile::tempdir().expect("a temp dir for the config");
    let config = support::two_profile_config(
        dir.path(),
        (&one.base, support::API_KEY),
        (&other.base, OTHER_KEY),
    );

    // The pause of the first account's subscription waits 1.5 s in the
    // emulator: still in flight when the console switches.
    one.arm_fault(json!({
        "path_prefix": format!("/v1/webhook-subscriptions/{}", on_one.id),
        "latency_ms": 1500
    }))
    .await;
    let (a, b) = (short(&on_one.id).to_owned(), short(&on_other.id).to_owned());
    let profiles = OnProfiles {
        config,
        first: "one".into(),
        store: dir.path().join("one.db"),
    };
    let (platform, paused_id) = (&one, on_one.id.clone());
    with_console_on(
        &one,
        Recorder::default(),
        Vec::new(),
        Some(profiles),
        |script| async move {
            script.wait_for(&a).await;
            script.wait_for("profile one").await;
            script.press(KeyCode::Char('p'));
            script.press(KeyCode::Char(':'));
            script.type_text("ctx oth");
            script.press(KeyCode::Tab);
            script.wait_for("ctx other").await;
            script.press(KeyCode::Enter);
            script.wait_for(&b).await;
            script.wait_for("profile other").await;
            script.wait_for("switched to profile other").await;
            assert!(
                !script.screen().contains(&a),
                "the first account's row under the second:\n{}",
                script.screen()
            );
            // The pause landed on the first platform...
            support::eventually(Duration::from_secs(10), "the pause applied", || async {
                let now = platform.client.get_subscription(&paused_id).await.ok()?;
                (!now.enabled).then_some(())
            })
            .await;
            // ...and its answer, which came back to the console since, is
            // not shown: no toast, no row, nothing drawn for it.
            script.wait_quiet(Duration::from_millis(500)).await;
            let screen = script.screen();
            assert!(!screen.contains(&format!("paused {a}")), "{screen}");
            assert!(!screen.contains(&a), "{screen}");
            assert!(
                screen.contains(&b) && screen.contains("profile other"),
                "{screen}"
            );
            script.press(KeyCode::Char('q'));
        },
    )
    .await;
    // Each profile's Health pane read its own store.
    assert!(
        dir.path().join("one.db").is_file(),
        "the first profile's store"
    );
    assert!(
        dir.path().join("other.db").is_file(),
        "the second profile's store"
    );
}
