//! The one event loop (after slumber): a biased `tokio::select!` over the
//! shutdown signal, results of background tasks, terminal input and — only
//! while something counts down — a tick. A frame is drawn only when the
//! queue is drained and something changed, so a burst of results costs one
//! frame and an idle console does no work at all; and, unless the
//! operator's input asked for it, no sooner than [`FramePace`] allows (a
//! refresh period, a byte budget).
//!
//! Generic over the ratatui backend and the input stream: tests run the
//! real loop on `TestBackend` with a scripted stream.
//!
//! It also carries out a switch of profile (`:ctx`, see
//! [`super::context`]): it opens the profile, moves the worker to the new
//! client, store and generation, and takes the profile's theme.

use std::borrow::Cow;
use std::time::Duration;

use futures_util::future::poll_immediate;
use futures_util::stream::{BoxStream, select_all};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::Event;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::action::{Action, Effect};
use super::app::App;
use super::context::{ActionTx, ProfileSource, Stamped};
use super::view;
use super::worker::Worker;
use crate::tui::clipboard::Clipboard;
use crate::tui::frame_pace::FramePace;
use crate::tui::kernel::StorePath;
use crate::tui::theme::Theme;
use earshot_core::api::Client;

/// How often the tick fires while it runs.
pub(crate) const TICK: Duration = Duration::from_millis(500);

/// Most actions handled between two frames: all that is waiting, up to
/// a whole paste (the input queue's size), and still a bound so a flood of
/// results shows progress.
pub(crate) const MAX_BATCH: usize = crate::tui::input::QUEUE;

/// What the loop talks to besides the terminal.
pub(crate) struct Services {
    pub(crate) client: Client,
    pub(crate) clipboard: Box<dyn Clipboard>,
    /// Actions from outside the console (the demo's new jobs, a webhook
    /// listener), handled like results of its own tasks.
    pub(crate) feeds: Vec<BoxStream<'static, Action>>,
    /// The incident-history store (or why there is none).
    pub(crate) store: StorePath,
    /// Where `:ctx` opens another profile; `None`: the console stays on
    /// the account it started on.
    pub(crate) profiles: Option<Box<dyn ProfileSource>>,
    /// When frames are drawn.
    pub(crate) pace: FramePace,
    /// `--low-bandwidth`: the theme of a profile switched to is taken
    /// without decoration too.
    pub(crate) low_bandwidth: bool,
}

/// What the console runs on now: the worker (client and store), the
/// channel every worker answers on, where profiles open, and the theme.
struct Engine<'t> {
    worker: Worker,
    tx: mpsc::UnboundedSender<Stamped>,
    profiles: Option<Box<dyn ProfileSource>>,
    store: StorePath,
    theme: Cow<'t, Theme>,
    low_bandwidth: bool,
}

/// What the loop handles next: an action for `App::update` (the
/// operator's keys, the clock), one a worker or feed sent, stamped with
/// the account it is about, the time for a frame held back, or the end (a
/// signal, or no more input).
enum Incoming {
    Local(Action),
    Stamped(Stamped),
    FrameDue,
    End,
}

impl Incoming {
    /// The operator's: a frame for it is drawn at once.
    fn is_input(&self) -> bool {
        matches!(self, Incoming::Local(Action::Input(_)))
    }
}

