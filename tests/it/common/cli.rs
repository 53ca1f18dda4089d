//! The real `earshot` binary in tests: a command with the environment
//! cleared of the user's settings (optionally with HOME and the XDG
//! directories in a temp dir), the observer (`earshot listen --store`), and
//! running a command with a deadline.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use earshot_core::api::types::agents::EventKind;

use super::Harness;

/// The settings a caller's environment could pass to `earshot`.
const INHERITED: [&str; 9] = [
    "EARSHOT_URL",
    "EARSHOT_API_KEY",
    "EARSHOT_STORE",
    "EARSHOT_WEBHOOK_SECRET",
    "EARSHOT_PREVIOUS_WEBHOOK_SECRET",
    "EARSHOT_AUTH_HEADER",
    "EARSHOT_WEBHOOK_AUTH",
    "EARSHOT_CONFIG",
    "EARSHOT_PROFILE",
];

/// Backtrace settings, which change what an error prints.
const BACKTRACE: [&str; 2] = ["RUST_BACKTRACE", "RUST_LIB_BACKTRACE"];

/// HOME and the XDG base directories, each inside `home`: where a run
/// looks for its config file and keeps its state, data and cache. As pairs,
/// for a command that is not `earshot` itself (a shell, tmux).
pub fn home_env(home: &Path) -> [(&'static str, PathBuf); 5] {
    [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", home.join("config")),
        ("XDG_STATE_HOME", home.join("state")),
        ("XDG_DATA_HOME", home.join("data")),
        ("XDG_CACHE_HOME", home.join("cache")),
    ]
}

/// Removes every `EARSHOT_*` setting and backtrace setting of the caller
/// from `command`, and puts HOME and the XDG directories inside `home`: the
/// run sees only the config file a test writes there (at the per-user path
/// or one it names).
pub fn isolate<'c>(command: &'c mut Command, home: &Path) -> &'c mut Command {
    for name in INHERITED.into_iter().chain(BACKTRACE) {
        command.env_remove(name);
    }
    command.envs(home_env(home))
}

/// `earshot` with no profile, URL, key, store or secret from the caller.
pub fn earshot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_earshot"));
    for name in INHERITED {
        command.env_remove(name);
    }
    command.env("EARSHOT_CONFIG", "/nonexistent/earshot-test-config.toml");
    command
}

/// `earshot` [isolated](isolate) in `home`.
pub fn isolated(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_earshot"));
    isolate(&mut command, home);
    command
}

/// [`earshot`] for async tests: nothing inherited, no stdin, output piped,
/// killed when dropped.
pub fn earshot_async() -> tokio::process::Command {
    piped(earshot())
}

/// [`isolated`] for async tests, like [`earshot_async`].
pub fn isolated_async(home: &Path) -> tokio::process::Command {
    piped(isolated(home))
}

