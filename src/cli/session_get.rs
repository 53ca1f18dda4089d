//! `earshot sessions get ID [--json] [--download DIR]`: one session or call
//! as [`earshot_core::history::session_view`] puts it together (record, stored
//! events, links with their expiry, deliveries), and its recording and
//! transcript streamed to disk with progress on stderr. The store may be a
//! file or PostgreSQL ([`read_store`]); on PostgreSQL, which holds no
//! attempts yet, the deliveries shown are the ones the platform lists now
//! (none when it cannot be asked).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chrono::Utc;
use clap::Args;
use serde_json::Value;

use super::output::{emit, print_json};
use super::progress::Progress;
use super::read_store::ReadStoreArg;
use super::{Connection, GlobalOptions};
use earshot_core::history::artifact_download::{self, Downloaded, Timeouts};
use earshot_core::history::session_view::{self, Link, SessionView};
use earshot_core::redact::{mask_phone, redact_url};
use earshot_core::store;

#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    /// A session id, or a call id.
    pub(crate) id: String,
    /// The view as JSON (the record as returned, full link URLs included).
    #[arg(long)]
    pub(crate) json: bool,
    /// Download the recording and transcript into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) download: Option<PathBuf>,
    /// With --download: replace files already there.
    #[arg(long, requires = "download")]
    pub(crate) force: bool,
    /// Show the caller's number in full (personal data; masked by default).
    #[arg(long)]
    pub(crate) show_number: bool,
    #[command(flatten)]
    pub(crate) store: ReadStoreArg,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

pub(crate) async fn run(args: GetArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    if !super::sessions::plausible_id(&args.id) {
        eprintln!(
            "error: `{}` is not a session or call id (letters, digits, `_` and `-` only)",
            super::output::plain(&args.id)
        );
        return Ok(ExitCode::from(2));
    }
    let mut reader = match args.store.open_for("sessions get", global).await? {
        Ok(reader) => reader,
        Err(code) => return Ok(code),
    };
    let client = args.connection.client(global)?;
    let record = match client.get_session(&args.id).await {
        Ok(record) => Some(record),
        Err(error) if error.status() == Some(404) => {
            eprintln!(
                "error: the platform knows no session or call `{}`",
                super::output::plain(&args.id)
            );
            return Ok(ExitCode::from(1));
        }
        Err(error) => {
            eprintln!("warning: {error}; showing what the store holds");
            None
        }
    };
    // The session's own delivery records, so the summary is current.
    let fetched = match &record {
        Some(_) => match client.list_deliveries(&args.id).await {
            Ok(records) => Some(records),
            Err(error) => {
                eprintln!("warning: {error}; deliveries as last stored");
                None
            }
        },
        None => None,
    };
    let (stored_events, stored_deliveries) = reader
        .session(&args.id, fetched.as_deref(), store::now_ms())
        .await?;
    let view = session_view::build(
        &args.id,
        record,
        &stored_events,
        &stored_deliveries,
        Utc::now(),
    );
    if args.json {
        let mut value = serde_json::to_value(&view)?;
        if !args.show_number {
            mask_numbers(&mut value);
        }
        print_json(&value)?;
    } else {
        emit(&render(&view, Utc::now(), args.show_number))?;
    }
    let Some(dir) = args.download else {
        return Ok(ExitCode::SUCCESS);
    };
    download_all(&view, &dir, args.force).await
}

fn mask_numbers(value: &mut Value) {
    for field in ["from_number", "to_number"] {
        if let Some(number) = value.get(field).and_then(Value::as_str) {
            let masked = mask_phone(number);
            value[field] = Value::String(masked);
        }
    }
}

