//! Exits that mean something, through the real binary: a 404 is final for
//! `jobs watch`; SIGTERM and SIGHUP end every long-running command like
//! ctrl-c (summary printed, exit 128 + the signal); and bad input or a
//! missing terminal gets a true message and exit 2.

use crate::common;
use crate::common::cli::{
    earshot_async as earshot, finish, isolated_async as isolated, listening_url,
    listening_url_and_lines, next_line, send_signal, stderr_lines, text, wait_out,
};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::tmux::{Tmux, shell_quote};
use serde_json::Value;

const SECRET: &str = "whsec_cli_exits_0123456789abcdefghijklmno";

// ---------------------------------------------------------------------------
// jobs watch: a 404 is final
// ---------------------------------------------------------------------------

#[tokio::test]
async fn jobs_watch_gives_up_on_an_unknown_id_and_counts_it() {
    let harness = common::start().await;
    let unknown = "5f2b8c1e-0000-4e6b-9c0f-000000000404";
    let output = finish(
        earshot()
            .env("EARSHOT_URL", harness.emulator.url().as_str())
            .env("EARSHOT_API_KEY", common::API_KEY)
            .args(["jobs", "watch", unknown, "--json"]),
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}{}",
        text(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|line| line["id"] == unknown && line["error"] == "not_found"),
        "{stdout}"
    );
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["not_found"], 1, "{stdout}");
    assert_eq!(summary["pending"], 0, "{stdout}");
    assert_eq!(summary["interrupted"], false, "{stdout}");

    // In text: an error row, and the summary counts it.
    let output = finish(
        earshot()
            .env("EARSHOT_URL", harness.emulator.url().as_str())
            .env("EARSHOT_API_KEY", common::API_KEY)
            .args(["jobs", "watch", unknown]),
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        text(&output.stdout).contains("not found (HTTP 404)"),
        "{output:?}"
    );
    assert!(text(&output.stderr).contains("1 not found"), "{output:?}");
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// SIGTERM and SIGHUP end long-running commands like ctrl-c
// ---------------------------------------------------------------------------

#[tokio::test]
async fn jobs_watch_prints_its_summary_and_exits_143_on_sigterm_129_on_sighup() {
    for (signal, code, name) in [("TERM", 143, "SIGTERM"), ("HUP", 129, "SIGHUP")] {
        // Nothing listens on port 9: every poll fails and the job stays
        // pending until the signal.
        let mut child = earshot()
            .env("EARSHOT_URL", "http://127.0.0.1:9/")
            .env("EARSHOT_API_KEY", "emu_key_for_signals")
            .args(["jobs", "watch", "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f"])
            .spawn()
            .unwrap();
        let stderr = stderr_lines(&mut child);
        let first = next_line(&stderr);
        assert!(first.starts_with("watching 1 job"), "{first}");
        send_signal(&child, signal).await;
        let output = wait_out(child).await;
        // Its stderr ended with it: every line has come.
        let rest: String = stderr.iter().map(|line| line + "\n").collect();
        assert_eq!(output.status.code(), Some(code), "{name}: {rest}");
        assert!(rest.contains("1 still pending"), "{name}: {rest}");
        assert!(rest.contains(&format!("interrupted by {name}")), "{rest}");
    }
}

#[tokio::test]
async fn listen_prints_its_summary_and_exits_143_on_sigterm_129_on_sighup() {
    for (signal, code) in [("TERM", 143), ("HUP", 129)] {
        let mut child = earshot()
            .args(["listen"])
            .env("EARSHOT_WEBHOOK_SECRET", SECRET)
            .spawn()
            .unwrap();
        let (url, stdout) = listening_url_and_lines(&mut child);
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        send_signal(&child, signal).await;
        let summary = next_line(&stdout);
        assert_eq!(summary, "received 0, accepted 0, rejected 0, duplicates 0");
        let output = wait_out(child).await;
        assert_eq!(output.status.code(), Some(code), "{signal}: {output:?}");
    }
}

