//! `earshot demo`: the emulator in-process on loopback, the demo traffic
//! scenario against it, and the console opened on both. No account needed.

use std::process::ExitCode;

use color_eyre::eyre::WrapErr;

use crate::api::validate::UrlPolicy;
use crate::api::{Client, Endpoints};
use crate::emulator::scenario::{self, DEMO_TIME_SCALE, ScenarioConfig};
use crate::emulator::{Emulator, EmulatorConfig, TimeScale};
use crate::redact::SecretString;
use crate::tui::{ConsoleOptions, run_console};

pub async fn run(read_only: bool, theme: Option<String>) -> color_eyre::Result<ExitCode> {
    let time_scale = TimeScale::new(DEMO_TIME_SCALE).unwrap_or(TimeScale::REAL_TIME);
    let api_key = SecretString::new(format!("demo_{}", uuid::Uuid::new_v4().simple()));
    let mut config = EmulatorConfig::new(api_key.clone());
    config.allow_private_urls = true;
    config.time_scale = time_scale;
    eprintln!("earshot demo: starting the emulator and its traffic…");
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let emulator = Emulator::start(loopback, config)
        .await
        .wrap_err("could not start the emulator on 127.0.0.1")?;
    let traffic = scenario::start(
        &emulator.url(),
        &api_key,
        ScenarioConfig {
            time_scale,
            ..ScenarioConfig::default()
        },
    )
    .await
    .wrap_err("could not start the demo traffic")?;
    let client = Client::new(Endpoints::all_at(&emulator.url()), api_key)?
        .with_url_policy(UrlPolicy::AnyHttp);
    let options = ConsoleOptions {
        demo: true,
        read_only,
        theme,
        profile_label: "demo".into(),
        url_policy: UrlPolicy::AnyHttp,
        recent_ids: traffic.recent_conversations(),
        job_ids: traffic.job_ids(),
        ..ConsoleOptions::default()
    };
    let result = run_console(client, options).await;
    traffic.stop();
    emulator.shutdown().await;
    result.map(|()| ExitCode::SUCCESS)
}
