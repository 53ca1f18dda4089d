//! Push lag of `earshot jobs watch --listen`, against polling alone in the
//! same run.
//!
//! Starts the emulator in-process (real time, every job processing at
//! once), then twice submits JOBS transcript jobs of 20 s of audio (5 s of
//! processing) and runs the release binary `earshot jobs watch --json` on
//! them as a child: once polling only, once with `--listen` and the jobs'
//! webhooks pointed at it. Each `completed` line is stamped when the
//! benchmark reads it; the lag is that stamp minus the record's `finished_at`
//! (when the emulator ended the job and sent the webhook; same clock).
//! Reports lag p50/p95/max and GETs per job for both.
//!
//! Run: `cargo build --release && cargo bench --bench push_lag -- [JOBS]`

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

mod support;

use chrono::{DateTime, Utc};
use earshot_core::api::types::prerecorded::NewTranscript;
use earshot_core::api::{Client, Endpoints};
use earshot_core::redact::SecretString;
use earshot_emulator::{Emulator, EmulatorConfig};

const KEY: &str = "bench_key_0123456789";
const TOKEN: &str = "push-lag-token-0123456789";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = support::args().next().map_or(Ok(200), |a| a.parse())?;
    let binary = support::release_binary()?;
    let mut config = EmulatorConfig::new(SecretString::new(KEY));
    config.http_limit = 1_000_000;
    config.concurrency = 10_000;
    config.allow_private_urls = true;
    let emulator = Emulator::start("127.0.0.1:0".parse()?, config).await?;
    let client = Client::new(Endpoints::all_at(&emulator.url()), SecretString::new(KEY))?
        .with_url_policy(earshot_core::api::validate::UrlPolicy::AnyHttp);
    let http = earshot_http::client_builder().no_proxy().build()?;
    let dir = std::env::temp_dir().join(format!("earshot-push-lag-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("auth"), format!("X-Push-Token: {TOKEN}"))?;
    let audio = dir.join("clip.wav");
    std::fs::write(&audio, support::silent_wav(20))?;
    let upload = client.upload_file(&audio, |_| {}).await?;

    println!("earshot jobs watch, {jobs} jobs of 5 s processing, emulator in real time");
    println!(
        "  {:<10} {:>9} {:>9} {:>9} {:>12}",
        "mode", "lag p50", "lag p95", "lag max", "GETs per job"
    );
    for pushes in [false, true] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut ids = Vec::with_capacity(jobs);
        for _ in 0..jobs {
            let mut request = NewTranscript {
                audio_url: upload.upload_url.clone(),
                ..NewTranscript::default()
            };
            if pushes {
                request.webhook_url = Some(format!("http://127.0.0.1:{port}/"));
                request.webhook_auth_header_name = Some("X-Push-Token".into());
                request.webhook_auth_header_value = Some(SecretString::new(TOKEN));
            }
            ids.push(client.create_transcript(&request).await?.id);
        }
        let before = gets(&http, &emulator).await?;
        let mut command = Command::new(&binary);
        command
            .args(["jobs", "watch", "--json"])
            .args(&ids)
            .env("EARSHOT_URL", emulator.url().as_str())
            .env("EARSHOT_API_KEY", KEY)
            .env_remove("EARSHOT_CONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if pushes {
            command
                .args([
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--auth-header-file",
                ])
                .arg(dir.join("auth"));
        }
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut seen: Vec<(String, DateTime<Utc>)> = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let at = Utc::now();
                let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if value["status"] == "completed"
                    && let Some(id) = value["id"].as_str()
                {
                    seen.push((id.to_owned(), at));
                }
            }
            seen
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(600);
        while child.try_wait()?.is_none() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        let seen = reader.join().map_err(|_| "reader panicked")?;
        let used = gets(&http, &emulator).await? - before;
        let mut lags = Vec::with_capacity(seen.len());
        for (id, at) in &seen {
            let record = client.get_transcript(id).await?;
            if let Some(finished) = record
                .extra
                .get("finished_at")
                .and_then(|value| value.as_str())
                .and_then(|text| text.parse::<DateTime<Utc>>().ok())
            {
                lags.push((*at - finished).num_microseconds().unwrap_or(0) as f64 / 1e6);
            }
        }
        lags.sort_by(f64::total_cmp);
        let pick = |p: f64| {
            lags.get(((lags.len().max(1) - 1) as f64 * p).round() as usize)
                .map_or("—".to_owned(), |lag| format!("{:.3} s", lag))
        };
        println!(
            "  {:<10} {:>9} {:>9} {:>9} {:>12.2}   ({} of {jobs} seen completed)",
            if pushes { "--listen" } else { "polling" },
            pick(0.5),
            pick(0.95),
            pick(1.0),
            used as f64 / jobs as f64,
            seen.len(),
        );
    }
    emulator.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `GET /v2/transcript/{id}` answered so far (any status).
async fn gets(http: &reqwest::Client, emulator: &Emulator) -> Result<u64, reqwest::Error> {
    let stats: serde_json::Value = http
        .get(format!("{}_emulator/stats", emulator.url()))
        .send()
        .await?
        .json()
        .await?;
    let route = &stats["by_route"]["GET /v2/transcript/{id}"];
    Ok(route
        .as_object()
        .map_or(0, |codes| codes.values().filter_map(|n| n.as_u64()).sum()))
}
