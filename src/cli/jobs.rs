//! `earshot jobs submit|get|watch`: pre-recorded transcript jobs.
//!
//! `watch` paces its polls with the rate-aware watcher (`poll/`), so it can
//! follow thousands of jobs without a 429 or 403, and prints each change.
//! A 404 is final for a job (an error row, counted as not found). Exit
//! status of `watch`: 0 every job ended (`completed` or `error`), 1 an id
//! was not found, 2 bad input, 130 / 143 / 129 stopped by SIGINT / SIGTERM
//! / SIGHUP (after the summary).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use color_eyre::eyre::bail;
use serde_json::json;

use super::output::{emit, print_json};
use super::progress::Progress;
use super::secret_arg;
use super::{Connection, GlobalOptions, report};
use earshot_core::api::types::prerecorded::{NewTranscript, Transcript, TranscriptStatus};
use earshot_core::api::{ApiError, Client};
use earshot_core::poll::schedule::{JobHint, JobProblem, JobView, SchedulerConfig};
use earshot_core::poll::watcher::{self, Command, WatchEvent};
use earshot_core::receiver::auth_header::AuthHeader;
use earshot_core::receiver::listen::{self, ListenConfig, Received};
use earshot_core::redact::SecretString;
use earshot_core::shutdown::Stop;

