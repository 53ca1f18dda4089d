//! Dictation benchmark: what streaming the upload buys, and what it costs.
//!
//! 1. Latency from the end of capture to the answer, for a PCM capture
//!    (16 kHz mono 16-bit) produced in real time, 20 ms frames:
//!    - streaming: the capture is piped into the request as it is made
//!      (`AudioSource::reader`), so the server transcribes while it
//!      arrives;
//!    - buffered: the whole capture is kept first, then sent.
//!
//!    The emulator runs in-process at real time (`--time-scale 1`): it
//!    transcribes at 100× real time as bytes arrive, then finalises (50 ms)
//!    and rewrites (100 ms). Its own `request_time_ms` / `sync_time_ms` are
//!    shown for reference.
//! 2. Peak RSS (`VmHWM`) of the release `earshot dictate FILE` process for
//!    a short and a 120 s WAV, and for the 120 s WAV streamed on stdin: the
//!    audio is streamed from disk, so the peak must not grow with it.
//!
//! Run: `cargo build --release && cargo run --release --example
//! dictation_latency [CAPTURE_SECONDS]` (default 60: the run takes a
//! little over a minute, as the capture is real time).

use std::path::Path;
use std::time::{Duration, Instant};

mod support;

use earshot::api::dictation::{AudioSource, DictationRequest};
use earshot::api::types::dictation::{AudioFormat, Dictation, DictationConfig};
use earshot::api::{Client, Endpoints};
use earshot::emulator::{Emulator, EmulatorConfig};
use earshot::redact::SecretString;
use tokio::io::AsyncWriteExt;

const KEY: &str = "bench_key_0123456789";
const RATE: u32 = 16_000;
/// One 20 ms frame of 16 kHz mono 16-bit audio.
const FRAME: usize = (RATE as usize / 50) * 2;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u32 = std::env::args().nth(1).map_or(Ok(60), |a| a.parse())?;
    let emulator = Emulator::start(
        "127.0.0.1:0".parse()?,
        EmulatorConfig::new(SecretString::new(KEY)),
    )
    .await?;
    let client = Client::new(Endpoints::all_at(&emulator.url()), SecretString::new(KEY))?;
    let request = DictationRequest {
        config: DictationConfig {
            sample_rate: Some(RATE),
            channels: Some(1),
            ..DictationConfig::default()
        },
        format: AudioFormat::Pcm,
        ..DictationRequest::default()
    };

    println!(
        "Latency from the end of a {seconds} s real-time PCM capture (16 kHz mono 16-bit) to the answer"
    );
    let (stream_latency, stream_answer) = streaming(&client, &request, seconds).await?;
    let (buffer_latency, buffer_answer) = buffered(&client, &request, seconds).await?;
    println!();
    println!(
        "| mode      | end of capture → answer | server request_time_ms | server sync_time_ms |"
    );
    println!(
        "|-----------|-------------------------|------------------------|---------------------|"
    );
    for (mode, latency, answer) in [
        ("streaming", stream_latency, &stream_answer),
        ("buffered", buffer_latency, &buffer_answer),
    ] {
        println!(
            "| {mode:<9} | {:>20.1} ms | {:>22.1} | {:>19.1} |",
            latency.as_secs_f64() * 1000.0,
            answer.request_time_ms.unwrap_or(f64::NAN),
            answer.sync_time_ms.unwrap_or(f64::NAN),
        );
    }
    println!(
        "(server times include the transcription work that, when streaming, overlapped the capture)"
    );

    println!();
    println!("Peak RSS of `earshot dictate` (release binary)");
    let binary = support::release_binary()?;
    let dir = tempfile::tempdir()?;
    let short = dir.path().join("short.wav");
    let long = dir.path().join("long.wav");
    std::fs::write(&short, wav(5))?;
    std::fs::write(&long, wav(120))?;
    println!();
    println!("| audio                  | size     | peak RSS (VmHWM) |");
    println!("|------------------------|----------|------------------|");
    for (label, path, stdin) in [
        ("5 s WAV file", &short, false),
        ("120 s WAV file", &long, false),
        ("120 s WAV on stdin", &long, true),
    ] {
        let peak = peak_rss(&binary, &emulator, path, stdin).await?;
        println!(
            "| {label:<22} | {:>5.1} MB | {:>13} kB |",
            std::fs::metadata(path)?.len() as f64 / 1e6,
            peak
        );
    }
    emulator.shutdown().await;
    Ok(())
}

/// Pipes a real-time capture into the request as it is made.
async fn streaming(
    client: &Client,
    request: &DictationRequest,
    seconds: u32,
) -> Result<(Duration, Dictation), Box<dyn std::error::Error>> {
    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    let capture = tokio::spawn(async move {
        let frame = vec![0u8; FRAME];
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        for _ in 0..seconds * 50 {
            tick.tick().await;
            writer.write_all(&frame).await?;
        }
        writer.shutdown().await?;
        Ok::<Instant, std::io::Error>(Instant::now())
    });
    let answer = client.dictate(request, AudioSource::reader(reader)).await?;
    let answered = Instant::now();
    let capture_end = capture.await??;
    println!("  streaming: done");
    Ok((answered.duration_since(capture_end), answer))
}

/// Keeps the whole capture, then sends it. The capture itself is not
/// waited for: only what happens after its end is measured.
async fn buffered(
    client: &Client,
    request: &DictationRequest,
    seconds: u32,
) -> Result<(Duration, Dictation), Box<dyn std::error::Error>> {
    let capture = vec![0u8; FRAME * 50 * seconds as usize];
    let capture_end = Instant::now();
    let answer = client
        .dictate(request, AudioSource::reader(std::io::Cursor::new(capture)))
        .await?;
    println!("  buffered: done");
    Ok((capture_end.elapsed(), answer))
}

/// 16 kHz mono 16-bit silence with a spoken-looking `ICMT`.
fn wav(seconds: u32) -> Vec<u8> {
    let data = vec![0u8; RATE as usize * 2 * seconds as usize];
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&(RATE * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

/// Runs `earshot dictate` and samples its `VmHWM` until it exits.
async fn peak_rss(
    binary: &Path,
    emulator: &Emulator,
    wav: &Path,
    stdin: bool,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("dictate")
        .arg(if stdin { Path::new("-") } else { wav })
        .env("EARSHOT_CONFIG", wav.with_extension("none.toml"))
        .env("EARSHOT_URL", emulator.url().as_str())
        .env("EARSHOT_API_KEY", KEY)
        .stdout(std::process::Stdio::null());
    if stdin {
        command.stdin(std::fs::File::open(wav)?);
    }
    let mut child = command.spawn()?;
    let pid = child.id().ok_or("the child has no pid")?;
    let mut peak = 0;
    loop {
        if let Some(hwm) = support::vm_hwm_kb(&pid.to_string()) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                return Err(format!("earshot dictate failed: {status}").into());
            }
            return Ok(peak);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
