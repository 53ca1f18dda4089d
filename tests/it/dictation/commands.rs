//! The `dictate`, `transcribe` and `probe` commands, run as the binary
//! against the emulator.

use serde_json::{Value, json};

use super::{CLEANED, LIVE, UTTERANCE, count, earshot, harness, requests_to, wav_file};

#[tokio::test]
async fn dictate_transcribe_and_probe_commands() {
    let h = harness().await;
    let (_dir, file) = wav_file(2.0, Some(UTTERANCE));
    let path = file.to_str().unwrap();

    let output = earshot(&h, &["dictate", path, "--endpoint", "stream"]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("rewrite: {CLEANED}")), "{stdout}");
    assert_eq!(count(&h, "POST /v1/transcribe/stream", 200).await, 1);

    let output = earshot(&h, &["dictate", path, "--json", "--instruction", "a list"]).await;
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        json["llm_response"],
        format!("- {}", CLEANED.trim_end_matches('.'))
    );

    // PCM without a sample rate: exit 2, nothing sent.
    let before = requests_to(&h, LIVE).await;
    let output = earshot(&h, &["dictate", "-", "--pcm", "--channels", "1"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("`sample_rate`"));
    assert_eq!(requests_to(&h, LIVE).await, before);

    let output = earshot(&h, &["transcribe", path, "--model", "m-1"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{UTTERANCE}\n")
    );

    let output = earshot(&h, &["probe", path]).await;
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    for region in ["global", "us", "eu"] {
        assert!(
            table
                .lines()
                .any(|line| line.starts_with(region) && line.matches("200 ok").count() == 2),
            "{table}"
        );
    }
    let output = earshot(&h, &["probe", path, "--json"]).await;
    let probes: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(probes.as_array().map(Vec::len), Some(6));
    assert!(
        probes
            .as_array()
            .unwrap()
            .iter()
            .all(|probe| probe["ok"] == true)
    );

    // A failing region shows in the table and the exit code.
    h.arm_fault(json!({"path_prefix": "/transcribe", "status": 503}))
        .await;
    let output = earshot(&h, &["probe", path]).await;
    assert_eq!(output.status.code(), Some(1));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("503 FAILED"), "{table}");
}
