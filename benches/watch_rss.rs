//! Memory benchmark for `earshot jobs watch` over 10,000 jobs.
//!
//! Starts the emulator in-process (account limits raised for the setup),
//! submits JOBS transcript jobs on one long upload (so they stay queued or
//! processing), writes their ids to a file, then runs the release binary
//! `earshot jobs watch --ids-file F --json` as a child for SECONDS and
//! samples its resident memory from /proc. Reports the child's peak RSS
//! (VmHWM), the requests it sent and the 429/403 counts the emulator saw.
//!
//! Run: `cargo build --release && cargo bench --bench watch_rss -- [JOBS] [SECONDS]`

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::api::{Client, Endpoints};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig};

const KEY: &str = "bench_key_0123456789";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = support::args();
    let jobs: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    let binary = support::release_binary()?;

    let mut config = EmulatorConfig::new(SecretString::new(KEY));
    config.http_limit = 1_000_000;
    config.concurrency = 500;
    let emulator = Emulator::start("127.0.0.1:0".parse()?, config).await?;
    let client = Client::new(Endpoints::all_at(&emulator.url()), SecretString::new(KEY))?;

    let dir = std::env::temp_dir().join(format!("earshot-watch-rss-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let audio = dir.join("long.wav");
    std::fs::write(&audio, support::silent_wav(3600))?;
    let upload = client.upload_file(&audio, |_| {}).await?;
    let started = Instant::now();
    let mut ids = std::fs::File::create(dir.join("ids"))?;
    for _ in 0..jobs {
        let job = client
            .create_transcript(&NewTranscript {
                audio_url: upload.upload_url.clone(),
                ..NewTranscript::default()
            })
            .await?;
        writeln!(ids, "{}", job.id)?;
    }
    println!(
        "submitted {jobs} jobs in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let mut child = Command::new(&binary)
        .args(["jobs", "watch", "--json", "--ids-file"])
        .arg(dir.join("ids"))
        .env("EARSHOT_URL", emulator.url().as_str())
        .env("EARSHOT_API_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id().to_string();
    let mut peak_kb = 0u64;
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if let Some(kb) = support::vm_hwm_kb(&pid) {
            peak_kb = peak_kb.max(kb);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = child.kill();
    let _ = child.wait();

    let stats: serde_json::Value = earshot_http::client_builder()
        .no_proxy()
        .build()?
        .get(format!("{}_emulator/stats", emulator.url()))
        .send()
        .await?
        .json()
        .await?;
    let polls = &stats["by_route"]["GET /v2/transcript/{id}"];
    println!("watched          {jobs} jobs for {seconds} s");
    println!(
        "peak RSS         {:.1} MB (VmHWM of `earshot jobs watch`)",
        peak_kb as f64 / 1024.0
    );
    println!("polls answered   {}", polls["200"].as_u64().unwrap_or(0));
    println!(
        "429 / 403        {} / {}",
        stats["by_status"]["429"].as_u64().unwrap_or(0),
        stats["by_status"]["403"].as_u64().unwrap_or(0)
    );
    emulator.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
