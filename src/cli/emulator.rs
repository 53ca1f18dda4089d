//! `earshot emulator`: the platform emulator, headless, until SIGINT,
//! SIGTERM or SIGHUP (exit 130, 143, 129: [`earshot_core::shutdown`]);
//! with `--replay FILE`, a capsule's deliveries instead
//! ([`super::emulator_replay`]).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::WrapErr;

use earshot_core::redact::SecretString;
use earshot_demo as scenario;
use earshot_emulator::{DictationTiming, Emulator, EmulatorConfig, TimeScale};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(clap::Args, Debug)]
pub(crate) struct EmulatorArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub(crate) listen: SocketAddr,
    /// The API key the emulated account accepts (default: generated). Not
    /// empty; printable ASCII without whitespace (exit 2 otherwise).
    #[arg(long, value_name = "KEY")]
    pub(crate) api_key: Option<String>,
    /// Accept subscription URLs on private or loopback addresses, over http.
    #[arg(long)]
    pub(crate) allow_private_urls: bool,
    /// Multiply every platform duration (deadlines, retries, delays) by F
    /// [default: 1, or 0.1 with --traffic].
    #[arg(long, value_name = "F")]
    pub(crate) time_scale: Option<TimeScale>,
    /// Pre-recorded transcription jobs processing at once (more wait, FIFO).
    #[arg(long, default_value = "5", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) concurrency: u32,
    /// Pre-recorded API requests per five minutes before 403.
    #[arg(long, default_value = "20000", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) http_limit: u32,
    /// GET requests per minute for one transcript before 429.
    #[arg(long, default_value = "60", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) poll_limit: u32,
    /// Emulated dictation: transcription speed, × real time, while the
    /// audio arrives (what streaming overlaps with the upload).
    #[arg(long, default_value = "100", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) dictation_speed_up: u32,
    /// Emulated dictation: work left once the last audio byte is in, in ms.
    #[arg(long, default_value = "50", value_name = "MS",
          value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub(crate) dictation_finalize_ms: u64,
    /// Emulated dictation: rewrite time, in ms (past the 5 s rewrite
    /// deadline it simply arrives late).
    #[arg(long, default_value = "100", value_name = "MS",
          value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub(crate) dictation_rewrite_ms: u64,
    /// Run the demo scenario against this emulator: receivers on loopback,
    /// five subscriptions, sessions, calls and jobs (implies
    /// --allow-private-urls).
    #[arg(long)]
    pub(crate) traffic: bool,
    /// With --traffic: platform events (sessions and calls) a second the
    /// traffic aims at [default: about 1.25].
    #[arg(long, value_name = "EVENTS_PER_S", requires = "traffic", value_parser = traffic_rate)]
    pub(crate) traffic_rate: Option<Duration>,
    #[command(flatten)]
    pub(crate) replay: super::emulator_replay::ReplayArgs,
}

/// `--traffic-rate`: events a second, as the pace of the conversations
/// that bring them.
pub(crate) fn traffic_rate(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(scenario::ScenarioConfig::pace_for_rate)
        .ok_or_else(|| {
            format!(
                "{text:?} is not a rate; give a positive number of events a second, at most {:.0}",
                scenario::EVENTS_PER_CONVERSATION * 1000.0
            )
        })
}

pub(crate) async fn run(args: EmulatorArgs) -> color_eyre::Result<ExitCode> {
    // Headless: the log goes to stderr (stdout carries the two lines
    // scripts read). `EARSHOT_LOG=earshot=debug` shows every attempt.
    let filter = crate::tui::logging::filter_from_env(
        Targets::new().with_target("earshot", LevelFilter::INFO),
    );
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .finish()
        .with(filter)
        .init();
    if let Some(file) = &args.replay.file {
        return super::emulator_replay::run(&args.replay, file).await;
    }
    let api_key = args
        .api_key
        .clone()
        .unwrap_or_else(|| format!("emu_{}", uuid::Uuid::new_v4().simple()));
    if let Err(error) = earshot_core::api::validate::api_key(&api_key) {
        eprintln!("earshot emulator: --api-key {}", error.rule);
        return Ok(ExitCode::from(2));
    }
    let config = emulator_config(&args, SecretString::new(api_key.clone()));
    let time_scale = config.time_scale;
    // Installed before the first line: a signal right after it is not lost.
    let stop = earshot_core::shutdown::signals()?;
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
    let demo = if args.traffic {
        Some(start_traffic(&emulator, time_scale, args.traffic_rate).await?)
    } else {
        None
    };
    let stop = stop.await;
    if let Some(demo) = demo {
        demo.stop();
    }
    emulator.shutdown().await;
    eprintln!("earshot emulator: {} received, stopped", stop.name());
    Ok(stop.exit_code())
}