fn piped(command: Command) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(command);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// `earshot listen --secret SECRET --store DB` as the observer; its URL.
pub fn observer(db: &Path, secret: &str) -> (Child, String) {
    let mut child = earshot()
        .args(["listen", "--secret", secret, "--store"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("earshot listen starts");
    let url = listening_url(&mut child);
    (child, url)
}

/// The observer (`earshot listen --store`) with its store in a temp dir,
/// subscribed on the emulator to `events` with `secret`; stopped on drop.
pub struct Observed {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    child: Child,
}

impl Observed {
    pub async fn start(harness: &Harness, events: &[EventKind], secret: &str) -> Observed {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = dir.path().join("earshot.db");
        let (child, url) = observer(&db, secret);
        harness.subscribe_secret(&url, events, secret).await;
        Observed { dir, db, child }
    }
}

impl Observed {
    /// Stops the observer (killed, as a crash would).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs an async `command` to the end within 30 s (one that should have
/// stopped and serves forever fails here instead of hanging); its output.
pub async fn finish(command: &mut tokio::process::Command) -> Output {
    finish_within(command, Duration::from_secs(30)).await
}

/// [`finish`] within `within`.
pub async fn finish_within(command: &mut tokio::process::Command, within: Duration) -> Output {
    tokio::time::timeout(within, command.output())
        .await
        .unwrap_or_else(|_| panic!("the command ends within {within:?}"))
        .expect("run the earshot binary")
}

/// A command's output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `command` to the end (at most a minute) and collects its output.
pub async fn run(command: &mut Command) -> Output {
    run_within(command, Duration::from_secs(60)).await
}

/// [`run`] with another bound, for a command whose work is large by design.
pub async fn run_within(command: &mut Command, bound: Duration) -> Output {
    let mut command =
        tokio::process::Command::from(std::mem::replace(command, Command::new("true")));
    tokio::time::timeout(bound, command.output())
        .await
        .unwrap_or_else(|_| panic!("the command finishes within {bound:?}"))
        .expect("the command runs")
}

/// `earshot ARGS` against the emulator at `base` with the store `db`.
pub fn against(base: &str, db: &std::path::Path, args: &[&str]) -> Command {
    let mut command = earshot();
    command
        .args(args)
        .args(["--url", base, "--api-key", super::API_KEY, "--store"])
        .arg(db);
    command
}

/// Sends `signal` (INT, TERM, HUP) to `child` with kill(1).
pub async fn send_signal(child: &tokio::process::Child, signal: &str) {
    let pid = child.id().expect("still running").to_string();
    let status = tokio::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// The rest of the output and the exit status, within 15 s.
pub async fn wait_out(child: tokio::process::Child) -> Output {
    tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .expect("exits within 15 s of the signal")
        .expect("the output")
}

/// `earshot listen --secret SECRET --store DB`: the child, the URL it
/// prints first (its stdout is drained after that: a closed stdout ends
/// `listen`), and its stderr, line by line.
pub fn listen_with_store(secret: &str, db: &Path) -> (Child, String, Receiver<String>) {
    let mut child = earshot()
        .args(["listen", "--secret", secret, "--store"])
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("earshot listen starts");
    let url = listening_url(&mut child);
    let lines = stderr_lines(&mut child);
    (child, url, lines)
}

/// `earshot listen --secret SECRET --store URL EXTRA…` on a PostgreSQL
/// store of `cluster` (its password in `PGPASSWORD`): the child (killed
/// when dropped), the URL it listens on and its stderr lines.
pub fn postgres_observer(
    cluster: &earshot_testkit::postgres::PgCluster,
    url: &str,
    extra: &[&str],
) -> (tokio::process::Child, String, Receiver<String>) {
    let mut child = earshot_async()
        .args(["listen", "--secret", super::SECRET, "--store", url])
        .args(extra)
        .env("PGPASSWORD", cluster.password())
        .spawn()
        .expect("earshot listen starts");
    let stderr = stderr_lines(&mut child);
    let listening = listening_url(&mut child);
    (child, listening, stderr)
}

/// A started child with its stdout and stderr piped, `std`'s or tokio's:
/// what [`listening_url`] and [`stderr_lines`] read.
pub trait Piped {
    /// Its stdout (taken: once), read blocking.
    fn take_stdout(&mut self) -> Box<dyn Read + Send>;
    /// Its stderr (taken: once), read blocking.
    fn take_stderr(&mut self) -> Box<dyn Read + Send>;
}

impl Piped for Child {
    fn take_stdout(&mut self) -> Box<dyn Read + Send> {
        Box::new(self.stdout.take().expect("stdout piped"))
    }

    fn take_stderr(&mut self) -> Box<dyn Read + Send> {
        Box::new(self.stderr.take().expect("stderr piped"))
    }
}

impl Piped for tokio::process::Child {
    fn take_stdout(&mut self) -> Box<dyn Read + Send> {
        let stdout = self.stdout.take().expect("stdout piped");
        Box::new(File::from(
            stdout.into_owned_fd().expect("a blocking stdout"),
        ))
    }

    fn take_stderr(&mut self) -> Box<dyn Read + Send> {
        let stderr = self.stderr.take().expect("stderr piped");
        Box::new(File::from(
            stderr.into_owned_fd().expect("a blocking stderr"),
        ))
    }
}

/// The URL a started `earshot listen` (or `earshot emulator`, or a shell
/// running one) prints first, `listening on URL`; its stdout is drained
/// after that (a closed stdout ends `listen`).
pub fn listening_url(child: &mut impl Piped) -> String {
    let (url, mut rest) = listening_url_then_unread(child);
    std::thread::spawn(move || std::io::copy(&mut rest, &mut std::io::sink()));
    url
}

/// [`listening_url`], and every later line of stdout as it comes.
pub fn listening_url_and_lines(child: &mut impl Piped) -> (String, Receiver<String>) {
    let (url, rest) = listening_url_then_unread(child);
    (url, lines_of(rest))
}

/// [`listening_url`] without the draining: the rest of stdout stays in the
/// pipe, unread, for as long as the reader returned is kept (dropped, it
/// closes the pipe, which ends `listen`).
pub fn listening_url_then_unread(
    child: &mut impl Piped,
) -> (String, BufReader<Box<dyn Read + Send>>) {
    let mut stdout = BufReader::new(child.take_stdout());
    let mut first = String::new();
    stdout.read_line(&mut first).expect("the first line");
    // `listen --json` says it as JSON: `{"listening_on":"URL"}`.
    let as_json = serde_json::from_str::<serde_json::Value>(&first)
        .ok()
        .and_then(|line| line["listening_on"].as_str().map(str::to_owned));
    let url = as_json.unwrap_or_else(|| {
        first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("`listening on URL`, not {first:?}"))
            .to_owned()
    });
    (url, stdout)
}

/// The child's stdout, line by line, as it comes.
pub fn stdout_lines(child: &mut impl Piped) -> Receiver<String> {
    lines_of(BufReader::new(child.take_stdout()))
}

/// The child's stderr, line by line, as it comes.
pub fn stderr_lines(child: &mut impl Piped) -> Receiver<String> {
    lines_of(BufReader::new(child.take_stderr()))
}

/// The first of `lines` containing `needle` within `within`, and every
/// line read before it.
pub fn line_with(
    lines: &Receiver<String>,
    needle: &str,
    within: Duration,
) -> (Option<String>, Vec<String>) {
    let deadline = std::time::Instant::now() + within;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return (Some(line), seen),
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    (None, seen)
}

/// The next of `lines` (a child's stdout or stderr) within 15 s.
pub fn next_line(lines: &Receiver<String>) -> String {
    lines
        .recv_timeout(Duration::from_secs(15))
        .expect("a line within 15 s")
}

/// The lines of `pipe` (invalid UTF-8 replaced), sent as they come; once
/// the receiver is gone the rest is still read, so the child never
/// blocks on, or fails writing to, a full or closed pipe.
fn lines_of(mut pipe: BufReader<Box<dyn Read + Send>>) -> Receiver<String> {
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = Vec::new();
        loop {
            line.clear();
            match pipe.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if sender.send(text.to_owned()).is_err() {
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
                return;
            }
        }
    });
    lines
}

/// `body` POSTed to `url` signed now with `secret`: the status and the JSON
/// answer (`Null` when it is not JSON).
pub async fn post_signed(url: &str, secret: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let header =
        earshot_core::signature::sign(secret.as_bytes(), chrono::Utc::now().timestamp(), body);
    let response = earshot_http::client_builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
        .post(url)
        .header("content-type", "application/json")
        .header("x-svc-signature", header)
        .body(body.to_vec())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("listen answers");
    let status = response.status().as_u16();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// Whether the `X-SVC-Signature` `header` of `body` was made with the
/// secret in `file`, per Python's `hmac`: `ok` or `bad`.
pub fn python_verifies(file: &Path, header: &str, body: &[u8]) -> String {
    const SCRIPT: &str = r#"
import hashlib, hmac, sys
secret = open(sys.argv[1]).read().rstrip("\n").encode()
pairs = [part.split("=", 1) for part in sys.argv[2].split(",")]
t = [value for key, value in pairs if key == "t"][0]
body = sys.stdin.buffer.read()
digest = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
print("ok" if any(hmac.compare_digest(digest, value) for key, value in pairs if key == "v1") else "bad")
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(file)
        .arg(header)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run python3 ({error}); CI has it"));
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), body).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python3 failed");
    text(&output.stdout).trim().to_owned()
}
