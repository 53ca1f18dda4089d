//! `earshot trigger EVENT_TYPE`: one realistic voice-agent event
//! (`session.started`, `session.completed`, `call.connected`,
//! `call.ended`, `call.failed`), made as `check-receiver` makes its cases
//! (`receiver::check::with_fields`), with fields set from the command line
//! (`--set call.from_number=+15550100`). With `--to URL` it is signed now
//! with the receiver's secret and sent straight to your receiver with the
//! platform's headers, its answer said (exit 0 on a 2xx, 1 otherwise).
//! Without, it goes to the emulator at the profile's URL
//! (`/_emulator/events`), which delivers it as the platform does: to its
//! subscriptions for that type, each signed with its own secret, with the
//! usual retries (exit 1 when none takes it or the URL is no emulator).
//! Exit 2 on bad input, nothing sent.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::GlobalOptions;
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
    /// Your receiver: http:// or https://, any host. Without it the event
    /// goes to the emulator at --url / EARSHOT_URL / the profile, which
    /// delivers it to its subscriptions for that type.
    #[arg(long, value_name = "URL")]
    pub(crate) to: Option<String>,
    /// With --to: the file holding the secret the receiver checks (or set
    /// EARSHOT_WEBHOOK_SECRET). Never taken on the command line.
    #[arg(long, value_name = "FILE", requires = "to")]
    pub(crate) secret_file: Option<PathBuf>,
    /// PATH=VALUE: a field of the event (`call.from_number=+15550100`,
    /// `session.duration_seconds=42`); VALUE is JSON when it reads as JSON
    /// (42, null, true), else text. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub(crate) sets: Vec<String>,
    /// The answer as one JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connection: super::Connection,
}

/// `PATH=VALUE` as a path and its JSON value.
fn field(text: &str) -> Result<(String, Value), String> {
    let (path, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--set {text}: give PATH=VALUE (call.from_number=+15550100)"))?;
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok((path.to_owned(), value))
}

pub(crate) async fn run(args: TriggerArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
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
    let now = chrono::Utc::now();
    let made = match with_fields(kind, now, &sets) {
        Ok(made) => made,
        Err(error) => return bad(error.to_string()),
    };
    let Some(to) = &args.to else {
        let origin = args.connection.endpoints(global)?.agents;
        return to_emulator(&origin, &made.bytes, args.json).await;
    };
    let url = match super::events_resend::app_url("--to", to) {
        Ok(url) => url,
        Err(message) => return bad(message),
    };
    let secret = match secret_arg::receivers(args.secret_file.as_deref()) {
        Ok(secret) => secret,
        Err(message) => return bad(message),
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

/// Hands the event to the emulator at `origin` to deliver: exit 0 when a
/// subscription took it on, 1 when none did or `origin` is no emulator.
async fn to_emulator(origin: &url::Url, body: &[u8], json: bool) -> color_eyre::Result<ExitCode> {
    let url = origin.join("_emulator/events")?;
    let answer = recover::sender()?
        .post(url.clone())
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            let why = earshot_core::error_text::chain(&error);
            eprintln!("error: {}", plain(&format!("{url}: {why}")));
            return Ok(ExitCode::from(1));
        }
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let (status, body) = match earshot_core::http_answer::read(answer, 64 * 1024, deadline).await {
        Ok(answer) => (answer.status, answer.body),
        Err(error) => (0, error.to_string().into_bytes()),
    };
    let taken: Value = serde_json::from_slice(&body).unwrap_or_default();
    if status != 202 {
        eprintln!(
            "error: {} answered {}: trigger without --to needs an earshot emulator at \
             --url / EARSHOT_URL; to send to your receiver directly, give --to URL",
            plain(origin.as_str()),
            if status == 0 {
                "nothing".to_owned()
            } else {
                format!("HTTP {status}")
            }
        );
        return Ok(ExitCode::from(1));
    }
    let subscriptions = taken["subscriptions"].as_u64().unwrap_or(0);
    if json {
        println!("{}", serde_json::to_string(&taken)?);
    } else if subscriptions > 0 {
        emit(&format!(
            "{} {}: the emulator delivers it to {subscriptions} subscription(s), retrying as \
             the platform does\n",
            taken["event"].as_str().unwrap_or_default(),
            taken["event_id"].as_str().unwrap_or_default(),
        ))?;
    }
    if subscriptions == 0 {
        eprintln!(
            "error: no enabled subscription of the emulator takes {}: create one \
             (earshot subs create URL --event {0})",
            taken["event"].as_str().unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