#[tokio::test]
async fn the_emulator_stops_and_exits_143_on_sigterm_129_on_sighup() {
    for (signal, code, name) in [("TERM", 143, "SIGTERM"), ("HUP", 129, "SIGHUP")] {
        let mut child = earshot().args(["emulator"]).spawn().unwrap();
        let url = listening_url(&mut child);
        assert!(url.starts_with("http://"), "{url}");
        send_signal(&child, signal).await;
        let output = wait_out(child).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{signal}: {stderr}");
        assert!(stderr.contains(&format!("{name} received")), "{stderr}");
    }
}

#[test]
fn the_demo_restores_the_terminal_and_exits_143_on_sigterm_129_on_sighup() {
    for (signal, code) in [("TERM", "143"), ("HUP", "129")] {
        let mut tmux = Tmux::new();
        // A shell records the demo's exit status in a file: tmux itself
        // does not always report the status of a pane whose program was
        // signalled (its pane may read as dead before it reaps the child).
        let status_file = tmux.home().join("status");
        tmux.start(&format!(
            "sh -c {}",
            shell_quote(Path::new(&format!(
                "{} demo; echo $? > {}; sleep 30",
                shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot"))),
                shell_quote(&status_file)
            )))
        ));
        // The console is up when the alternate screen is on.
        tmux.wait_format("#{alternate_on}", Duration::from_secs(30), |on| on == "1");
        let shell = tmux.format("#{pane_pid}");
        let demo = std::process::Command::new("pgrep")
            .args(["-P", &shell])
            .output()
            .unwrap();
        let demo = text(&demo.stdout).trim().to_owned();
        assert!(!demo.is_empty(), "the demo runs under the shell");
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &demo])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Ok(status) = std::fs::read_to_string(&status_file)
                && !status.trim().is_empty()
            {
                break status.trim().to_owned();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{signal}: the demo did not end"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        // 128 + the signal, back on the main screen.
        assert_eq!(status, code, "{signal}");
        assert_eq!(tmux.format("#{alternate_on}"), "0");
    }
}

