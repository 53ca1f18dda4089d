//! The command line (DESIGN.md §6): the clap tree and one thin file per
//! subcommand that parses arguments, calls [`earshot_core::api`] and prints.

mod bounded_stdout;
mod capsule;
pub(crate) mod changes;
pub(crate) mod check_receiver;
pub(crate) mod config;
mod console;
pub(crate) mod deliveries;
pub(crate) mod demo;
mod demo_history;
pub(crate) mod dictate;
mod edit_body;
pub(crate) mod emulator;
mod emulator_replay;
pub(crate) mod events;
mod events_resend;
pub(crate) mod health;
mod health_chart;
mod heap_trim;
mod history_args;
mod incident_chart;
pub(crate) mod incidents;
pub(crate) mod jobs;
pub(crate) mod listen;
mod listen_lease;
mod listen_pg_relay;
mod listen_pg_retention;
mod listen_pg_sweep;
mod listen_postgres;
mod listen_relay;
mod listen_retention;
mod listen_tls;
mod local_trial;
pub(crate) mod observer;
mod observer_args;
mod observer_replicas;
mod observer_secret;
mod observer_service;
mod observer_summary;
mod output;
pub(crate) mod probe;
mod progress;
mod read_store;
pub(crate) mod redeliver;
pub(crate) mod secret_arg;
pub(crate) mod session_get;
pub(crate) mod sessions;
pub(crate) mod sign;
pub(crate) mod store_check;
pub(crate) mod store_cmd;
pub(crate) mod store_copy;
pub(crate) mod store_index;
pub(crate) mod store_migrate;
pub(crate) mod store_prune_postgres;
pub(crate) mod subs;
mod subs_rotate;
pub(crate) mod transcribe;
mod trigger;
pub(crate) mod verify;
mod verify_receiver;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use url::Url;

use earshot_core::api::{ApiError, Client, Endpoints};
use earshot_core::config::{ResolveOptions, resolve};
use earshot_core::redact::SecretString;

