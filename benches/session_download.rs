//! Throughput and memory of `earshot sessions get --download`.
//!
//! Starts the emulator in-process with every recording MIB mebibytes
//! (`EmulatorConfig::recording_bytes`; default 100), ends a call, waits for
//! its artifacts to be listed, then runs the release binary
//! `earshot sessions get ID --download DIR` as a child and samples its peak
//! resident memory (VmHWM) from /proc until it exits. References taken in
//! the same run: the same command without `--download` (its baseline
//! memory), and the same recording read in-process by reqwest into nothing
//! (the loopback's own throughput).
//!
//! Run: `cargo build --release && cargo bench --bench session_download -- [MIB]`

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig, TimeScale};

const KEY: &str = "bench_key_0123456789";

/// A child's wall time and peak RSS (kB), sampled every 10 ms.
fn measure(command: &mut Command) -> Result<(Duration, u64, bool), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id().to_string();
    let mut peak_kb = 0u64;
    let status = loop {
        if let Some(kb) = support::vm_hwm_kb(&pid) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok((started.elapsed(), peak_kb, status.success()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: u64 = support::args().next().map_or(Ok(100), |a| a.parse())?;
    let size = mib * 1024 * 1024;
    let binary = support::release_binary()?;

    // Scale 0.05: artifacts listed after 4.5 s, links valid for 3 min.
    let mut config = EmulatorConfig::new(SecretString::new(KEY));
    config.time_scale = TimeScale::new(0.05).ok_or("scale")?;
    config.recording_bytes = Some(size);
    let emulator = Emulator::start("127.0.0.1:0".parse()?, config).await?;
    let base = emulator.url().as_str().trim_end_matches('/').to_owned();
    let http = earshot_http::client_builder().no_proxy().build()?;
    let call: serde_json::Value = http
        .post(format!("{base}/_emulator/calls"))
        .json(&serde_json::json!({ "outcome": "connected" }))
        .send()
        .await?
        .json()
        .await?;
    let call_id = call["call_id"].as_str().ok_or("no call_id")?.to_owned();
    http.post(format!("{base}/_emulator/calls/{call_id}/end"))
        .send()
        .await?;
    let recording_url = loop {
        let record: serde_json::Value = http
            .get(format!("{base}/v1/sessions/{call_id}"))
            .header("Authorization", KEY)
            .send()
            .await?
            .json()
            .await?;
        let url = record["artifacts"]
            .as_array()
            .and_then(|list| list.iter().find(|a| a["kind"] == "recording"))
            .and_then(|a| a["url"].as_str())
            .map(str::to_owned);
        if let Some(url) = url {
            break url;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Reference: the loopback read into nothing, in-process.
    let started = Instant::now();
    let mut response = http.get(&recording_url).send().await?;
    let mut read = 0u64;
    while let Some(chunk) = response.chunk().await? {
        read += chunk.len() as u64;
    }
    let reference = started.elapsed();

    let dir = std::env::temp_dir().join(format!("earshot-session-download-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let command = |download: bool| {
        let mut command = Command::new(&binary);
        command
            .args(["sessions", "get", &call_id, "--store"])
            .arg(dir.join("earshot.db"))
            .env("EARSHOT_URL", &base)
            .env("EARSHOT_API_KEY", KEY)
            .env("EARSHOT_CONFIG", dir.join("none.toml"));
        if download {
            command.arg("--download").arg(&dir).arg("--force");
        }
        command
    };
    let (_, baseline_kb, ok) = measure(&mut command(false))?;
    if !ok {
        return Err("`sessions get` without --download failed".into());
    }
    let (took, peak_kb, ok) = measure(&mut command(true))?;
    if !ok {
        return Err("`sessions get --download` failed".into());
    }
    let written = std::fs::metadata(dir.join(format!("{call_id}-recording.wav")))?.len();
    let _ = std::fs::remove_dir_all(&dir);
    emulator.shutdown().await;

    let rate = |bytes: u64, took: Duration| bytes as f64 / (1024.0 * 1024.0) / took.as_secs_f64();
    println!("recording: {written} bytes written (served {read})");
    println!(
        "sessions get --download: {:.2} s, {:.0} MiB/s (whole command: start, record, deliveries, both files)",
        took.as_secs_f64(),
        rate(written, took)
    );
    println!(
        "reference, reqwest into nothing in-process: {:.2} s, {:.0} MiB/s; ratio {:.2}",
        reference.as_secs_f64(),
        rate(read, reference),
        rate(written, took) / rate(read, reference)
    );
    println!(
        "peak RSS: {:.1} MiB downloading, {:.1} MiB without --download (difference {:.1} MiB for a {mib} MiB file)",
        peak_kb as f64 / 1024.0,
        baseline_kb as f64 / 1024.0,
        (peak_kb as f64 - baseline_kb as f64) / 1024.0
    );
    Ok(())
}
