//! `earshot listen`: a local webhook receiver that verifies, deduplicates
//! and captures ([`crate::receiver::listen`]). Prints `listening on
//! http://HOST:PORT` first, then one line (or one JSON line) per request,
//! and a summary when SIGINT/SIGTERM stops it. Exit 2 on bad input.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::ArgGroup;

use super::bounded_stdout::BoundedStdout;

use crate::receiver::auth_header::AuthHeader;
use crate::receiver::capture::{Kind, VerdictCode};
use crate::receiver::listen::{self, ListenConfig, ListenError, Received};
use crate::redact::SecretString;
use crate::signature;

/// How long the closing summary waits for a slow stdout.
const FINISH_GRACE: Duration = Duration::from_secs(2);

/// Run a local webhook receiver that verifies, deduplicates and captures.
#[derive(clap::Args, Debug)]
#[command(group(ArgGroup::new("credentials").args(["secret", "auth_header"]).required(true).multiple(true)))]
pub struct ListenArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub listen: SocketAddr,

    /// The subscription's signing secret (never printed in full).
    #[arg(long, value_name = "S")]
    pub secret: Option<SecretString>,

    /// The secret before the last rotation: deliveries still in flight were
    /// signed with it.
    #[arg(long, value_name = "S", requires = "secret")]
    pub previous_secret: Option<SecretString>,

    /// Append every request (exact body, headers, verdict) to FILE as JSON
    /// lines; replay one with `earshot verify --capture FILE`.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,

    /// Require this header on pre-recorded webhooks, as set with
    /// `webhook_auth_header_name`/`_value` (the value is never printed).
    #[arg(long, value_name = "NAME:VALUE")]
    pub auth_header: Option<SecretString>,

    /// Do not flag pre-recorded webhooks from outside the platform's fixed
    /// addresses (44.238.19.20, 54.220.25.36).
    #[arg(long)]
    pub trust_any_source: bool,

    /// Allowed difference between a signature's `t` and now, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = signature::DEFAULT_TOLERANCE_SECS)]
    pub tolerance: u64,

    /// Print each request as a JSON line (the capture entry) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: ListenArgs) -> color_eyre::Result<ExitCode> {
    let config = match config_from(&args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("earshot listen: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let (listener, mut received) = match listen::start(args.listen, config).await {
        Ok(started) => started,
        Err(ListenError::Capture(error)) => {
            eprintln!("earshot listen: {error}");
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    let mut shutdown = std::pin::pin!(shutdown_signal()?);
    let mut stdout = std::io::stdout();
    // Scripts read this line; keep its shape.
    writeln!(stdout, "listening on {}", listener.url())?;
    stdout.flush()?;
    // From here on printing never holds up receiving: a slow stdout loses
    // lines (counted on stderr), never answers or capture entries.
    let mut out = BoundedStdout::start(stdout)?;
    let mut tally = Tally::default();
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            next = received.recv() => {
                let Some(request) = next else { break };
                tally.count(&request);
                print_request(&mut out, &request, args.json)?;
            }
        }
    }
    listener.stop().await;
    // Requests answered before the stop but not printed yet.
    while let Ok(request) = received.try_recv() {
        tally.count(&request);
        print_request(&mut out, &request, args.json)?;
    }
    out.finish(tally.summary(), FINISH_GRACE);
    Ok(ExitCode::SUCCESS)
}

/// The receiver's configuration; the error is the message for exit 2.
fn config_from(args: &ListenArgs) -> Result<ListenConfig, String> {
    let mut secrets = Vec::new();
    for (label, secret) in [
        ("current", &args.secret),
        ("previous", &args.previous_secret),
    ] {
        if let Some(secret) = secret {
            if secret.expose().trim().is_empty() {
                return Err(format!("the {label} secret is empty"));
            }
            secrets.push((label.to_owned(), secret.clone()));
        }
    }
    let auth_header = args
        .auth_header
        .as_ref()
        .map(parse_auth_header)
        .transpose()?;
    Ok(ListenConfig {
        secrets,
        tolerance_secs: args.tolerance,
        auth_header,
        trust_any_source: args.trust_any_source,
        capture: args.capture.clone(),
    })
}

