//! `earshot demo` keeps its store (personal-looking data) and its Probe
//! sample in one private directory, `earshot-demo-history-<pid>-…`,
//! 0700, through the real binary in a real terminal (tmux): removed when
//! SIGTERM stops the demo and when its terminal closes (SIGHUP, after
//! which every write to the terminal fails); one a killed demo left
//! (SIGKILL cannot be caught) is removed by the next demo, and nothing
//! else in the directory is touched.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::tmux::{Tmux, shell_quote};

/// The first frame waits for the emulator and its traffic to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Every demo directory (`earshot-demo-*`) in `dir`.
fn demo_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("earshot-demo-")
        })
        .collect();
    found.sort();
    found
}

/// The permission bits of `path`, in octal (`0700`).
fn octal_mode(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode();
    format!("{:04o}", mode & 0o777)
}

/// The pid of a process that has ended (and been reaped).
fn dead_pid() -> u32 {
    let mut reaped = std::process::Command::new("true").spawn().unwrap();
    let pid = reaped.id();
    reaped.wait().unwrap();
    pid
}

/// `earshot demo` in a fresh tmux with `tmp` as its TMPDIR, until its
/// console is up; its one directory (besides `others`), which holds the
/// Probe sample too.
fn start_demo(tmux: &mut Tmux, tmp: &Path, others: &[PathBuf]) -> PathBuf {
    let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
    let inner = format!(
        "umask 022; TMPDIR={} {binary} demo; echo \"EXIT:$?\"; sleep 60",
        shell_quote(tmp)
    );
    tmux.start(&format!("sh -c '{}'", inner.replace('\'', r"'\''")));
    tmux.wait_for("the console", START_TIMEOUT, |screen| {
        let bar = screen.lines().next().unwrap_or_default();
        bar.contains("DEMO").then_some(())
    });
    let dirs: Vec<PathBuf> = demo_dirs(tmp)
        .into_iter()
        .filter(|dir| !others.contains(dir))
        .collect();
    let [ours] = dirs.as_slice() else {
        panic!("one demo directory, the Probe sample inside: {dirs:?}");
    };
    assert!(
        ours.join("probe-sample.wav").is_file(),
        "{}",
        ours.display()
    );
    ours.clone()
}

/// The demo's pid, from its directory's name.
fn demo_pid(dir: &Path) -> String {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    name.trim_start_matches("earshot-demo-history-")
        .split('-')
        .next()
        .unwrap()
        .to_owned()
}

/// Waits (with a deadline) until `path` is gone.
fn wait_gone(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while path.exists() {
        assert!(
            Instant::now() < deadline,
            "{what}: {} still there",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_demo_keeps_its_store_private_and_removes_it_on_sigterm_and_at_the_next_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    let stale = tmp.path().join(format!("earshot-demo-history-{dead}-left"));
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("earshot.db"), b"a killed demo's store").unwrap();
    // Not provably a demo's directory of a demo that is gone: kept.
    let kept = [
        tmp.path()
            .join(format!("earshot-demo-history-{}-alive", std::process::id())),
        tmp.path().join("earshot-demo-history-notapid"),
        tmp.path().join(format!("earshot-demo-{dead}")),
    ];
    for dir in &kept {
        std::fs::create_dir(dir).unwrap();
    }

    let mut tmux = Tmux::new();
    let ours = start_demo(&mut tmux, tmp.path(), &kept);
    assert!(!stale.exists(), "the killed demo's directory is removed");
    for dir in &kept {
        assert!(dir.is_dir(), "kept: {}", dir.display());
    }
    assert_eq!(octal_mode(&ours), "0700", "{}", ours.display());
    assert_eq!(octal_mode(&ours.join("earshot.db")), "0600");
    let pid = demo_pid(&ours);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -TERM {pid}");
    tmux.wait_text("EXIT:143");
    assert!(!ours.exists(), "removed on SIGTERM: {}", ours.display());
}

/// The terminal closes under the demo (its tmux session killed: SIGHUP,
/// and every later write to the terminal fails): the directory goes too.
#[test]
fn the_demo_removes_its_directory_when_its_terminal_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut tmux = Tmux::new();
    let ours = start_demo(&mut tmux, tmp.path(), &[]);
    tmux.close();
    wait_gone(&ours, "the terminal closed (SIGHUP)");
    assert_eq!(demo_dirs(tmp.path()), Vec::<PathBuf>::new());
}