/// Runs `app` until it quits, the input ends or `shutdown` resolves.
pub(crate) async fn run<B, S, F>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    theme: &Theme,
    events: S,
    shutdown: F,
    services: Services,
) -> color_eyre::Result<()>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
    S: Stream<Item = Event> + Unpin,
    F: Future<Output = ()>,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Stamped>();
    // Feeds bring the account the console started on.
    let started_on = app.ctx.generation;
    let worker = Worker::new(
        services.client,
        ActionTx::stamped(started_on, tx.clone()),
        services.clipboard,
    )
    .with_store(services.store.clone());
    let mut engine = Engine {
        worker,
        tx,
        profiles: services.profiles,
        store: services.store,
        theme: Cow::Borrowed(theme),
        low_bandwidth: services.low_bandwidth,
    };
    let mut events = events.fuse();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut tick: Option<Interval> = None;
    let mut feeds_open = !services.feeds.is_empty();
    let mut feeds = select_all(services.feeds);
    let mut pace = services.pace;
    // Input came since the last frame.
    let mut after_input = true;

    let first = app.init();
    engine.start_all(app, first);
    while !app.quit {
        // A frame held back until then.
        let mut held = None;
        if app.dirty {
            let now = Instant::now();
            match pace.wait(now, after_input) {
                None => {
                    terminal
                        .draw(|frame| view::draw(frame, app, &engine.theme))
                        .map_err(color_eyre::Report::new)?;
                    app.dirty = false;
                    after_input = false;
                    pace.drawn(now);
                }
                Some(at) => held = Some(at),
            }
        }
        match (app.wants_tick(), tick.is_some()) {
            (true, false) => {
                let mut interval = tokio::time::interval_at(Instant::now() + TICK, TICK);
                interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
                tick = Some(interval);
            }
            (false, true) => tick = None,
            _ => {}
        }

        let incoming = tokio::select! {
            biased;
            () = &mut shutdown => Incoming::End,
            Some(stamped) = rx.recv() => Incoming::Stamped(stamped),
            feed = feeds.next(), if feeds_open => match feed {
                Some(action) => Incoming::Stamped(Stamped { generation: started_on, action }),
                None => {
                    feeds_open = false;
                    continue;
                }
            },
            event = events.next() => match event {
                Some(event) => Incoming::Local(Action::Input(event)),
                None => Incoming::End,
            },
            now = next_tick(&mut tick), if tick.is_some() => {
                Incoming::Local(Action::Tick(now.into_std()))
            }
            () = tokio::time::sleep_until(held.unwrap_or_else(Instant::now)), if held.is_some() => {
                Incoming::FrameDue
            }
        };
        after_input |= incoming.is_input();
        dispatch(app, &mut engine, incoming);
        // Drain what is already waiting before drawing.
        for _ in 0..MAX_BATCH {
            if app.quit {
                break;
            }
            let next = match rx.try_recv() {
                Ok(stamped) => Some(Incoming::Stamped(stamped)),
                // Polled with this task's own waker (not `now_or_never`'s
                // no-op one): a stream may keep the first waker it is given
                // and never wake the loop again. Unconstrained: tokio's
                // co-operative budget would otherwise report a channel
                // empty after 128 events and split a paste into frames.
                Err(_) => match poll_immediate(tokio::task::unconstrained(events.next())).await {
                    Some(Some(event)) => Some(Incoming::Local(Action::Input(event))),
                    Some(None) => Some(Incoming::End),
                    None => None,
                },
            };
            let Some(incoming) = next else {
                break;
            };
            after_input |= incoming.is_input();
            dispatch(app, &mut engine, incoming);
        }
    }
    Ok(())
}

fn dispatch(app: &mut App, engine: &mut Engine<'_>, incoming: Incoming) {
    let effects = match incoming {
        Incoming::Local(action) => app.update(action),
        Incoming::Stamped(stamped) => app.update_stamped(stamped),
        Incoming::FrameDue => return,
        Incoming::End => {
            app.quit_now();
            return;
        }
    };
    engine.start_all(app, effects);
}

