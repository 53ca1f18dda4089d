//! The real `earshot` binary in tests: a command with the environment
//! cleared of the user's settings, the observer (`earshot listen --store`),
//! and running a command with a deadline.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

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

/// `earshot` with no profile, URL, key, store or secret from the caller.
pub fn earshot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_earshot"));
    for name in INHERITED {
        command.env_remove(name);
    }
    command.env("EARSHOT_CONFIG", "/nonexistent/earshot-test-config.toml");
    command
}

/// [`earshot`] for async tests: nothing inherited, no stdin, output piped,
/// killed when dropped.
pub fn earshot_async() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"));
    for name in INHERITED {
        command.env_remove(name);
    }
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
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .expect("listen prints its address");
    // Keep reading: a closed stdout ends `listen` (as `listen | head` should).
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .expect("first line names the address")
        .to_owned();
    (child, url)
}

/// Runs `command` to the end (at most a minute) and collects its output.
pub async fn run(command: &mut Command) -> Output {
    let mut command =
        tokio::process::Command::from(std::mem::replace(command, Command::new("true")));
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the command finishes within a minute")
        .expect("the command runs")
}
