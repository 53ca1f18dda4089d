//! Secrets at the command line, run through the real binary: keys the
//! emulator refuses, secrets passed by environment or file instead of argv,
//! and capture files that keep secrets off disk.

mod common;

use std::process::{Output, Stdio};
use std::time::Duration;

use earshot::emulator::{Emulator, EmulatorConfig};
use earshot::redact::SecretString;

/// The binary with no connection or secret settings inherited from the
/// environment of whoever runs the tests.
fn earshot() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_earshot"));
    for name in [
        "EARSHOT_URL",
        "EARSHOT_API_KEY",
        "EARSHOT_WEBHOOK_SECRET",
        "EARSHOT_PREVIOUS_WEBHOOK_SECRET",
        "EARSHOT_AUTH_HEADER",
        "EARSHOT_WEBHOOK_AUTH",
    ] {
        command.env_remove(name);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs to completion within 20 s (a command that should have refused its
/// input and instead serves forever fails here, not hangs).
async fn finish(command: &mut tokio::process::Command) -> Output {
    tokio::time::timeout(Duration::from_secs(20), command.output())
        .await
        .expect("the command ends within 20 s")
        .expect("run the earshot binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

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
    let error = refused.err().expect("an empty key is refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn an_empty_authorization_header_never_authenticates() {
    let harness = common::start().await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
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