impl Engine<'_> {
    /// Starts `effects` on the worker; a profile switch among them is
    /// carried out here, after the others.
    fn start_all(&mut self, app: &mut App, effects: Vec<Effect>) {
        let mut switches = Vec::new();
        let others: Vec<Effect> = effects
            .into_iter()
            .filter_map(|effect| match effect {
                Effect::SwitchProfile { name } => {
                    switches.push(name);
                    None
                }
                other => Some(other),
            })
            .collect();
        self.worker.start_all(others);
        for name in switches {
            self.switch(app, &name);
        }
    }

    /// Opens profile `name` and moves everything to it, or tells the app
    /// why it could not (then nothing changes).
    fn switch(&mut self, app: &mut App, name: &str) {
        let opened = match &self.profiles {
            Some(profiles) => profiles.open(name),
            None => Err("this console opens no other profile".to_owned()),
        };
        let opened = match opened {
            Ok(opened) => opened,
            Err(why) => {
                tracing::warn!(profile = %name, error = %why, "cannot switch profile");
                app.switch_failed(name, &why);
                return;
            }
        };
        let shared = match (&self.store, &opened.store) {
            (Ok(before), Ok(after)) if before.same_as(after) => Some(format!(
                "profile {name} shares the store {after} with the previous profile: the Health \
                 and Events panes show both accounts' history; give each profile its own \
                 `store = \"…\"`"
            )),
            _ => None,
        };
        let notice = match (opened.theme.notice, shared) {
            (Some(theme), Some(shared)) => Some(format!("{shared}; {theme}")),
            (theme, shared) => theme.or(shared),
        };
        let effects = app.switched(opened.account, notice);
        self.worker.change_account(
            opened.client,
            opened.store.clone(),
            ActionTx::stamped(app.ctx.generation, self.tx.clone()),
        );
        self.store = opened.store;
        self.theme = Cow::Owned(if self.low_bandwidth {
            opened.theme.theme.without_decoration()
        } else {
            opened.theme.theme
        });
        self.worker.start_all(effects);
    }
}

async fn next_tick(tick: &mut Option<Interval>) -> Instant {
    match tick {
        Some(interval) => interval.tick().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::kernel::ConsoleConfig;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    struct NoClipboard;

    impl Clipboard for NoClipboard {
        fn copy(&mut self, _: &str) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn services() -> Services {
        let url = url::Url::parse("http://127.0.0.1:9/").unwrap();
        let client = Client::new(
            earshot_core::api::Endpoints::all_at(&url),
            earshot_core::redact::SecretString::new("key_for_tests"),
        )
        .unwrap();
        Services {
            client,
            clipboard: Box::new(NoClipboard),
            feeds: Vec::new(),
            store: Err("no store in this test".into()),
            profiles: None,
            pace: FramePace::immediate(),
            low_bandwidth: false,
        }
    }

    fn key(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    /// A signal ends the loop at once, even with a form `q` would ask
    /// about, and the app says it quit.
    #[tokio::test]
    async fn a_signal_quits_even_with_a_dirty_form() {
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
        let mut app = App::new(ConsoleConfig::default());
        app.pane = crate::tui::panes::PaneId::Subscriptions;
        let (signal_tx, signal_rx) = tokio::sync::oneshot::channel::<()>();
        // The form is opened and typed into; then the signal arrives.
        let typed = futures_util::stream::iter([key('n'), key('h')])
            .chain(futures_util::stream::once(async move {
                let _ = signal_tx.send(());
                key('x')
            }))
            .chain(futures_util::stream::pending());
        let shutdown = async {
            let _ = signal_rx.await;
        };
        let within = Duration::from_secs(10);
        let ended = tokio::time::timeout(
            within,
            run(
                &mut terminal,
                &mut app,
                &Theme::fallback(),
                Box::pin(typed),
                shutdown,
                services(),
            ),
        )
        .await;
        assert!(matches!(ended, Ok(Ok(()))), "the loop did not end");
        assert!(app.quit);
        assert!(app.panes.subs.modal.is_some(), "the form was open, unasked");
    }

    /// The end of input ends the loop too.
    #[tokio::test]
    async fn the_end_of_input_quits() {
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
        let mut app = App::new(ConsoleConfig::default());
        let ended = tokio::time::timeout(
            Duration::from_secs(10),
            run(
                &mut terminal,
                &mut app,
                &Theme::fallback(),
                futures_util::stream::empty(),
                std::future::pending(),
                services(),
            ),
        )
        .await;
        assert!(matches!(ended, Ok(Ok(()))), "the loop did not end");
        assert!(app.quit);
    }
}
