//! `earshot demo`: the emulator in-process on loopback, the demo traffic
//! scenario against it, and the console opened on both, with a store that
//! keeps the demo's last hour. No account needed.

use std::io::IsTerminal;
use std::process::ExitCode;

use color_eyre::eyre::WrapErr;
use url::Url;

use super::demo_history;
use crate::tui::{ConsoleOptions, run_console};
use earshot_core::api::types::agents::{EventKind, NewSubscription};
use earshot_core::api::validate::UrlPolicy;
use earshot_core::api::{Client, Endpoints};
use earshot_core::receiver::listen::{self, ListenConfig, Listener, Requests};
use earshot_core::redact::SecretString;
use earshot_core::signature::generate_secret;
use earshot_core::store::pruner::Pruner;
use earshot_core::store::retention::Period;
use earshot_demo::{self as scenario, DEMO_TIME_SCALE, ScenarioConfig};
use earshot_emulator::{Emulator, EmulatorConfig, TimeScale};

/// The demo's flags.
#[derive(Debug, Default)]
pub(crate) struct DemoOptions {
    pub(crate) read_only: bool,
    pub(crate) low_bandwidth: bool,
    pub(crate) theme: Option<String>,
    /// The pace of the traffic's conversations (`--traffic-rate`), else
    /// the scenario's own.
    pub(crate) pace: Option<std::time::Duration>,
}

pub(crate) async fn run(flags: DemoOptions) -> color_eyre::Result<ExitCode> {
    let DemoOptions {
        read_only,
        low_bandwidth,
        theme,
        pace,
    } = flags;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "earshot demo: the demo is the console and needs a terminal (standard input and \
             output); without one, run `earshot emulator --traffic` for the same emulator and \
             live traffic, headless"
        );
        return Ok(ExitCode::from(2));
    }
    let time_scale = TimeScale::new(DEMO_TIME_SCALE).unwrap_or(TimeScale::REAL_TIME);
    let api_key = SecretString::new(format!("demo_{}", uuid::Uuid::new_v4().simple()));
    // The traffic never stops: remember only the newest conversations.
    let mut config = EmulatorConfig::new(api_key.clone()).for_endless_traffic();
    config.allow_private_urls = true;
    config.time_scale = time_scale;
    eprintln!("earshot demo: starting the emulator and its traffic…");
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let emulator = Emulator::start(loopback, config)
        .await
        .wrap_err("could not start the emulator on 127.0.0.1")?;
    // The demo's incident history: its own store in a private directory,
    // kept until the console closes; the Inbox is the observer.
    let temp = std::env::temp_dir();
    for stale in demo_history::remove_stale(&temp) {
        eprintln!(
            "earshot demo: removed {}, left by a demo that was killed",
            stale.display()
        );
    }
    let history =
        demo_history::create(&temp).wrap_err("could not make a directory for the demo's store")?;
    let store_path = earshot_core::store::default_path(history.path());
    let store = earshot_core::store::Store::open(&store_path)?;
    let (writer, _writer_thread) = earshot_core::store::writer::Writer::start(store)?;
    // Left open for days, the demo keeps the last hour: neither its file
    // nor what reading it costs grows for as long as it runs.
    let _retention =
        Pruner::start_every(store_path.clone(), DEMO_RETENTION, DEMO_PRUNE_EVERY, |_| {})?;
    let (inbox, inbox_secret, received) = start_inbox(writer).await?;
    let defaults = ScenarioConfig::default();
    let traffic = scenario::start(
        &emulator.url(),
        &api_key,
        ScenarioConfig {
            time_scale,
            pace: pace.unwrap_or(defaults.pace),
            transcript_webhook: Url::parse(&format!("{}/transcripts", inbox.url())).ok(),
            ..defaults
        },
    )
    .await
    .wrap_err("could not start the demo traffic")?;
    let client = Client::new(Endpoints::all_at(&emulator.url()), api_key)?
        .with_url_policy(UrlPolicy::AnyHttp);
    client
        .create_subscription(&NewSubscription {
            url: format!("{}/inbox", inbox.url()),
            events: EventKind::ALL.to_vec(),
            secret: inbox_secret,
            agent_id: None,
            enabled: None,
        })
        .await
        .wrap_err("could not subscribe the Inbox to the demo's events")?;
    // In the history directory: one directory to remove, however the demo
    // ends.
    let probe_sample = probe_sample(history.path());
    let options = ConsoleOptions {
        demo: true,
        read_only,
        low_bandwidth,
        theme,
        profile_label: "demo".into(),
        url_policy: UrlPolicy::AnyHttp,
        recent_ids: traffic.recent_conversations(),
        job_ids: traffic.job_ids(),
        probe_sample,
        inbox_url: Some(inbox.url()),
        store: Some(store_path),
        time_scale: time_scale.factor(),
        discovered_jobs: Some(traffic.job_feed()),
        received_webhooks: Some(received),
        ..ConsoleOptions::default()
    };
    let result = run_console(client, options).await;
    traffic.stop();
    inbox.stop().await;
    emulator.shutdown().await;
    // Removed on every way out of the console: quit, SIGINT, SIGTERM,
    // SIGHUP (an error above drops it too).
    drop(history);
    result.map(|stopped_by| {
        stopped_by.map_or(ExitCode::SUCCESS, earshot_core::shutdown::Stop::exit_code)
    })
}

/// The Inbox's receiver on loopback, with a fresh secret the demo
/// subscribes it with; source addresses are not checked (all loopback). It
/// is the observer: every event goes to the demo's store.
async fn start_inbox(
    store: earshot_core::store::writer::Writer,
) -> color_eyre::Result<(Listener, SecretString, Requests)> {
    let secret = SecretString::new(generate_secret().wrap_err("no randomness for a secret")?);
    let config = ListenConfig {
        secrets: vec![("current".to_owned(), secret.clone())],
        trust_any_source: true,
        store: Some(store.into()),
        ..ListenConfig::default()
    };
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let (listener, received) = listen::start(loopback, config)
        .await
        .wrap_err("could not start the Inbox receiver on 127.0.0.1")?;
    Ok((listener, secret, received))
}

/// How much of its history the demo's store keeps (the sessions an open
/// incident needs, and at the demo's pace nearly all are, one period
/// more: about 80 MB of store), and how often older rows go.
const DEMO_RETENTION: Period = Period::HOUR;
const DEMO_PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// What the Probe pane's sample "says": the emulator transcribes a WAV's
/// `ICMT` text, and its rewrite resolves the correction.
const PROBE_SENTENCE: &str = "um send the report to Dana, no, to Alex by Friday";

/// A two-second WAV for the Probe pane, in `dir` (the demo's own
/// directory); `None` (and an empty file field) when it cannot be written.
fn probe_sample(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    const RATE: u32 = 8000;
    let path = dir.join("probe-sample.wav");
    let silence = vec![0u8; RATE as usize * 2 * 2];
    let wav = earshot_core::wav::encode_pcm16(RATE, 1, &silence, Some(PROBE_SENTENCE));
    std::fs::write(&path, wav).ok()?;
    Some(path)
}
