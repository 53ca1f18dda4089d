//! `earshot probe FILE`: dictation and sync once each in every region
//! (global, US, EU, from the resolved endpoints), one after the other and
//! never retried, so the table shows each region's first answer: status,
//! latency seen here, and the server's own timings side by side. The
//! calls themselves are [`earshot_core::api::probe`]'s, shared with the console.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::dictate::{connect, report_dictation};
use super::output::{Table, emit, print_json};
use super::{Connection, GlobalOptions};
use earshot_core::api::probe::{self, REGIONS};
use earshot_core::api::types::dictation::{DEFAULT_SYNC_MODEL, Rewrite};
use earshot_core::api::{Client, Region};
use earshot_core::duration_text;

#[derive(Args, Debug)]
pub(crate) struct ProbeArgs {
    /// WAV file to send (at most 2 min: dictation's limit).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// The sync `X-SVC-Model` value.
    #[arg(long, default_value = DEFAULT_SYNC_MODEL, value_name = "MODEL")]
    pub(crate) model: String,
    /// Print the results as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// One call's outcome.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Probe {
    pub(crate) region: Region,
    /// `dictation` or `sync`.
    pub(crate) service: &'static str,
    pub(crate) url: String,
    pub(crate) ok: bool,
    /// The HTTP status, when an answer came.
    pub(crate) status: Option<u16>,
    /// Request sent to answer read, as seen from here.
    pub(crate) latency_ms: f64,
    pub(crate) request_time_ms: Option<f64>,
    pub(crate) auth_time_ms: Option<f64>,
    pub(crate) sync_time_ms: Option<f64>,
    /// Dictation only: `ok`, `timeout`, `error` or `missing`.
    pub(crate) rewrite: Option<String>,
    pub(crate) error: Option<String>,
}

pub(crate) async fn run(args: ProbeArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let result = async {
        let (client, _) = connect(&args.connection, global)?;
        let mut probes = Vec::new();
        for region in REGIONS {
            probes.push(probe_dictation(&client, region, &args.file).await?);
            probes.push(probe_sync(&client, region, &args.file, &args.model).await);
        }
        if args.json {
            print_json(&probes)?;
        } else {
            emit(&render(&probes))?;
        }
        Ok(if probes.iter().all(|probe| probe.ok) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
    .await;
    result.or_else(report_dictation)
}

/// One dictation call; bad input (a file over 120 s, unreadable) stops
/// the whole probe, as it would fail the same way in every region.
async fn probe_dictation(
    client: &Client,
    region: Region,
    file: &std::path::Path,
) -> color_eyre::Result<Probe> {
    let timed = probe::dictation(client, region, file, None).await;
    let probe = Probe {
        region,
        service: "dictation",
        url: probe::dictation_url(client, region),
        ok: timed.result.is_ok(),
        status: None,
        latency_ms: timed.latency_ms(),
        request_time_ms: None,
        auth_time_ms: None,
        sync_time_ms: None,
        rewrite: None,
        error: None,
    };
    Ok(match timed.result {
        Ok(answer) => Probe {
            status: Some(200),
            request_time_ms: answer.request_time_ms,
            auth_time_ms: answer.auth_time_ms,
            sync_time_ms: answer.sync_time_ms,
            rewrite: Some(
                match answer.rewrite() {
                    Rewrite::Done(_) => "ok",
                    Rewrite::TimedOut => "timeout",
                    Rewrite::Failed(_) => "error",
                    Rewrite::Missing => "missing",
                }
                .to_owned(),
            ),
            ..probe
        },
        Err(error) if error.invalid().is_some() => return Err(error.into()),
        Err(error) => Probe {
            status: error.status(),
            error: Some(error.to_string()),
            ..probe
        },
    })
}

async fn probe_sync(client: &Client, region: Region, file: &std::path::Path, model: &str) -> Probe {
    let timed = probe::sync(client, region, file, model).await;
    let latency_ms = timed.latency_ms();
    let url = probe::sync_url(client, region);
    match timed.result {
        Ok(answer) => Probe {
            region,
            service: "sync",
            url,
            ok: true,
            status: Some(200),
            latency_ms,
            request_time_ms: answer.number("request_time_ms"),
            auth_time_ms: answer.number("auth_time_ms"),
            sync_time_ms: answer.number("sync_time_ms"),
            rewrite: None,
            error: None,
        },
        Err(error) => Probe {
            region,
            service: "sync",
            url,
            ok: false,
            status: error.status(),
            latency_ms,
            request_time_ms: None,
            auth_time_ms: None,
            sync_time_ms: None,
            rewrite: None,
            error: Some(error.to_string()),
        },
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), duration_text::of_millis)
}

/// A row per region, dictation and sync side by side; then the URLs and
/// any errors.
pub(crate) fn render(probes: &[Probe]) -> String {
    let mut table = Table::new(&[
        "REGION",
        "DICTATION",
        "LATENCY",
        "SERVER",
        "AUTH",
        "TRANSCRIBE",
        "REWRITE",
        "SYNC",
        "LATENCY",
        "SERVER",
    ]);
    let status = |probe: &Probe| match (probe.ok, probe.status) {
        (true, _) => "200 ok".to_owned(),
        (false, Some(status)) => format!("{status} FAILED"),
        (false, None) => "no answer".to_owned(),
    };
    for pair in probes.chunks(2) {
        let [dictation, sync] = pair else { continue };
        table.row(vec![
            dictation.region.to_string(),
            status(dictation),
            duration_text::of_millis(dictation.latency_ms),
            ms(dictation.request_time_ms),
            ms(dictation.auth_time_ms),
            ms(dictation.sync_time_ms),
            dictation.rewrite.clone().unwrap_or_else(|| "-".to_owned()),
            status(sync),
            duration_text::of_millis(sync.latency_ms),
            ms(sync.request_time_ms),
        ]);
    }
    let mut out = table.render();
    out.push('\n');
    for probe in probes {
        out.push_str(&format!(
            "{:<6} {:<9} {}\n",
            probe.region.as_str(),
            probe.service,
            probe.url
        ));
    }
    let errors: Vec<&Probe> = probes
        .iter()
        .filter(|probe| probe.error.is_some())
        .collect();
    if !errors.is_empty() {
        out.push('\n');
        for probe in errors {
            out.push_str(&format!(
                "{} {}: {}\n",
                probe.region.as_str(),
                probe.service,
                probe.error.as_deref().unwrap_or("")
            ));
        }
    }
    out
}
