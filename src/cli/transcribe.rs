//! `earshot transcribe FILE`: one sync transcription of a WAV file, in the
//! profile's region or the one asked for; prints the text.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::dictate::{connect, report_dictation};
use super::output::{emit, print_json};
use super::{Connection, GlobalOptions};
use earshot_core::api::Region;
use earshot_core::api::sync::SyncRequest;
use earshot_core::api::types::dictation::DEFAULT_SYNC_MODEL;

#[derive(Args, Debug)]
pub(crate) struct TranscribeArgs {
    /// WAV file to transcribe.
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Region to send to (default: the profile's).
    #[arg(long, value_enum, value_name = "REGION")]
    pub(crate) region: Option<Region>,
    /// The `X-SVC-Model` value.
    #[arg(long, default_value = DEFAULT_SYNC_MODEL, value_name = "MODEL")]
    pub(crate) model: String,
    /// Print the server's answer as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

pub(crate) async fn run(
    args: TranscribeArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let result = async {
        let (client, profile_region) = connect(&args.connection, global)?;
        let request = SyncRequest {
            region: args.region.unwrap_or(profile_region),
            model: args.model.clone(),
            ..SyncRequest::default()
        };
        let answer = client.transcribe_sync(&request, &args.file).await?;
        if args.json {
            print_json(&answer)?;
        } else {
            emit(&format!("{}\n", answer.text))?;
        }
        Ok(ExitCode::SUCCESS)
    }
    .await;
    result.or_else(report_dictation)
}
