//! The platform's official SDKs, unchanged, against a fresh `earshot
//! emulator` each: the `assemblyai` Python SDK under pydantic 2 and under
//! pydantic 1, and the `assemblyai` Node SDK. Each driver
//! (`tests/sdk/driver.py`, `tests/sdk/driver.cjs`) uploads and transcribes
//! a WAV, transcribes an `audio_url`, submits with a webhook and an auth
//! header to a receiver it runs on loopback, ends a non-audio file in
//! `status: error`, runs 20 jobs at once, reads a 404 and a 429; it prints
//! a line per case and `N passed, N failed`.
//!
//! The SDKs are installed by `bash tests/sdk/setup.sh` under `target/sdk/`
//! (`.ci/run` calls it). Without them the tests fail with that command.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every platform duration × this: jobs finish within the SDKs' first
/// polls (every 3 s), webhooks at once.
const TIME_SCALE: &str = "0.01";
/// The emulator's polling limit: above what the SDKs' own polling of one
/// job reaches, low enough for the 429 case to reach it quickly.
const POLL_LIMIT: u32 = 10;
/// Cases each driver runs.
const CASES: usize = 7;
/// A driver taking longer than this is killed (each needs about 15 s).
const DRIVER_TIMEOUT: Duration = Duration::from_secs(240);
/// The emulator prints its URL and key within this.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a driver's output kept.
const MAX_OUTPUT: u64 = 256 * 1024;

const SETUP: &str = "bash tests/sdk/setup.sh";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sdk_dir() -> PathBuf {
    repo().join("target").join("sdk")
}

/// Fails, naming the command that installs `what`, unless it is installed:
/// a test that could not run never counts as passed.
fn require(what: &str, present: bool) {
    assert!(
        present,
        "{what} is not installed: run `{SETUP}` before `cargo test --locked`"
    );
}

/// An `earshot emulator` child process, killed when dropped.
struct Emulator {
    child: Child,
    url: String,
    key: String,
}

impl Emulator {
    fn start() -> Emulator {
        let mut child = Command::new(env!("CARGO_BIN_EXE_earshot"))
            .args(["emulator", "--listen", "127.0.0.1:0", "--time-scale"])
            .arg(TIME_SCALE)
            .arg("--poll-limit")
            .arg(POLL_LIMIT.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("earshot emulator starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (found, heard) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let (mut url, mut key) = (None, None);
            let mut line = String::new();
            while url.is_none() || key.is_none() {
                line.clear();
                match (&mut lines).take(4096).read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if let Some(rest) = line.trim().strip_prefix("listening on ") {
                    url = Some(rest.trim_end_matches('/').to_owned());
                } else if let Some(rest) = line.trim().strip_prefix("api key: ") {
                    key = Some(rest.to_owned());
                }
            }
            let _ = found.send((url.unwrap_or_default(), key.unwrap_or_default()));
            // Keep reading so the emulator never blocks on a full pipe.
            let mut sink = [0u8; 4096];
            while matches!(lines.read(&mut sink), Ok(n) if n > 0) {}
        });
        let Ok((url, key)) = heard.recv_timeout(STARTUP_TIMEOUT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the emulator printed no URL and key within {STARTUP_TIMEOUT:?}");
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Emulator { child, url, key }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads at most [`MAX_OUTPUT`] bytes of `from` on a thread.
fn collect(from: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut from = from;
        let _ = (&mut from).take(MAX_OUTPUT).read_to_end(&mut kept);
        let mut sink = [0u8; 4096];
        while matches!(from.read(&mut sink), Ok(n) if n > 0) {}
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// Runs `driver` with `program` against a fresh emulator and asserts every
/// case passed.
fn run_driver(label: &str, program: &Path, driver: &str, extra_env: &[(&str, &Path)]) {
    let emulator = Emulator::start();
    let started = Instant::now();
    let mut command = Command::new(program);
    command
        .arg(repo().join("tests").join("sdk").join(driver))
        .current_dir(repo())
        .env("EARSHOT_SDK_URL", &emulator.url)
        .env("EARSHOT_SDK_KEY", &emulator.key)
        .env("EARSHOT_SDK_POLL_LIMIT", POLL_LIMIT.to_string())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for proxy in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        command.env_remove(proxy).env_remove(proxy.to_lowercase());
    }
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("{label}: {} does not start: {error}", program.display()));
    let stdout = collect(child.stdout.take().expect("stdout is piped"));
    let stderr = collect(child.stderr.take().expect("stderr is piped"));
    let status = loop {
        if let Some(status) = child.try_wait().expect("the driver can be waited for") {
            break Some(status);
        }
        if started.elapsed() > DRIVER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    println!(
        "{label} ({:.1} s):\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    if !stderr.trim().is_empty() {
        println!("{label} stderr:\n{stderr}");
    }
    let status = status.unwrap_or_else(|| panic!("{label}: killed after {DRIVER_TIMEOUT:?}"));
    let last = stdout.lines().rev().find(|line| !line.trim().is_empty());
    assert_eq!(
        last,
        Some(format!("{CASES} passed, 0 failed").as_str()),
        "{label}: {stdout}\n{stderr}"
    );
    assert!(status.success(), "{label}: exit {status}");
}

fn python_sdk(venv: &str, label: &str) {
    let python = sdk_dir().join(venv).join("bin").join("python");
    let present = python.is_file() && sdk_dir().join(venv).join(".installed").is_file();
    require(&format!("the Python SDK ({venv})"), present);
    run_driver(label, &python, "driver.py", &[]);
}

#[test]
fn the_python_sdk_under_pydantic_2_runs_unchanged() {
    python_sdk("py-pydantic2", "python sdk, pydantic 2");
}

#[test]
fn the_python_sdk_under_pydantic_1_runs_unchanged() {
    python_sdk("py-pydantic1", "python sdk, pydantic 1");
}

#[test]
fn the_node_sdk_runs_unchanged() {
    let node_dir = sdk_dir().join("node");
    let node_found = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let present = node_found
        && node_dir
            .join("node_modules")
            .join("assemblyai")
            .join("package.json")
            .is_file();
    require("the Node SDK", present);
    run_driver(
        "node sdk",
        Path::new("node"),
        "driver.cjs",
        &[("EARSHOT_SDK_NODE_DIR", &node_dir)],
    );
}
