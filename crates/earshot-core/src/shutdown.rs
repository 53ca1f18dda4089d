//! The signals that end a long-running command (`jobs watch`, `listen`,
//! `emulator`, `demo`, the console, `sessions get --download`) and the exit
//! status each one gives: 128 + the signal's number, as shells report it
//! (SIGINT 130, SIGTERM 143, SIGHUP 129). Every such command stops the same
//! way on each of them: its summary printed, the terminal restored, no
//! partial download left.
//!
//! One exception: `earshot listen` with TLS takes SIGHUP as "reload the
//! certificate" (the daemon convention, `systemctl reload`), so it asks
//! for [`signals_with`]`(`[`OnHangup::Continue`]`)` and handles SIGHUP
//! itself; without TLS it stops on SIGHUP like the rest.

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

/// What SIGHUP does to a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnHangup {
    /// It stops the command (exit 129), like SIGINT and SIGTERM.
    Stop,
    /// It does not stop the command: the command has its own handler for
    /// it (`listen` with TLS reloads its certificate).
    Continue,
}

/// Installs the handlers now, so a signal sent right after this returns is
/// not lost, and gives a future that resolves to the first signal. Must run
/// inside a tokio runtime.
pub fn signals() -> std::io::Result<impl Future<Output = Stop> + Send + 'static> {
    signals_with(OnHangup::Stop)
}

/// [`signals`], with SIGHUP left to the caller when `on_hangup` is
/// [`OnHangup::Continue`].
pub fn signals_with(
    on_hangup: OnHangup,
) -> std::io::Result<impl Future<Output = Stop> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = match on_hangup {
            OnHangup::Stop => Some(signal(SignalKind::hangup())?),
            OnHangup::Continue => None,
        };
        Ok(async move {
            let hung_up = async {
                match hangup.as_mut() {
                    Some(hangup) => {
                        hangup.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = interrupt.recv() => Stop::Interrupt,
                _ = terminate.recv() => Stop::Terminate,
                () = hung_up => Stop::Hangup,
            }
        })
    }
    #[cfg(not(unix))]
    {
        let _ = on_hangup;
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
