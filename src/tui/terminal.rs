//! The real terminal: raw mode, alternate screen and bracketed paste on the
//! way in; restored on the way out — on a normal exit and on an error (the
//! guard's `Drop`), on a panic (a hook that restores before chaining to
//! color-eyre's), and on SIGTERM / SIGHUP / SIGINT (the loop's shutdown
//! signal, [`earshot_core::shutdown`], ends it normally). Frames go
//! through [`ScreenBackend`], which scrolls regions of the screen: the way
//! out resets the scroll region and the rendition first.

use std::io::{self, Stdout};
use std::ops::{Deref, DerefMut};

use ratatui::Terminal;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::crossterm::execute;
use ratatui::crossterm::style::Print;
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

use super::screen::{Flusher, ScreenBackend};

/// The terminal, restored when dropped.
pub(crate) struct TerminalGuard {
    terminal: Terminal<ScreenBackend<Stdout>>,
}

impl TerminalGuard {
    /// Raw mode, alternate screen, bracketed paste.
    pub(crate) fn enter() -> io::Result<TerminalGuard> {
        enable_raw_mode()?;
        // Cleared with an escape sequence, not `Terminal::clear`, which asks
        // the terminal where its cursor is: one more round trip over SSH,
        // and a 2 s failure on a terminal that never answers.
        let entered = execute!(
            io::stdout(),
            EnterAlternateScreen,
            Clear(ClearType::All),
            EnableBracketedPaste
        )
        .and_then(|()| Terminal::new(ScreenBackend::new(io::stdout(), Flusher::from_env())));
        match entered {
            Ok(mut terminal) => {
                terminal.hide_cursor()?;
                Ok(TerminalGuard { terminal })
            }
            Err(error) => {
                restore();
                Err(error)
            }
        }
    }
}

impl Deref for TerminalGuard {
    type Target = Terminal<ScreenBackend<Stdout>>;

    fn deref(&self) -> &Self::Target {
        &self.terminal
    }
}

impl DerefMut for TerminalGuard {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        // A terminal that went away (closed, SIGHUP, a dropped SSH link)
        // refuses the cursor, and every later write to it fails: Rust's
        // `eprintln!` (ratatui's own drop prints one) panics on a failed
        // write, and a panic in a drop aborts, skipping every clean-up after
        // the console (the demo's directory). Output goes nowhere instead.
        if self.terminal.show_cursor().is_err() {
            silence_output();
        }
    }
}

/// Points standard output and error at `/dev/null`: what is printed once
/// the terminal is gone is lost instead of a panic.
fn silence_output() {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
            return;
        };
        for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            // SAFETY: dup2 replaces the descriptor atomically with one this
            // function holds open; the standard streams' Rust handles keep
            // using the descriptor number, now /dev/null.
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

/// The scroll region back to the whole screen, the default rendition: a
/// frame cut short (a panic) may have left either set.
pub(crate) const RESET_REGION_AND_LOOK: &str = "\x1b[r\x1b[0m";

/// Puts the terminal back as the shell expects it. Safe to call twice and
/// after the terminal went away (a dropped SSH link): errors are ignored.
pub(crate) fn restore() {
    let _ = execute!(
        io::stdout(),
        Print(RESET_REGION_AND_LOOK),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    let _ = disable_raw_mode();
}

/// Restores the terminal before the previous panic hook (color-eyre's)
/// prints, so the report lands on a usable screen.
pub(crate) fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
