//! Helpers shared by the measurement harnesses (`benches/*.rs` run with
//! `cargo bench --bench NAME -- ARGS`): their arguments, finding the release binary,
//! running it isolated from the user's settings and starting its
//! `listen`, reading a process's peak memory, silent WAV audio. Each
//! harness uses a subset.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The arguments after the harness's name, without the `--bench` that
/// `cargo bench` adds.
pub fn args() -> impl Iterator<Item = String> {
    std::env::args().skip(1).filter(|arg| arg != "--bench")
}

/// The `KEY=VALUE` arguments given after `--`, each split at its first
/// `=`; an argument without one is an error that names it.
pub fn key_values() -> Result<Vec<(String, String)>, String> {
    args()
        .map(|arg| match arg.split_once('=') {
            Some((key, value)) => Ok((key.to_owned(), value.to_owned())),
            None => Err(format!("arguments are KEY=VALUE, not {arg:?}")),
        })
        .collect()
}

/// `target/release/earshot`, beside the running harness's directory
/// (`target/release/deps`).
pub fn release_binary() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("earshot"))
        .ok_or("cannot locate the target directory")?;
    if !binary.exists() {
        return Err(format!(
            "{} not found: run `cargo build --release` first",
            binary.display()
        )
        .into());
    }
    Ok(binary)
}

/// A child process killed when dropped, so that a benchmark that stops
/// early leaves nothing running.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `binary` with its config, state and store inside `dir` (none of the
/// user's) and no stdin.
pub fn isolated(binary: &Path, dir: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env("EARSHOT_CONFIG", dir.join("no-config.toml"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("EARSHOT_STORE")
        .stdin(Stdio::null());
    command
}

/// Starts `command` (an `earshot listen`; its stderr is discarded): the
/// child and the URL of its first line, `listening on URL`, waited for at
/// most `within` (opening a large store checks it first). A thread keeps
/// draining its stdout.
pub fn start_listen(
    mut command: Command,
    within: Duration,
) -> Result<(ChildGuard, String), Box<dyn std::error::Error + Send + Sync>> {
    command.stderr(Stdio::null());
    spawn_listen(command, within)
}

/// [`start_listen`], and a channel that gets a message each time a line of
/// the child's stderr holds `note` (its other lines are dropped).
pub fn start_listen_noting(
    mut command: Command,
    within: Duration,
    note: &'static str,
) -> Result<(ChildGuard, String, Receiver<()>), Box<dyn std::error::Error + Send + Sync>> {
    command.stderr(Stdio::piped());
    let (mut child, url) = spawn_listen(command, within)?;
    let stderr = child.0.stderr.take().ok_or("no stderr")?;
    let (noted, notes) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains(note) {
                let _ = noted.send(());
            }
        }
    });
    Ok((child, url, notes))
}

fn spawn_listen(
    mut command: Command,
    within: Duration,
) -> Result<(ChildGuard, String), Box<dyn std::error::Error + Send + Sync>> {
    command.stdout(Stdio::piped());
    let mut child = ChildGuard(command.spawn()?);
    let stdout = child.0.stdout.take().ok_or("no stdout")?;
    let (first_line, line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = first_line.send(first);
        }
        for _ in lines.map_while(Result::ok) {}
    });
    let line = line
        .recv_timeout(within)
        .map_err(|_| format!("listen printed no `listening on` line within {within:?}"))?;
    let url = line
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line {line:?}"))?
        .trim()
        .to_owned();
    Ok((child, url))
}

/// Peak resident memory (`VmHWM`, kB) of `process` ("self" or a pid), from
/// /proc (Linux); `None` where it cannot be read.
pub fn vm_hwm_kb(process: &str) -> Option<u64> {
    proc_status_kb(process, "VmHWM:")
}

/// Current resident memory (`VmRSS`, kB) of `process`, like [`vm_hwm_kb`].
pub fn vm_rss_kb(process: &str) -> Option<u64> {
    proc_status_kb(process, "VmRSS:")
}

/// One `kB` field of `/proc/<process>/status`.
fn proc_status_kb(process: &str, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()?
        .lines()
        .find(|line| line.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A receiver on 127.0.0.1 that answers 200 to every POST to `/hook` and
/// counts them: its URL and the count.
pub async fn counting_receiver()
-> std::io::Result<(String, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, received))
}

/// An in-process emulator on 127.0.0.1 that accepts loopback receivers,
/// and a client for it, both with `key`.
pub async fn emulator_with_client(
    key: &str,
) -> Result<
    (earshot_emulator::Emulator, earshot_core::api::Client),
    Box<dyn std::error::Error + Send + Sync>,
> {
    use earshot_core::redact::SecretString;
    let mut config = earshot_emulator::EmulatorConfig::new(SecretString::new(key));
    config.allow_private_urls = true;
    let emulator = earshot_emulator::Emulator::start("127.0.0.1:0".parse()?, config).await?;
    let client = earshot_core::api::Client::new(
        earshot_core::api::Endpoints::all_at(&emulator.url()),
        SecretString::new(key),
    )?
    .with_url_policy(earshot_core::api::validate::UrlPolicy::AnyHttp);
    Ok((emulator, client))
}

/// `seconds` of 500 Hz mono 16-bit silence (1,000 bytes a second: an hour
/// is 3.6 MB): the emulator processes it for a quarter of its length.
pub fn silent_wav(seconds: u32) -> Vec<u8> {
    const RATE: u32 = 500;
    let samples = vec![0u8; 2 * RATE as usize * seconds as usize];
    earshot_core::wav::encode_pcm16(RATE, 1, &samples, None)
}