// ---------------------------------------------------------------------------
// True messages, and exit 2 for bad input
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_console_takes_url_and_api_key_like_every_command() {
    let home = tempfile::tempdir().unwrap();
    // Without them and without a config file: there is nothing to connect to.
    let output = finish(&mut isolated(home.path())).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(text(&output.stderr).contains("earshot demo"), "{output:?}");
    // With them, the profile resolves and only the terminal is missing.
    let output = finish(isolated(home.path()).args([
        "--url",
        "http://127.0.0.1:9/",
        "--api-key",
        "emu_console_key_0123",
    ]))
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("unexpected argument"), "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
    // And a URL given before a subcommand is that command's URL.
    let output = finish(isolated(home.path()).args([
        "--url",
        "http://127.0.0.1:9/",
        "subs",
        "list",
        "--api-key",
        "emu_console_key_0123",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(text(&output.stderr).contains("127.0.0.1:9"), "{output:?}");
}

#[tokio::test]
async fn the_demo_without_a_terminal_says_so_and_what_to_run_instead() {
    let home = tempfile::tempdir().unwrap();
    let output = finish(isolated(home.path()).arg("demo")).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
    assert!(stderr.contains("earshot emulator --traffic"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
}

#[tokio::test]
async fn dictate_from_an_empty_or_unreadable_stdin_says_so_with_exit_2() {
    let harness = common::start().await;
    let dictate = || {
        let mut command = earshot();
        command
            .env("EARSHOT_URL", harness.emulator.url().as_str())
            .env("EARSHOT_API_KEY", common::API_KEY)
            .args(["dictate", "-"]);
        command
    };
    let output = finish(&mut dictate()).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("standard input is empty"), "{stderr}");
    assert!(!stderr.contains("client bug"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let directory = std::fs::File::open(dir.path()).unwrap();
    let output = finish(dictate().stdin(Stdio::from(directory))).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read the audio from standard input"),
        "{stderr}"
    );
    assert!(!stderr.contains("reach the server"), "{stderr}");
    harness.emulator.shutdown().await;
}

#[tokio::test]
async fn a_url_that_is_not_http_and_a_key_with_a_newline_exit_2() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &[
            "subs",
            "list",
            "--url",
            "ftp://files.example/",
            "--api-key",
            "k",
        ][..],
        &["--url", "ftp://files.example/"],
        &[
            "jobs",
            "get",
            "x",
            "--url",
            "file:///etc/passwd",
            "--api-key",
            "k",
        ],
    ] {
        let output = finish(isolated(home.path()).args(args)).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("http:// or https://"), "{args:?}: {stderr}");
    }
    let output = finish(
        isolated(home.path())
            .args(["subs", "list", "--url", "http://127.0.0.1:9/"])
            .env("EARSHOT_URL", "ftp://files.example/"),
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let key = "emu_secret_part\nsecond_line";
    for args in [
        &["subs", "list"][..],
        &["deliveries", "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f"],
        &["jobs", "get", "x"],
    ] {
        let output = finish(isolated(home.path()).args(args).args([
            "--url",
            "http://127.0.0.1:9/",
            "--api-key",
            key,
        ]))
        .await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("control character"), "{args:?}: {stderr}");
        assert!(!stderr.contains("secret_part"), "key shown: {stderr}");
    }
}

// ---------------------------------------------------------------------------
// Ids that URL resolution would rewrite are refused before sending
// ---------------------------------------------------------------------------

/// A stand-in platform that answers 200 to anything and records every
/// request: a command that should send nothing leaves it at zero.
async fn recording_platform() -> (common::Receiver, String) {
    let platform = common::Receiver::healthy().await;
    let url = format!("http://{}/", platform.addr);
    (platform, url)
}

#[tokio::test]
async fn dot_dot_and_empty_ids_exit_2_and_send_nothing() {
    let (platform, url) = recording_platform().await;
    let home = tempfile::tempdir().unwrap();
    let dots = r#"not a valid id (empty, "." and ".." are refused)"#;
    for (args, quoted, why) in [
        // Today's `GET /v1/webhook-deliveries`, `GET /v2/transcript/`.
        (&["deliveries", ".."][..], r#""..""#, dots),
        (&["deliveries", ".", "--latest"], r#"".""#, dots),
        (&["jobs", "get", "."], r#"".""#, dots),
        (&["jobs", "get", ""], r#""""#, dots),
        (&["jobs", "get", "a/b"], r#""a/b""#, "not a valid id"),
        (
            &["jobs", "get", "a\u{1b}[2Jb"],
            r#""a\u{1b}[2Jb""#,
            "not a valid id",
        ),
        // Every id of a watch is checked before the first poll.
        (&["jobs", "watch", "abc", ".."], r#""..""#, dots),
    ] {
        let output = against_platform(home.path(), &url, args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {quoted}: {why}")),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains('\u{1b}'),
            "{args:?}: escape sent: {stderr}"
        );
        assert_eq!(platform.count(), 0, "{args:?} sent a request");
    }
}

// ---------------------------------------------------------------------------
// subs create / rotate: a bad secret file is bad input, as everywhere else
// ---------------------------------------------------------------------------

#[tokio::test]
async fn subs_create_and_rotate_refuse_a_bad_secret_file_with_exit_2_and_send_nothing() {
    let (platform, url) = recording_platform().await;
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("missing-secret");
    let missing = missing.to_str().unwrap();
    let good = home.path().join("secret");
    std::fs::write(&good, format!("{SECRET}\n")).unwrap();
    let good = good.to_str().unwrap();
    let sub = "5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f";
    let create = [
        "subs",
        "create",
        "http://127.0.0.1:9/hook",
        "--event",
        "session.completed",
        "--allow-private-urls",
    ];
    let unreadable = "cannot read the secret file";
    let device = "not a regular file";
    for (args, file, why) in [
        (
            [&create[..], &["--secret-file", "/dev/zero"]].concat(),
            "/dev/zero",
            device,
        ),
        (
            [&create[..], &["--secret-file", missing]].concat(),
            missing,
            unreadable,
        ),
        // Read before the subscription is looked up: exit 2 whatever the
        // platform would have answered.
        (
            vec!["subs", "rotate", sub, "--secret-file", missing],
            missing,
            unreadable,
        ),
        (
            vec!["subs", "rotate", "5f2b", "--secret-file", "/dev/zero"],
            "/dev/zero",
            device,
        ),
        (
            vec![
                "subs",
                "rotate",
                sub,
                "--secret-file",
                good,
                "--current-secret-file",
                missing,
            ],
            missing,
            unreadable,
        ),
    ] {
        let output = against_platform(home.path(), &url, &args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("error: ") && stderr.contains(file) && stderr.contains(why),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains(SECRET), "{args:?}: secret shown: {stderr}");
        assert_eq!(platform.count(), 0, "{args:?} sent a request");
    }
}

#[tokio::test]
async fn an_empty_subscription_id_is_no_prefix_of_the_only_subscription() {
    let harness = common::start().await;
    let receiver = common::Receiver::healthy().await;
    let sub = harness
        .subscribe(
            &receiver.url(),
            &[earshot_core::api::types::agents::EventKind::SessionCompleted],
        )
        .await;
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["subs", "get", ""][..],
        &["subs", "pause", ""],
        &["subs", "delete", "", "--yes"],
        &["subs", "rotate", "", "--generate-secret"],
    ] {
        let output = against_platform(home.path(), &harness.base, args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(r#"error: "": not a valid id"#),
            "{args:?}: {stderr}"
        );
    }
    let still = harness.client.get_subscription(&sub.id).await.unwrap();
    assert!(still.enabled, "paused by an empty id");
    harness.emulator.shutdown().await;
}

/// A subscription that does not exist is "not found" (exit 1),
/// as a 404 is, whether asked by a short id or a whole one; bad input
/// stays 2.
#[tokio::test]
async fn an_unknown_subscription_exits_1_not_2() {
    let harness = common::start().await;
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["subs", "delete", "feedf00d", "--yes"][..],
        &["subs", "get", "feedf00d"],
        &[
            "subs",
            "delete",
            "feedf00d-0000-4000-8000-000000000000",
            "--yes",
        ],
    ] {
        let output = against_platform(home.path(), &harness.base, args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("feedf00d"), "{args:?}: {stderr}");
    }
    harness.emulator.shutdown().await;
}

/// A job the platform does not know exits 1; a short id (what
/// the console's tables show) is named as one, since only whole ids
/// resolve.
#[tokio::test]
async fn an_unknown_job_exits_1_and_a_short_id_is_named_as_one() {
    let harness = common::start().await;
    let home = tempfile::tempdir().unwrap();
    let output = against_platform(home.path(), &harness.base, ["jobs", "get", "efe33b63"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("efe33b63 not found (HTTP 404)"), "{stderr}");
    assert!(stderr.contains("whole ids only"), "{stderr}");
    let whole = "efe33b63-0000-4000-8000-000000000000";
    let output = against_platform(home.path(), &harness.base, ["jobs", "get", whole]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("whole ids only"), "{stderr}");
    harness.emulator.shutdown().await;
}

/// `earshot ARGS --url URL --api-key KEY` with a home of its own, to its
/// end.
async fn against_platform<S: AsRef<std::ffi::OsStr>>(
    home: &Path,
    url: &str,
    args: impl IntoIterator<Item = S>,
) -> std::process::Output {
    finish(
        isolated(home)
            .args(args)
            .args(["--url", url, "--api-key", common::API_KEY]),
    )
    .await
}
