//! Secrets at the command line, run through the real binary: keys the
//! emulator refuses, secrets passed by environment or file instead of argv,
//! and capture files that keep secrets off disk.

use crate::common;
use crate::common::cli::{
    earshot_async as earshot, finish, listening_url_and_lines, next_line, text,
};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use earshot_core::receiver::listen::{self, ListenConfig};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig, StartError};

// ---------------------------------------------------------------------------
// Item: the emulator refuses an empty or unprintable API key
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_emulator_refuses_empty_whitespace_and_control_character_keys() {
    for key in ["", "   ", "emu_key\n", "emu\u{1}key", "emu key"] {
        let output = finish(earshot().args(["emulator", "--api-key", key])).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{key:?}: {stderr}");
        assert!(stderr.contains("--api-key"), "{key:?}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{key:?} served: {:?}",
            output.stdout
        );
    }
    let output = finish(earshot().args(["emulator", "--api-key", ""])).await;
    assert!(text(&output.stderr).contains("empty"), "{output:?}");
}

#[tokio::test]
async fn an_emulator_with_an_empty_key_does_not_start() {
    let config = EmulatorConfig::new(SecretString::new(""));
    let refused = Emulator::start("127.0.0.1:0".parse().unwrap(), config).await;
    let error = refused.expect_err("an empty key is refused");
    assert!(matches!(error, StartError::InvalidApiKey(_)), "{error:?}");
}

#[tokio::test]
async fn an_empty_authorization_header_never_authenticates() {
    let harness = common::start().await;
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    let url = harness.emulator.url();
    for path in ["v1/webhook-subscriptions", "v2/transcript/abc"] {
        let answer = http
            .get(url.join(path).unwrap())
            .header("authorization", "")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 401, "{path}");
    }
    for path in ["v1/transcribe", "v1/transcribe/live"] {
        let answer = http
            .post(url.join(path).unwrap())
            .header("authorization", "")
            .body(common::wav(0.5, Some("hello")))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 401, "{path}");
    }
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// Item: every secret by environment variable or file, none on argv
// ---------------------------------------------------------------------------

const CURRENT: &str = "whsec_cli_current_0123456789abcdefghijklmn";
const PREVIOUS: &str = "whsec_cli_previous_0123456789abcdefghijklm";
const AUTH: &str = "X-Webhook-Token: cli-token-value-0123456789";
const AUTH_VALUE: &str = "cli-token-value-0123456789";
const T: &str = "1795300000";