/// The emulator the flags ask for.
fn emulator_config(args: &EmulatorArgs, api_key: SecretString) -> EmulatorConfig {
    let mut config = EmulatorConfig::new(api_key);
    if args.traffic {
        // The traffic never stops: remember only the newest records, as
        // the demo does (without a bound it grew ~0.6 MB a minute).
        config = config.for_endless_traffic();
    }
    // The demo's receivers live on loopback, and its retries should come
    // within seconds.
    config.allow_private_urls = args.allow_private_urls || args.traffic;
    config.time_scale = args.time_scale.unwrap_or(if args.traffic {
        TimeScale::new(scenario::DEMO_TIME_SCALE).unwrap_or(TimeScale::REAL_TIME)
    } else {
        TimeScale::REAL_TIME
    });
    config.concurrency = args.concurrency;
    config.http_limit = args.http_limit;
    config.poll_limit = args.poll_limit;
    config.dictation_timing = DictationTiming {
        speed_up: args.dictation_speed_up,
        finalize: Duration::from_millis(args.dictation_finalize_ms),
        rewrite: Duration::from_millis(args.dictation_rewrite_ms),
    };
    config
}

/// `--traffic`: the demo scenario, with a line per receiver on stderr.
async fn start_traffic(
    emulator: &Emulator,
    time_scale: TimeScale,
    pace: Option<Duration>,
) -> color_eyre::Result<scenario::Scenario> {
    let defaults = scenario::ScenarioConfig::default();
    let config = scenario::ScenarioConfig {
        time_scale,
        pace: pace.unwrap_or(defaults.pace),
        ..defaults
    };
    let demo = scenario::start(&emulator.url(), emulator.api_key(), config)
        .await
        .wrap_err("could not start the demo traffic")?;
    eprintln!("demo traffic at time scale {time_scale}:");
    for subscription in demo.subscriptions() {
        eprintln!(
            "  {:<18} {}  (subscription {})",
            subscription.role, subscription.url, subscription.id
        );
    }
    Ok(demo)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use earshot_emulator::{DEMO_KEEP_CONVERSATIONS, DEMO_KEEP_JOBS};

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        emulator: EmulatorArgs,
    }

    fn config(flags: &[&str]) -> EmulatorConfig {
        let args = Args::try_parse_from(std::iter::once("emulator").chain(flags.iter().copied()))
            .expect("valid flags");
        emulator_config(&args.emulator, SecretString::new("emu_key"))
    }

    #[test]
    fn traffic_bounds_what_the_emulator_remembers() {
        let bounded = config(&["--traffic"]);
        assert_eq!(bounded.keep_conversations, Some(DEMO_KEEP_CONVERSATIONS));
        assert_eq!(bounded.keep_jobs, Some(DEMO_KEEP_JOBS));
        assert!(bounded.allow_private_urls);
        // Without traffic, everything is kept (tests read it all back).
        let plain = config(&[]);
        assert_eq!((plain.keep_conversations, plain.keep_jobs), (None, None));
    }

    #[test]
    fn traffic_rate_sets_the_pace_of_the_conversations() {
        let args = Args::try_parse_from(["emulator", "--traffic", "--traffic-rate", "10"])
            .expect("valid flags");
        let pace = args.emulator.traffic_rate.expect("a pace");
        // 10 events a second at 1.88 events a conversation.
        assert_eq!(pace.as_millis(), 188);
        for refused in ["0", "-1", "nan", "ten", "100000"] {
            assert!(
                Args::try_parse_from(["emulator", "--traffic", "--traffic-rate", refused]).is_err(),
                "{refused} was taken"
            );
        }
        // A rate for traffic there is not is an error, not a silent no-op.
        assert!(Args::try_parse_from(["emulator", "--traffic-rate", "10"]).is_err());
    }

    /// `Emulator::builder()` promises the defaults of `earshot emulator`
    /// with no flags (the key aside: both generate one).
    #[test]
    fn the_builder_defaults_are_the_flags_defaults() {
        let builder = Emulator::builder();
        let built = builder.config();
        let flags = config(&[]);
        let args = Args::try_parse_from(["emulator"]).expect("no flags");
        assert_eq!(args.emulator.listen.to_string(), "127.0.0.1:0");
        assert_eq!(built.time_scale, flags.time_scale);
        assert_eq!(built.allow_private_urls, flags.allow_private_urls);
        assert_eq!(built.concurrency, flags.concurrency);
        assert_eq!(built.http_limit, flags.http_limit);
        assert_eq!(built.poll_limit, flags.poll_limit);
        assert_eq!(built.dictation_timing, flags.dictation_timing);
        assert_eq!(built.dictation_audio_cap, flags.dictation_audio_cap);
        assert_eq!(built.server_limits, flags.server_limits);
        assert_eq!(built.keep_conversations, flags.keep_conversations);
        assert_eq!(built.keep_jobs, flags.keep_jobs);
        assert_eq!(built.recording_bytes, flags.recording_bytes);
    }
}