/// A terminal operations console for a speech-to-text platform.
#[derive(Parser, Debug)]
#[command(name = "earshot", version, about, propagate_version = true)]
pub struct Cli {
    /// Config file to use instead of the platform default.
    #[arg(long, global = true, env = "EARSHOT_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Profile of the config file to use.
    #[arg(long, global = true, env = "EARSHOT_PROFILE", value_name = "NAME")]
    pub(crate) profile: Option<String>,
    /// Console: hide every command that changes the platform. (Console
    /// only, so `subs delete --read-only` is an error, not a silent no-op.)
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Console: write fewer bytes, for a thin link (SSH from afar): a
    /// slower refresh, no decorative colours.
    #[arg(long)]
    pub(crate) low_bandwidth: bool,
    /// Console theme: default, light, high-contrast, mono, or NAME for
    /// `<config dir>/themes/NAME.toml`.
    #[arg(long, value_name = "NAME")]
    pub(crate) theme: Option<String>,
    /// Console: every endpoint at this origin (as `--url` of every command;
    /// `EARSHOT_URL`).
    #[arg(long = "url", id = "console_url", value_name = "URL", value_parser = parse_origin)]
    pub(crate) url: Option<Url>,
    /// Console: the API key to send (as `--api-key` of every command;
    /// prefer `EARSHOT_API_KEY` or the profile's `api_key_file`: a value
    /// given here is visible to other users in `ps`).
    #[arg(long = "api-key", id = "console_api_key", value_name = "KEY")]
    pub(crate) api_key: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The console flags, also after `demo` (`earshot demo --theme light
/// --read-only`), as operators type them.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct DemoArgs {
    /// Hide every command that changes the platform.
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Console theme: default, light, high-contrast, mono, or NAME.
    #[arg(long, value_name = "NAME")]
    pub(crate) theme: Option<String>,
    /// Write fewer bytes: a slower refresh, no decorative colours.
    #[arg(long)]
    pub(crate) low_bandwidth: bool,
    /// Platform events (sessions and calls) a second the demo traffic
    /// aims at [default: about 1.25].
    #[arg(long, value_name = "EVENTS_PER_S", value_parser = emulator::traffic_rate)]
    pub(crate) traffic_rate: Option<std::time::Duration>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// The console on the built-in emulator with live demo traffic.
    Demo(DemoArgs),
    /// Run the platform emulator headless (for tests, demos and scripts).
    Emulator(emulator::EmulatorArgs),
    /// Sign a webhook body the way the platform does.
    Sign(sign::SignArgs),
    /// Verify a webhook signature and explain any failure.
    Verify(verify::VerifyArgs),
    /// Manage webhook subscriptions.
    Subs(subs::SubsArgs),
    /// Every delivery attempt of a session or call.
    Deliveries(deliveries::DeliveriesArgs),
    /// Pre-recorded transcript jobs: submit, get, watch within rate limits.
    Jobs(jobs::JobsArgs),
    /// Dictate a short utterance: verbatim text and its rewrite.
    Dictate(dictate::DictateArgs),
    /// Transcribe a WAV file with the sync endpoint.
    Transcribe(transcribe::TranscribeArgs),
    /// Run dictation and sync in every region and compare them.
    Probe(probe::ProbeArgs),
    /// A local webhook receiver that verifies, deduplicates and captures.
    Listen(listen::ListenArgs),
    /// The observer (`listen --store`): subscribe it to every event and
    /// print how to run it, in one command.
    Observer(observer::ObserverArgs),
    /// Test your webhook receiver with a battery of deliveries.
    CheckReceiver(check_receiver::CheckReceiverArgs),
    /// Sessions and calls the incident history knows.
    Sessions(sessions::SessionsArgs),
    /// Sweep known sessions, then report delivery health per subscription.
    Health(health::HealthArgs),
    /// Re-send the events a subscription missed for good (scoped, with a
    /// canary and a brake).
    Redeliver(redeliver::RedeliverArgs),
    /// Every observed event with its outcome per subscription, filtered.
    Events(events::EventsArgs),
    /// Send your receiver one realistic, signed voice-agent event, with
    /// fields set from the command line.
    Trigger(trigger::TriggerArgs),
    /// An incident in one file: export it from the store, compare it with
    /// its replay (`earshot emulator --replay FILE`).
    Capsule(capsule::CapsuleArgs),
    /// Failure groups (subscription × diagnosis) and who is on them.
    Incidents(incidents::IncidentsArgs),
    /// What earshot changed on the platform: when, who, what.
    Changes(changes::ChangesArgs),
    /// The incident-history store: remove what is older than a period
    /// (`prune`), erase a session or call (`forget`).
    Store(store_cmd::StoreArgs),
    /// Create, show and locate the config file.
    Config {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
}

/// `--url` and `--api-key`: override the profile for one command.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Connection {
    /// Every endpoint at this origin (e.g. an emulator's URL).
    #[arg(
        long,
        global = true,
        env = "EARSHOT_URL",
        value_name = "URL",
        value_parser = parse_origin
    )]
    pub(crate) url: Option<Url>,
    /// API key to send, instead of the profile's. Prefer EARSHOT_API_KEY or
    /// the profile's `api_key_file`: a value given here is visible to other
    /// users in `ps`.
    #[arg(
        long,
        global = true,
        env = "EARSHOT_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub(crate) api_key: Option<String>,
}

/// `--url`: an `http://` or `https://` origin; anything else is bad input
/// (exit 2), not a connection failure later.
pub(crate) fn parse_origin(text: &str) -> Result<Url, String> {
    earshot_core::api::validate::http_url(text).map_err(|why| format!("`{text}` {why}"))
}

impl Connection {
    /// The command's own `--url` / `--api-key` (or their variables), else
    /// the ones given before the subcommand.
    fn resolve_options(&self, cli: &GlobalOptions) -> ResolveOptions {
        ResolveOptions {
            config_path: cli.config.clone(),
            profile: cli.profile.clone(),
            url: self.url.clone().or_else(|| cli.url.clone()),
            api_key: self
                .api_key
                .clone()
                .or_else(|| cli.api_key.clone())
                .map(SecretString::new),
        }
    }