/// The text view: one fact a line, URLs redacted.
pub(crate) fn render(view: &SessionView, now: chrono::DateTime<Utc>, show_number: bool) -> String {
    let mut out = String::new();
    let mut line = |label: &str, text: &str| {
        out.push_str(&format!("{label:<11} {text}\n"));
    };
    line(view.kind.as_deref().unwrap_or("session"), &view.session_id);
    line("status", view.status.as_deref().unwrap_or("-"));
    for (index, event) in view.events.iter().enumerate() {
        let label = if index == 0 { "events" } else { "" };
        line(
            label,
            &format!(
                "{}  {}",
                earshot_core::clock_text::utc_datetime(event.at.timestamp_millis()),
                event.event
            ),
        );
    }
    if view.events.is_empty() {
        line(
            "events",
            "none stored (is `earshot listen --store` observing?)",
        );
    }
    if let Some(number) = &view.from_number {
        let shown = if show_number {
            number.clone()
        } else {
            format!("{} (--show-number to reveal)", mask_phone(number))
        };
        line("from", &shown);
    }
    if let Some(number) = &view.to_number {
        line(
            "to",
            &if show_number {
                number.clone()
            } else {
                mask_phone(number)
            },
        );
    }
    match (&view.record, &view.artifacts_note) {
        (None, _) => line("artifacts", "unknown: the platform could not be asked"),
        (Some(_), Some(note)) => line("artifacts", &format!("none yet: {note}")),
        (Some(_), None) => line("artifacts", &format!("{} listed", view.artifacts.len())),
    }
    for (index, link) in view.links.iter().enumerate() {
        let label = if index == 0 { "links" } else { "" };
        line(
            label,
            &format!(
                "{:<10} {}  {}  (from {})",
                link.kind,
                link.shown(),
                link.expiry(now),
                link.from
            ),
        );
    }
    line("deliveries", &view.deliveries.line());
    for latest in &view.deliveries.latest {
        let code = latest
            .http_status_code
            .map(|code| format!(" HTTP {code}"))
            .unwrap_or_default();
        line(
            "",
            &format!(
                "{}  {} after {} attempt(s){code}",
                latest.subscription_id, latest.status, latest.attempt_count
            ),
        );
    }
    if let Some(record) = &view.record {
        let mut first = true;
        for (name, value) in &record.extra {
            let text = match value {
                Value::String(text) if text.starts_with("http") => redact_url(text),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            line(
                if first { "record" } else { "" },
                &format!("{name}: {text}"),
            );
            first = false;
        }
    }
    out
}

/// One link per kind: `call.ended`'s first, else the listing's.
fn links_to_fetch(view: &SessionView) -> Vec<&Link> {
    let mut chosen: Vec<&Link> = Vec::new();
    for link in &view.links {
        if !chosen.iter().any(|seen| seen.kind == link.kind) {
            chosen.push(link);
        }
    }
    chosen
}

/// Downloads every link into `dir`. SIGINT, SIGTERM or SIGHUP stops at
/// once: the download under way is dropped, which removes its temporary
/// file, and the exit is 128 + the signal.
async fn download_all(view: &SessionView, dir: &Path, force: bool) -> color_eyre::Result<ExitCode> {
    let links = links_to_fetch(view);
    if links.is_empty() {
        let why = view
            .artifacts_note
            .clone()
            .unwrap_or_else(|| "no call.ended stored and no artifacts listed".to_owned());
        eprintln!("error: nothing to download: {why}");
        return Ok(ExitCode::from(1));
    }
    if let Err(why) = ensure_dir(dir) {
        eprintln!("error: {}: {why}", dir.display());
        return Ok(ExitCode::from(2));
    }
    let http = artifact_download::client()?;
    let mut stop = std::pin::pin!(earshot_core::shutdown::signals()?);
    let mut failed = false;
    for link in links {
        let progress = Progress::new(&link.kind);
        let download = artifact_download::download(
            &http,
            link,
            &view.session_id,
            dir,
            force,
            Timeouts::default(),
            |done, total| progress.update(done, total),
        );
        let result = tokio::select! {
            result = download => result,
            stopped = &mut stop => {
                progress.finish();
                say(&format!(
                    "{}: stopped by {}; the partial file is removed",
                    link.kind,
                    stopped.name()
                ));
                return Ok(stopped.exit_code());
            }
        };
        progress.finish();
        match result {
            Ok(Downloaded { kind, path, bytes }) => {
                eprintln!("{kind}: {bytes} bytes written to {}", path.display());
            }
            Err(error) => {
                eprintln!("error: {error}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A line on stderr that cannot panic: after SIGHUP the terminal may be
/// gone, and the exit status must still be the signal's.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `dir`, created (0700, with its parents) when it does not exist yet, as
/// `curl --create-dirs` and `gh run download -D` do; an existing path that
/// is not a directory is refused.
fn ensure_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err("is not a directory".to_owned()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|error| format!("could not be created: {error}"))
        }
        Err(error) => Err(error.to_string()),
    }
}
