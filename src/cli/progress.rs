//! Progress of a transfer on stderr, one reporter for every command that
//! moves bytes (`sessions get --download`, `jobs submit --file`): on a terminal one line redrawn in place (at most ten times a
//! second) and cleared at the end; otherwise a line every tenth of the
//! total, or every five seconds when the total is unknown or slow to come.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Least time between two redraws of the terminal line.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Most time between two lines when stderr is not a terminal.
const LINE_AT_LEAST_EVERY: Duration = Duration::from_secs(5);

/// Reports one transfer. `update` takes `&self`, so the reporter can be
/// shared with a callback that must be `Fn + Send + Sync` (behind an `Arc`).
pub(crate) struct Progress {
    label: String,
    tty: bool,
    started: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    last_shown: Option<Instant>,
    last_tenth: u64,
    drawn: bool,
}

impl Progress {
    /// A reporter for a transfer called `label`, starting now; redraws in
    /// place when stderr is a terminal.
    pub(crate) fn new(label: &str) -> Progress {
        Progress::at(label, std::io::stderr().is_terminal(), Instant::now())
    }

    fn at(label: &str, tty: bool, started: Instant) -> Progress {
        Progress {
            label: label.to_owned(),
            tty,
            started,
            state: Mutex::new(State::default()),
        }
    }

    /// `done` bytes of `total` (when known) have moved.
    pub(crate) fn update(&self, done: u64, total: Option<u64>) {
        let Some(text) = self.due_line(Instant::now(), done, total) else {
            return;
        };
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{text}");
        } else {
            let _ = writeln!(err, "{text}");
        }
        let _ = err.flush();
    }

    /// Clears the terminal line, if one was drawn.
    pub(crate) fn finish(&self) {
        if self.lock().drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// The line to show at `now`, if one is due (and notes it shown).
    fn due_line(&self, now: Instant, done: u64, total: Option<u64>) -> Option<String> {
        let tenth = total
            .filter(|total| *total > 0)
            .map(|total| done.saturating_mul(10) / total)
            .unwrap_or(0);
        let mut state = self.lock();
        let since_last = |every: Duration| {
            state
                .last_shown
                .is_none_or(|at| now.saturating_duration_since(at) >= every)
        };
        let due = if self.tty {
            since_last(REDRAW_EVERY)
        } else {
            tenth > state.last_tenth || since_last(LINE_AT_LEAST_EVERY)
        };
        if !due {
            return None;
        }
        state.last_shown = Some(now);
        state.last_tenth = tenth;
        state.drawn |= self.tty;
        Some(self.text(now, done, total))
    }

    fn text(&self, now: Instant, done: u64, total: Option<u64>) -> String {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let seconds = now
            .saturating_duration_since(self.started)
            .as_secs_f64()
            .max(0.001);
        let rate = mib(done) / seconds;
        match total {
            Some(total) if total > 0 => format!(
                "{}: {:.1} / {:.1} MiB ({}%), {rate:.1} MiB/s",
                self.label,
                mib(done),
                mib(total),
                done.saturating_mul(100) / total
            ),
            _ => format!("{}: {:.1} MiB, {rate:.1} MiB/s", self.label, mib(done)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn off_a_terminal_a_line_every_tenth_or_five_seconds() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let progress = Progress::at("audio", false, start);
        let total = Some(10 * MIB);
        assert_eq!(
            progress.due_line(at(1_000), MIB / 2, total).as_deref(),
            Some("audio: 0.5 / 10.0 MiB (5%), 0.5 MiB/s")
        );
        assert_eq!(progress.due_line(at(1_100), MIB * 9 / 10, total), None);
        assert!(progress.due_line(at(1_200), MIB, total).is_some());
        assert_eq!(progress.due_line(at(5_000), MIB + 1, total), None);
        assert!(progress.due_line(at(6_200), MIB + 2, total).is_some());
        // No total: only the clock.
        assert_eq!(
            progress.due_line(at(11_200), 3 * MIB, None).as_deref(),
            Some("audio: 3.0 MiB, 0.3 MiB/s")
        );
        assert_eq!(progress.due_line(at(11_300), 9 * MIB, None), None);
        assert!(!progress.lock().drawn);
    }

    #[test]
    fn on_a_terminal_at_most_ten_redraws_a_second() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let progress = Progress::at("uploading", true, start);
        let total = Some(100);
        assert!(progress.due_line(at(0), 1, total).is_some());
        assert_eq!(progress.due_line(at(50), 50, total), None);
        assert!(progress.due_line(at(100), 51, total).is_some());
        assert!(progress.lock().drawn);
    }
}
