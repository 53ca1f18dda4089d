//! Printing that never makes its producer wait and never queues without
//! limit: lines go through a bounded queue ([`QUEUE_BYTES`] of text, at
//! most [`QUEUE_LINES`] lines) to a thread that writes them. When the
//! reader of stdout is slower than the lines come, the lines that do not
//! fit are not printed, and stderr says how many ("N lines not printed:
//! stdout is not keeping up"). `earshot listen` prints through it, so a
//! stdout nobody reads costs a few MiB, never the answers or the capture.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Text waiting to be written, at most (one longer line is still taken
/// when nothing else waits).
pub(crate) const QUEUE_BYTES: usize = 4 * 1024 * 1024;
/// Lines waiting to be written, at most.
pub(crate) const QUEUE_LINES: usize = 1024;

/// The queue and its printing thread.
pub(crate) struct BoundedStdout {
    queue: SyncSender<String>,
    queued: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    done: Receiver<()>,
    /// Lines not printed since the last note on stderr.
    unreported: u64,
}

impl BoundedStdout {
    /// Starts the thread writing to `out` (stdout in the command).
    pub(crate) fn start(out: impl Write + Send + 'static) -> std::io::Result<Self> {
        let (queue, lines) = mpsc::sync_channel::<String>(QUEUE_LINES);
        let (finished, done) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicBool::new(false));
        let (count, flag) = (queued.clone(), closed.clone());
        std::thread::Builder::new()
            .name("stdout".to_owned())
            .spawn(move || {
                let mut out = out;
                for line in lines {
                    let written = writeln!(out, "{line}").and_then(|()| out.flush());
                    count.fetch_sub(line.len(), Ordering::Relaxed);
                    if written.is_err() {
                        flag.store(true, Ordering::Relaxed);
                        break;
                    }
                }
                let _ = finished.send(());
            })?;
        Ok(Self {
            queue,
            queued,
            closed,
            done,
            unreported: 0,
        })
    }

    /// There is room for another line now; when not, skip building it and
    /// call [`skip`](Self::skip).
    pub(crate) fn has_room(&self) -> bool {
        self.queued.load(Ordering::Relaxed) < QUEUE_BYTES
    }

    /// The reader went away (writing failed): nothing more can be printed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Queues `line` (without its newline), or counts it as not printed.
    pub(crate) fn print(&mut self, line: String) {
        let len = line.len();
        let waiting = self.queued.load(Ordering::Relaxed);
        if waiting > 0 && waiting + len > QUEUE_BYTES {
            self.skip();
            return;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        match self.queue.try_send(line) {
            Ok(()) => self.report(),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.queued.fetch_sub(len, Ordering::Relaxed);
                self.skip();
            }
        }
    }

    /// Counts a line that is not printed.
    pub(crate) fn skip(&mut self) {
        self.unreported += 1;
    }

    /// Says on stderr how many lines were not printed since the last note.
    fn report(&mut self) {
        if self.unreported > 0 {
            eprintln!(
                "earshot listen: {} lines not printed: stdout is not keeping up",
                self.unreported
            );
            self.unreported = 0;
        }
    }

    /// Prints `last` after everything queued, waiting at most `grace` for
    /// stdout to take it all; when it does not, `last` goes to stderr.
    pub(crate) fn finish(mut self, last: String, grace: Duration) {
        let deadline = Instant::now() + grace;
        self.report();
        let mut pending = Some(last.clone());
        while let Some(line) = pending.take() {
            match self.queue.try_send(line) {
                Err(TrySendError::Full(line)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                    pending = Some(line);
                }
                _ => {}
            }
        }
        let Self { queue, done, .. } = self;
        drop(queue);
        let left = deadline.saturating_duration_since(Instant::now());
        if done.recv_timeout(left).is_err() {
            eprintln!("earshot listen: stdout is not keeping up; lines still queued were dropped");
            eprintln!("{last}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};

    /// Whether the gate is open, and what went through it.
    type Passed = Mutex<(bool, Vec<u8>)>;

    /// A writer that blocks until released, as a pipe nobody reads does.
    #[derive(Clone, Default)]
    struct Gate {
        state: Arc<(Passed, Condvar)>,
    }

    impl Gate {
        fn open(&self) {
            let (lock, signal) = &*self.state;
            lock.lock().unwrap().0 = true;
            signal.notify_all();
        }

        fn text(&self) -> String {
            String::from_utf8(self.state.0.lock().unwrap().1.clone()).unwrap()
        }
    }

    impl Write for Gate {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let (lock, signal) = &*self.state;
            let mut state = signal
                .wait_while(lock.lock().unwrap(), |state| !state.0)
                .unwrap();
            state.1.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_reader_bounds_the_queue_and_lines_are_counted() {
        let gate = Gate::default();
        let mut out = BoundedStdout::start(gate.clone()).unwrap();
        let line = "x".repeat(64 * 1024);
        for _ in 0..1000 {
            out.print(line.clone());
        }
        // 64 MB offered; at most the budget (plus the line being written).
        assert!(out.queued.load(Ordering::Relaxed) <= QUEUE_BYTES);
        assert!(out.unreported >= 1000 - 66, "{}", out.unreported);
        assert!(!out.has_room());
        gate.open();
        out.finish("summary".to_owned(), Duration::from_secs(10));
        let text = gate.text();
        assert!(text.ends_with("summary\n"), "{}", text.len());
        assert!(text.len() <= QUEUE_BYTES + 2 * line.len() + 8);
    }

    #[test]
    fn a_reader_keeping_up_gets_every_line() {
        let gate = Gate::default();
        gate.open();
        let mut out = BoundedStdout::start(gate.clone()).unwrap();
        for index in 0..100 {
            out.print(format!("line {index}"));
        }
        out.finish("summary".to_owned(), Duration::from_secs(10));
        let text = gate.text();
        assert_eq!(text.lines().count(), 101);
        assert!(text.starts_with("line 0\nline 1\n"));
    }
}
