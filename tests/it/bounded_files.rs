//! Files the operator names are read bounded. A device
//! (`/dev/zero`), or a file over its stated limit, is refused with exit 2
//! and a message naming the file and the limit, without reading it whole.
//! Each run is under a 2 GiB address-space limit and a timeout, so a
//! regression fails (an allocation failure, not exit 2) instead of eating
//! the machine's memory.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::cli::isolate;

const SECRET: &str = "whsec-bounded-test-0123456789abcdefghijkl";

/// Runs the binary in `home` with no `EARSHOT_*` from the caller, limited
/// to 2 GiB of address space and 60 s.
fn earshot(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 2097152 && exec timeout 60 \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_earshot"))
        .args(args);
    isolate(&mut command, home).env("EARSHOT_CONFIG", home.join("config.toml"));
    command.output().expect("run the earshot binary")
}

/// Exit 2, and standard error names the file and says why.
fn assert_refused(output: &Output, file: &str, why: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(file) && stderr.contains(why),
        "expected {file} and {why:?} in: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A sparse file of `len` bytes (no disk used).
fn sparse(dir: &Path, name: &str, len: u64) -> String {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().set_len(len).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn sign_and_verify_refuse_a_device_and_an_oversize_body_file() {
    let home = tempfile::tempdir().unwrap();
    let big = sparse(home.path(), "big.body", 10 * 1024 * 1024 + 1);
    for body in ["/dev/zero", big.as_str()] {
        let why = if body == "/dev/zero" {
            "not a regular file"
        } else {
            "larger than 10 MiB"
        };
        let out = earshot(
            home.path(),
            &["sign", "--secret", SECRET, "--body-file", body],
        );
        assert_refused(&out, body, why);
        let out = earshot(
            home.path(),
            &[
                "verify",
                "--secret",
                SECRET,
                "--header",
                "t=1795300000,v1=00",
                "--body-file",
                body,
            ],
        );
        assert_refused(&out, body, why);
    }
}

#[test]
fn verify_capture_refuses_a_device_and_an_endless_line() {
    let home = tempfile::tempdir().unwrap();
    let out = earshot(
        home.path(),
        &["verify", "--secret", SECRET, "--capture", "/dev/zero"],
    );
    assert_refused(&out, "/dev/zero", "not a regular file");
    // One line of 64 MiB + 1 with no newline.
    let long = sparse(home.path(), "long.jsonl", 64 * 1024 * 1024 + 1);
    let out = earshot(
        home.path(),
        &["verify", "--secret", SECRET, "--capture", &long],
    );
    assert_refused(&out, &long, "line 1");
}

#[test]
fn an_api_key_file_that_is_a_device_or_too_large_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let big = sparse(home.path(), "big.key", 64 * 1024 + 1);
    for key_file in ["/dev/zero", big.as_str()] {
        let config = home.path().join("config.toml");
        std::fs::write(
            &config,
            format!(
                "default_profile = \"p\"\n[profiles.p]\nurl = \"http://127.0.0.1:9\"\n\
                 api_key_file = \"{key_file}\"\n"
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for path in [config.as_path(), Path::new(&big)] {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
        let out = earshot(home.path(), &["subs", "list"]);
        let why = if key_file == "/dev/zero" {
            "not a regular file"
        } else {
            "larger than 64 KiB"
        };
        assert_refused(&out, key_file, why);
    }
}

#[test]
fn an_ids_file_that_is_a_device_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let out = earshot(
        home.path(),
        &[
            "jobs",
            "watch",
            "--url",
            "http://127.0.0.1:9",
            "--api-key",
            "k",
            "--ids-file",
            "/dev/zero",
        ],
    );
    assert_refused(&out, "/dev/zero", "not a regular file");
}

/// A FIFO at `dir/name` (mkfifo(1), mode 0600); its path.
pub(crate) fn fifo(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let made = Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(&path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
    path.to_str().expect("a UTF-8 temp path").to_owned()
}

/// Runs the binary in `home` and waits at most 10 s; a run still going
/// then (blocked opening a FIFO, or serving) is killed and fails the test.
pub(crate) fn within_10s(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_earshot"));
    isolate(&mut command, home)
        .env("EARSHOT_CONFIG", home.join("config.toml"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("run the earshot binary");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().expect("wait for earshot").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("earshot {args:?} still running after 10 s (blocked?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("earshot's output")
}

#[test]
fn a_fifo_as_secret_or_body_file_is_refused_at_once_not_waited_on() {
    let home = tempfile::tempdir().unwrap();
    let pipe = fifo(home.path(), "secret.fifo");
    let body = home.path().join("body.json");
    std::fs::write(&body, b"{}").unwrap();
    let body = body.to_str().unwrap();
    let out = within_10s(
        home.path(),
        &["sign", "--secret-file", &pipe, "--body-file", body],
    );
    assert_refused(&out, &pipe, "not a regular file (a FIFO)");
    let out = within_10s(
        home.path(),
        &["sign", "--secret", SECRET, "--body-file", &pipe],
    );
    assert_refused(&out, &pipe, "not a regular file (a FIFO)");
    // Audio to stream (sync, dictation, an upload) too, before any request.
    let platform = [
        "--url",
        "http://127.0.0.1:9",
        "--api-key",
        "k_0123456789abcdef",
    ];
    for command in [&["transcribe", &pipe][..], &["jobs", "submit", &pipe]] {
        let args: Vec<&str> = command.iter().copied().chain(platform).collect();
        let out = within_10s(home.path(), &args);
        assert_refused(&out, &pipe, "not a regular file (a FIFO)");
    }
}

/// `listen --capture` names a file to append to: a FIFO (which would block
/// the open until a reader came), a device or a directory is refused at
/// once with exit 2, before anything listens.
// (A device is refused by the same check; no test opens one outside the
// test's own directory.)
#[test]
fn listen_refuses_a_capture_that_is_not_a_regular_file_at_once() {
    let home = tempfile::tempdir().unwrap();
    let pipe = fifo(home.path(), "capture.fifo");
    let out = within_10s(
        home.path(),
        &["listen", "--secret", SECRET, "--capture", &pipe],
    );
    assert_refused(&out, &pipe, "not a regular file (a FIFO)");
    let dir = home.path().to_str().unwrap().to_owned();
    let out = within_10s(
        home.path(),
        &["listen", "--secret", SECRET, "--capture", &dir],
    );
    assert_refused(&out, &dir, "not a regular file (a directory)");
}
