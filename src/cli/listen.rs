//! `earshot listen`: a local webhook receiver that verifies, deduplicates
//! and captures ([`earshot_core::receiver::listen`]). Prints `listening on
//! http://HOST:PORT` first (`https://` with `--tls-cert`), then one line
//! (or one JSON line) per request, and a summary when SIGINT, SIGTERM or
//! SIGHUP stops it (exit 130, 143, 129: [`earshot_core::shutdown`]); with TLS,
//! SIGHUP reloads the certificate instead ([`super::listen_tls`]). Exit 2
//! on bad input. `--metrics-listen` and `--sweep` start the observer's
//! monitoring beside it ([`super::observer_args`]). `--store` takes a
//! SQLite file or a PostgreSQL URL ([`super::listen_postgres`]).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::GlobalOptions;
use super::bounded_stdout::BoundedStdout;
use super::history_args::open_store;
use super::observer_args::{ObserverArgs, OpenStore, SharedStore, StartError};
use earshot_core::api::types::agents::EventKind;
use earshot_core::config::StoreSetting;
use earshot_core::observer::metrics::{StoreObserverGauges, StoreSweepGauges};
use earshot_core::receiver::auth_header::AuthHeader;
use earshot_core::receiver::capture::{Kind, VerdictCode};
use earshot_core::receiver::listen::{
    self, Forward, Forwarded, ListenConfig, ListenError, Received, Routes,
};
use earshot_core::redact::SecretString;
use earshot_core::signature;
use earshot_core::store::event_words;
use earshot_core::store::postgres::is_postgres_url;
use earshot_core::store::word_filler::WordFiller;
use earshot_core::store::writer::Writer;

use super::listen_postgres::{self, Refused};
use super::listen_relay::{self, Relaying};
use super::listen_tls::{self, TlsArgs};
use super::secret_arg::{self, ReceiverSecretArgs, ReceiverSecrets};

/// How long the closing summary waits for a slow stdout.
const FINISH_GRACE: Duration = Duration::from_secs(2);

/// Run a local webhook receiver that verifies, deduplicates and captures.
///
/// Give each secret by file or environment variable rather than on the
/// command line, where other users see it in `ps`.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("forwarding").multiple(true))]
pub(crate) struct ListenArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub(crate) listen: SocketAddr,

    #[command(flatten)]
    pub(crate) secrets: ReceiverSecretArgs,

    #[command(flatten)]
    pub(crate) tls: TlsArgs,

    /// Append every request (exact body, headers, verdict) to FILE as JSON
    /// lines; replay one with `earshot verify --capture FILE`.
    #[arg(long, value_name = "FILE")]
    pub(crate) capture: Option<PathBuf>,

    /// Do not flag pre-recorded webhooks from outside the platform's fixed
    /// addresses (44.238.19.20, 54.220.25.36).
    #[arg(long)]
    pub(crate) trust_any_source: bool,

    /// Allowed difference between a signature's `t` and now, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = signature::DEFAULT_TOLERANCE_SECS)]
    pub(crate) tolerance: u64,

    /// Keep secret header values (the auth header, `authorization`,
    /// cookies) verbatim in the capture file and `--json` lines. Without it
    /// they are replaced by a fingerprint, `Bear…(38 chars)`; the signature
    /// header and the body are always kept, so `verify --capture` works.
    #[arg(long)]
    pub(crate) capture_secrets: bool,

    /// Print each request as a JSON line (the capture entry) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    /// Be the observer: keep every genuine voice-agent event (exact bytes)
    /// in the incident-history store before answering 2xx. PATH, else
    /// EARSHOT_STORE, else the profile's `store`, else earshot.db in the state
    /// directory. A postgres://USER@HOST:PORT/DB URL files into a
    /// PostgreSQL store that several replicas share (password from
    /// EARSHOT_STORE_PASSWORD_FILE, PGPASSWORD or ~/.pgpass).
    // `--store` alone is `Some(None)`: an empty path is refused, so no
    // `default_missing_value` can stand for "no path given".
    #[arg(long, value_name = "PATH", num_args = 0..=1, value_parser = super::listen_postgres::store_file_or_url)]
    pub(crate) store: Option<Option<PathBuf>>,

    #[command(flatten)]
    pub(crate) observer: ObserverArgs,

    /// With --store: remove what the store holds once it is older than D
    /// (30d, 12h, 90m), shortly after the start and then hourly, in small
    /// batches. Beats the profile's `retention`; without either, nothing
    /// is removed.
    #[arg(long, value_name = "D", requires = "store", value_parser = super::store_cmd::parse_period)]
    pub(crate) retention: Option<earshot_core::store::retention::Period>,

    /// Pass every verified, new voice-agent event on to your app at URL
    /// (its exact bytes and the platform's headers, in order per session or
    /// call); each line shows earshot's verdict and the app's. Without a
    /// store the platform gets the app's answer, so its retries apply. With
    /// --store the platform gets earshot's once the event is stored, and
    /// the stored events go to the app in the order received, each signed
    /// when sent (--forward-secret-file, else --secret-file): while the app
    /// is down or refuses, they wait and are sent again, none lost, and a
    /// restart resumes where the app stopped taking them.
    #[arg(long, value_name = "URL", group = "forwarding")]
    pub(crate) forward_to: Option<String>,

    /// TYPE=URL: events of that type go to that app instead (repeatable;
    /// `call.failed=http://127.0.0.1:3001/failed`); other types go to
    /// --forward-to, or are not forwarded.
    #[arg(long = "forward", value_name = "TYPE=URL", group = "forwarding")]
    pub(crate) forward_by_type: Vec<String>,

    /// With --forward-to or --forward: sign anew with the app's own secret
    /// in FILE (or EARSHOT_FORWARD_SECRET) instead of passing the
    /// platform's X-SVC-Signature on.
    #[arg(long, value_name = "FILE", requires = "forwarding")]
    pub(crate) forward_secret_file: Option<PathBuf>,
}

