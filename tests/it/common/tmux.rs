//! A private tmux server for tests that drive the real binary in a real
//! terminal: its own socket (unique per server, so a server still shutting
//! down is never reused), no user config, HOME and XDG directories in a temp
//! dir. One 120×40 session; killed, and its socket file removed, on drop.

use std::path::Path;

use super::cli::isolate;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const WIDTH: u16 = 120;
pub const HEIGHT: u16 = 40;
const SESSION: &str = "t";
const POLL: Duration = Duration::from_millis(100);
/// Every step after the first frame: a key press and, at most, one request.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(10);

static SERVERS: AtomicUsize = AtomicUsize::new(0);

pub struct Tmux {
    socket: String,
    /// The socket file, removed on drop (tmux leaves it behind).
    socket_path: Option<String>,
    home: tempfile::TempDir,
}

impl Tmux {
    pub fn new() -> Tmux {
        require_tmux();
        let n = SERVERS.fetch_add(1, Ordering::SeqCst);
        Tmux {
            socket: format!("earshot-test-{}-{n}", std::process::id()),
            socket_path: None,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The temp dir that is HOME inside the session.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket, "-f", "/dev/null"]);
        isolate(&mut command, self.home.path()).env_remove("TMUX");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self.command().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Starts `shell_command` in a detached 120×40 session.
    pub fn start(&mut self, shell_command: &str) {
        self.start_sized(shell_command, (WIDTH, HEIGHT));
    }

    /// Starts the console on the config file `config` in a detached
    /// 120×40 session; once it exits, its status (`EXIT:n`) stays on
    /// screen a minute for the test to read.
    pub fn start_console(&mut self, config: &Path) {
        let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
        let inner = format!(
            "{binary} --config {}; echo \"EXIT:$?\"; sleep 60",
            shell_quote(config)
        );
        self.start(&format!("sh -c '{}'", inner.replace('\'', r"'\''")));
    }

    /// Starts `shell_command` in a detached session of `(width, height)`.
    pub fn start_sized(&mut self, shell_command: &str, (width, height): (u16, u16)) {
        let (width, height) = (width.to_string(), height.to_string());
        self.run(&[
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            &width,
            "-y",
            &height,
            shell_command,
        ]);
        self.socket_path = Some(self.format("#{socket_path}"));
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", SESSION]).stdout)
            .into_owned()
    }

    /// The screen with its colours: the SGR escape sequences tmux keeps
    /// (`capture-pane -e`).
    pub fn screen_with_colours(&self) -> String {
        String::from_utf8_lossy(
            &self
                .run(&["capture-pane", "-p", "-e", "-t", SESSION])
                .stdout,
        )
        .into_owned()
    }

    /// A tmux format evaluated for the pane, e.g. `#{alternate_on}`.
    pub fn format(&self, format: &str) -> String {
        let output = self.run(&["display-message", "-p", "-t", SESSION, format]);
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Polls `format` until `done` accepts it; fails with the screen after
    /// `timeout`.
    pub fn wait_format(&self, format: &str, timeout: Duration, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            let value = self.format(format);
            if done(&value) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting on {format}: {value}; the screen was:\n{}",
                self.screen()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Named keys (`Enter`, `Escape`, `Tab`, `BTab`) or single characters.
    pub fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", SESSION, key]);
    }

    /// Text typed literally.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", SESSION, "-l", text]);
    }

    /// Presses `key` and waits for the screen it should lead to.
    pub fn press(&self, key: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.key(key);
        self.wait_until(&format!("{what} (after {key})"), ok)
    }

    /// Polls the screen until `found` gives the same answer on two
    /// captures in a row (so a frame caught half-drawn is never judged);
    /// fails with the last screen after `timeout`. Returns the answer and
    /// the screen it came from.
    pub fn wait_for<T: PartialEq>(
        &self,
        what: &str,
        timeout: Duration,
        found: impl Fn(&str) -> Option<T>,
    ) -> (T, String) {
        let deadline = Instant::now() + timeout;
        let mut previous = None;
        loop {
            let screen = self.screen();
            let current = found(&screen);
            if current.is_some()
                && current == previous
                && let Some(value) = current
            {
                return (value, screen);
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}; the screen was:\n{screen}"
            );
            previous = current;
            std::thread::sleep(POLL);
        }
    }

    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_for(what, STEP_TIMEOUT, |screen| ok(screen).then_some(()))
            .1
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |screen| screen.contains(text))
    }
}

impl Tmux {
    /// Closes the session's terminal, as closing a terminal window does:
    /// its processes get SIGHUP, and their terminal is gone.
    pub fn close(&self) {
        self.run(&["kill-session", "-t", SESSION]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn require_tmux() {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "this test drives the console in tmux, which is not installed: install it \
         (apt-get install -y tmux, brew install tmux); CI does"
    );
}

/// `path` single-quoted for `sh`.
pub fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}