/// Writes `text` to `name` in `dir`; its path.
fn write(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The current and previous webhook secrets and the auth header, as files
/// in `dir` (the first and last with a newline when `newlines`: a file
/// written by `echo`).
fn secret_files(dir: &Path, newlines: bool) -> [PathBuf; 3] {
    let end = if newlines { "\n" } else { "" };
    [
        write(dir, "current", format!("{CURRENT}{end}").as_bytes()),
        write(dir, "previous", PREVIOUS.as_bytes()),
        write(dir, "auth", format!("{AUTH}{end}").as_bytes()),
    ]
}

/// Names the three [`secret_files`] with their flags.
fn secrets_from_files(
    command: &mut tokio::process::Command,
    [current, previous, auth]: &[PathBuf; 3],
) {
    command
        .arg("--secret-file")
        .arg(current)
        .arg("--previous-secret-file")
        .arg(previous)
        .arg("--auth-header-file")
        .arg(auth);
}

/// The same three secrets in their environment variables.
fn secrets_from_env(command: &mut tokio::process::Command) {
    command
        .env("EARSHOT_WEBHOOK_SECRET", CURRENT)
        .env("EARSHOT_PREVIOUS_WEBHOOK_SECRET", PREVIOUS)
        .env("EARSHOT_AUTH_HEADER", AUTH);
}

/// No argument of a run carries a secret (what `ps` would show).
fn assert_argv_clean(args: &[&std::ffi::OsStr]) {
    for arg in args {
        let arg = arg.to_string_lossy();
        for secret in [CURRENT, PREVIOUS, AUTH_VALUE] {
            assert!(!arg.contains(secret), "secret on argv: {arg}");
        }
    }
}

/// The command as `ps` shows it, after checking that no argument is secret.
fn checked(command: &mut tokio::process::Command) -> &mut tokio::process::Command {
    assert_argv_clean(&command.as_std().get_args().collect::<Vec<_>>());
    command
}

#[tokio::test]
async fn sign_and_verify_take_the_secrets_from_the_environment_or_files() {
    let dir = tempfile::tempdir().unwrap();
    let body = write(dir.path(), "body.json", b"{\"event\":\"call.ended\"}");
    let current_file = write(dir.path(), "current", format!("{CURRENT}\n").as_bytes());
    let previous_file = write(dir.path(), "previous", format!("{PREVIOUS}\r\n").as_bytes());
    let expected = earshot_core::signature::sign(
        PREVIOUS.as_bytes(),
        1_795_300_000,
        b"{\"event\":\"call.ended\"}",
    );

    // sign: environment, then file.
    let by_env = finish(
        checked(
            earshot()
                .args(["sign", "--timestamp", T, "--body-file"])
                .arg(&body),
        )
        .env("EARSHOT_WEBHOOK_SECRET", PREVIOUS),
    )
    .await;
    assert_eq!(by_env.status.code(), Some(0), "{by_env:?}");
    assert_eq!(text(&by_env.stdout).trim(), expected);
    let by_file = finish(checked(
        earshot()
            .args(["sign", "--timestamp", T, "--body-file"])
            .arg(&body)
            .arg("--secret-file")
            .arg(&previous_file),
    ))
    .await;
    assert_eq!(by_file.status.code(), Some(0), "{by_file:?}");
    assert_eq!(text(&by_file.stdout).trim(), expected);
    // Neither: exit 2, naming the preferred forms.
    let neither = finish(earshot().args(["sign", "--body-file"]).arg(&body)).await;
    assert_eq!(neither.status.code(), Some(2), "{neither:?}");
    assert!(
        text(&neither.stderr).contains("--secret-file"),
        "{neither:?}"
    );

    // verify: the body was signed with the previous secret, so it is valid
    // only when the previous secret arrives too.
    let verify = || {
        let mut command = earshot();
        command
            .args([
                "verify",
                "--json",
                "--now",
                T,
                "--header",
                &expected,
                "--body-file",
            ])
            .arg(&body);
        command
    };
    let output = finish(
        checked(&mut verify())
            .env("EARSHOT_WEBHOOK_SECRET", CURRENT)
            .env("EARSHOT_PREVIOUS_WEBHOOK_SECRET", PREVIOUS),
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["matched"], "previous");
    let output = finish(checked(
        verify()
            .arg("--secret-file")
            .arg(&current_file)
            .arg("--previous-secret-file")
            .arg(&previous_file),
    ))
    .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // The current secret alone does not verify it.
    let output = finish(checked(verify().arg("--secret-file").arg(&current_file))).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    for output in [&by_env, &by_file, &output] {
        let shown = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(
            !shown.contains(CURRENT) && !shown.contains(PREVIOUS),
            "{shown}"
        );
    }
}

/// Starts `command` (an `earshot listen`): the child, its URL and the
/// later lines of its stdout.
fn spawn_listen(
    command: &mut tokio::process::Command,
) -> (tokio::process::Child, String, Receiver<String>) {
    let mut child = checked(command.arg("--trust-any-source"))
        .spawn()
        .expect("start earshot listen");
    let (url, lines) = listening_url_and_lines(&mut child);
    (child, url, lines)
}

/// POSTs a voice-agent event signed with `secret` and a pre-recorded
/// webhook carrying `token`: the two statuses.
async fn deliver_both(url: &str, secret: &str, token: &str) -> (u16, u16) {
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    let body = format!(
        "{{\"event_id\":\"evt-{}\",\"event\":\"call.ended\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"call\":{{\"call_id\":\"c\"}}}}",
        uuid::Uuid::new_v4().simple()
    );
    let header = earshot_core::signature::sign(
        secret.as_bytes(),
        chrono::Utc::now().timestamp(),
        body.as_bytes(),
    );
    let signed = http
        .post(url)
        .header("content-type", "application/json")
        .header("X-SVC-Signature", header)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    let prerecorded = http
        .post(url)
        .header("content-type", "application/json")
        .header("x-webhook-token", token)
        .body(format!(
            "{{\"transcript_id\":\"{}\",\"status\":\"completed\"}}",
            uuid::Uuid::new_v4()
        ))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    (signed, prerecorded)
}

#[tokio::test]
async fn listen_takes_its_secrets_from_the_environment_or_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = secret_files(dir.path(), true);
    let mut by_env = earshot();
    secrets_from_env(by_env.arg("listen"));
    let mut by_file = earshot();
    secrets_from_files(by_file.arg("listen"), &files);
    for command in [&mut by_env, &mut by_file] {
        let (child, url, _) = spawn_listen(command);
        assert_eq!(deliver_both(&url, CURRENT, AUTH_VALUE).await, (200, 200));
        assert_eq!(
            deliver_both(&url, PREVIOUS, "wrong token").await,
            (200, 401)
        );
        assert_eq!(
            deliver_both(&url, "whsec_not_configured_0123456789abcdefgh", AUTH_VALUE).await,
            (401, 200)
        );
        drop(child);
    }
}

