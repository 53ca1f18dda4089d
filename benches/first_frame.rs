//! Start-up benchmark: time from spawning the console to its first frame
//! on a real pseudo-terminal, with the emulator already running.
//!
//! Starts `target/release/earshot emulator` once, then RUNS times spawns
//! the release console (`earshot` with `EARSHOT_URL` / `EARSHOT_API_KEY`
//! and an empty temporary HOME, so no profile) under util-linux
//! `script -qfec`, which gives it a pty sized 120×40 by `stty`. The clock
//! runs from spawn until the pty output, escape sequences removed, holds
//! the tab bar text `1 Subscriptions`; then `q` is typed and the console
//! exits. Like a terminal, the harness answers the cursor-position query
//! (`ESC [ 6 n`) the console sends before its first frame (ratatui's
//! `Terminal::clear`); a pty nobody answers would fail after 2 s. For
//! comparison it times `earshot --version` run directly (the process-start
//! floor) and under the same `script` + `stty` wrapper (the wrapper's
//! floor). Prints median / p90 / max in ms.
//!
//! Run: `cargo build --release && cargo bench --bench first_frame -- [RUNS]`

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

mod support;

const KEY: &str = "bench_first_frame_0123456789";
const COLUMNS: u16 = 120;
const LINES: u16 = 40;
/// What the first frame's tab bar shows.
const FIRST_FRAME_TEXT: &str = "1 Subscriptions";
/// A run that has not drawn by then counts as a failure.
const RUN_TIMEOUT: Duration = Duration::from_secs(10);
const TARGET_MS: f64 = 150.0;
/// Device status report 6: the terminal answers `ESC [ row ; col R`.
const CURSOR_POSITION_QUERY: &[u8] = b"\x1b[6n";

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let runs: usize = support::args().next().map_or(Ok(30), |a| a.parse())?;
    let binary = support::release_binary()?;
    let home = tempfile::tempdir()?;
    let emulator = Emulator::start(&binary)?;
    println!(
        "earshot first frame: {runs} runs, {COLUMNS}×{LINES} pty (script -qfec + stty), emulator at {}",
        emulator.url
    );

    let mut version = Vec::with_capacity(runs);
    let mut wrapped_version = Vec::with_capacity(runs);
    let mut first_frame = Vec::with_capacity(runs);
    for _ in 0..runs {
        version.push(time_version(&binary)?);
        wrapped_version.push(time_in_pty(
            &binary,
            "--version",
            "earshot",
            home.path(),
            &emulator,
        )?);
        first_frame.push(time_in_pty(
            &binary,
            "",
            FIRST_FRAME_TEXT,
            home.path(),
            &emulator,
        )?);
    }

    report("earshot --version (direct)", &mut version);
    report("earshot --version (in the pty)", &mut wrapped_version);
    let median = report("console first frame (in the pty)", &mut first_frame);
    let verdict = if median < TARGET_MS { "met" } else { "MISSED" };
    println!("target: median first frame < {TARGET_MS} ms: {verdict}");
    Ok(())
}

/// The release emulator as a child process, killed on drop.
struct Emulator {
    child: Child,
    url: String,
}

impl Emulator {
    fn start(binary: &Path) -> Result<Emulator, Error> {
        let mut child = Command::new(binary)
            .args(["emulator", "--listen", "127.0.0.1:0", "--api-key", KEY])
            .env("EARSHOT_LOG", "earshot=warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no emulator stdout")?;
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first)?;
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first emulator line {first:?}"))?
            .to_owned();
        Ok(Emulator { child, url })
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `earshot --version` run directly, until it exits.
fn time_version(binary: &Path) -> Result<f64, Error> {
    let start = Instant::now();
    let output = Command::new(binary).arg("--version").output()?;
    let elapsed = start.elapsed();
    if !output.status.success() {
        return Err("earshot --version failed".into());
    }
    Ok(ms(elapsed))
}

/// Spawns `earshot ARGS` in a 120×40 pty and times until `wanted` shows up
/// in its output; then types `q` and waits for the wrapper to exit.
fn time_in_pty(
    binary: &Path,
    args: &str,
    wanted: &str,
    home: &Path,
    emulator: &Emulator,
) -> Result<f64, Error> {
    let inner = format!(
        "stty cols {COLUMNS} rows {LINES}; exec '{}' {args}",
        binary.display()
    );
    let start = Instant::now();
    let mut child = Command::new("script")
        .args(["-qfec", &inner, "/dev/null"])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("EARSHOT_URL", &emulator.url)
        .env("EARSHOT_API_KEY", KEY)
        .env("TERM", "xterm-256color")
        .env("COLUMNS", COLUMNS.to_string())
        .env("LINES", LINES.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no pty stdin")?;
    let chunks = read_chunks(child.stdout.take().ok_or("no pty stdout")?);
    let found = wait_for_text(&chunks, &mut stdin, wanted, start);
    finish(&mut child, stdin);
    found.map(ms)
}

/// The pty's output as it arrives, read on its own thread.
fn read_chunks(mut stdout: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        while let Ok(read @ 1..) = stdout.read(&mut buffer) {
            if sender.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Time from `start` until the text (escape sequences removed) holds
/// `wanted`. Answers cursor-position queries (`ESC [ 6 n`) as a terminal
/// would, since the console asks one before its first frame.
fn wait_for_text(
    chunks: &Receiver<Vec<u8>>,
    terminal_input: &mut ChildStdin,
    wanted: &str,
    start: Instant,
) -> Result<Duration, Error> {
    let mut output = Vec::new();
    let mut answered = 0;
    loop {
        let left = RUN_TIMEOUT.saturating_sub(start.elapsed());
        match chunks.recv_timeout(left) {
            Ok(chunk) => {
                output.extend_from_slice(&chunk);
                let asked = count(&output, CURSOR_POSITION_QUERY);
                while answered < asked {
                    terminal_input.write_all(b"\x1b[1;1R")?;
                    terminal_input.flush()?;
                    answered += 1;
                }
                if strip_escapes(&output).contains(wanted) {
                    return Ok(start.elapsed());
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!("no {wanted:?} within {RUN_TIMEOUT:?}").into());
            }
            Err(RecvTimeoutError::Disconnected) => {
                let text = strip_escapes(&output);
                return Err(format!("exited before {wanted:?}; output: {text:?}").into());
            }
        }
    }
}

/// How often `needle` occurs in `haystack`.
fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|window| *window == needle)
        .count()
}

/// Types `q` (the console quits; `--version` has already exited) and
/// waits a moment for the wrapper, killing it if it lingers.
fn finish(child: &mut Child, mut stdin: ChildStdin) {
    let _ = stdin.write_all(b"q");
    let _ = stdin.flush();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The printable text of terminal output: CSI (`ESC [ … final`), OSC
/// (`ESC ] … BEL/ST`) and two-byte escapes removed.
fn strip_escapes(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Prints median / p90 / max of `samples` (ms) and returns the median.
fn report(label: &str, samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(index).copied().unwrap_or(f64::NAN)
    };
    let (median, p90, max) = (at(0.5), at(0.9), at(1.0));
    println!("{label:34} median {median:6.1} ms   p90 {p90:6.1} ms   max {max:6.1} ms");
    median
}
