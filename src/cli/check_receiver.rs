//! `earshot check-receiver`: (being written).

use std::process::ExitCode;

/// Send a battery of deliveries to your receiver and report how it answers.
#[derive(clap::Args, Debug)]
pub struct CheckReceiverArgs {}

pub async fn run(_args: CheckReceiverArgs) -> color_eyre::Result<ExitCode> {
    color_eyre::eyre::bail!("earshot check-receiver is not built yet")
}