#[tokio::test]
async fn check_receiver_takes_its_secrets_from_the_environment_or_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = secret_files(dir.path(), false);
    let config = ListenConfig {
        auth_header: Some(("x-webhook-token".to_owned(), SecretString::new(AUTH_VALUE))),
        ..ListenConfig::with_secrets(
            SecretString::new(CURRENT),
            Some(SecretString::new(PREVIOUS)),
        )
    };
    let (listener, _inbox) = listen::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("listener starts");
    let url = listener.url();

    let run = async |kind: &str, setup: &dyn Fn(&mut tokio::process::Command)| {
        let mut command = earshot();
        command.args([
            "check-receiver",
            &url,
            "--json",
            "--timeout",
            "5",
            "--kind",
            kind,
        ]);
        setup(&mut command);
        let output = finish(checked(&mut command)).await;
        let report: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("a JSON report: {output:?}"));
        (output, report)
    };
    let env: &dyn Fn(&mut tokio::process::Command) = &secrets_from_env;
    let files: &dyn Fn(&mut tokio::process::Command) =
        &|command| secrets_from_files(command, &files);
    for setup in [env, files] {
        let (output, report) = run("agents", setup).await;
        let previous = case(&report, "previous-secret");
        assert_eq!(previous["outcome"], "pass", "{output:?}");
        assert_eq!(report["skipped"], 0, "{report}");
        let (output, report) = run("prerecorded", setup).await;
        assert_eq!(report["skipped"], 0, "{output:?}");
        assert_eq!(report["failed"], 0, "{report}");
    }
    listener.stop().await;
}

/// The case called `name` of a check-receiver JSON report.
fn case<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|case| case["name"] == name))
        .unwrap_or_else(|| panic!("no case {name}: {report}"))
}

#[tokio::test]
async fn jobs_submit_takes_the_webhook_auth_from_the_environment_or_a_file() {
    let harness = common::start().await;
    let receiver = common::Receiver::healthy().await;
    let dir = tempfile::tempdir().unwrap();
    let audio = write(dir.path(), "a.wav", &common::wav(0.5, None));
    let auth_file = write(dir.path(), "auth", format!("{AUTH}\n").as_bytes());
    let submit = || {
        let mut command = earshot();
        command
            .env("EARSHOT_URL", harness.emulator.url().as_str())
            .env("EARSHOT_API_KEY", common::API_KEY)
            .args(["jobs", "submit"])
            .arg(&audio)
            .args(["--webhook-url", &format!("http://{}/hook", receiver.addr)]);
        command
    };
    let by_env = finish(checked(submit().env("EARSHOT_WEBHOOK_AUTH", AUTH))).await;
    assert_eq!(by_env.status.code(), Some(0), "{by_env:?}");
    let by_file = finish(checked(submit().arg("--webhook-auth-file").arg(&auth_file))).await;
    assert_eq!(by_file.status.code(), Some(0), "{by_file:?}");
    let tokens = common::eventually(Duration::from_secs(10), "two webhooks", || async {
        let captured = receiver.captured();
        (captured.len() >= 2).then(|| {
            captured
                .iter()
                .map(|request| request.header("x-webhook-token").to_owned())
                .collect::<Vec<_>>()
        })
    })
    .await;
    assert_eq!(tokens, [AUTH_VALUE, AUTH_VALUE]);
    harness.emulator.shutdown().await;
}

