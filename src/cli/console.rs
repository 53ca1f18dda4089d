//! `earshot` with no subcommand: the command-line work before the console
//! opens (the profile resolved like every other command's, the terminal
//! checked, exit 2 for what the operator has to fix, the runtime), then
//! [`run_console`] on what it resolved.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use url::Url;

use crate::tui::{ConsoleOptions, known_sessions, policy_for, run_console};
use earshot_core::api::Client;
use earshot_core::config::{ConfigError, ENV_API_KEY, ENV_URL, ResolveOptions, resolve};
use earshot_core::redact::SecretString;
use earshot_core::shutdown::Stop;
use earshot_core::store::postgres::{PasswordSources, PgStore, PgTarget, is_postgres_url};

/// What `earshot` with no subcommand was given.
#[derive(Clone, Debug, Default)]
pub(crate) struct LaunchFlags {
    pub(crate) config: Option<PathBuf>,
    pub(crate) profile: Option<String>,
    pub(crate) read_only: bool,
    pub(crate) low_bandwidth: bool,
    pub(crate) theme: Option<String>,
    /// `--url` and `--api-key`: win over `EARSHOT_URL` / `EARSHOT_API_KEY`
    /// and the profile.
    pub(crate) url: Option<Url>,
    pub(crate) api_key: Option<SecretString>,
}

/// `earshot`: resolves the profile like every other command (with
/// `--url` / `--api-key`, else `EARSHOT_URL` / `EARSHOT_API_KEY`, when
/// set) and opens the console.
/// Without a config file it says how to make one and suggests
/// `earshot demo`, exiting 2.
pub(crate) fn launch(flags: LaunchFlags) -> color_eyre::Result<ExitCode> {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let url = match (flags.url, env(ENV_URL)) {
        (Some(url), _) => Some(url),
        (None, None) => None,
        (None, Some(text)) => match super::parse_origin(&text) {
            Ok(url) => Some(url),
            Err(error) => {
                eprintln!("error: {ENV_URL} = {text:?}: {error}");
                return Ok(ExitCode::from(2));
            }
        },
    };
    let options = ResolveOptions {
        config_path: flags.config.clone(),
        profile: flags.profile.clone(),
        url,
        api_key: flags
            .api_key
            .or_else(|| env(ENV_API_KEY).map(SecretString::new)),
    };
    let resolved = match resolve(&options) {
        Ok(resolved) => resolved,
        Err(error @ ConfigError::NoConfigFile { .. }) => {
            eprintln!("earshot: {error}");
            eprintln!(
                "  or try the console with no account at all: `earshot demo` runs a built-in emulator with live traffic"
            );
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    let key = resolved.require_api_key()?.clone();
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!(
            "earshot: the console needs a terminal; for scripts use a subcommand (see `earshot --help`)"
        );
        return Ok(ExitCode::from(2));
    }
    // A PostgreSQL store: its URL checked (exit 2) before anything is
    // done, connected below (exit 1), both before the terminal is taken.
    let store_setting = env("EARSHOT_STORE").or_else(|| {
        resolved
            .store
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned())
    });
    let postgres_target = match store_setting {
        Some(url) if is_postgres_url(&url) => match PgTarget::parse(&url) {
            Ok(target) => Some(target),
            Err(error) => {
                eprintln!("earshot: {error}");
                return Ok(ExitCode::from(2));
            }
        },
        _ => None,
    };
    let url_policy = policy_for(&resolved.endpoints.agents);
    let client = Client::new(resolved.endpoints.clone(), key)?.with_url_policy(url_policy);
    let profiles = earshot_core::config::profiles(flags.config.as_deref())?;
    let current_profile = resolved
        .profile_name
        .clone()
        .filter(|_| options.url.is_none());
    let console = ConsoleOptions {
        read_only: flags.read_only,
        low_bandwidth: flags.low_bandwidth || resolved.low_bandwidth,
        theme: flags.theme,
        profile_read_only: resolved.read_only,
        profile_theme: resolved.theme.clone(),
        profile_store: resolved.store.clone(),
        profiles,
        current_profile,
        config: flags.config.clone(),
        profile_label: resolved
            .profile_name
            .clone()
            .unwrap_or_else(|| "(EARSHOT_URL)".into()),
        region: resolved.region.as_str().into(),
        url_policy,
        config_dir: resolved.config_file.parent().map(PathBuf::from),
        recent_ids: known_sessions(resolved.store.clone()),
        ..ConsoleOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let console = match postgres_target {
        Some(target) => {
            match runtime.block_on(PgStore::connect(target, &PasswordSources::from_env())) {
                Ok(store) => ConsoleOptions {
                    postgres: Some(store),
                    ..console
                },
                Err(error) => {
                    eprintln!("earshot: {error}");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        None => console,
    };
    let stopped_by = runtime.block_on(run_console(client, console))?;
    Ok(stopped_by.map_or(ExitCode::SUCCESS, Stop::exit_code))
}