    /// Where the resolved profile's endpoints are (no API key needed).
    pub(crate) fn endpoints(&self, cli: &GlobalOptions) -> color_eyre::Result<Endpoints> {
        Ok(resolve(&self.resolve_options(cli))?.endpoints)
    }

    /// A client for the resolved profile, or an error saying what is missing.
    pub(crate) fn client(&self, cli: &GlobalOptions) -> color_eyre::Result<Client> {
        let resolved = resolve(&self.resolve_options(cli))?;
        let key = resolved.require_api_key()?.clone();
        Ok(Client::new(resolved.endpoints, key)?)
    }
}

/// The flags every subcommand sees.
#[derive(Debug, Clone, Default)]
pub(crate) struct GlobalOptions {
    pub(crate) config: Option<PathBuf>,
    pub(crate) profile: Option<String>,
    /// `--url` and `--api-key` given before the subcommand.
    pub(crate) url: Option<Url>,
    pub(crate) api_key: Option<String>,
}

pub fn run(cli: Cli) -> color_eyre::Result<ExitCode> {
    let global = GlobalOptions {
        config: cli.config,
        profile: cli.profile,
        url: cli.url,
        api_key: cli.api_key,
    };
    let Some(command) = cli.command else {
        return console::launch(console::LaunchFlags {
            config: global.config.clone(),
            profile: global.profile.clone(),
            read_only: cli.read_only,
            low_bandwidth: cli.low_bandwidth,
            theme: cli.theme,
            url: global.url.clone(),
            api_key: global.api_key.clone().map(SecretString::new),
        });
    };
    // The console (and the demo's) owns the terminal: it logs the notice.
    if !matches!(command, Command::Demo(_)) {
        earshot_core::store::say_slow_migrations_with(|text| eprintln!("earshot: {text}"));
    }
    // The processes that run for days (the demo, the emulator's endless
    // traffic): few allocator arenas, and freed heap handed back.
    let endless = match &command {
        Command::Demo(_) => true,
        Command::Emulator(args) => args.traffic,
        _ => false,
    };
    let _heap_trim = endless.then(heap_trim::for_endless_process).flatten();
    let result = match command {
        Command::Sign(args) => sign::run(args),
        Command::Verify(args) if args.event.is_some() => {
            runtime()?.block_on(verify_receiver::run(args, &global))
        }
        Command::Verify(args) => verify::run(args),
        Command::Config {
            connection,
            command,
        } => config::run(command, &connection.resolve_options(&global)),
        Command::Emulator(args) => runtime()?.block_on(emulator::run(args)),
        Command::Demo(args) => runtime()?.block_on(demo::run(demo::DemoOptions {
            read_only: cli.read_only || args.read_only,
            low_bandwidth: cli.low_bandwidth || args.low_bandwidth,
            theme: args.theme.or(cli.theme),
            pace: args.traffic_rate,
        })),
        Command::Subs(args) => runtime()?.block_on(subs::run(args, &global)),
        Command::Deliveries(args) => runtime()?.block_on(deliveries::run(args, &global)),
        Command::Dictate(args) => runtime()?.block_on(dictate::run(args, &global)),
        Command::Transcribe(args) => runtime()?.block_on(transcribe::run(args, &global)),
        Command::Probe(args) => runtime()?.block_on(probe::run(args, &global)),
        Command::Jobs(args) => runtime()?.block_on(jobs::run(args, &global)),
        Command::Listen(args) => runtime()?.block_on(listen::run(args, &global)),
        Command::Observer(args) => runtime()?.block_on(observer::run(args, &global)),
        Command::CheckReceiver(args) => runtime()?.block_on(check_receiver::run(args)),
        Command::Sessions(args) => sessions::run(args, &global),
        Command::Health(args) => runtime()?.block_on(health::run(args, &global)),
        Command::Redeliver(args) => runtime()?.block_on(redeliver::run(args, &global)),
        Command::Events(args) => runtime()?.block_on(events::run(args, &global)),
        Command::Trigger(args) => runtime()?.block_on(trigger::run(args, &global)),
        Command::Capsule(args) => capsule::run(args, &global),
        Command::Incidents(args) => runtime()?.block_on(incidents::run(args, &global)),
        Command::Changes(args) => runtime()?.block_on(changes::run(args, &global)),
        Command::Store(args) => runtime()?.block_on(store_cmd::run(args, &global)),
    };
    let skipped = earshot_core::store::skipped_rows();
    if skipped > 0 {
        eprintln!(
            "warning: {skipped} rows of the store could not be read (edited by hand?) and were \
             skipped"
        );
    }
    result
}