// ---------------------------------------------------------------------------
// Item: captures keep secrets off disk and are private to their owner
// ---------------------------------------------------------------------------

const BEARER: &str = "Bearer sk_live_capture_0123456789abcdefghij";

/// Runs `earshot listen --json --capture FILE [extra]` with its secrets
/// from the environment, sends a signed delivery carrying an
/// `Authorization` header and a pre-recorded webhook carrying the auth
/// header, and returns the two JSON lines it printed.
async fn capture_two(file: &Path, extra: &[&str]) -> Vec<String> {
    let mut command = earshot();
    command
        .args(["listen", "--json", "--capture"])
        .arg(file)
        .args(extra)
        .env("EARSHOT_WEBHOOK_SECRET", CURRENT)
        .env("EARSHOT_AUTH_HEADER", AUTH);
    let (child, url, lines) = spawn_listen(&mut command);
    let http = earshot_http::client_builder().no_proxy().build().unwrap();
    let body = r#"{"event_id":"evt-capture-1","event":"call.ended","timestamp":"2026-01-01T00:00:00Z","call":{"call_id":"c"}}"#;
    let header = earshot_core::signature::sign(
        CURRENT.as_bytes(),
        chrono::Utc::now().timestamp(),
        body.as_bytes(),
    );
    let status = http
        .post(&url)
        .header("content-type", "application/json")
        .header("X-SVC-Signature", header)
        .header("authorization", BEARER)
        .body(body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 200);
    let status = http
        .post(&url)
        .header("content-type", "application/json")
        .header("X-Webhook-Token", AUTH_VALUE)
        .body(r#"{"transcript_id":"5f2b8c1e-7d3a-4e6b-9c0f-1a2b3c4d5e6f","status":"completed"}"#)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 200);
    let printed = vec![next_line(&lines), next_line(&lines)];
    drop(child);
    printed
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn captures_are_0600_and_hold_fingerprints_not_secret_headers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("capture.jsonl");
    let printed = capture_two(&file, &[]).await;
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    let stored = std::fs::read_to_string(&file).unwrap();
    for text in [stored.as_str(), &printed.join("\n")] {
        assert!(!text.contains(AUTH_VALUE), "auth header value kept: {text}");
        assert!(
            !text.contains("sk_live_capture"),
            "bearer token kept: {text}"
        );
        assert!(text.contains("cli-…(26 chars)"), "no fingerprint: {text}");
        assert!(text.contains("Bear…(43 chars)"), "no fingerprint: {text}");
        assert!(text.contains("x-svc-signature"), "{text}");
    }
    // The signature and the exact body are kept: the replay still verifies.
    let output = finish(
        earshot()
            .arg("verify")
            .arg("--capture")
            .arg(&file)
            .env("EARSHOT_WEBHOOK_SECRET", CURRENT),
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[tokio::test]
async fn capture_secrets_keeps_the_values_and_the_file_still_0600() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("capture.jsonl");
    let printed = capture_two(&file, &["--capture-secrets"]).await;
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    let stored = std::fs::read_to_string(&file).unwrap();
    for text in [stored.as_str(), &printed.join("\n")] {
        assert!(text.contains(AUTH_VALUE), "{text}");
        assert!(text.contains(BEARER), "{text}");
    }
}

#[tokio::test]
async fn a_previous_secret_only_in_the_environment_does_not_stop_a_prerecorded_listener() {
    let mut command = earshot();
    command
        .arg("listen")
        .env("EARSHOT_AUTH_HEADER", AUTH)
        .env("EARSHOT_PREVIOUS_WEBHOOK_SECRET", PREVIOUS);
    let (child, url, _) = spawn_listen(&mut command);
    assert_eq!(deliver_both(&url, PREVIOUS, AUTH_VALUE).await.1, 200);
    drop(child);
    // Given on the command line, it needs the current secret.
    let dir = tempfile::tempdir().unwrap();
    let previous_file = write(dir.path(), "previous", PREVIOUS.as_bytes());
    let output = finish(
        earshot()
            .args(["listen", "--previous-secret-file"])
            .arg(&previous_file)
            .env("EARSHOT_AUTH_HEADER", AUTH),
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        text(&output.stderr).contains("needs the current one"),
        "{output:?}"
    );
}
