//! The signals that end a long-running command (`jobs watch`, `listen`,
//! `emulator`, `demo`, the console, `sessions get --download`) and the exit
//! status each one gives: 128 + the signal's number, as shells report it
//! (SIGINT 130, SIGTERM 143, SIGHUP 129). Every such command stops the same
//! way on each of them: its summary printed, the terminal restored, no
//! partial download left.

use std::future::Future;
use std::process::ExitCode;

/// Which signal asked the command to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (ctrl-c).
    Interrupt,
    /// SIGTERM (`kill`, a service manager).
    Terminate,
    /// SIGHUP (the terminal or SSH link went away).
    Hangup,
}

impl Stop {
    /// 128 + the signal number.
    pub fn code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
            Stop::Hangup => 129,
        }
    }

    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }

    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }
}

/// Installs the handlers now, so a signal sent right after this returns is
/// not lost, and gives a future that resolves to the first signal. Must run
/// inside a tokio runtime.
pub fn signals() -> std::io::Result<impl Future<Output = Stop> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => Stop::Interrupt,
                _ = terminate.recv() => Stop::Terminate,
                _ = hangup.recv() => Stop::Hangup,
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            Stop::Interrupt
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal_number() {
        assert_eq!(Stop::Interrupt.code(), 128 + 2);
        assert_eq!(Stop::Hangup.code(), 128 + 1);
        assert_eq!(Stop::Terminate.code(), 128 + 15);
    }
}
