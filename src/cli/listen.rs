//! `earshot listen`: (being written).

use std::process::ExitCode;

/// Run a local webhook receiver that verifies, deduplicates and captures.
#[derive(clap::Args, Debug)]
pub struct ListenArgs {}

pub async fn run(_args: ListenArgs) -> color_eyre::Result<ExitCode> {
    color_eyre::eyre::bail!("earshot listen is not built yet")
}
