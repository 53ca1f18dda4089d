//! `earshot emulator`: the platform emulator, headless, until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::process::ExitCode;

use color_eyre::eyre::WrapErr;

use crate::emulator::{Emulator, EmulatorConfig, TimeScale};
use crate::redact::SecretString;

#[derive(clap::Args, Debug)]
pub struct EmulatorArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The API key the emulated account accepts (default: generated).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Accept subscription URLs on private or loopback addresses, over http.
    #[arg(long)]
    pub allow_private_urls: bool,
    /// Multiply every platform duration (deadlines, retries, delays) by F.
    #[arg(long, default_value = "1", value_name = "F")]
    pub time_scale: TimeScale,
    /// Pre-recorded transcription jobs processing at once (more wait, FIFO).
    #[arg(long, default_value = "5", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Pre-recorded API requests per five minutes before 403.
    #[arg(long, default_value = "20000", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub http_limit: u32,
    /// GET requests per minute for one transcript before 429.
    #[arg(long, default_value = "60", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub poll_limit: u32,
}

pub async fn run(args: EmulatorArgs) -> color_eyre::Result<ExitCode> {
    // Headless: the log goes to stderr (stdout carries the two lines
    // scripts read). `EARSHOT_LOG=earshot=debug` shows every attempt.
    let filter = tracing_subscriber::EnvFilter::try_from_env("EARSHOT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("earshot=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let api_key = args
        .api_key
        .unwrap_or_else(|| format!("emu_{}", uuid::Uuid::new_v4().simple()));
    let mut config = EmulatorConfig::new(SecretString::new(api_key.clone()));
    config.allow_private_urls = args.allow_private_urls;
    config.time_scale = args.time_scale;
    config.concurrency = args.concurrency;
    config.http_limit = args.http_limit;
    config.poll_limit = args.poll_limit;
    let emulator = Emulator::start(args.listen, config)
        .await
        .wrap_err_with(|| format!("could not listen on {}", args.listen))?;
    // Scripts read these two lines; keep their shape.
    println!("listening on http://{}", emulator.addr());
    println!("api key: {api_key}");
    eprintln!(
        "try: EARSHOT_URL={} EARSHOT_API_KEY={api_key} earshot subs list",
        emulator.url()
    );
    shutdown_signal().await?;
    emulator.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() -> color_eyre::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result?,
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}