/// `NAME:VALUE`, checked like `check-receiver` checks it: the lower-case
/// header name and the value.
fn parse_auth_header(raw: &SecretString) -> Result<(String, SecretString), String> {
    let header = AuthHeader::parse(raw.expose()).map_err(|why| format!("--auth-header: {why}"))?;
    let value = header
        .value
        .to_str()
        .map_err(|_| "--auth-header: the value must be visible ASCII".to_owned())?;
    Ok((header.name.as_str().to_owned(), SecretString::new(value)))
}

/// Queues the request's line (built only when there is room for it).
fn print_request(
    out: &mut BoundedStdout,
    request: &Received,
    json: bool,
) -> color_eyre::Result<()> {
    if out.is_closed() {
        return Err(color_eyre::eyre::eyre!("stdout was closed"));
    }
    if !out.has_room() {
        out.skip();
    } else if json {
        out.print(serde_json::to_string(&request.entry)?);
    } else {
        out.print(request_line(request));
    }
    if let Some(error) = &request.capture_error {
        eprintln!("earshot listen: {error}");
    }
    Ok(())
}

/// `HH:MM:SS  what  id  verdict  → status`.
fn request_line(request: &Received) -> String {
    let entry = &request.entry;
    let time = entry.received_at.get(11..19).unwrap_or(&entry.received_at);
    let what = match entry.kind {
        Kind::Agents => entry.event.clone().unwrap_or_else(|| "agents".to_owned()),
        Kind::Prerecorded => format!(
            "transcript {}",
            entry.transcript_status.as_deref().unwrap_or("?")
        ),
        Kind::Other => format!("{} {}", entry.method, entry.path),
    };
    let id = entry
        .event_id
        .as_deref()
        .or(entry.transcript_id.as_deref())
        .map_or_else(|| "-".to_owned(), |id| id.chars().take(8).collect());
    format!(
        "{time}  {what:<20} {id:<8}  {}  → {}",
        verdict_text(request),
        entry.status
    )
}

fn verdict_text(request: &Received) -> String {
    let entry = &request.entry;
    let reason = entry.reason.as_deref().unwrap_or("?");
    let mut text = match entry.verdict {
        VerdictCode::Ok => match &entry.matched {
            Some(label) => format!("ok ({label} secret)"),
            None => "ok".to_owned(),
        },
        VerdictCode::Duplicate => "duplicate (not processed again)".to_owned(),
        VerdictCode::InvalidSignature => format!("invalid signature: {reason}"),
        VerdictCode::AuthFailed => format!("auth failed: {reason}"),
        VerdictCode::MalformedPayload => format!("malformed payload: {reason}"),
        VerdictCode::MethodNotAllowed => "method not allowed".to_owned(),
        VerdictCode::Unrecognized => "unrecognized request".to_owned(),
        VerdictCode::TooLarge => "body too large".to_owned(),
    };
    if entry.untrusted_source {
        text.push_str(&format!(", untrusted source {}", entry.source));
    }
    text
}

/// Counts for the closing summary.
#[derive(Default)]
struct Tally {
    received: u64,
    accepted: u64,
    duplicates: u64,
    rejected: u64,
}

impl Tally {
    fn count(&mut self, request: &Received) {
        self.received += 1;
        match request.entry.verdict {
            VerdictCode::Ok => self.accepted += 1,
            VerdictCode::Duplicate => self.duplicates += 1,
            _ => self.rejected += 1,
        }
    }

    fn summary(&self) -> String {
        format!(
            "received {}, accepted {}, rejected {}, duplicates {}",
            self.received, self.accepted, self.rejected, self.duplicates
        )
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed before this
/// returns, so a signal sent right after the first line is not lost.
fn shutdown_signal() -> color_eyre::Result<impl Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
