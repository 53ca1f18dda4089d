//! `earshot trigger EVENT_TYPE --to URL`: one realistic voice-agent event
//! (`session.started`, `session.completed`, `call.connected`,
//! `call.ended`, `call.failed`), made as `check-receiver` makes its cases
//! (`receiver::check::with_fields`), with fields set from the command line
//! (`--set call.from_number=+15550100`), signed now with the receiver's
//! secret and sent to your receiver with the platform's headers, its
//! answer said. Exit 0 on a 2xx, 1 otherwise, 2 on bad input (nothing
//! sent).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::output::{emit, plain};
use super::secret_arg;
use earshot_core::history::recover;
use earshot_core::receiver::check::with_fields;
use earshot_core::store::events::{ObservedEvent, StoredEvent};

#[derive(Args, Debug)]
pub(crate) struct TriggerArgs {
    /// The event: session.started, session.completed, call.connected,
    /// call.ended or call.failed.
    #[arg(value_name = "EVENT_TYPE")]
    pub(crate) event: String,
    /// Your receiver: http:// or https://, any host.
    #[arg(long, value_name = "URL")]
    pub(crate) to: String,
    /// File holding the secret the receiver checks (or set
    /// EARSHOT_WEBHOOK_SECRET). Never taken on the command line.
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,
    /// PATH=VALUE: a field of the event (`call.from_number=+15550100`,
    /// `session.duration_seconds=42`); VALUE is JSON when it reads as JSON
    /// (42, null, true), else text. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub(crate) sets: Vec<String>,
    /// The answer as one JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `PATH=VALUE` as a path and its JSON value.
fn field(text: &str) -> Result<(String, Value), String> {
    let (path, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--set {text}: give PATH=VALUE (call.from_number=+15550100)"))?;
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok((path.to_owned(), value))
}

pub(crate) async fn run(args: TriggerArgs) -> color_eyre::Result<ExitCode> {
    let bad = |message: String| {
        eprintln!("error: {}", plain(&message));
        Ok(ExitCode::from(2))
    };
    let kind = match super::redeliver::event_kind(&args.event) {
        Ok(kind) => kind,
        Err(message) => return bad(message),
    };
    let sets = match args
        .sets
        .iter()
        .map(|text| field(text))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(sets) => sets,
        Err(message) => return bad(message),
    };
    let url = match super::events_resend::app_url("--to", &args.to) {
        Ok(url) => url,
        Err(message) => return bad(message),
    };
    let secret = match secret_arg::receivers(args.secret_file.as_deref()) {
        Ok(secret) => secret,
        Err(message) => return bad(message),
    };
    let now = chrono::Utc::now();
    let made = match with_fields(kind, now, &sets) {
        Ok(made) => made,
        Err(error) => return bad(error.to_string()),
    };
    let session_id = ObservedEvent::from_delivery(&made.bytes, Vec::new(), None, 0)
        .map(|event| event.session_id)
        .unwrap_or_default();
    let event = StoredEvent {
        event_id: made.event_id,
        event: kind.as_str().to_owned(),
        session_id,
        occurred_ms: now.timestamp_millis(),
        body: made.bytes,
    };
    let sent = recover::send_event(&recover::sender()?, url.as_str(), &secret, &event).await;
    if args.json {
        println!("{}", serde_json::to_string(&sent)?);
    } else {
        emit(&format!(
            "{} {} {}: {}\n",
            sent.event,
            sent.event_id,
            sent.session_id,
            sent.summary(url.as_str())
        ))?;
    }
    Ok(if sent.delivered {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