pub(crate) async fn run(
    mut args: ListenArgs,
    global: &GlobalOptions,
) -> color_eyre::Result<ExitCode> {
    let mut config = match config_from(&args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("earshot listen: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut opened = None;
    let mut relaying = None;
    let mut pruner = None;
    let mut filler = None;
    let mut maintenance = None;
    let mut shared = None;
    let retention_figures = super::listen_pg_retention::SharedFigures::default();
    if let Some(given) = &args.store {
        let retention = match super::listen_retention::period(args.retention, global) {
            Ok(retention) => retention,
            Err(message) => {
                eprintln!("earshot listen: {message}");
                return Ok(ExitCode::from(2));
            }
        };
        let path = match given
            .clone()
            .or_else(|| std::env::var_os("EARSHOT_STORE").map(PathBuf::from))
        {
            Some(path) => Some(path),
            // The profile's `store`, which may name a PostgreSQL database.
            None => match earshot_core::config::profile_store_setting(
                global.config.as_deref(),
                global.profile.as_deref(),
            )? {
                Some(StoreSetting::Postgres(url)) => Some(PathBuf::from(url)),
                Some(StoreSetting::File(path)) => Some(path),
                None => None,
            },
        };
        let url = path
            .as_deref()
            .map(|path| path.to_string_lossy().into_owned());
        if let Some(url) = url.filter(|url| is_postgres_url(url)) {
            let sweep = match args.observer.pg_sweep_job(global) {
                Ok(sweep) => sweep,
                Err(message) => {
                    eprintln!("earshot listen: {message}");
                    return Ok(ExitCode::from(2));
                }
            };
            match listen_postgres::open(&url, retention).await {
                Ok(store) => {
                    // Every replica started with --sweep shows the store's
                    // sweep figures, silence and subscription figures,
                    // whichever of them sweeps.
                    let swept = sweep.is_some();
                    shared = Some(SharedStore {
                        store: store.clone(),
                        holder: super::listen_lease::holder_name(),
                        sweeps: swept.then(|| Arc::new(StoreSweepGauges::new(store.clone()))),
                        observer: swept.then(|| Arc::new(StoreObserverGauges::new(store.clone()))),
                    });
                    maintenance = Some(super::listen_lease::start(
                        &store,
                        retention,
                        retention_figures.clone(),
                        sweep,
                    ));
                    // As on a file: the platform is answered once an event
                    // is stored, and the lease holder forwards from the
                    // store, from a place made before the receiver starts.
                    if let Some(forward) = config.forward.take() {
                        relaying = Some(Relaying::start_postgres(store.clone(), forward).await?);
                    }
                    config.store = Some(store.into());
                }
                Err(Refused::Usage(message)) => {
                    eprintln!("earshot listen: {}", super::output::plain(&message));
                    return Ok(ExitCode::from(2));
                }
                Err(Refused::Store(error)) => {
                    let message = error.to_string();
                    eprintln!("earshot listen: {}", super::output::plain(&message));
                    return Ok(ExitCode::from(1));
                }
            }
            // Run by the lease holder (`listen_pg_sweep`), not the
            // observer's SQLite sweeper.
            args.observer.sweep = false;
        } else {
            let store = open_store(path.as_deref(), global)?;
            eprintln!("storing events in {}", store.path().display());
            let path = store.path().to_owned();
            if let Some(period) = retention {
                pruner = Some(super::listen_retention::start(store.path(), period)?);
            }
            if !event_words::index_complete(&store)? {
                filler = Some(start_filling(store.path())?);
            }
            let (writer, _thread) = Writer::start(store)?;
            config.store = Some(writer.clone().into());
            // With a store, the platform is answered once an event is stored,
            // and the relay forwards from the store: it takes its place before
            // the receiver starts, so no event is filed before its cursor.
            if let Some(forward) = config.forward.take() {
                relaying = Some(Relaying::start(&path, forward)?);
            }
            opened = Some(OpenStore { path, writer });
        }
    }
    let tls = config.tls.clone();
    let mut observing = match args
        .observer
        .start(
            global,
            opened.as_ref(),
            maintenance.as_ref().map(|_| retention_figures.clone()),
            shared,
        )
        .await
    {
        Ok(observing) => observing,
        Err(StartError::Usage(message)) => {
            eprintln!("earshot listen: {message}");
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    config.watch = observing.watch();
    let (listener, mut received) = match listen::start(args.listen, config).await {
        Ok(started) => started,
        Err(ListenError::Capture(error)) => {
            eprintln!("earshot listen: {error}");
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    let on_hangup = listen_tls::on_hangup(tls)?;
    let mut shutdown = std::pin::pin!(earshot_core::shutdown::signals_with(on_hangup)?);
    let mut stdout = std::io::stdout();
    // Scripts read this line; keep its shape. With --json it is a JSON
    // line too, so stdout holds nothing else.
    if args.json {
        let line = serde_json::json!({ "listening_on": listener.url() });
        writeln!(stdout, "{line}")?;
    } else {
        writeln!(stdout, "listening on {}", listener.url())?;
    }
    stdout.flush()?;
    if let Some(store) = &opened {
        observing.check_store(&store.path)?;
    }
    // From here on printing never holds up receiving: a slow stdout loses
    // lines (counted on stderr), never answers or capture entries.
    let mut out = BoundedStdout::start(stdout)?;
    let mut tally = Tally::default();
    let stopped_by = loop {
        tokio::select! {
            stop = &mut shutdown => break Some(stop),
            next = received.recv() => {
                let Some(request) = next else { break None };
                tally.count(&request);
                print_request(&mut out, &request, args.json)?;
            }
            Some(note) = Relaying::next(&mut relaying) => {
                listen_relay::print(&mut out, &note, args.json)?;
            }
        }
    };
    if let Some(relaying) = relaying {
        relaying.stop().await;
    }
    listener.stop().await;
    observing.stop().await;
    if let Some(maintenance) = maintenance {
        maintenance.stop().await;
    }
    drop(pruner);
    drop(filler);
    // Requests answered before the stop but not printed yet.
    while let Ok(request) = received.try_recv() {
        tally.count(&request);
        print_request(&mut out, &request, args.json)?;
    }
    out.finish(tally.summary(), FINISH_GRACE);
    Ok(stopped_by.map_or(ExitCode::SUCCESS, earshot_core::shutdown::Stop::exit_code))
}

/// The receiver's configuration; the error is the message for exit 2.
fn config_from(args: &ListenArgs) -> Result<ListenConfig, String> {
    let ReceiverSecrets {
        current,
        previous,
        auth_header,
    } = args.secrets.resolve().map_err(|e| e.to_string())?;
    if current.is_none() && auth_header.is_none() {
        return Err(format!(
            "nothing to check deliveries with: for voice-agent webhooks {}; for pre-recorded \
             webhooks give --auth-header-file FILE or set {}",
            secret_arg::missing("--secret", secret_arg::WEBHOOK_SECRET_ENV),
            secret_arg::AUTH_HEADER_ENV
        ));
    }
    // A previous secret given here needs the current one; one that only
    // comes from the environment is unused without it.
    if current.is_none() && args.secrets.previous_given() {
        return Err(
            "a previous secret needs the current one too (--secret-file or \
             EARSHOT_WEBHOOK_SECRET)"
                .to_owned(),
        );
    }
    let previous = previous.filter(|_| current.is_some());
    let mut secrets = Vec::new();
    for (label, secret) in [("current", current), ("previous", previous)] {
        if let Some(secret) = secret {
            if secret.expose().trim().is_empty() {
                return Err(format!("the {label} secret is empty"));
            }
            secrets.push((label.to_owned(), secret));
        }
    }
    let auth_header = auth_header.as_ref().map(parse_auth_header).transpose()?;
    // From the store, events are signed when sent: the listener's own
    // secret unless the app has its own.
    let signs_with = args
        .store
        .as_ref()
        .and(secrets.first().map(|(_, secret)| secret));
    let forward = forward_to(args, signs_with)?;
    Ok(ListenConfig {
        forward,
        secrets,
        tolerance_secs: args.tolerance,
        auth_header,
        trust_any_source: args.trust_any_source,
        capture: args.capture.clone(),
        store: None,
        capture_secrets: args.capture_secrets,
        tls: args.tls.load()?,
        ..ListenConfig::default()
    })
}

/// Where `--forward-to` and `--forward` send verified events, and with
/// which signature (the app's own secret, else `fallback`, else the
/// received header); `None` when neither is given.
fn forward_to(
    args: &ListenArgs,
    fallback: Option<&SecretString>,
) -> Result<Option<Arc<Forward>>, String> {
    let app_url = super::events_resend::app_url;
    let default = args
        .forward_to
        .as_deref()
        .map(|url| app_url("--forward-to", url))
        .transpose()?;
    let mut by_type = Vec::new();
    for route in &args.forward_by_type {
        let (kind, url) = route
            .split_once('=')
            .ok_or_else(|| format!("--forward {route}: give TYPE=URL"))?;
        let kind = EventKind::parse(kind).ok_or_else(|| {
            let known = super::redeliver::known_event_types();
            format!("--forward {route}: `{kind}` is not one of {known}")
        })?;
        by_type.push((kind.as_str().to_owned(), app_url("--forward", url)?));
    }
    if default.is_none() && by_type.is_empty() {
        return Ok(None);
    }
    let secret = secret_arg::resolve(
        None,
        args.forward_secret_file.as_deref(),
        secret_arg::FORWARD_SECRET_ENV,
    )
    .map_err(|error| error.to_string())?
    .or_else(|| fallback.cloned());
    if args.store.is_some() && secret.is_none() {
        return Err(
            "forwarding from the store signs each event when it is sent: give the app's \
             secret (--forward-secret-file FILE) or the webhook secret (--secret-file FILE)"
                .to_owned(),
        );
    }
    Forward::new(Routes { by_type, default }, secret)
        .map(|forward| Some(Arc::new(forward)))
        .map_err(|error| format!("--forward-to: {error}"))
}

/// `NAME:VALUE`, checked like `check-receiver` checks it: the lower-case
/// header name and the value.
pub(super) fn parse_auth_header(raw: &SecretString) -> Result<(String, SecretString), String> {
    AuthHeader::parse_parts(raw.expose()).map_err(|why| format!("--auth-header: {why}"))
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
        out.print(serde_json::to_string(&request.capture_entry())?);
    } else {
        out.print(request_line(request));
    }
    if let Some(error) = &request.capture_error {
        eprintln!("earshot listen: {error}");
    }
    if let Some(error) = &request.store_error {
        let id = request.entry.event_id.as_deref().unwrap_or("-");
        let line = format!("event {id} not stored (answered 503): {error}");
        eprintln!("earshot listen: {}", super::output::plain(&line));
    }
    if let Some(why) = &request.unfiled {
        let id = request.entry.event_id.as_deref().unwrap_or("-");
        let line = format!("event {id} kept in unfiled_events, not events (answered 200): {why}");
        eprintln!("earshot listen: {}", super::output::plain(&line));
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
    let app = entry.forwarded.as_ref().map_or_else(String::new, app_text);
    format!(
        "{time}  {what:<20} {id:<8}  {}  → {}{app}",
        verdict_text(request),
        entry.status
    )
}

/// The app's verdict on a forwarded event, beside earshot's: `  app: HTTP
/// 500 in 3 ms "boom"`, or why it gave none.
pub(super) fn app_text(forwarded: &Forwarded) -> String {
    let took = forwarded.took();
    match (forwarded.status, &forwarded.error) {
        (Some(status), _) => {
            let answer: String = forwarded.answer.trim().chars().take(40).collect();
            let answer = super::output::plain(&answer).into_owned();
            if answer.is_empty() {
                format!("  app: HTTP {status} in {took}")
            } else {
                format!("  app: HTTP {status} in {took} {answer:?}")
            }
        }
        (None, Some(error)) => format!("  app: not reached ({error}) after {took}"),
        (None, None) => format!("  app: no answer after {took}"),
    }
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
        VerdictCode::StoreFailed => "not stored: the store failed (503, retried)".to_owned(),
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

/// Fills the free-text index of a store made before it, in the
/// background, and says when it starts and when it is complete.
fn start_filling(path: &std::path::Path) -> color_eyre::Result<WordFiller> {
    eprintln!(
        "filling the free-text index of this store in the background (free text in \
         `earshot events` scans until it is complete)"
    );
    Ok(WordFiller::start(path.to_owned(), |filled| match filled {
        Ok((added, took)) => eprintln!(
            "earshot listen: the free-text index is complete ({} events added in {})",
            super::store_cmd::thousands(added),
            earshot_core::duration_text::of(took)
        ),
        Err(error) => eprintln!(
            "earshot listen: filling the free-text index failed ({error}); trying again in \
             30 s (or run `earshot store index`)"
        ),
    })?)
}