#[derive(Args, Debug)]
pub(crate) struct JobsArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    #[command(subcommand)]
    pub(crate) command: JobsCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum JobsCommand {
    /// Upload a file (or name an audio URL) and start a transcript job.
    Submit {
        /// Audio file to upload.
        #[arg(required_unless_present = "audio_url", conflicts_with = "audio_url")]
        file: Option<PathBuf>,
        /// Audio the platform fetches itself.
        #[arg(long, value_name = "URL")]
        audio_url: Option<String>,
        /// Where the platform posts `{transcript_id, status}` when done.
        #[arg(long, value_name = "URL")]
        webhook_url: Option<String>,
        /// A header the webhook carries, as NAME:VALUE. Prefer
        /// --webhook-auth-file or EARSHOT_WEBHOOK_AUTH (used only with
        /// --webhook-url): a value given here is visible to other users in
        /// `ps`.
        #[arg(long, value_name = "NAME:VALUE", conflicts_with = "webhook_auth_file")]
        webhook_auth: Option<SecretString>,
        /// Read the webhook's header, NAME:VALUE, from FILE.
        #[arg(long, value_name = "FILE")]
        webhook_auth_file: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Show one transcript job.
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Follow jobs until every one is completed or error.
    Watch {
        /// Transcript ids.
        #[arg(required_unless_present = "ids_file")]
        ids: Vec<String>,
        /// A file with one transcript id per line.
        #[arg(long, value_name = "FILE")]
        ids_file: Option<PathBuf>,
        /// Requests per 5 minutes this watch may spend (the account allows
        /// 20,000 in all, shared with production traffic).
        #[arg(long, default_value_t = 2000, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=20_000))]
        budget: u32,
        /// Polls of one job in any 60 s window (the platform allows 60; by
        /// default 50). After a 429 every job drops below what was refused
        /// anyway; set this to the account's lower limit to avoid even one.
        #[arg(long, default_value_t = 50, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..=59))]
        per_job_limit: u32,
        /// Receive the jobs' webhooks here (e.g. 0.0.0.0:8080; submit them
        /// with this as `--webhook-url`): a pushed job is reported at once
        /// and never polled again. Needs the auth header they carry.
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// With --listen: the header every webhook must carry, NAME:VALUE,
        /// read from FILE (or EARSHOT_AUTH_HEADER).
        #[arg(long, value_name = "FILE", requires = "listen")]
        auth_header_file: Option<PathBuf>,
        /// One JSON object per line per change.
        #[arg(long)]
        json: bool,
    },
}

/// `--webhook-auth`, `--webhook-auth-file` or the environment (the last
/// only when there is a webhook to carry it), split into name and value.
/// The error is the exit-2 message; it never quotes the value.
fn webhook_auth(
    value: Option<&SecretString>,
    file: Option<&std::path::Path>,
    has_webhook: bool,
) -> Result<Option<(String, SecretString)>, String> {
    let given = if value.is_some() || file.is_some() || has_webhook {
        secret_arg::resolve(value, file, secret_arg::WEBHOOK_AUTH_ENV)
            .map_err(|error| error.to_string())?
    } else {
        None
    };
    given
        .map(|text| {
            AuthHeader::parse_parts(text.expose()).map_err(|why| format!("--webhook-auth: {why}"))
        })
        .transpose()
}

pub(crate) async fn run(args: JobsArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let result = async {
        let client = args.connection.client(global)?;
        match args.command {
            JobsCommand::Submit {
                file,
                audio_url,
                webhook_url,
                webhook_auth: auth_flag,
                webhook_auth_file,
                json,
            } => {
                let webhook_auth = match webhook_auth(
                    auth_flag.as_ref(),
                    webhook_auth_file.as_deref(),
                    webhook_url.is_some(),
                ) {
                    Ok(auth) => auth,
                    Err(message) => {
                        eprintln!("earshot jobs submit: {message}");
                        return Ok(ExitCode::from(2));
                    }
                };
                submit(&client, file, audio_url, webhook_url, webhook_auth, json).await
            }
            JobsCommand::Get { id, json } => {
                let transcript =
                    client
                        .get_transcript(&id)
                        .await
                        .map_err(|error| match error.status() {
                            Some(404) => ApiError::NotFound(not_found_message(&id)),
                            _ => error,
                        })?;
                show(&transcript, json)
            }
            JobsCommand::Watch {
                ids,
                ids_file,
                budget,
                per_job_limit,
                listen,
                auth_header_file,
                json,
            } => {
                let config = SchedulerConfig {
                    account_budget: budget,
                    per_job_per_minute: per_job_limit,
                    ..SchedulerConfig::default()
                };
                let pushes = match listen {
                    None => None,
                    Some(bind) => match push_receiver(bind, auth_header_file.as_deref()) {
                        Ok(config) => Some((bind, config)),
                        Err(message) => {
                            eprintln!("earshot jobs watch: {message}");
                            return Ok(ExitCode::from(2));
                        }
                    },
                };
                watch(client, ids, ids_file, config, pushes, json).await
            }
        }
    }
    .await;
    result.or_else(report)
}

async fn submit(
    client: &Client,
    file: Option<PathBuf>,
    audio_url: Option<String>,
    webhook_url: Option<String>,
    webhook_auth: Option<(String, SecretString)>,
    json: bool,
) -> color_eyre::Result<ExitCode> {
    let (auth_name, auth_value) = match webhook_auth {
        Some((name, value)) => (Some(name), Some(value)),
        None => (None, None),
    };
    let mut request = NewTranscript {
        audio_url: audio_url.unwrap_or_default(),
        webhook_url,
        webhook_auth_header_name: auth_name,
        webhook_auth_header_value: auth_value,
    };
    if let Some(path) = file {
        // Check everything but the audio URL before spending an upload.
        request.audio_url = "https://upload.pending/".to_owned();
        request.validate()?;
        let progress = Arc::new(Progress::new("uploading"));
        let reporter = Arc::clone(&progress);
        let upload = client
            .upload_file(&path, move |sent| {
                reporter.update(sent.sent, Some(sent.total))
            })
            .await;
        progress.finish();
        request.audio_url = upload?.upload_url;
    }
    let transcript = client.create_transcript(&request).await?;
    if json {
        print_json(&transcript)?;
    } else {
        emit(&format!("{}\n", transcript.id))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn show(transcript: &Transcript, json: bool) -> color_eyre::Result<ExitCode> {
    if json {
        print_json(transcript)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "id                   {}\nstatus               {}\n",
        transcript.id, transcript.status
    );
    if let Some(code) = transcript.webhook_status_code {
        text.push_str(&format!("webhook status code  {code}\n"));
    }
    if let Some(error) = &transcript.error {
        text.push_str(&format!("error                {error}\n"));
    }
    if let Some(body) = &transcript.text {
        text.push_str(&format!("text                 {body}\n"));
    }
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The ids to watch: arguments, then the file's lines (blank lines and
/// `#` comments skipped), without repeats.
fn collect_ids(ids: Vec<String>, ids_file: Option<PathBuf>) -> color_eyre::Result<Vec<String>> {
    let mut all = ids;
    if let Some(path) = ids_file {
        let text = earshot_core::bounded_file::read_to_string(
            &path,
            earshot_core::bounded_file::IDS_FILE,
        )?;
        all.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_owned),
        );
    }
    let mut seen = std::collections::HashSet::new();
    all.retain(|id| seen.insert(id.clone()));
    if all.is_empty() {
        bail!("no transcript ids to watch");
    }
    Ok(all)
}

/// The receiver `--listen` starts: only webhooks with the auth header
/// count. The error is the exit-2 message; it never quotes the value.
fn push_receiver(
    bind: std::net::SocketAddr,
    auth_header_file: Option<&std::path::Path>,
) -> Result<ListenConfig, String> {
    let raw = secret_arg::resolve(None, auth_header_file, secret_arg::AUTH_HEADER_ENV)
        .map_err(|error| error.to_string())?
        .ok_or_else(|| {
            format!(
                "--listen {bind} needs the header the webhooks carry: --auth-header-file FILE \
                 or {}",
                secret_arg::AUTH_HEADER_ENV
            )
        })?;
    Ok(ListenConfig {
        auth_header: Some(super::listen::parse_auth_header(&raw)?),
        ..ListenConfig::default()
    })
}

/// A push the watcher can use: a new, accepted pre-recorded webhook.
fn pushed(request: &Received) -> Option<(String, TranscriptStatus)> {
    if !request.is_accepted_new() {
        return None;
    }
    let id = request.entry.transcript_id.clone()?;
    let status = request.entry.transcript_status.as_deref()?;
    Some((id, TranscriptStatus::parse(status)))
}

async fn watch(
    client: Client,
    ids: Vec<String>,
    ids_file: Option<PathBuf>,
    config: SchedulerConfig,
    pushes: Option<(std::net::SocketAddr, ListenConfig)>,
    json: bool,
) -> color_eyre::Result<ExitCode> {
    let ids = collect_ids(ids, ids_file)?;
    // Every id checked before the first poll: bad input exits 2 at once,
    // not one failed poll after another.
    for id in &ids {
        earshot_core::api::validate::path_id(id).map_err(earshot_core::api::ApiError::from)?;
    }
    let budget = config.account_budget;
    // Started before the first poll: a push that comes early is not lost.
    // What waits for this loop is bounded (`ListenConfig::queue_bytes`):
    // while a line waits on a blocked stdout, further pushes are answered
    // 503 (the platform retries them) instead of piling up.
    let (_receiver, mut received) = match pushes {
        Some((bind, listen_config)) => {
            let (receiver, received) = listen::start(bind, listen_config).await?;
            if !json {
                eprintln!("receiving webhooks at {}", receiver.url());
            }
            (Some(receiver), Some(received))
        }
        None => (None, None),
    };
    // Installed before the first line: a signal right after it is not lost.
    let mut stop = std::pin::pin!(earshot_core::shutdown::signals()?);
    let mut watcher = watcher::spawn(client, config);
    for id in &ids {
        let _ = watcher.commands.send(Command::Add {
            id: id.clone(),
            hint: JobHint::default(),
        });
    }
    if !json {
        eprintln!(
            "watching {} job(s) with a budget of {budget} requests per 5 min",
            ids.len()
        );
    }
    let started = Instant::now();
    let mut not_found: Vec<JobView> = Vec::new();
    let stopped_by = loop {
        tokio::select! {
            event = watcher.events.recv() => match event {
                None | Some(WatchEvent::AllDone) => break None,
                Some(WatchEvent::PollFailed { id, message }) => {
                    print_event(&WatchEvent::PollFailed { id: id.clone(), message }, json)?;
                    drop_if_not_found(&watcher, &id, &mut not_found, json).await?;
                }
                Some(event) => print_event(&event, json)?,
            },
            Some(request) = async {
                match received.as_mut() {
                    Some(received) => received.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some((id, status)) = pushed(&request) {
                    let _ = watcher.commands.send(Command::Webhook { id, status });
                }
            }
            signal = &mut stop => break Some(signal),
        }
    };
    let mut views = watcher.snapshot().await;
    let _ = watcher.commands.send(Command::Stop);
    views.extend(not_found.iter().cloned());
    summary(&views, not_found.len(), started, stopped_by, json)?;
    Ok(match stopped_by {
        Some(signal) => signal.exit_code(),
        None if !not_found.is_empty() => ExitCode::from(1),
        None => ExitCode::SUCCESS,
    })
}

/// What a 404 for job `id` means: an unknown id, or a short one (the
/// console's tables show 8 characters; the platform takes whole ids only).
fn not_found_message(id: &str) -> String {
    if id.chars().count() <= earshot_core::api::SHORT_ID_LEN {
        format!(
            "job {id} not found (HTTP 404): the platform resolves whole ids only, and {id} \
             looks like a short id from a table; copy the whole id (`y` in the console's Jobs pane)"
        )
    } else {
        format!("job {id} not found (HTTP 404): no transcript with this id")
    }
}

/// A 404 is final for a job: the platform does not know that id, and
/// asking again will not change that. A job whose last poll got one leaves
/// the watch, with an error row, and counts as not found.
async fn drop_if_not_found(
    watcher: &watcher::Watcher,
    id: &str,
    not_found: &mut Vec<JobView>,
    json: bool,
) -> color_eyre::Result<()> {
    if let Some(view) = watcher.view(id).await {
        if view.problem != Some(JobProblem::NotFound) {
            return Ok(());
        }
        let _ = watcher.commands.send(Command::Remove {
            id: view.id.clone(),
        });
        let line = if json {
            json!({ "id": view.id, "status": null, "error": "not_found" }).to_string()
        } else {
            format!(
                "{}  error: {}; no longer watched",
                view.id,
                not_found_message(&view.id)
            )
        };
        emit_line(&line, json)?;
        not_found.push(view);
    }
    Ok(())
}

fn print_event(event: &WatchEvent, json: bool) -> color_eyre::Result<()> {
    let line = match (event, json) {
        (WatchEvent::Changed { view, transcript }, true) => {
            let mut value = json!({
                "id": view.id,
                "status": view.status.as_ref().map(TranscriptStatus::as_str),
            });
            if let Some(transcript) = transcript {
                value["webhook_status_code"] = json!(transcript.webhook_status_code);
                value["error"] = json!(transcript.error);
            }
            value.to_string()
        }
        (WatchEvent::Changed { view, transcript }, false) => {
            let status = view
                .status
                .as_ref()
                .map_or("unknown", TranscriptStatus::as_str);
            let detail = transcript
                .as_ref()
                .and_then(|transcript| transcript.error.clone())
                .map(|error| format!("  ({error})"))
                .unwrap_or_default();
            format!("{}  {status}{detail}", view.id)
        }
        (WatchEvent::PollFailed { id, message }, true) => {
            json!({ "id": id, "poll_error": message }).to_string()
        }
        (WatchEvent::PollFailed { id, message }, false) => format!("{id}  poll failed: {message}"),
        (WatchEvent::Paused { resume_in }, true) => {
            json!({ "paused": true, "resume_in_secs": resume_in.as_secs() }).to_string()
        }
        (WatchEvent::Paused { resume_in }, false) => format!(
            "account request limit reached (403): all polling paused for {}",
            earshot_core::duration_text::of_secs(resume_in.as_secs())
        ),
        (WatchEvent::Resumed, true) => json!({ "paused": false }).to_string(),
        (WatchEvent::Resumed, false) => "polling resumed".to_owned(),
        (WatchEvent::AllDone | WatchEvent::Budget { .. } | WatchEvent::Polled { .. }, _) => {
            return Ok(());
        }
    };
    emit_line(&line, json)
}

/// One row: as is in JSON, after the time of day (UTC) in text.
fn emit_line(line: &str, json: bool) -> color_eyre::Result<()> {
    if json {
        emit(&format!("{line}\n"))?;
    } else {
        let clock = earshot_core::clock_text::utc_clock(chrono::Utc::now().timestamp_millis());
        emit(&format!("{clock}Z  {line}\n"))?;
    }
    Ok(())
}

fn summary(
    views: &[JobView],
    not_found: usize,
    started: Instant,
    stopped_by: Option<Stop>,
    json: bool,
) -> color_eyre::Result<()> {
    let interrupted = stopped_by.is_some();
    let count = |wanted: &TranscriptStatus| {
        views
            .iter()
            .filter(|view| view.status.as_ref() == Some(wanted))
            .count()
    };
    let completed = count(&TranscriptStatus::Completed);
    let errored = count(&TranscriptStatus::Error);
    let pending = views.len() - completed - errored - not_found;
    let requests: u32 = views.iter().map(|view| view.polls).sum();
    let took = started.elapsed();
    let elapsed = took.as_secs_f64();
    if json {
        let line = json!({
            "summary": { "jobs": views.len(), "completed": completed, "error": errored,
                         "not_found": not_found, "pending": pending, "requests": requests,
                         "seconds": elapsed, "interrupted": interrupted,
                         "signal": stopped_by.map(Stop::name) }
        });
        emit(&format!("{line}\n"))?;
    } else {
        eprintln!(
            "{} job(s): {completed} completed, {errored} error, {not_found} not found, {pending} still pending; {requests} requests in {}{}",
            views.len(),
            earshot_core::duration_text::of(took),
            match stopped_by {
                Some(signal) => format!(" (interrupted by {})", signal.name()),
                None => String::new(),
            }
        );
    }
    Ok(())
}
