//! Terminal input on its own thread: crossterm's blocking `poll`/`read`
//! feed a bounded channel that the event loop reads as a stream.
//!
//! Why not crossterm's `EventStream`: it hands every event over through a
//! helper thread and one wake-up each, so the loop never sees more than one
//! key waiting and draws a frame per key of a paste; and its default
//! (mio, edge-triggered) source stops reading after a 1 KiB read while
//! bytes are still in the kernel, so a long non-bracketed paste stalls
//! Until the next key. Here the thread reads as fast as
//! the terminal delivers (crossterm's `use-dev-tty` source, which polls
//! level-triggered), and everything it has read waits in the channel, so
//! the loop drains a whole paste before drawing.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use futures_util::Stream;
use ratatui::crossterm::event::{self, Event};
use tokio::sync::mpsc;

/// Events read but not yet handled; the thread waits (and the terminal
/// keeps the rest) when the loop is this far behind.
pub(crate) const QUEUE: usize = 8192;

/// How often the reading thread looks whether it should stop.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// The terminal's events, read on a thread; stops reading when dropped.
pub(crate) struct TerminalInput {
    events: mpsc::Receiver<Event>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TerminalInput {
    /// Starts the reading thread. A read error ends the stream (and so
    /// the console) rather than spinning on a broken terminal.
    pub(crate) fn start() -> std::io::Result<TerminalInput> {
        let (tx, events) = mpsc::channel(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("earshot-input".into())
            .spawn(move || read_terminal(&tx, &stopping))?;
        Ok(TerminalInput {
            events,
            stop,
            thread: Some(thread),
        })
    }
}

fn read_terminal(tx: &mpsc::Sender<Event>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match event::poll(STOP_CHECK) {
            Ok(false) => {}
            Ok(true) => match event::read() {
                Ok(event) => {
                    if tx.blocking_send(event).is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot read the terminal: input ends");
                    return;
                }
            },
            Err(error) => {
                tracing::warn!(%error, "cannot poll the terminal: input ends");
                return;
            }
        }
    }
}

impl Stream for TerminalInput {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_recv(cx)
    }
}

impl Drop for TerminalInput {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A thread waiting for room in the channel sees it closed.
        self.events.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
