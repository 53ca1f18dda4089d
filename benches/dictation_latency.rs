//! Dictation benchmark: what streaming the upload buys, and what it costs.
//!
//! 1. Latency from the end of capture to the answer, for a PCM capture
//!    (16 kHz mono 16-bit) produced in real time, 20 ms frames:
//!    - streaming: the capture is piped into the request as it is made
//!      (`AudioSource::reader`), so the server transcribes while it
//!      arrives;
//!    - buffered: the whole capture is kept first, then sent.
//!
//!    Both against the same in-process emulator at real time
//!    (`--time-scale 1`), for several server timings
//!    (`EmulatorConfig::dictation_timing`, the flags `--dictation-speed-up`,
//!    `--dictation-finalize-ms`, `--dictation-rewrite-ms` of
//!    `earshot emulator`): the figure is what streaming saves against what
//!    the server spends, not one set of emulator constants. The expected
//!    saving is the transcription that overlaps the capture (audio ÷ speed);
//!    finalising and rewriting come after the last byte either way.
//! 2. Peak RSS (`VmHWM`) of the release `earshot dictate FILE` process for
//!    a short and a 120 s WAV, and for the 120 s WAV streamed on stdin: the
//!    audio is streamed from disk, so the peak must not grow with it.
//!
//! Run: `cargo build --release && cargo bench --bench
//! dictation_latency -- [CAPTURE_SECONDS]` (default 10: each timing takes two
//! real-time captures, so the run takes about two minutes).

use std::path::Path;
use std::time::{Duration, Instant};

mod support;

use earshot_core::api::dictation::{AudioSource, DictationRequest};
use earshot_core::api::types::dictation::{AudioFormat, Dictation, DictationConfig};
use earshot_core::api::{Client, Endpoints};
use earshot_core::redact::SecretString;
use earshot_emulator::{DictationTiming, Emulator, EmulatorConfig};
use tokio::io::AsyncWriteExt;

const KEY: &str = "bench_key_0123456789";
const RATE: u32 = 16_000;
/// One 20 ms frame of 16 kHz mono 16-bit audio.
const FRAME: usize = (RATE as usize / 50) * 2;

/// The server timings compared: transcription speed (× real time),
/// finalising and rewriting (ms). The second is the emulator's default.
const TIMINGS: [(u32, u64, u64); 5] = [
    (1000, 50, 100),
    (100, 50, 100),
    (20, 50, 100),
    (5, 50, 100),
    (100, 500, 1000),
];

async fn start(timing: DictationTiming) -> Result<Emulator, Box<dyn std::error::Error>> {
    let mut config = EmulatorConfig::new(SecretString::new(KEY));
    config.dictation_timing = timing;
    Ok(Emulator::start("127.0.0.1:0".parse()?, config).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u32 = support::args().next().map_or(Ok(10), |a| a.parse())?;
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
    let mut table = Vec::new();
    for (speed_up, finalize_ms, rewrite_ms) in TIMINGS {
        let timing = DictationTiming {
            speed_up,
            finalize: Duration::from_millis(finalize_ms),
            rewrite: Duration::from_millis(rewrite_ms),
        };
        let emulator = start(timing).await?;
        let client = Client::new(Endpoints::all_at(&emulator.url()), SecretString::new(KEY))?;
        let (stream_latency, stream_answer) = streaming(&client, &request, seconds).await?;
        let (buffer_latency, buffer_answer) = buffered(&client, &request, seconds).await?;
        emulator.shutdown().await;
        println!("  {speed_up}× / {finalize_ms} ms / {rewrite_ms} ms: done");
        table.push((
            timing,
            [
                ("streaming", stream_latency, stream_answer),
                ("buffered", buffer_latency, buffer_answer),
            ],
        ));
    }
    println!();
    println!(
        "| server: speed, finalise, rewrite | mode      | end of capture → answer | saved by streaming | expected (audio ÷ speed) | server request_time_ms |"
    );
    println!(
        "|----------------------------------|-----------|-------------------------|--------------------|--------------------------|------------------------|"
    );
    for (timing, rows) in &table {
        let saved = rows[1].1.as_secs_f64() - rows[0].1.as_secs_f64();
        let expected = f64::from(seconds) / f64::from(timing.speed_up);
        for (i, (mode, latency, answer)) in rows.iter().enumerate() {
            let server = format!(
                "{}×, {} ms, {} ms",
                timing.speed_up,
                timing.finalize.as_millis(),
                timing.rewrite.as_millis()
            );
            let (saved, expected) = if i == 0 {
                (
                    format!("{:.1} ms", saved * 1000.0),
                    format!("{:.1} ms", expected * 1000.0),
                )
            } else {
                (String::new(), String::new())
            };
            println!(
                "| {server:<32} | {mode:<9} | {:>20.1} ms | {saved:>18} | {expected:>24} | {:>22.1} |",
                latency.as_secs_f64() * 1000.0,
                answer.request_time_ms.unwrap_or(f64::NAN),
            );
        }
    }
    println!(
        "(server times include the transcription work that, when streaming, overlapped the capture)"
    );

    let emulator = start(DictationTiming::default()).await?;
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
    Ok((capture_end.elapsed(), answer))
}

/// 16 kHz mono 16-bit silence.
fn wav(seconds: u32) -> Vec<u8> {
    let data = vec![0u8; RATE as usize * 2 * seconds as usize];
    earshot_core::wav::encode_pcm16(RATE, 1, &data, None)
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