fn runtime() -> color_eyre::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Prints a failure the way an operator wants it: one line per cause, no
/// backtrace (set `EARSHOT_DEBUG=1` for color-eyre's full report). A closed
/// pipe (`earshot subs list | head`) is not a failure.
pub fn exit_with(report: &color_eyre::Report) -> ExitCode {
    let broken_pipe = report.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    // A rule broken before anything was sent (a key no header can carry,
    // a malformed field, an id that cannot be a path segment) is bad
    // input, whichever command found it. So is a file refused before
    // reading (not regular, too large), and a store path that is no file.
    let bad_input = report.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<ApiError>(),
            Some(ApiError::Invalid(_) | ApiError::InvalidId(_))
        ) || is_refused_file(cause)
            || matches!(
                cause.downcast_ref::<earshot_core::history::HistoryError>(),
                Some(earshot_core::history::HistoryError::ReceiverUrl(_))
            )
    });
    let failure = if bad_input {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    };
    if std::env::var_os("EARSHOT_DEBUG").is_some() {
        eprintln!("{report:?}");
        return failure;
    }
    let mut message = String::new();
    for cause in report.chain() {
        let text = cause.to_string();
        if !message.contains(&text) {
            if !message.is_empty() {
                message.push_str("\n  caused by: ");
            }
            message.push_str(&text);
        }
    }
    // A damaged page read through a path that did not go by StoreError
    // still says what it is and which check to run.
    let damaged = report
        .chain()
        .find_map(earshot_core::store::StoreError::damaged_read);
    if let Some(damaged) = damaged.filter(|_| !message.contains("earshot store check")) {
        message = damaged.to_string();
    }
    // A cause may quote what came from outside (an id, a URL, an answer).
    eprintln!("error: {}", output::plain(&message));
    failure
}

fn is_refused_file(cause: &(dyn std::error::Error + 'static)) -> bool {
    use earshot_core::bounded_file::FileError;
    let refused = |error: &FileError| !matches!(error, FileError::Io { .. });
    cause.downcast_ref::<FileError>().is_some_and(refused)
        || matches!(
            cause.downcast_ref::<earshot_core::store::StoreError>(),
            Some(earshot_core::store::StoreError::NotAFile { .. })
        )
        || matches!(
            cause.downcast_ref::<earshot_core::config::ConfigError>(),
            Some(earshot_core::config::ConfigError::File(error)) if refused(error)
        )
}

/// Bad input found before sending exits 2 with the rule broken; every
/// other failure goes to color-eyre (exit 1).
fn report(error: color_eyre::Report) -> color_eyre::Result<ExitCode> {
    match error.downcast_ref::<ApiError>() {
        Some(ApiError::Invalid(invalid)) => {
            eprintln!("error: {invalid}");
            Ok(ExitCode::from(2))
        }
        Some(ApiError::InvalidId(invalid)) => {
            eprintln!("error: {invalid}");
            Ok(ExitCode::from(2))
        }
        // Not found is an answer, not bad input: 1, as a 404 is.
        Some(not_found @ ApiError::NotFound(_)) => {
            eprintln!("error: {not_found}");
            Ok(ExitCode::from(1))
        }
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
