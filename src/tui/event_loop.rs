//! The one event loop (after slumber): a biased `tokio::select!` over the
//! shutdown signal, results of background tasks, terminal input and — only
//! while something counts down — a tick. A frame is drawn only when the
//! queue is drained and something changed, so a burst of results costs one
//! frame and an idle console does no work at all.
//!
//! Generic over the ratatui backend and the input stream: tests run the
//! real loop on `TestBackend` with a scripted stream.

use std::time::Duration;

use futures_util::future::poll_immediate;
use futures_util::stream::{BoxStream, select_all};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::Event;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::action::Action;
use super::app::App;
use super::clipboard::Clipboard;
use super::theme::Theme;
use super::view;
use super::worker::{Next, Worker};
use crate::api::Client;

/// How often the tick fires while it runs.
pub const TICK: Duration = Duration::from_millis(500);

/// Most actions handled between two frames: all that is waiting, up to
/// a whole paste (the input queue's size), and still a bound so a flood of
/// results shows progress.
pub const MAX_BATCH: usize = super::input::QUEUE;

/// What the loop talks to besides the terminal.
pub struct Services {
    pub client: Client,
    pub clipboard: Box<dyn Clipboard>,
    /// Actions from outside the console (the demo's new jobs, a webhook
    /// listener), handled like results of its own tasks.
    pub feeds: Vec<BoxStream<'static, Action>>,
    /// The incident-history store (or why there is none).
    pub store: Result<std::path::PathBuf, String>,
}

/// Runs `app` until it quits, the input ends or `shutdown` resolves.
pub async fn run<B, S, F>(
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
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mut worker =
        Worker::new(services.client, tx, services.clipboard).with_store(services.store);
    let mut events = events.fuse();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut tick: Option<Interval> = None;
    let mut feeds_open = !services.feeds.is_empty();
    let mut feeds = select_all(services.feeds);

    if worker.start_all(app.init()) == Next::Quit {
        return Ok(());
    }
    loop {
        if app.dirty {
            terminal
                .draw(|frame| view::draw(frame, app, theme))
                .map_err(color_eyre::Report::new)?;
            app.dirty = false;
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

        let action = tokio::select! {
            biased;
            () = &mut shutdown => Action::Shutdown,
            Some(action) = rx.recv() => action,
            feed = feeds.next(), if feeds_open => match feed {
                Some(action) => action,
                None => {
                    feeds_open = false;
                    continue;
                }
            },
            event = events.next() => match event {
                Some(event) => Action::Input(event),
                None => Action::Shutdown,
            },
            now = next_tick(&mut tick), if tick.is_some() => Action::Tick(now.into_std()),
        };
        if dispatch(app, &mut worker, action) == Next::Quit {
            return Ok(());
        }
        // Drain what is already waiting before drawing.
        for _ in 0..MAX_BATCH {
            let next = match rx.try_recv() {
                Ok(action) => Some(action),
                // Polled with this task's own waker (not `now_or_never`'s
                // no-op one): a stream may keep the first waker it is given
                // and never wake the loop again. Unconstrained: tokio's
                // co-operative budget would otherwise report a channel
                // empty after 128 events and split a paste into frames.
                Err(_) => match poll_immediate(tokio::task::unconstrained(events.next())).await {
                    Some(Some(event)) => Some(Action::Input(event)),
                    Some(None) => Some(Action::Shutdown),
                    None => None,
                },
            };
            let Some(action) = next else {
                break;
            };
            if dispatch(app, &mut worker, action) == Next::Quit {
                return Ok(());
            }
        }
    }
}

fn dispatch(app: &mut App, worker: &mut Worker, action: Action) -> Next {
    let effects = app.update(action);
    let next = worker.start_all(effects);
    if app.quit { Next::Quit } else { next }
}

async fn next_tick(tick: &mut Option<Interval>) -> Instant {
    match tick {
        Some(interval) => interval.tick().await,
        None => std::future::pending().await,
    }
}
